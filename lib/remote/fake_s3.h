// Test-only helpers for the S3 store (lib/remote/s3.h): a fake S3 endpoint on 127.0.0.1 that
// records every request and answers each as the test says, and a
// reference SigV4 signer the tests check the requests' signatures with
// (itself checked against AWS's published example). The fake answers one
// request per connection (Connection: close), one connection at a time,
// on a thread of its own; requests() may be read from any thread.
#pragma once

#include <netinet/in.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

namespace zipnn::s3::testing {

// ---- SigV4, written from AWS's description of it ----

inline std::string ToHex(const unsigned char* bytes, size_t n) {
  std::string hex;
  char two[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(two, sizeof two, "%02x", bytes[i]);
    hex += two;
  }
  return hex;
}

inline std::string Sha256Hex(const std::string& text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return ToHex(digest, sizeof digest);
}

// HMAC-SHA256 of `data` under `key`, as raw bytes.
inline std::string Hmac(const std::string& key, const std::string& data) {
  unsigned char mac[SHA256_DIGEST_LENGTH];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), mac, &size);
  return std::string(reinterpret_cast<const char*>(mac), size);
}

struct Header {
  std::string name;  // lower case
  std::string value;
};

// The canonical request: method, URI, query sorted by name, the signed
// headers (name:value, spaces trimmed and runs of them made one), their
// names, the payload's hash.
inline std::string CanonicalRequest(const std::string& method, const std::string& path, const std::string& query,
                                    const std::vector<Header>& signed_headers, const std::string& payload_hash) {
  std::vector<std::string> params;
  std::stringstream q(query);
  for (std::string p; std::getline(q, p, '&');) params.push_back(p.find('=') == std::string::npos ? p + "=" : p);
  std::sort(params.begin(), params.end());
  std::string canonical_query, names, lines;
  for (const std::string& p : params) canonical_query += (canonical_query.empty() ? "" : "&") + p;
  for (const Header& h : signed_headers) {
    std::string value;
    for (char c : h.value) {
      if (c == ' ' && (value.empty() || value.back() == ' ')) continue;
      value += c;
    }
    while (!value.empty() && value.back() == ' ') value.pop_back();
    lines += h.name + ":" + value + "\n";
    names += (names.empty() ? "" : ";") + h.name;
  }
  return method + "\n" + path + "\n" + canonical_query + "\n" + lines + "\n" + names + "\n" + payload_hash;
}

// The signature of `canonical` made at `stamp` (20130524T000000Z).
inline std::string Signature(const std::string& secret, const std::string& stamp, const std::string& region,
                             const std::string& canonical) {
  const std::string day = stamp.substr(0, 8);
  const std::string scope = day + "/" + region + "/s3/aws4_request";
  const std::string to_sign = "AWS4-HMAC-SHA256\n" + stamp + "\n" + scope + "\n" + Sha256Hex(canonical);
  const std::string key = Hmac(Hmac(Hmac(Hmac("AWS4" + secret, day), region), "s3"), "aws4_request");
  const std::string mac = Hmac(key, to_sign);
  return ToHex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
}

// ---- The fake endpoint ----

struct Request {
  std::string method;
  std::string path;   // as sent, still percent-encoded
  std::string query;  // after '?', as sent
  std::vector<Header> headers;
  std::string body;

  std::string Get(const std::string& name) const {
    for (const Header& h : headers) {
      if (h.name == name) return h.value;
    }
    return "";
  }
};

struct Response {
  int status = 200;
  std::string body;
  std::vector<std::string> headers;  // "Name: value"
  bool chunked = false;              // the body without a Content-Length
  bool silent = false;               // never answer; wait for the client to give up
  // The body a byte every `trickle_ms` (50 bytes a second at 20; a
  // chunk of one byte each when `chunked`), for 4 s at most, then the
  // connection closes; 0: at once.
  int trickle_ms = 0;
  // The body announced whole, but the connection closes after this many
  // of its bytes: a network that dropped.
  size_t cut_after = SIZE_MAX;
};

