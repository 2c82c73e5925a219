// libFuzzer target: git's pkt-line framing and the long-running filter
// protocol on top of it (filters/). The input is what git would write to
// the filter process. It is read three ways: packet by packet to the end
// or the first error, list by list, and by ServeFilterProcess with a
// trivial handler, so that the protocol's state machine (handshake,
// requests, content, status=error after partial output) is fuzzed too.
// Whatever the process answers must itself be well-formed pkt-line.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "filters/filter_process.h"
#include "filters/pkt_line.h"
#include "lib/base/io.h"

namespace zipnn::filters {
namespace {

// Clean copies the content back; smudge reads a few bytes, writes them
// and fails, the path of a file that breaks after its output began.
class EchoHandler : public FilterHandler {
 public:
  Status Clean(const std::string&, ByteReader& content, ByteSink& out) override {
    char buf[512];
    for (;;) {
      ZIPNN_ASSIGN_OR_RETURN(size_t n, content.Read(buf, sizeof buf));
      if (n == 0) return OkStatus();
      ZIPNN_RETURN_IF_ERROR(out.Append(buf, n));
    }
  }
  Status Smudge(const std::string&, ByteReader& content, ByteSink& out) override {
    char buf[8];
    ZIPNN_ASSIGN_OR_RETURN(size_t n, content.Read(buf, sizeof buf));
    if (n > 0) ZIPNN_RETURN_IF_ERROR(out.Append(buf, n));
    return Corruption("smudge fails after its first bytes");
  }
};

void ReadPackets(const std::string& input) {
  MemoryReader in(input);
  PktLineReader reader(in);
  for (;;) {
    Result<Packet> p = reader.Read();
    if (!p.ok() || p->kind == Packet::Kind::kEnd) return;
    if (p->kind == Packet::Kind::kData && p->data.size() > kMaxPacketData) std::abort();
  }
}

void ReadLists(const std::string& input) {
  MemoryReader in(input);
  PktLineReader reader(in);
  while (reader.ReadList().ok()) {
  }
}

void Serve(const std::string& input) {
  MemoryReader in(input);
  MemorySink out;
  CountingSink errors;
  EchoHandler handler;
  (void)ServeFilterProcess(in, out, handler, &errors);
  const Buffer& b = out.buffer();
  MemoryReader answer(std::string(reinterpret_cast<const char*>(b.data()), b.size()));
  PktLineReader reader(answer);
  for (;;) {
    Result<Packet> p = reader.Read();
    if (!p.ok()) {
      std::fprintf(stderr, "the filter process wrote malformed pkt-line: %s\n", p.status().message().c_str());
      std::abort();
    }
    if (p->kind == Packet::Kind::kEnd) return;
  }
}

}  // namespace
}  // namespace zipnn::filters

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  zipnn::filters::ReadPackets(input);
  zipnn::filters::ReadLists(input);
  zipnn::filters::Serve(input);
  return 0;
}
