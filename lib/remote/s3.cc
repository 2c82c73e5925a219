#include "lib/remote/s3.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "lib/base/buffer.h"
#include "lib/base/file.h"
#include "lib/base/io.h"
#include "lib/base/thread_pool.h"
#include "lib/container/format.h"
#include "lib/remote/http.h"
#include "lib/remote/partial.h"
#include "lib/store/base_note.h"
#include "lib/store/retention.h"

namespace zipnn::s3 {

namespace {

constexpr char kEmptySha256[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr uint64_t kMaxParts = 10000;  // S3's limit per upload
constexpr int kHeadsAtOnce = 8;
// The most of an object's start Stat reads to find the versions a delta
// references: its header and tables, which a real object keeps far below.
constexpr uint64_t kMaxStatBytes = uint64_t{64} << 20;

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

Result<std::string> Sha256(const std::string& text) {
  MemorySource source(reinterpret_cast<const uint8_t*>(text.data()), text.size(), "request");
  return http::Sha256(source, 0, text.size());
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

std::string Etag(const http::Reply& r) {
  const auto etag = r.headers.find("etag");
  return etag == r.headers.end() ? "" : etag->second;
}

// The word a kept download's name gives the copy it is of: the ETag's hex
// digits and '-' (quotes dropped), then '-' and the object's size; empty
// when the ETag is not such (the download is then not kept).
std::string CopyWord(const std::string& etag, uint64_t size) {
  std::string word;
  for (const char c : etag) {
    if (c == '"') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c)) && c != '-') return "";
    word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (word.empty() || word.size() > 80) return "";
  return word + "-" + std::to_string(size);
}

// The size of the whole object a GET's reply carries: the total of its
// Content-Range (206), else its Content-Length (200); 0 when not told.
uint64_t WholeSize(long status, const std::map<std::string, std::string>& headers) {
  const auto range = headers.find("content-range");
  if (status == 206 && range != headers.end()) {
    const size_t slash = range->second.rfind('/');
    return slash == std::string::npos ? 0 : std::strtoull(range->second.c_str() + slash + 1, nullptr, 10);
  }
  const auto length = headers.find("content-length");
  return status == 200 && length != headers.end() ? std::strtoull(length->second.c_str(), nullptr, 10) : 0;
}

bool ValidCopyWord(const std::string& word) {
  const size_t dash = word.rfind('-');
  return dash != std::string::npos && dash > 0 && dash + 1 < word.size() &&
         word.find_first_not_of("0123456789abcdef-") == std::string::npos &&
         word.find_first_not_of("0123456789", dash + 1) == std::string::npos;
}

// What an upload in parts did, noted as it goes, so that one cut short
// (the network, a timeout, a kill) is finished by the next push of the
// object to the same place: <dir>/<id>-<16 hex digits of the object's
// URL> holds a line "upload <UploadId> <part size> <URL>", then "<part
// number> <ETag> <SHA-256>" for each part S3 took, the SHA-256 being that
// of the bytes sent (which S3 checked them against). A part is taken as
// sent only when the bytes to send hash the same now, whatever file they
// come from. Locked (flock) while a push uses it: ok() is false when
// another holds it, or it cannot be made.
class UploadRecord {
 public:
  struct Part {
    std::string etag, sha256;
  };
  struct Noted {
    std::string upload;
    std::map<size_t, Part> parts;  // by number
  };

  // Kept as a download is (remote::Partial: locked, a plain file of one
  // link), named by the object and the hash of its URL.
  UploadRecord(const std::string& dir, const ContentId& id, std::string url)
      : url_(std::move(url)),
        file_(dir, id.Hex() + "-" + HashBytes(url_.data(), url_.size()).Hex().substr(0, 16), UINT64_MAX) {}
  bool ok() const { return file_.ok(); }

