#include "lib/remote/s3.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <pwd.h>
#include <unistd.h>

#include <strings.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "lib/base/buffer.h"
#include "lib/base/io.h"
#include "lib/base/thread_pool.h"

namespace zipnn::s3 {

namespace {

constexpr char kEmptySha256[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr size_t kMaxErrorBody = 64 << 10;
constexpr uint64_t kMaxParts = 10000;  // S3's limit per upload
constexpr int kHeadsAtOnce = 8;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

std::string Home() {
  std::string home = Env("HOME");
  if (home.empty()) {
    const passwd* pw = ::getpwuid(::getuid());
    if (pw != nullptr && pw->pw_dir != nullptr) home = pw->pw_dir;
  }
  return home;
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// The keys of one section of an AWS ini file ("[name]", or "[profile
// name]" in the config file); empty when the file or section is absent.
std::vector<std::pair<std::string, std::string>> IniSection(const std::string& path, const std::string& section) {
  std::vector<std::pair<std::string, std::string>> keys;
  std::ifstream in(path);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      const std::string name = Trim(line.substr(1, line.size() - 2));
      inside = name == section || name == "profile " + section;
      continue;
    }
    const size_t eq = line.find('=');
    if (inside && eq != std::string::npos) keys.emplace_back(Trim(line.substr(0, eq)), Trim(line.substr(eq + 1)));
  }
  return keys;
}

std::string Lookup(const std::vector<std::pair<std::string, std::string>>& keys, const std::string& key) {
  for (const auto& [k, v] : keys) {
    if (k == key) return v;
  }
  return "";
}

std::string Profile() {
  const std::string p = Env("AWS_PROFILE");
  return p.empty() ? "default" : p;
}

std::string Hex(const unsigned char* bytes, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (size_t i = 0; i < n; ++i) {
    hex += kDigits[bytes[i] >> 4];
    hex += kDigits[bytes[i] & 15];
  }
  return hex;
}

// SHA-256 of bytes [from, from + n) of `source`, in hex.
Result<std::string> Sha256(const ByteSource& source, uint64_t from, uint64_t n) {
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return IoError("cannot start SHA-256");
  Buffer block(1 << 20);
  for (uint64_t at = 0; at < n; at += block.size()) {
    const size_t k = static_cast<size_t>(std::min<uint64_t>(block.size(), n - at));
    ZIPNN_RETURN_IF_ERROR(source.ReadAt(from + at, block.data(), k));
    EVP_DigestUpdate(ctx.get(), block.data(), k);
  }
  unsigned char digest[32];
  unsigned int size = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &size);
  return Hex(digest, size);
}

Result<std::string> Sha256(const std::string& text) {
  MemorySource source(reinterpret_cast<const uint8_t*>(text.data()), text.size(), "request");
  return Sha256(source, 0, text.size());
}

// RFC 3986: unreserved characters as they are, everything else %XX (what
// SigV4's canonical query expects).
std::string UriEncode(const std::string& s) {
  std::string out;
  char hex[4];
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// The text of the first <tag>...</tag> in an XML reply ("" if none).
std::string XmlField(const std::string& xml, const std::string& tag) {
  const size_t open = xml.find("<" + tag + ">");
  if (open == std::string::npos) return "";
  const size_t from = open + tag.size() + 2;
  const size_t close = xml.find("</" + tag + ">", from);
  return close == std::string::npos ? "" : xml.substr(from, close - from);
}

struct Reply {
  long status = 0;
  std::string body;  // unless it went to the sink
  std::string etag;
};

// What a request sends and where its reply's body goes.
struct Transfer {
  const ByteSource* upload = nullptr;  // bytes [from, from + size) are the body
  uint64_t from = 0;
  uint64_t size = 0;
  ByteSink* download = nullptr;  // the body of a 200 reply goes here
  uint64_t limit = UINT64_MAX;   // the most bytes it may take
  uint64_t received = 0;
  // Filled in by the callbacks.
  CURL* handle = nullptr;
  uint64_t sent = 0;
  Status failed;
  Reply reply;
  // The object's bytes as they move, held to the low-speed limit.
  RateMeter meter;
  uint64_t up_seen = 0, down_seen = 0;
  bool too_slow = false;
};

// curl's progress callback (about once a second, and as bytes move).
// Measured are a body going up, and one of known length coming down (an
// object): not the time between (the server thinking), nor an answer of
// unknown length (S3 keeps a long CompleteMultipartUpload alive with a
// space now and then). Returning non-zero aborts the request.
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
  } else if (dltotal > 0 && (down > 0 || (dlnow > 0 && dlnow < dltotal))) {
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
  const size_t n = static_cast<size_t>(std::min<uint64_t>(size * count, t->size - t->sent));
  if (n == 0) return 0;
  t->failed = t->upload->ReadAt(t->from + t->sent, out, n);
  if (!t->failed.ok()) return CURL_READFUNC_ABORT;
  t->sent += n;
  return n;
}

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &status);
  if (status == 200 && t->download != nullptr) {
    // A body longer than it may be, or a sink that fails, ends the
    // transfer at once (returning less than was given aborts it).
    if (n > t->limit - t->received) {
      t->failed = Corruption("the server sent more than the " + std::to_string(t->limit) +
                             " bytes the object's checkpoint can take");
      return 0;
    }
    t->received += n;
    t->failed = t->download->Append(data, n);
    return t->failed.ok() ? n : 0;
  }
  if (t->reply.body.size() < kMaxErrorBody) t->reply.body.append(data, std::min(n, kMaxErrorBody));
  return n;
}

