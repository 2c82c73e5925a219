// Test helpers: git's side of the filter protocol as pkt-line text, so
// that tests can feed ServeFilterProcess a whole session from a string
// and compare its answer byte for byte. Test-only (testonly target).
#pragma once

#include <cstdio>
#include <string>

#include "filters/pkt_line.h"

namespace zipnn::filters::testing {

inline std::string Pkt(const std::string& payload) {
  char head[5];
  std::snprintf(head, sizeof head, "%04zx", payload.size() + 4);
  return std::string(head) + payload;
}
inline std::string Line(const std::string& text) { return Pkt(text + "\n"); }
inline const std::string kFlush = "0000";

// `content` as data packets of at most kMaxPacketData bytes.
inline std::string Packets(const std::string& content) {
  std::string r;
  for (size_t at = 0; at < content.size(); at += kMaxPacketData) r += Pkt(content.substr(at, kMaxPacketData));
  return r;
}

inline std::string GitHello() {
  return Line("git-filter-client") + Line("version=2") + kFlush + Line("capability=clean") + Line("capability=smudge") +
         Line("capability=delay") + kFlush;
}
inline std::string ServerHello() {
  return Line("git-filter-server") + Line("version=2") + kFlush + Line("capability=clean") + Line("capability=smudge") +
         Line("capability=delay") + kFlush;
}
inline std::string Request(const std::string& command, const std::string& path, const std::string& content) {
  return Line("command=" + command) + Line("pathname=" + path) + kFlush + Packets(content) + kFlush;
}
// A smudge git lets the filter delay.
inline std::string DelayableSmudge(const std::string& path, const std::string& content) {
  return Line("command=smudge") + Line("pathname=" + path) + Line("can-delay=1") + kFlush + Packets(content) + kFlush;
}
inline std::string ListAvailable() { return Line("command=list_available_blobs") + kFlush; }
// The answers of the filter.
inline std::string Success(const std::string& content) {
  return Line("status=success") + kFlush + Packets(content) + kFlush + kFlush;
}
inline std::string Delayed() { return Line("status=delayed") + kFlush; }
// One answer to list_available_blobs: the path given, or none.
inline std::string Available(const std::string& path) {
  return (path.empty() ? "" : Line("pathname=" + path)) + kFlush + Line("status=success") + kFlush;
}

}  // namespace zipnn::filters::testing
