// HTTP requests for the stores that speak it (S3, a Git LFS server),
// through libcurl: a body sent from a ByteSource, a body received into a
// ByteSink with a bound on its size, the timeout and the slowest rate a
// remote may go at (docs/remotes.md, "Timeouts"), and connections kept
// for the next request. The only user of curl and of libcrypto.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lib/base/io.h"
#include "lib/base/rate.h"
#include "lib/base/status.h"

namespace zipnn::http {

struct Request {
  std::string method = "GET";  // GET, HEAD, PUT, POST, DELETE
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  // The body: bytes [from, from + size) of `upload` (PUT, POST; a POST
  // without one sends an empty body).
  const ByteSource* upload = nullptr;
  uint64_t from = 0;
  uint64_t size = 0;
  // Where the body of a 200 or 206 reply goes (else into Reply::body): an
  // object, which may take at most `limit` bytes (ObjectSizeLimit of its
  // checkpoint); one announced or grown past it ends the request.
  ByteSink* download = nullptr;
  uint64_t limit = UINT64_MAX;
  // The sink holds the first `resume_from` bytes of the object already:
  // only the rest is asked for (a Range request). A server that answers
  // with the whole object (200) has that many bytes of it dropped; one
  // that answers with another range than asked is refused. `limit`
  // bounds the whole object, those bytes included.
  uint64_t resume_from = 0;
  // With resume_from, asks for exactly [resume_from, resume_from +
  // range_size) instead of all the rest: a part of an object read where
  // it lies (lfs.h, OpenRanges). A server that answers with the whole
  // object (200) is refused as Unsupported before its body comes.
  uint64_t range_size = 0;
  // Called once, with the reply's status and headers, before the first
  // byte of a body goes to `download`: a download kept as it comes learns
  // there which copy of the object it is (S3's ETag). An error ends the
  // transfer with it.
  std::function<Status(long status, const std::map<std::string, std::string>& headers)> before_body;
  // HTTP basic credentials, or, with aws_sigv4 ("aws:amz:<region>:s3"),
  // the key pair that signs the request.
  std::string user;
  std::string password;
  std::string aws_sigv4;
  // The server may keep a slow answer alive with filler while it works
  // (S3's CompleteMultipartUpload sends a space now and then): the answer
  // is not held to the low-speed limit, only to the timeout.
  bool keepalive = false;
};

struct Reply {
  long status = 0;
  std::string body;  // unless it went to Request::download; at most 4 MiB
  // Each header of the final reply, by its name in lower case.
  std::map<std::string, std::string> headers;
  // The bytes Request::download took (after Request::resume_from).
  uint64_t received = 0;
};

class Client {
 public:
  // `timeout`: seconds a request may go without a byte moving (whole
  // seconds, at least 1: curl's unit); `low_speed`: the slowest a body may
  // go up or come down (the time the server takes before it answers is
  // the timeout's).
  Client(double timeout, LowSpeed low_speed);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `request` and waits for the whole reply. Only an http or https
  // URL is asked (InvalidArgument before anything is sent for another),
  // and a redirect is not followed (it is the reply). A failure to reach the
  // server, a timeout or a trickle is an IoError (after a timeout or a
  // trickle, every later request of this client fails at once: a server
  // that stopped answering is not asked again); a body past its limit, or
  // the error of its sink, is that error. Any HTTP status is a Reply.
  // Thread-safe.
  Result<Reply> Send(const Request& request);

 private:
  void* Take();
  void Give(void* handle);
  const double timeout_;
  const LowSpeed low_speed_;
  std::mutex mu_;  // guards idle_ and stalled_
  std::vector<void*> idle_;
  Status stalled_;
};

// The SHA-256 of bytes [from, from + n) of `source`, in hex (S3 signs
// bodies with it; a Git LFS server names objects by it).
Result<std::string> Sha256(const ByteSource& source, uint64_t from, uint64_t n);

// Whether `url` is http:// or https:// (any case): the only links a
// remote's requests follow.
bool IsHttpUrl(const std::string& url);

// The part of `url` that is safe to print: RedactUrl's (lib/base/redact.h).
std::string Redacted(const std::string& url);

}  // namespace zipnn::http
