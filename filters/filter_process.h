// The long-running filter process of git (filter.<driver>.process,
// protocol version 2): handshake, capabilities (clean and smudge), then
// one request per file. A file the handler cannot process is answered
// with status=error and the process goes on with the next one; only a
// protocol violation (malformed packets, an unexpected handshake) ends it.
//
// Used by one thread, on the process's standard input and output.
#pragma once

#include <string>

#include "filters/pkt_line.h"
#include "lib/base/io.h"
#include "lib/base/status.h"

namespace zipnn::filters {

// What the process does with each file. `content` yields the file's bytes
// as git sends them and ends where they end; what is written to `out`
// goes back to git. An error, even after some output, makes the answer
// status=error.
class FilterHandler {
 public:
  virtual ~FilterHandler() = default;
  virtual Status Clean(const std::string& path, ByteReader& content, ByteSink& out) = 0;
  virtual Status Smudge(const std::string& path, ByteReader& content, ByteSink& out) = 0;
};

// Serves requests until git closes the stream (OK) or the protocol breaks
// (an error naming what). Errors of single files go to `errors` (stderr)
// as "git-zipnn: <path>: <message>" lines.
Status ServeFilterProcess(ByteReader& in, ByteSink& out, FilterHandler& handler, ByteSink* errors);

}  // namespace zipnn::filters
