#include "lib/remote/http.h"

#include <curl/curl.h>
#include <strings.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

#include "lib/base/buffer.h"
#include "lib/base/lazy_library.h"
#include "lib/base/redact.h"
#include "lib/base/strings.h"
#include "lib/remote/lfs_files.h"

namespace zipnn::http {

// libcurl is loaded when the first request needs it
// (lib/base/lazy_library.h): every command that speaks no HTTP starts
// without its TLS, Kerberos and LDAP libraries.
inline constexpr char kLibcurl[] = "libcurl.so.4";
ZIPNN_LAZY(kLibcurl, curl_global_init)
ZIPNN_LAZY(kLibcurl, curl_easy_init)
ZIPNN_LAZY(kLibcurl, curl_easy_reset)
ZIPNN_LAZY(kLibcurl, curl_easy_cleanup)
ZIPNN_LAZY(kLibcurl, curl_easy_setopt)
ZIPNN_LAZY(kLibcurl, curl_easy_getinfo)
ZIPNN_LAZY(kLibcurl, curl_easy_perform)
ZIPNN_LAZY(kLibcurl, curl_easy_strerror)
ZIPNN_LAZY(kLibcurl, curl_slist_append)
ZIPNN_LAZY(kLibcurl, curl_slist_free_all)

namespace {

constexpr size_t kMaxBody = size_t{4} << 20;

// The only schemes a request may use, its first and any other (curl's
// names): a link a server hands out is not to reach a file, another
// protocol or a service on this machine that speaks one.
constexpr char kSchemes[] = "http,https";

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// One request as it runs: what it sends, where its reply goes, and what
// the callbacks found.
struct Transfer {
  const Request* request = nullptr;
  CURL* handle = nullptr;
  uint64_t sent = 0;
  Status failed;
  Reply reply;
  // The body's bytes as they move, held to the low-speed limit.
  RateMeter meter;
  uint64_t up_seen = 0, down_seen = 0;
  bool too_slow = false;
  uint64_t dropped = 0;  // of a whole body sent to a request that resumed
  bool began = false;    // Request::before_body was called
};

bool BodyToSink(const Transfer& t) {
  long status = 0;
  curl_easy_getinfo(t.handle, CURLINFO_RESPONSE_CODE, &status);
  return t.request->download != nullptr && (status == 200 || status == 206);
}

// Whether the reply is the whole object where a part was asked for.
bool WholeForPart(const Transfer& t) {
  long status = 0;
  curl_easy_getinfo(t.handle, CURLINFO_RESPONSE_CODE, &status);
  return t.request->range_size > 0 && status == 200;
}
const char kNoRanges[] = "the server does not serve parts of objects (HTTP range requests)";

// curl's progress callback (about once a second, and as bytes move).
// Measured are a body going up, and one coming down once its first byte
// came, of known length or not (a server that drips an answer a byte a
// second is as stopped as one that sends nothing): not the time between
// (the server thinking), nor an answer that may be kept alive with filler
// (Request::keepalive). Returning non-zero aborts the request.
int Progress(void* user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
  auto* t = static_cast<Transfer*>(user);
  const uint64_t up = static_cast<uint64_t>(ulnow) - std::min<uint64_t>(t->up_seen, ulnow);
  const uint64_t down = static_cast<uint64_t>(dlnow) - std::min<uint64_t>(t->down_seen, dlnow);
  t->up_seen = static_cast<uint64_t>(ulnow);
  t->down_seen = static_cast<uint64_t>(dlnow);
  Status st;
  if (ultotal > 0 && (up > 0 || ulnow < ultotal)) {
    st = t->meter.Moved(up);
    if (ulnow >= ultotal) t->meter.Pause();  // all sent: the answer is the server's to think about
  } else if (!t->request->keepalive && dlnow > 0 && (down > 0 || dltotal == 0 || dlnow < dltotal)) {
    st = t->meter.Moved(down);
  } else {
    t->meter.Pause();
  }
  if (st.ok()) return 0;
  t->failed = st;
  t->too_slow = true;
  return 1;
}

size_t ReadBody(char* out, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const Request& r = *t->request;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(size * count, r.size - t->sent));
  if (n == 0) return 0;
  t->failed = r.upload->ReadAt(r.from + t->sent, out, n);
  if (!t->failed.ok()) return CURL_READFUNC_ABORT;
  t->sent += n;
  return n;
}

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (BodyToSink(*t)) {
    const Request& r = *t->request;
    size_t skip = 0;
    if (WholeForPart(*t)) {
      t->failed = Unsupported(kNoRanges);
      return 0;
    }
    if (!t->began) {
      t->began = true;
      if (r.before_body) {
        long status = 0;
        curl_easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &status);
        t->failed = r.before_body(status, t->reply.headers);
        if (!t->failed.ok()) return 0;
      }
    }
    if ((r.resume_from > 0 || r.range_size > 0) && t->reply.received == 0) {
      long status = 0;
      curl_easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &status);
      if (status == 200) {  // the whole object: what the sink holds is dropped
        skip = static_cast<size_t>(std::min<uint64_t>(n, r.resume_from - t->dropped));
        t->dropped += skip;
      } else if (t->reply.headers["content-range"].rfind("bytes " + std::to_string(r.resume_from) + "-", 0) != 0) {
        const std::string last = r.range_size > 0 ? std::to_string(r.resume_from + r.range_size - 1) : "";
        const std::string& sent = t->reply.headers["content-range"];
        t->failed = Corruption(
            "the server answered a request for bytes " + std::to_string(r.resume_from) + "-" + last +
            (sent.empty() ? " with HTTP " + std::to_string(status) + " and no Content-Range to say which bytes it sent"
                          : " with " + sent));
        return 0;
      }
    }
    // A body longer than it may be, or a sink that fails, ends the
    // transfer at once (returning less than was given aborts it).
    const size_t m = n - skip;
    if (m > r.limit - std::min(r.limit, r.resume_from + t->reply.received)) {
      t->failed = Corruption(
          r.range_size > 0
              ? "the server sent more than the " + std::to_string(r.range_size) + " bytes of the part asked for"
              : "the server sent more than the " + std::to_string(r.limit) + " bytes the object's checkpoint can take");
      return 0;
    }
    if (m == 0) return n;
    t->reply.received += m;
    t->failed = r.download->Append(data + skip, m);
    return t->failed.ok() ? n : 0;
  }
  // An answer past its bound ends the request: a server that sends
  // without end is not read for ever.
  if (n > kMaxBody - t->reply.body.size()) {
    t->failed = Corruption("the server's answer is longer than the " + std::to_string(kMaxBody >> 20) +
                           " MiB an answer may be");
    return 0;
  }
  t->reply.body.append(data, n);
  return n;
}