size_t ReadHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string line(data, size * count);
  if (line.size() > 5 && strncasecmp(line.c_str(), "etag:", 5) == 0) t->reply.etag = Trim(line.substr(5));
  // An object announced larger than it may be is refused before its body.
  long status = 0;
  curl_easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &status);
  if (status == 200 && t->download != nullptr && line.size() > 15 &&
      strncasecmp(line.c_str(), "content-length:", 15) == 0) {
    const unsigned long long length = std::strtoull(line.c_str() + 15, nullptr, 10);
    if (length > t->limit) {
      t->failed = Corruption("the server offered " + std::to_string(length) + " bytes, more than the " +
                             std::to_string(t->limit) + " the object's checkpoint can take");
      return 0;
    }
  }
  return size * count;
}

class Bucket : public remote::RemoteStore {
 public:
  Bucket(std::string where, Options o) : where_(std::move(where)), o_(std::move(o)) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    sigv4_ = "aws:amz:" + o_.region + ":s3";
    std::string endpoint = o_.endpoint;  // "http://host:9000/" as "http://host:9000"
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    base_ = o_.endpoint.empty() ? "https://" + o_.location.bucket + ".s3." + o_.region + ".amazonaws.com"
                                : endpoint + "/" + o_.location.bucket;
  }
  ~Bucket() override {
    for (CURL* h : idle_) curl_easy_cleanup(h);
  }

  const std::string& where() const override { return where_; }

  Result<std::vector<bool>> Has(const std::vector<ContentId>& ids) override {
    std::vector<bool> has(ids.size());
    ThreadPool pool(std::min<int>(kHeadsAtOnce, static_cast<int>(std::max<size_t>(1, ids.size()))));
    ZIPNN_RETURN_IF_ERROR(RunOrdered<bool>(
        pool, ids.size(),
        [&](size_t i) -> Result<bool> {
          Transfer t;
          ZIPNN_ASSIGN_OR_RETURN(Reply r, Send("HEAD", Url(Key(ids[i])), kEmptySha256, t));
          if (r.status == 404) return false;
          if (r.status != 200) return Failure("cannot look for object " + ids[i].Hex(), r);
          return true;
        },
        [&](size_t i, bool held) -> Status {
          has[i] = held;
          return OkStatus();
        }));
    return has;
  }

  Status Put(const ContentId& id, const ByteSource& object) override {
    const std::string key = Key(id);
    if (object.size() > o_.part_size) return PutInParts(key, object);
    ZIPNN_ASSIGN_OR_RETURN(std::string hash, Sha256(object, 0, object.size()));
    Transfer t;
    t.upload = &object;
    t.size = object.size();
    ZIPNN_ASSIGN_OR_RETURN(Reply r, Send("PUT", Url(key), hash, t));
    if (r.status != 200) return Failure("upload refused", r);
    return OkStatus();
  }

  Status Get(const ContentId& id, uint64_t limit, ByteSink& out) override {
    Transfer t;
    t.download = &out;
    t.limit = limit;
    ZIPNN_ASSIGN_OR_RETURN(Reply r, Send("GET", Url(Key(id)), kEmptySha256, t));
    if (r.status == 404 && XmlField(r.body, "Code") != "NoSuchBucket") {
      return NotFound("object " + id.Hex() + " is not there");
    }
    if (r.status != 200) return Failure("download refused", r);
    return OkStatus();
  }

 private:
  std::string Key(const ContentId& id) const {
    const std::string hex = id.Hex();
    const std::string name = hex.substr(0, 2) + "/" + hex.substr(2, 2) + "/" + hex;
    return o_.location.prefix.empty() ? name : o_.location.prefix + "/" + name;
  }

  // `query` must be canonical already (sorted, encoded): curl signs it as
  // it is.
  std::string Url(const std::string& key, const std::string& query = "") const {
    std::string path;
    size_t at = 0;
    while (at <= key.size()) {  // each segment encoded, the slashes kept
      const size_t slash = std::min(key.find('/', at), key.size());
      path += "/" + UriEncode(key.substr(at, slash - at));
      at = slash + 1;
    }
    return base_ + path + (query.empty() ? "" : "?" + query);
  }

  // Up in parts: start an upload, send each part with its own hash, then
  // name the parts to complete it; an upload that fails is aborted so the
  // server drops its parts.
  Status PutInParts(const std::string& key, const ByteSource& object) {
    const uint64_t part = std::max(o_.part_size, (object.size() + kMaxParts - 1) / kMaxParts);
    Transfer start;
    ZIPNN_ASSIGN_OR_RETURN(Reply started, Send("POST", Url(key, "uploads="), kEmptySha256, start));
    const std::string upload = XmlField(started.body, "UploadId");
    if (started.status != 200 || upload.empty()) return Failure("cannot start an upload in parts", started);
    const std::string id_query = "uploadId=" + UriEncode(upload);
    Status done = [&]() -> Status {
      std::string parts;
      int number = 1;
      for (uint64_t from = 0; from < object.size(); from += part, ++number) {
        Transfer t;
        t.upload = &object;
        t.from = from;
        t.size = std::min(part, object.size() - from);
        ZIPNN_ASSIGN_OR_RETURN(std::string hash, Sha256(object, t.from, t.size));
        ZIPNN_ASSIGN_OR_RETURN(Reply r,
                               Send("PUT", Url(key, "partNumber=" + std::to_string(number) + "&" + id_query), hash, t));
        if (r.status != 200 || r.etag.empty()) return Failure("part " + std::to_string(number) + " refused", r);
        parts += "<Part><PartNumber>" + std::to_string(number) + "</PartNumber><ETag>" + r.etag + "</ETag></Part>";
      }
      const std::string xml = "<CompleteMultipartUpload>" + parts + "</CompleteMultipartUpload>";
      ZIPNN_ASSIGN_OR_RETURN(std::string hash, Sha256(xml));
      MemorySource body(reinterpret_cast<const uint8_t*>(xml.data()), xml.size(), "request");
      Transfer t;
      t.upload = &body;
      t.size = xml.size();
      ZIPNN_ASSIGN_OR_RETURN(Reply r, Send("POST", Url(key, id_query), hash, t));
      // S3 may say 200 and put the error in the body.
      if (r.status != 200 || r.body.find("<Error>") != std::string::npos)
        return Failure("cannot complete the upload", r);
      return OkStatus();
    }();
    if (!done.ok()) {
      Transfer abort;
      (void)Send("DELETE", Url(key, id_query), kEmptySha256, abort);
    }
    return done;
  }

  // What a reply that is not a success means: S3's code and message; a
  // server error or throttling may pass on a retry, anything else will not.
  Status Failure(const std::string& what, const Reply& r) const {
    const std::string code = XmlField(r.body, "Code"), message = XmlField(r.body, "Message");
    std::string text = what + ": HTTP " + std::to_string(r.status);
    if (!code.empty()) text += " " + code;
    if (!message.empty()) text += " (" + message + ")";
    if (code.empty() && r.status == 403) text += " (access denied: check the credentials and the bucket's policy)";
    if (r.status >= 500 || r.status == 408 || r.status == 429) return IoError(text);
    return InvalidArgument(text);
  }

  Result<Reply> Send(const std::string& method, const std::string& url, const std::string& payload_hash, Transfer& t) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!stalled_.ok()) return stalled_;  // a server that stopped answering is not asked again
    }
    CURL* h = Take();
    if (h == nullptr) return IoError("cannot start curl");
    t.handle = h;
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, ("x-amz-content-sha256: " + payload_hash).c_str());
    if (!o_.credentials.session_token.empty()) {
      headers = curl_slist_append(headers, ("x-amz-security-token: " + o_.credentials.session_token).c_str());
    }
    if (method == "POST") headers = curl_slist_append(headers, "Content-Type: application/xml");
    char error[CURL_ERROR_SIZE] = "";
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
    // A server that sends nothing for the timeout, connecting or later,
    // ends the request.
    const long timeout = std::max(1L, static_cast<long>(o_.timeout + 0.5));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, timeout);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, timeout);
    // One that trickles ends it too: too few bytes a second over a window.
    t.meter = RateMeter(o_.low_speed);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, Progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &t);
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4_.c_str());
    curl_easy_setopt(h, CURLOPT_USERNAME, o_.credentials.key_id.c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, o_.credentials.secret.c_str());
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WriteBody);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, ReadHeader);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
    if (method == "HEAD") {
      curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (method == "PUT") {
      curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(t.size));
    } else if (method == "POST") {
      curl_easy_setopt(h, CURLOPT_POST, 1L);
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t.size));
    } else if (method != "GET") {
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method.c_str());
    }
    if (t.upload != nullptr || method == "POST") {
      static const MemorySource kNothing(nullptr, 0, "request");
      if (t.upload == nullptr) t.upload = &kNothing;
      curl_easy_setopt(h, CURLOPT_READFUNCTION, ReadBody);
      curl_easy_setopt(h, CURLOPT_READDATA, &t);
    }
    const CURLcode code = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &t.reply.status);
    curl_slist_free_all(headers);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
    if (code != CURLE_OK) {
      curl_easy_cleanup(h);  // its connection may be in any state
      if (t.too_slow) {      // as good as stopped: not asked again
        Status failed = IoError(method + " " + url + ": the server is " + t.failed.message());
        std::lock_guard<std::mutex> lock(mu_);
        stalled_ = failed;
        return failed;
      }
      if (!t.failed.ok()) return t.failed;
      Status failed = IoError(method + " " + url + ": " + (error[0] != '\0' ? error : curl_easy_strerror(code)));
      if (code == CURLE_OPERATION_TIMEDOUT) {
        failed = IoError(failed.message() + " (the timeout: GIT_ZIPNN_TIMEOUT, or git config zipnn.timeout)");
        std::lock_guard<std::mutex> lock(mu_);
        stalled_ = failed;
      }
      return failed;
    }
    Give(h);
    return std::move(t.reply);
  }

  CURL* Take() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        CURL* h = idle_.back();
        idle_.pop_back();
        return h;
      }
    }
    return curl_easy_init();
  }
  void Give(CURL* h) {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back(h);
  }

  const std::string where_;
  const Options o_;
  std::string sigv4_;
  std::string base_;
  std::mutex mu_;  // guards idle_ and stalled_
  std::vector<CURL*> idle_;
  Status stalled_;
};

}  // namespace

