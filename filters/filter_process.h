// The long-running filter process of git (filter.<driver>.process,
// protocol version 2): handshake, capabilities (clean, smudge and delay),
// then one request per file. A file the handler cannot process is
// answered with status=error and the process goes on with the next one;
// only a protocol violation (malformed packets, an unexpected handshake)
// ends it.
//
// Delay: in a checkout or a clone git lets smudges be answered later
// (can-delay=1). A small file the handler chooses to delay is answered
// status=delayed; once git has gone through the other files it asks which
// delayed files are ready (list_available_blobs), and each answer names
// one, the handler's next, so git asks for them in the handler's order
// (it would sort a longer list by path). git asks for a listed file again
// with no content.
//
// Used by one thread, on the process's standard input and output.
#pragma once

#include <optional>
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
  // A smudge git lets the process answer later, with its whole `content`
  // (at most kMaxDelayedContent bytes): whether to delay it.
  virtual bool Delay(const std::string& /*path*/, const std::string& /*content*/) { return false; }
  // The delayed file git should ask for next (Smudge then gets it with no
  // content), or nullopt when none is left.
  virtual std::optional<std::string> NextDelayed() { return std::nullopt; }
};
inline constexpr size_t kMaxDelayedContent = 1024;

// git writes a file's whole content before it reads a byte of the
// answer, so an answer written while content is still coming fills both
// pipes and blocks both processes (a smudge that passes a large plain
// file through). Before the first byte of an answer goes out, the rest of
// the request's content is therefore read ahead: kept in memory up to
// `in_memory` bytes, beyond that in a scratch file in `dir` (created if
// needed, removed when the request is done; with no `dir`, all in memory).
struct ReadAhead {
  std::string dir;
  size_t in_memory = size_t{8} << 20;
};

// Serves requests until git closes the stream (OK) or the protocol breaks
// (an error naming what). Errors of single files go to `errors` (stderr)
// as "git-zipnn: <path>: <message>" lines.
Status ServeFilterProcess(ByteReader& in, ByteSink& out, FilterHandler& handler, ByteSink* errors,
                          const ReadAhead& read_ahead = {});

}  // namespace zipnn::filters