size_t ReadHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {  // a new reply (after a 100 Continue, say): its own headers
    t->reply.headers.clear();
    return size * count;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return size * count;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string value = Trim(line.substr(colon + 1));
  t->reply.headers[name] = value;
  // A body announced larger than it may be is refused before it comes.
  if (name == "content-length" && WholeForPart(*t)) {
    t->failed = Unsupported(kNoRanges);
    return 0;
  }
  if (name == "content-length" && BodyToSink(*t)) {
    const unsigned long long length = std::strtoull(value.c_str(), nullptr, 10);
    const Request& r = *t->request;
    if (r.range_size > 0 && length > r.range_size) {
      t->failed = Corruption("the server offered " + std::to_string(length) + " bytes for a part of " +
                             std::to_string(r.range_size) + " asked for");
      return 0;
    }
    if (length > r.limit) {
      t->failed = Corruption("the server offered " + std::to_string(length) + " bytes, more than the " +
                             std::to_string(r.limit) + " the object's checkpoint can take");
      return 0;
    }
  }
  return size * count;
}

}  // namespace

Client::Client(double timeout, LowSpeed low_speed) : timeout_(timeout), low_speed_(low_speed) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

Client::~Client() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* Client::Take() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void Client::Give(void* h) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(h);
}

Result<Reply> Client::Send(const Request& request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stalled_.ok()) return stalled_;  // a server that stopped answering is not asked again
  }
  if (!IsHttpUrl(request.url)) {
    return InvalidArgument("refused to send " + request.method + " to " + RedactUrl(request.url) +
                           ": a remote is spoken to over http or https only");
  }
  CURL* h = static_cast<CURL*>(Take());
  if (h == nullptr) return IoError("cannot start curl");
  Transfer t;
  t.request = &request;
  t.handle = h;
  curl_slist* headers = nullptr;
  for (const std::string& header : request.headers) headers = curl_slist_append(headers, header.c_str());
  if (request.resume_from > 0 || request.range_size > 0) {
    const std::string last = request.range_size > 0 ? std::to_string(request.resume_from + request.range_size - 1) : "";
    headers = curl_slist_append(headers, ("Range: bytes=" + std::to_string(request.resume_from) + "-" + last).c_str());
  }
  char error[CURL_ERROR_SIZE] = "";
  curl_easy_reset(h);
  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, kSchemes);
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, kSchemes);
  // A redirect is an answer of its own (3xx), not followed: where it
  // points was not vouched for by whoever gave the link.
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
  // A server that sends nothing for the timeout, connecting or later,
  // ends the request.
  const long timeout = std::max(1L, static_cast<long>(timeout_ + 0.5));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, timeout);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, timeout);
  // One that trickles ends it too: too few bytes a second over a window.
  t.meter = RateMeter(low_speed_);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, Progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &t);
  if (!request.aws_sigv4.empty()) curl_easy_setopt(h, CURLOPT_AWS_SIGV4, request.aws_sigv4.c_str());
  if (!request.user.empty() || !request.password.empty()) {
    curl_easy_setopt(h, CURLOPT_USERNAME, request.user.c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, request.password.c_str());
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, ReadHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
  const std::string& method = request.method;
  if (method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (method == "PUT") {
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.size));
  } else if (method == "POST") {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.size));
  } else if (method != "GET") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  static const MemorySource kNothing(nullptr, 0, "request");
  Request empty_body;
  if (request.upload == nullptr && method == "POST") {
    empty_body = request;
    empty_body.upload = &kNothing;
    empty_body.size = 0;
    t.request = &empty_body;
  }
  if (t.request->upload != nullptr) {
    curl_easy_setopt(h, CURLOPT_READFUNCTION, ReadBody);
    curl_easy_setopt(h, CURLOPT_READDATA, &t);
  }
  const CURLcode code = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &t.reply.status);
  curl_slist_free_all(headers);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  if (code != CURLE_OK) {
    curl_easy_cleanup(h);  // its connection may be in any state
    const std::string what = method + " " + RedactUrl(request.url);
    if (t.too_slow) {  // as good as stopped: not asked again
      Status failed = IoError(what + ": the server is " + t.failed.message());
      std::lock_guard<std::mutex> lock(mu_);
      stalled_ = failed;
      return failed;
    }
    if (!t.failed.ok()) return t.failed;
    Status failed = IoError(what + ": " + RedactSecrets(error[0] != '\0' ? error : curl_easy_strerror(code)));
    if (code == CURLE_OPERATION_TIMEDOUT) {
      failed = WithHint(failed, " (the timeout: GIT_ZIPNN_TIMEOUT, or git config zipnn.timeout)");
      std::lock_guard<std::mutex> lock(mu_);
      stalled_ = failed;
    }
    return failed;
  }
  Give(h);
  return std::move(t.reply);
}

Result<std::string> Sha256(const ByteSource& source, uint64_t from, uint64_t n) {
  lfs::Sha256Hasher hash;
  Buffer block(1 << 20);
  for (uint64_t at = 0; at < n; at += block.size()) {
    const size_t k = static_cast<size_t>(std::min<uint64_t>(block.size(), n - at));
    ZIPNN_RETURN_IF_ERROR(source.ReadAt(from + at, block.data(), k));
    hash.Update(block.data(), k);
  }
  return hash.HexDigest();
}

bool IsHttpUrl(const std::string& url) {
  std::string scheme = url.substr(0, url.find("://") == std::string::npos ? 0 : url.find("://") + 3);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return scheme == "http://" || scheme == "https://";
}

std::string Redacted(const std::string& url) { return RedactUrl(url); }

}  // namespace zipnn::http