Result<Location> ParseUrl(const std::string& url) {
  if (url.rfind("s3://", 0) != 0) return InvalidArgument(url + ": not an s3:// URL");
  const std::string rest = url.substr(5);
  const size_t slash = std::min(rest.find('/'), rest.size());
  Location l;
  l.bucket = rest.substr(0, slash);
  l.prefix = slash < rest.size() ? rest.substr(slash + 1) : "";
  while (!l.prefix.empty() && l.prefix.back() == '/') l.prefix.pop_back();
  while (!l.prefix.empty() && l.prefix.front() == '/') l.prefix.erase(0, 1);
  if (l.bucket.empty() || l.bucket.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-") != std::string::npos) {
    return InvalidArgument(url + ": \"" + l.bucket + "\" is not an S3 bucket name");
  }
  // curl resolves "." and ".." in a request's path: such a prefix would
  // address other keys, or with ".." another bucket, than the URL names.
  const std::string segments = "/" + l.prefix + "/";
  if (segments.find("/./") != std::string::npos || segments.find("/../") != std::string::npos) {
    return InvalidArgument(url + ": a prefix may not hold \".\" or \"..\" between its slashes");
  }
  return l;
}

Result<Credentials> FindCredentials() {
  Credentials c{Env("AWS_ACCESS_KEY_ID"), Env("AWS_SECRET_ACCESS_KEY"), Env("AWS_SESSION_TOKEN")};
  if (!c.key_id.empty() && !c.secret.empty()) return c;
  std::string file = Env("AWS_SHARED_CREDENTIALS_FILE");
  if (file.empty()) file = Home() + "/.aws/credentials";
  const auto keys = IniSection(file, Profile());
  c = Credentials{Lookup(keys, "aws_access_key_id"), Lookup(keys, "aws_secret_access_key"),
                  Lookup(keys, "aws_session_token")};
  if (!c.key_id.empty() && !c.secret.empty()) return c;
  return NotFound("no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give profile \"" + Profile() +
                  "\" aws_access_key_id and aws_secret_access_key in " + file);
}

std::string FindRegion() {
  for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    if (!Env(name).empty()) return Env(name);
  }
  std::string file = Env("AWS_CONFIG_FILE");
  if (file.empty()) file = Home() + "/.aws/config";
  const std::string region = Lookup(IniSection(file, Profile()), "region");
  return region.empty() ? "us-east-1" : region;
}

std::unique_ptr<remote::RemoteStore> Remote(std::string where, Options options) {
  return std::make_unique<Bucket>(std::move(where), std::move(options));
}

}  // namespace zipnn::s3