  // The upload it notes, if one of parts of `part` bytes to this URL.
  std::optional<Noted> Read(uint64_t part) const {
    const std::optional<std::string> text = ReadSmallFile(file_.path(), 4 << 20);
    if (!text) return std::nullopt;
    std::istringstream lines(*text);
    std::string line, word, url;
    Noted noted;
    uint64_t size = 0;
    if (!std::getline(lines, line)) return std::nullopt;
    std::istringstream head(line);
    if (!(head >> word >> noted.upload >> size >> url) || word != "upload" || size != part || url != url_) {
      return std::nullopt;
    }
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      size_t number = 0;
      Part p;
      if ((fields >> number >> p.etag >> p.sha256) && number >= 1 && number <= kMaxParts) noted.parts[number] = p;
    }
    return noted;
  }
  // Notes nothing (an upload S3 no longer has, or one not to go on with).
  Status Forget() { return file_.Restart(); }
  // A new upload of parts of `part` bytes, in place of what it noted.
  Status Start(const std::string& upload, uint64_t part) {
    ZIPNN_RETURN_IF_ERROR(Forget());
    return Note("upload " + upload + " " + std::to_string(part) + " " + url_ + "\n");
  }
  Status Took(size_t number, const std::string& etag, const std::string& sha256) {
    return Note(std::to_string(number) + " " + etag + " " + sha256 + "\n");
  }
  // The upload is done, or gone.
  void Remove() { file_.Done(OkStatus()); }

 private:
  Status Note(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);  // parts finish on several threads
    return file_.Keep(line.data(), line.size());
  }
  const std::string url_;
  remote::Partial file_;
  std::mutex mu_;
};

// Whether `word` may stand in a record's line: no space, no line break.
bool OneWord(const std::string& word) {
  return !word.empty() && word.size() <= 1024 && word.find_first_of(" \t\r\n") == std::string::npos;
}

// A sink that keeps what passes through it once it is told where
// (KeptGets: the copy is known from the reply's headers), and gives every
// byte to `out`.
class KeepOnceKnown : public ByteSink {
 public:
  explicit KeepOnceKnown(ByteSink& out) : out_(out) {}
  void KeepIn(remote::Partial* partial) { partial_ = partial; }
  Status Append(const void* data, size_t n) override {
    if (partial_ != nullptr) ZIPNN_RETURN_IF_ERROR(partial_->Keep(data, n));
    return out_.Append(data, n);
  }

 private:
  ByteSink& out_;
  remote::Partial* partial_ = nullptr;
};

// A sink that hands what it is given to the one it is told, once it is
// told (a download whose keeping is known from the reply's headers).
class ForwardSink : public ByteSink {
 public:
  void To(ByteSink* out) { out_ = out; }
  Status Append(const void* data, size_t n) override {
    if (out_ == nullptr) return Corruption("bytes came before the reply's headers were read");
    return out_->Append(data, n);
  }

 private:
  ByteSink* out_ = nullptr;
};