class FakeS3 {
 public:
  explicit FakeS3(std::function<Response(const Request&)> answer) : answer_(std::move(answer)) {
    listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(listen_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listen_, 64) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(::getsockname(listen_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeS3() {
    stop_ = true;
    thread_.join();
    ::close(listen_);
  }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Request> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  // Waits until `fd` can be read, or the fake is stopping.
  bool Readable(int fd) const {
    pollfd p{fd, POLLIN, 0};
    while (!stop_) {
      if (::poll(&p, 1, 20) > 0) return true;
    }
    return false;
  }

  void Serve() {
    while (Readable(listen_)) {
      const int fd = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      Answer(fd);
      ::close(fd);
    }
  }

  // Appends what arrives next to `into`; false at the end of the stream.
  bool ReadSome(int fd, std::string& into) const {
    char block[65536];
    if (!Readable(fd)) return false;
    const ssize_t got = ::recv(fd, block, sizeof block, 0);
    if (got <= 0) return false;
    into.append(block, static_cast<size_t>(got));
    return true;
  }

  // Whether all of `text` went.
  bool Send(int fd, const std::string& text) const {
    size_t at = 0;
    while (at < text.size()) {
      const ssize_t put = ::send(fd, text.data() + at, text.size() - at, MSG_NOSIGNAL);
      if (put <= 0) return false;  // the client went away, as some tests make it
      at += static_cast<size_t>(put);
    }
    return true;
  }

  void Answer(int fd) {
    std::string in;
    size_t end;
    while ((end = in.find("\r\n\r\n")) == std::string::npos) {
      if (!ReadSome(fd, in)) return;
    }
    Request r;
    std::stringstream head(in.substr(0, end));
    std::string line, target;
    std::getline(head, line);
    std::stringstream(line) >> r.method >> target;
    const size_t mark = target.find('?');
    r.path = target.substr(0, mark);
    r.query = mark == std::string::npos ? "" : target.substr(mark + 1);
    size_t length = 0;
    while (std::getline(head, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      Header h{line.substr(0, colon), line.substr(line.find_first_not_of(' ', colon + 1))};
      std::transform(h.name.begin(), h.name.end(), h.name.begin(), ::tolower);
      if (h.name == "content-length") length = std::stoul(h.value);
      if (h.name == "expect") Send(fd, "HTTP/1.1 100 Continue\r\n\r\n");
      r.headers.push_back(std::move(h));
    }
    r.body = in.substr(end + 4);
    while (r.body.size() < length && ReadSome(fd, r.body)) {
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(r);
    }
    const Response a = answer_(r);
    if (a.silent) {
      std::string ignored;
      while (ReadSome(fd, ignored)) {
      }
      return;
    }
    std::string out = "HTTP/1.1 " + std::to_string(a.status) + " Fake\r\nConnection: close\r\n";
    for (const std::string& h : a.headers) out += h + "\r\n";
    if (a.chunked) {
      out += "Transfer-Encoding: chunked\r\n\r\n";
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", a.body.size());
      if (a.trickle_ms == 0) out += size + a.body + "\r\n0\r\n\r\n";
    } else {
      out += "Content-Length: " + std::to_string(a.body.size()) + "\r\n\r\n";
      if (r.method != "HEAD" && a.trickle_ms == 0) out += a.body.substr(0, a.cut_after);
    }
    if (!Send(fd, out) || a.trickle_ms == 0 || r.method == "HEAD") return;
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < a.body.size() && !stop_; ++i) {
      if (std::chrono::steady_clock::now() - start > std::chrono::seconds(4)) return;
      // A chunk of one byte each, when the body has no length.
      const std::string piece = a.chunked ? "1\r\n" + a.body.substr(i, 1) + "\r\n" : a.body.substr(i, 1);
      if (!Send(fd, piece)) return;  // the client gave up
      std::this_thread::sleep_for(std::chrono::milliseconds(a.trickle_ms));
    }
  }

  std::function<Response(const Request&)> answer_;
  int listen_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mu_;  // guards requests_
  std::vector<Request> requests_;
};

}  // namespace zipnn::s3::testing