class Bucket : public remote::RemoteStore,
               public remote::SideFiles,
               public remote::Retention,
               public remote::KeptGets {
 public:
  Bucket(std::string where, Options o) : where_(std::move(where)), o_(std::move(o)), http_(o_.timeout, o_.low_speed) {
    sigv4_ = "aws:amz:" + o_.region + ":s3";
    std::string endpoint = o_.endpoint;  // "http://host:9000/" as "http://host:9000"
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    base_ = o_.endpoint.empty() ? "https://" + o_.location.bucket + ".s3." + o_.region + ".amazonaws.com"
                                : endpoint + "/" + o_.location.bucket;
  }

  const std::string& where() const override { return where_; }

  Result<std::vector<bool>> Has(const std::vector<ContentId>& ids) override {
    std::vector<bool> has(ids.size());
    ThreadPool pool(std::min<int>(kHeadsAtOnce, static_cast<int>(std::max<size_t>(1, ids.size()))));
    ZIPNN_RETURN_IF_ERROR(RunOrdered<bool>(
        pool, ids.size(),
        [&](size_t i) -> Result<bool> {
          ZIPNN_ASSIGN_OR_RETURN(http::Reply r, Send("HEAD", Url(Key(ids[i])), kEmptySha256));
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
    if (object.size() > o_.part_size) return PutInParts(key, object, nullptr);
    ZIPNN_ASSIGN_OR_RETURN(std::string hash, http::Sha256(object, 0, object.size()));
    http::Request t;
    t.upload = &object;
    t.size = object.size();
    ZIPNN_ASSIGN_OR_RETURN(http::Reply r, Send("PUT", Url(key), hash, t));
    if (r.status != 200) return Failure("upload refused", r);
    return OkStatus();
  }

  // An object in parts notes what its upload did (UploadRecord): an
  // upload cut short is not aborted, and the next push of the object to
  // the same place sends only the parts S3 did not take.
  Status PutFile(const ContentId& id, const ReadFile& object) override {
    if (object.size() <= o_.part_size || o_.uploads_dir.empty()) return Put(id, object);
    UploadRecord record(o_.uploads_dir, id, Url(Key(id)));
    return PutInParts(Key(id), object, record.ok() ? &record : nullptr);
  }

  Status Get(const ContentId& id, uint64_t limit, ByteSink& out) override {
    http::Request t;
    t.download = &out;
    t.limit = limit;
    ZIPNN_ASSIGN_OR_RETURN(http::Reply r, Send("GET", Url(Key(id)), kEmptySha256, t));
    if (r.status == 404 && XmlField(r.body, "Code") != "NoSuchBucket") {
      return NotFound("object " + id.Hex() + " is not there");
    }
    if (r.status != 200) return Failure("download refused", r);
    return OkStatus();
  }

  // The object lands in a file of its own in partial_dir,
  // <id>-<ETag>-<size>, which it takes its name from once proven; a try
  // that finds one kept asks for the bytes after it, of that same copy
  // (the reply's ETag and size must match; else what was kept is dropped
  // and the next try starts again), and one kept whole costs no request.
  // With several connections, an object moves in ranges on all of them at
  // once (GetSpread), unless an earlier try kept the start of it whole.
  Result<std::unique_ptr<remote::Partial>> GetKept(const ContentId& id, uint64_t limit, ByteSink& check) override {
    if (o_.connections > 1 && !remote::FindKept(o_.partial_dir, id, ValidCopyWord)) {
      std::optional<Result<std::unique_ptr<remote::Partial>>> spread = GetSpread(id, limit, check);
      if (spread) return std::move(*spread);
    }
    std::unique_ptr<remote::Partial> kept;
    std::string word;
    uint64_t size = 0;
    if (const std::optional<std::string> name = remote::FindKept(o_.partial_dir, id, ValidCopyWord)) {
      word = name->substr(id.Hex().size() + 1);
      size = std::strtoull(word.c_str() + word.rfind('-') + 1, nullptr, 10);
      kept = std::make_unique<remote::Partial>(o_.partial_dir, *name, size, /*any_size=*/true);
      if (!kept->ok()) return Unsupported("another process is downloading object " + id.Hex());
      if (kept->have() == 0 || size > limit) {
        if (kept->ok()) kept->Done(OkStatus());
        kept.reset();
      }
    }
    if (kept) ZIPNN_RETURN_IF_ERROR(kept->CopyTo(check));
    Carry(id.Hex(), kept ? kept->have() : 0);
    if (kept && kept->have() == size) return kept;  // whole already
    KeepOnceKnown sink(check);
    std::unique_ptr<remote::Partial> keeping;
    bool changed = false;
    http::Request t;
    t.download = &sink;
    t.limit = limit;
    t.resume_from = kept ? kept->have() : 0;
    t.before_body = [&](long status, const std::map<std::string, std::string>& headers) -> Status {
      const auto etag = headers.find("etag");
      const uint64_t whole = WholeSize(status, headers);
      const std::string got = etag == headers.end() || whole == 0 ? "" : CopyWord(etag->second, whole);
      if (kept) {
        if (got != word) {
          changed = true;
          return IoError("object " + id.Hex() + " changed on " + where_ + " since part of it was kept");
        }
        keeping = std::move(kept);
      } else if (!got.empty()) {
        keeping = std::make_unique<remote::Partial>(o_.partial_dir, id.Hex() + "-" + got, whole, /*any_size=*/true);
        if (!keeping->ok()) return Unsupported("another process is downloading object " + id.Hex());
        if (keeping && keeping->have() > 0) ZIPNN_RETURN_IF_ERROR(keeping->Restart());
      }
      sink.KeepIn(keeping.get());
      return OkStatus();
    };
    Result<http::Reply> r = Send("GET", Url(Key(id)), kEmptySha256, t);
    Status st = r.status();
    if (st.ok() && r->status == 404 && XmlField(r->body, "Code") != "NoSuchBucket") {
      st = NotFound("object " + id.Hex() + " is not there");
    } else if (st.ok() && r->status != 200 && r->status != 206) {
      st = Failure("download refused", *r);
    }
    // Not resumed: of another copy (dropped), or refused (a range S3 cannot
    // serve: dropped too, so that the next try starts again).
    if (kept) kept->Done(changed ? OkStatus() : st);
    if (!st.ok()) {
      if (keeping) keeping->Done(st);
      return st;
    }
    if (!keeping) return Unsupported("S3 named no copy of object " + id.Hex() + " to keep");
    return keeping;
  }

  // A download in ranges (remote::FetchSpread), o_.connections at once,
  // into <partial_dir>/<id>-<ETag>-<size>.spread. The first request asks
  // for the first 4 MiB and learns the object's size and copy (its ETag)
  // from the reply; an object no larger comes whole into a Partial. Every
  // later range's reply must name the same copy; another one drops what
  // was kept. nullopt when the server answers a ranged request with the
  // whole object (the caller downloads it whole).
  std::optional<Result<std::unique_ptr<remote::Partial>>> GetSpread(const ContentId& id, uint64_t limit,
                                                                    ByteSink& check) {
    using Got = Result<std::unique_ptr<remote::Partial>>;
    const std::string url = Url(Key(id)), stem = id.Hex() + "-";
    std::unique_ptr<remote::SpreadPartial> spread;
    std::string word;
    if (const std::optional<std::string> name = remote::FindSpread(o_.partial_dir, id, ValidCopyWord)) {
      spread = std::make_unique<remote::SpreadPartial>(o_.partial_dir, *name, 0);
      word = name->substr(stem.size());
      if (!spread->ok() && remote::FindSpread(o_.partial_dir, id, ValidCopyWord)) {
        return Got(Unsupported("another process is downloading object " + id.Hex()));
      }
      if (!spread->ok()) spread.reset();  // empty: it went
    }
    // The copy a reply names: its ETag and the object's size.
    auto copy_of = [](long status, const std::map<std::string, std::string>& headers) {
      const auto etag = headers.find("etag");
      const uint64_t whole = WholeSize(status, headers);
      return etag == headers.end() || whole == 0 ? std::string() : CopyWord(etag->second, whole);
    };
    if (!spread) {
      std::unique_ptr<remote::Partial> whole;
      std::unique_ptr<remote::KeepingSink> keeping;
      std::unique_ptr<PlacedSink> placed;
      ForwardSink first;
      http::Request t;
      t.download = &first;
      t.limit = limit;
      t.range_size = remote::kSpreadPart;
      t.before_body = [&](long status, const std::map<std::string, std::string>& headers) -> Status {
        word = copy_of(status, headers);
        if (status != 206 || word.empty()) return Unsupported("S3 sent no range, or named no copy, of " + id.Hex());
        const uint64_t size = WholeSize(status, headers);
        if (size <= remote::kSpreadPart) {
          whole = std::make_unique<remote::Partial>(o_.partial_dir, stem + word, size, /*any_size=*/true);
          if (!whole->ok()) return Unsupported("another process is downloading object " + id.Hex());
          if (whole->have() > 0) ZIPNN_RETURN_IF_ERROR(whole->Restart());
          keeping = std::make_unique<remote::KeepingSink>(check, *whole);
          first.To(keeping.get());
          return OkStatus();
        }
        spread = std::make_unique<remote::SpreadPartial>(o_.partial_dir, stem + word, size);
        if (!spread->ok()) return Unsupported("another process is downloading object " + id.Hex());
        placed = std::make_unique<PlacedSink>(
            [&](uint64_t at, const void* data, size_t n) { return spread->WriteAt(at, data, n); }, 0);
        first.To(placed.get());
        return OkStatus();
      };
      Result<http::Reply> r = Send("GET", url, kEmptySha256, t);
      Status st = r.status();
      if (st.ok() && r->status == 404 && XmlField(r->body, "Code") != "NoSuchBucket") {
        st = NotFound("object " + id.Hex() + " is not there");
      } else if (st.ok() && r->status != 206) {
        st = Failure("download refused", *r);
      }
      if (placed && placed->at() > 0) {
        const Status noted = spread->Noted(0, placed->at());
        if (st.ok()) st = noted;
      }
      if (!st.ok()) {
        if (whole) whole->Done(st);
        if (spread && st.code() != StatusCode::kIoError) spread->Drop();
        // A server that answers a range with the whole object: downloaded whole.
        if (st.code() == StatusCode::kUnsupported && !whole && !spread) return std::nullopt;
        return Got(st);
      }
      if (whole) return Got(std::move(whole));
    }
    // What an earlier try noted (of this copy, as every reply will show).
    Carry(id.Hex(), spread->earlier());
    Got got = FetchSpread(
        *spread, o_.partial_dir, stem + word, id, o_.connections,
        remote::SpreadRangeSize(spread->size(), o_.connections), /*resumable=*/true,
        [&](uint64_t from, uint64_t to, ByteSink& into, std::atomic<bool>& changed) -> Status {
          http::Request t;
          t.download = &into;
          t.limit = limit;
          t.resume_from = from;
          t.range_size = to - from;
          t.before_body = [&](long status, const std::map<std::string, std::string>& headers) {
            if (copy_of(status, headers) == word) return OkStatus();
            changed = true;
            return IoError("object " + id.Hex() + " changed on " + where_ + " while it was fetched");
          };
          ZIPNN_ASSIGN_OR_RETURN(http::Reply r, Send("GET", url, kEmptySha256, t));
          if (r.status == 404 && XmlField(r.body, "Code") != "NoSuchBucket") {
            return NotFound("object " + id.Hex() + " is not there");
          }
          if (r.status != 206) return Failure("download refused", r);
          return OkStatus();
        },
        check);
    return got;
  }

  remote::Capabilities capabilities() override {
    remote::Capabilities c;
    c.side_files = this;
    c.retention = this;
    if (!o_.partial_dir.empty()) c.kept_gets = this;
    return c;
  }

  // The size from a HEAD, the base from the header's bytes (a ranged GET),
  // and the versions a delta references from its tables (another).
  Result<std::optional<remote::Held>> Stat(const ContentId& id) override {
    ZIPNN_ASSIGN_OR_RETURN(http::Reply head, Send("HEAD", Url(Key(id)), kEmptySha256));
    if (head.status == 404) return std::optional<remote::Held>();
    if (head.status != 200) return Failure("cannot look for object " + id.Hex(), head);
    MemorySink bytes;
    http::Request t;
    t.download = &bytes;
    t.range_size = container::kHeaderBytes;
    ZIPNN_ASSIGN_OR_RETURN(http::Reply r, Send("GET", Url(Key(id)), kEmptySha256, t));
    if (r.status != 200 && r.status != 206) return Failure("cannot read the header of object " + id.Hex(), r);
    if (bytes.buffer().size() < container::kHeaderBytes) return Corruption("object " + id.Hex() + " is truncated");
    const container::HeaderFields h = container::DecodeHeader(bytes.buffer().data());
    remote::Held held;
    const auto length = head.headers.find("content-length");
    held.size = length == head.headers.end() ? 0 : std::strtoull(length->second.c_str(), nullptr, 10);
    if (h.kind == static_cast<uint8_t>(container::ObjectKind::kDelta)) held.base = h.base_id;
    if (held.base && h.reference_count > 0) {
      // The versions it references too: the reference table, after the
      // region table.
      const uint64_t start = container::kHeaderBytes + uint64_t{h.region_count} * container::kRegionEntryBytes;
      const uint64_t end = start + uint64_t{h.reference_count} * container::kReferenceEntryBytes;
      if (end > held.size || end > kMaxStatBytes) {
        return Corruption("object " + id.Hex() + " on " + where() + " has a header its size cannot hold");
      }
      MemorySink tables;
      http::Request whole;
      whole.download = &tables;
      whole.range_size = end;
      ZIPNN_ASSIGN_OR_RETURN(http::Reply got, Send("GET", Url(Key(id)), kEmptySha256, whole));
      if (got.status != 200 && got.status != 206) return Failure("cannot read the header of object " + id.Hex(), got);
      if (tables.buffer().size() < end) return Corruption("object " + id.Hex() + " is truncated");
      for (uint64_t at = start; at < end; at += container::kReferenceEntryBytes) {
        held.references.push_back(container::DecodeReferenceEntry(tables.buffer().data() + at).id);
      }
    }
    return std::optional<remote::Held>(held);
  }

  // S3 replaces an object whole on a PUT; what it is sent, the local
  // store proved.
  Status Replace(const ContentId& id, const ReadFile& object) override { return Put(id, object); }

  // ListObjectsV2, a page of keys at a time; only keys named as objects
  // are (<prefix>/<2 hex>/<2 hex>/<id>, the id's own digits).
  Result<std::vector<ContentId>> List() override {
    std::vector<ContentId> ids;
    const std::string prefix = o_.location.prefix.empty() ? "" : o_.location.prefix + "/";
    std::string token;
    for (int page = 0; page < 1000000; ++page) {
      std::string query = token.empty() ? "" : "continuation-token=" + UriEncode(token) + "&";
      query += "list-type=2";
      if (!prefix.empty()) query += "&prefix=" + UriEncode(prefix);
      http::Request t;
      MemorySink body;
      t.download = &body;
      t.limit = uint64_t{64} << 20;
      ZIPNN_ASSIGN_OR_RETURN(http::Reply r, Send("GET", base_ + "/?" + query, kEmptySha256, t));
      const std::vector<uint8_t> v = body.ToVector();
      const std::string xml(v.begin(), v.end());
      if (r.status != 200) {
        r.body = xml;
        return Failure("cannot list the bucket", r);
      }
      for (size_t at = 0; (at = xml.find("<Key>", at)) != std::string::npos;) {
        const size_t end = xml.find("</Key>", at);
        if (end == std::string::npos) break;
        const std::string key = xml.substr(at + 5, end - at - 5);
        at = end;
        if (key.compare(0, prefix.size(), prefix) != 0) continue;
        const std::string name = key.substr(prefix.size());
        if (name.size() != 6 + 32) continue;
        std::optional<ContentId> id = ContentId::FromHex(name.substr(6));
        if (id && Key(*id) == key) ids.push_back(*id);
      }
      if (XmlField(xml, "IsTruncated") != "true") return ids;
      token = XmlField(xml, "NextContinuationToken");
      if (token.empty()) return Corruption("the bucket's listing is truncated but names no continuation");
    }
    return ids;
  }

  Status Remove(const ContentId& id) override {
    ZIPNN_ASSIGN_OR_RETURN(http::Reply r, Send("DELETE", Url(Key(id)), kEmptySha256));
    if (r.status != 204 && r.status != 200 && r.status != 404) return Failure("cannot remove object " + id.Hex(), r);
    // Its base note goes with it, if it had one (one left behind explains
    // nothing, and is ignored).
    (void)Send("DELETE", Url(Key(id) + store::kBaseNoteSuffix), kEmptySha256);
    return OkStatus();
  }

  // Beside the object, under its key plus the kind's suffix.
  Status PutSide(remote::SideKind kind, const ContentId& id, const std::string& text) override {
    const remote::SideKindInfo& side = remote::Side(kind);
    return PutBeside(id, side.suffix, text, std::string(side.short_what) + " upload refused");
  }

  Result<std::optional<std::string>> GetSide(remote::SideKind kind, const ContentId& id) override {
    const remote::SideKindInfo& side = remote::Side(kind);
    return GetBeside(id, side.suffix, side.max_bytes, "cannot read the " + std::string(side.what) + " of " + id.Hex());
  }

 private:
  // A small text kept under the key of `id`'s object plus `suffix`.
  Status PutBeside(const ContentId& id, const char* suffix, const std::string& text, const std::string& refused) {
    const MemorySource body(reinterpret_cast<const uint8_t*>(text.data()), text.size(), id.Hex() + suffix);
    ZIPNN_ASSIGN_OR_RETURN(std::string hash, Sha256(text));
    http::Request t;
    t.upload = &body;
    t.size = text.size();
    ZIPNN_ASSIGN_OR_RETURN(http::Reply r, Send("PUT", Url(Key(id) + suffix), hash, t));
    if (r.status != 200) return Failure(refused, r);
    return OkStatus();
  }
  Result<std::optional<std::string>> GetBeside(const ContentId& id, const char* suffix, uint64_t limit,
                                               const std::string& failed) {
    MemorySink bytes;
    http::Request t;
    t.download = &bytes;
    t.limit = limit;
    ZIPNN_ASSIGN_OR_RETURN(http::Reply r, Send("GET", Url(Key(id) + suffix), kEmptySha256, t));
    if (r.status == 404) return std::optional<std::string>();
    if (r.status != 200) return Failure(failed, r);
    const std::vector<uint8_t> v = bytes.ToVector();
    return std::optional<std::string>(std::string(v.begin(), v.end()));
  }

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
  // With a `record`, the upload it notes goes on (the parts S3 took are
  // not sent again), and one that fails on the way (an I/O error: the
  // network, a timeout) is left for the next push to finish; without,
  // or when S3 refused, it is aborted, so that the bucket keeps no stray
  // parts.
  Status PutInParts(const std::string& key, const ByteSource& object, UploadRecord* record) {
    const uint64_t part = std::max(o_.part_size, (object.size() + kMaxParts - 1) / kMaxParts);
    const size_t count = static_cast<size_t>((object.size() + part - 1) / part);
    std::string upload;
    std::vector<std::string> etags(count);
    std::map<size_t, UploadRecord::Part> noted_parts;  // checked as they come up below
    if (record != nullptr) {
      if (std::optional<UploadRecord::Noted> noted = record->Read(part); noted && OneWord(noted->upload)) {
        upload = noted->upload;
        noted_parts = std::move(noted->parts);
      }
    }
    const bool resumed = !upload.empty();
    if (!resumed) {
      ZIPNN_ASSIGN_OR_RETURN(http::Reply started, Send("POST", Url(key, "uploads="), kEmptySha256));
      upload = XmlField(started.body, "UploadId");
      if (started.status != 200 || upload.empty()) return Failure("cannot start an upload in parts", started);
      if (record != nullptr && (!OneWord(upload) || !record->Start(upload, part).ok())) record = nullptr;
    }
    const std::string id_query = "uploadId=" + UriEncode(upload);
    bool completing = false;  // every part is in: the completion is asked for
    std::atomic<uint64_t> held{0};  // bytes of the parts S3 took before
    Status done = [&]() -> Status {
      ZIPNN_RETURN_IF_ERROR(RunAll(o_.connections, count, [&](size_t i) -> Status {
        http::Request t;
        t.upload = &object;
        t.from = i * part;
        t.size = std::min(part, object.size() - t.from);
        const std::string number = std::to_string(i + 1);
        ZIPNN_ASSIGN_OR_RETURN(std::string hash, http::Sha256(object, t.from, t.size));
        // S3 took these very bytes before: not sent again.
        const auto noted = noted_parts.find(i + 1);
        if (noted != noted_parts.end() && noted->second.sha256 == hash && OneWord(noted->second.etag)) {
          etags[i] = noted->second.etag;
          held += t.size;
          return OkStatus();
        }
        ZIPNN_ASSIGN_OR_RETURN(http::Reply r, Send("PUT", Url(key, "partNumber=" + number + "&" + id_query), hash, t));
        if (r.status != 200 || Etag(r).empty()) return Failure("part " + number + " refused", r);
        etags[i] = Etag(r);
        if (record != nullptr && OneWord(etags[i])) (void)record->Took(i + 1, etags[i], hash);
        return OkStatus();
      }));
      std::string parts;
      for (size_t i = 0; i < count; ++i) {
        parts += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + etags[i] + "</ETag></Part>";
      }
      completing = true;
      const std::string xml = "<CompleteMultipartUpload>" + parts + "</CompleteMultipartUpload>";
      ZIPNN_ASSIGN_OR_RETURN(std::string hash, Sha256(xml));
      MemorySource body(reinterpret_cast<const uint8_t*>(xml.data()), xml.size(), "request");
      http::Request t;
      t.upload = &body;
      t.size = xml.size();
      t.keepalive = true;  // S3 keeps a long completion alive with spaces
      ZIPNN_ASSIGN_OR_RETURN(http::Reply r, Send("POST", Url(key, id_query), hash, t));
      // S3 may say 200 and put the error in the body.
      if (r.status != 200 || r.body.find("<Error>") != std::string::npos)
        return Failure("cannot complete the upload", r);
      return OkStatus();
    }();
    // What S3 held of it before (fewer when this try stopped before it
    // looked at every part).
    Carry(key, held.load());
    if (done.ok()) {
      if (record != nullptr) record->Remove();
      return done;
    }
    // An upload noted from before that S3 no longer has (aborted, or
    // expired by the bucket's rules): once more, from the start.
    if (resumed && done.message().find("NoSuchUpload") != std::string::npos && record->Forget().ok()) {
      return PutInParts(key, object, record);
    }
    // A failure on the way is left for the next push to go on from; but
    // not an upload taken up again that S3 then would not complete (its
    // parts all sent): the next push starts afresh, so that no upload S3
    // keeps refusing blocks the object for good.
    if (record != nullptr && done.code() == StatusCode::kIoError && !(resumed && completing)) return done;
    (void)Send("DELETE", Url(key, id_query), kEmptySha256);
    if (record != nullptr) record->Remove();
    return done;
  }

  // What a reply that is not a success means: S3's code and message; a
  // server error or throttling may pass on a retry, anything else will not.
  Status Failure(const std::string& what, const http::Reply& r) const {
    const std::string code = XmlField(r.body, "Code"), message = XmlField(r.body, "Message");
    std::string text = what + ": HTTP " + std::to_string(r.status);
    if (!code.empty()) text += " " + code;
    if (!message.empty()) text += " (" + message + ")";
    if (code.empty() && r.status == 403) text += " (access denied: check the credentials and the bucket's policy)";
    if (r.status >= 500 || r.status == 408 || r.status == 429) return IoError(text);
    return InvalidArgument(text);
  }

  // A request signed with the bucket's key pair, its body (if any) the
  // bytes whose SHA-256 is `payload_hash`.
  Result<http::Reply> Send(const std::string& method, const std::string& url, const std::string& payload_hash,
                           http::Request r = {}) {
    r.method = method;
    r.url = url;
    r.headers.push_back("x-amz-content-sha256: " + payload_hash);
    if (!o_.credentials.session_token.empty()) {
      r.headers.push_back("x-amz-security-token: " + o_.credentials.session_token);
    }
    if (method == "POST") r.headers.push_back("Content-Type: application/xml");
    r.aws_sigv4 = sigv4_;
    r.user = o_.credentials.key_id;
    r.password = o_.credentials.secret;
    return http_.Send(r);
  }

  const std::string where_;
  const Options o_;
  http::Client http_;
  std::string sigv4_;
  std::string base_;
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
