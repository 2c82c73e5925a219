// Tests of the S3 store (lib/remote/s3.h) through its public header: s3:// URLs, where credentials
// and the region come from (environment and AWS files under a HOME of the
// test's own), and, against a fake endpoint in this process (fake_s3.h),
// what goes over the wire: path-style addresses with encoded keys, SigV4
// signatures checked with a reference signer that reproduces AWS's
// published example, payload hashes, uploads in parts, the error text of
// each kind of refusal, the size bound on downloads and a server that
// stops answering.
#include "lib/remote/s3.h"

#include <stdlib.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <map>
#include <optional>
#include <sstream>
#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "lib/base/content_id.h"
#include "lib/base/file.h"
#include "lib/base/io.h"
#include "lib/remote/fake_s3.h"
#include "lib/store/test_objects.h"

namespace zipnn::s3 {
namespace {

using testing::FakeS3;
using testing::Request;
using testing::Response;

// ---- URLs ----

TEST_CASE("an s3:// URL names a bucket and a prefix without slashes at either end") {
  const std::map<std::string, std::pair<std::string, std::string>> kCases = {
      {"s3://bucket", {"bucket", ""}},
      {"s3://bucket/", {"bucket", ""}},
      {"s3://my-bucket.v2/team/models", {"my-bucket.v2", "team/models"}},
      {"s3://b/team/models/", {"b", "team/models"}},
      {"s3://b///runs//", {"b", "runs"}},
      {"s3://b/a//b", {"b", "a//b"}},
  };
  for (const auto& [case_url, expected] : kCases) {
    const std::string url = case_url;  // a structured binding cannot be captured (clang)
    CAPTURE(url);
    auto l = ParseUrl(url);
    REQUIRE(l.ok());
    CHECK(l->bucket == expected.first);
    CHECK(l->prefix == expected.second);
  }
}

TEST_CASE("rejects URLs of other schemes and bucket names S3 does not allow, naming the URL") {
  const std::map<std::string, std::string> kCases = {
      {"https://bucket/x", "https://bucket/x: not an s3:// URL"},
      {"S3://bucket", "S3://bucket: not an s3:// URL"},
      {"bucket/prefix", "bucket/prefix: not an s3:// URL"},
      {"s3://", "s3://: \"\" is not an S3 bucket name"},
      {"s3:///prefix", "s3:///prefix: \"\" is not an S3 bucket name"},
      {"s3://My-Bucket/x", "s3://My-Bucket/x: \"My-Bucket\" is not an S3 bucket name"},
      {"s3://my_bucket", "s3://my_bucket: \"my_bucket\" is not an S3 bucket name"},
      {"s3://b ucket", "s3://b ucket: \"b ucket\" is not an S3 bucket name"},
  };
  for (const auto& [case_url, message] : kCases) {
    const std::string url = case_url;
    CAPTURE(url);
    auto l = ParseUrl(url);
    REQUIRE(!l.ok());
    CHECK(l.status().code() == StatusCode::kInvalidArgument);
    CHECK(l.status().message() == message);
  }
}

TEST_CASE("rejects a prefix with \".\" or \"..\" parts, which the request path would resolve away") {
  // curl resolves dot segments in a URL's path, so s3://bucket/../other
  // would read and write bucket "other", and a/./b the keys of a/b.
  for (const std::string url : {"s3://bucket/../other", "s3://bucket/..", "s3://bucket/a/./b", "s3://bucket/a/.."}) {
    CAPTURE(url);
    auto l = ParseUrl(url);
    REQUIRE(!l.ok());
    CHECK(l.status().code() == StatusCode::kInvalidArgument);
    CHECK(l.status().message() == url + ": a prefix may not hold \".\" or \"..\" between its slashes");
  }
  // Dots inside a name are names.
  for (const std::string url : {"s3://bucket/.hidden/v1.2", "s3://bucket/a/.../b", "s3://bucket/..a/b.."}) {
    CAPTURE(url);
    CHECK(ParseUrl(url).ok());
  }
}

// ---- Credentials and region ----

// Sets the variables the lookups read: every AWS_* variable they know is
// unset and HOME is a fresh folder, then `set` applies. Restores them all
// when it goes away.
class AwsEnvironment {
 public:
  explicit AwsEnvironment(std::initializer_list<std::pair<const char*, const char*>> set = {}) {
    const char* root = std::getenv("TEST_TMPDIR");
    home_ = std::string(root != nullptr ? root : "/tmp") + "/s3_test-XXXXXX";
    REQUIRE(::mkdtemp(home_.data()) != nullptr);
    for (const char* name : kNames) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old != nullptr ? std::optional<std::string>(old) : std::nullopt);
      ::unsetenv(name);
    }
    ::setenv("HOME", home_.c_str(), 1);
    for (const auto& [name, value] : set) ::setenv(name, value, 1);
  }
  AwsEnvironment(const AwsEnvironment&) = delete;
  AwsEnvironment& operator=(const AwsEnvironment&) = delete;
  ~AwsEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  const std::string& home() const { return home_; }

  // Writes `text` to `path` under HOME (folders made as needed).
  std::string Write(const std::string& path, const std::string& text) const {
    const std::string full = home_ + "/" + path;
    REQUIRE(MakeDirectories(full.substr(0, full.rfind('/'))).ok());
    auto file = AtomicFile::Create(full, /*overwrite=*/true);
    REQUIRE(file.ok());
    REQUIRE(file->Append(text.data(), text.size()).ok());
    REQUIRE(file->Commit().ok());
    return full;
  }

 private:
  static constexpr const char* kNames[] = {"HOME",
                                           "AWS_ACCESS_KEY_ID",
                                           "AWS_SECRET_ACCESS_KEY",
                                           "AWS_SESSION_TOKEN",
                                           "AWS_PROFILE",
                                           "AWS_SHARED_CREDENTIALS_FILE",
                                           "AWS_CONFIG_FILE",
                                           "AWS_REGION",
                                           "AWS_DEFAULT_REGION"};
  std::string home_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

constexpr char kCredentials[] =
    "# a comment\n"
    "[default]\n"
    "aws_access_key_id = DEFAULTKEY\n"
    "aws_secret_access_key=default/secret\n"
    "\n"
    "; another comment\n"
    "[work]\n"
    "  aws_access_key_id =   WORKKEY  \n"
    "aws_secret_access_key = work/secret\n"
    "aws_session_token = work-token\n"
    "[half]\n"
    "aws_access_key_id = HALFKEY\n";

TEST_CASE("credentials in the environment come before any file, with their session token") {
  AwsEnvironment env(
      {{"AWS_ACCESS_KEY_ID", "ENVKEY"}, {"AWS_SECRET_ACCESS_KEY", "env/secret"}, {"AWS_SESSION_TOKEN", "env-token"}});
  env.Write(".aws/credentials", kCredentials);
  auto c = FindCredentials();
  REQUIRE(c.ok());
  CHECK(c->key_id == "ENVKEY");
  CHECK(c->secret == "env/secret");
  CHECK(c->session_token == "env-token");
}

TEST_CASE("a key id without its secret in the environment is passed over for the file") {
  AwsEnvironment env({{"AWS_ACCESS_KEY_ID", "ENVKEY"}});
  env.Write(".aws/credentials", kCredentials);
  auto c = FindCredentials();
  REQUIRE(c.ok());
  CHECK(c->key_id == "DEFAULTKEY");
  CHECK(c->secret == "default/secret");
  CHECK(c->session_token.empty());
}

TEST_CASE("the credentials file gives the profile AWS_PROFILE names, trimmed, comments skipped") {
  AwsEnvironment env({{"AWS_PROFILE", "work"}});
  env.Write(".aws/credentials", kCredentials);
  auto c = FindCredentials();
  REQUIRE(c.ok());
  CHECK(c->key_id == "WORKKEY");
  CHECK(c->secret == "work/secret");
  CHECK(c->session_token == "work-token");
}

TEST_CASE("AWS_SHARED_CREDENTIALS_FILE replaces ~/.aws/credentials") {
  AwsEnvironment env;
  env.Write(".aws/credentials", kCredentials);
  const std::string elsewhere =
      env.Write("elsewhere.ini", "[default]\naws_access_key_id=OTHER\naws_secret_access_key=s\n");
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", elsewhere.c_str(), 1);
  auto c = FindCredentials();
  REQUIRE(c.ok());
  CHECK(c->key_id == "OTHER");
}

TEST_CASE("no credentials is NotFound, saying what to set and which profile and file were read") {
  AwsEnvironment env({{"AWS_PROFILE", "half"}});
  const std::string file = env.Write(".aws/credentials", kCredentials);
  auto c = FindCredentials();
  REQUIRE(!c.ok());
  CHECK(c.status().code() == StatusCode::kNotFound);
  CHECK(c.status().message() ==
        "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give profile \"half\" "
        "aws_access_key_id and aws_secret_access_key in " +
            file);

  AwsEnvironment empty;  // no file at all
  auto none = FindCredentials();
  REQUIRE(!none.ok());
  CHECK(none.status().message() ==
        "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give profile \"default\" "
        "aws_access_key_id and aws_secret_access_key in " +
            empty.home() + "/.aws/credentials");
}

constexpr char kConfig[] =
    "[default]\n"
    "region = eu-west-1\n"
    "[profile work]\n"
    "region = ap-south-2\n"
    "[profile noregion]\n"
    "output = json\n";

TEST_CASE("the region comes from AWS_REGION, then AWS_DEFAULT_REGION, then the profile's config") {
  {
    AwsEnvironment env({{"AWS_REGION", "us-west-2"}, {"AWS_DEFAULT_REGION", "eu-central-1"}});
    env.Write(".aws/config", kConfig);
    CHECK(FindRegion() == "us-west-2");
  }
  {
    AwsEnvironment env({{"AWS_DEFAULT_REGION", "eu-central-1"}});
    env.Write(".aws/config", kConfig);
    CHECK(FindRegion() == "eu-central-1");
  }
  {
    AwsEnvironment env;
    env.Write(".aws/config", kConfig);
    CHECK(FindRegion() == "eu-west-1");
    ::setenv("AWS_PROFILE", "work", 1);  // "[profile work]" in the config file
    CHECK(FindRegion() == "ap-south-2");
    ::setenv("AWS_PROFILE", "noregion", 1);
    CHECK(FindRegion() == "us-east-1");
  }
}

TEST_CASE("AWS_CONFIG_FILE replaces ~/.aws/config, and without any the region is us-east-1") {
  AwsEnvironment env;
  env.Write(".aws/config", kConfig);
  const std::string other = env.Write("other.ini", "[default]\nregion=sa-east-1\n");
  ::setenv("AWS_CONFIG_FILE", other.c_str(), 1);
  CHECK(FindRegion() == "sa-east-1");
  ::setenv("AWS_CONFIG_FILE", (env.home() + "/missing").c_str(), 1);
  CHECK(FindRegion() == "us-east-1");
}

// ---- SigV4 ----

constexpr char kEmptyHash[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

TEST_CASE("the reference signer reproduces AWS's published GET Object example") {
  // AWS's S3 documentation, "Signature calculations for the Authorization
  // header: transferring payload in a single chunk", Example: GET Object.
  const std::string canonical = testing::CanonicalRequest("GET", "/test.txt", "",
                                                          {{"host", "examplebucket.s3.amazonaws.com"},
                                                           {"range", "bytes=0-9"},
                                                           {"x-amz-content-sha256", kEmptyHash},
                                                           {"x-amz-date", "20130524T000000Z"}},
                                                          kEmptyHash);
  CHECK(testing::Sha256Hex(canonical) == "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  CHECK(testing::Signature("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524T000000Z", "us-east-1", canonical) ==
        "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

constexpr char kKeyId[] = "AKIDTEST";
constexpr char kSecret[] = "test/secret+key";

// Checks that `r` is signed for `region` with kKeyId and kSecret: the
// scope, the headers that must be signed, and the signature itself.
void CheckSigned(const Request& r, const std::string& region) {
  CAPTURE(r.method);
  CAPTURE(r.path);
  const std::string auth = r.Get("authorization");
  const std::string stamp = r.Get("x-amz-date");
  REQUIRE(stamp.size() == 16);
  const std::string prefix = "AWS4-HMAC-SHA256 Credential=" + std::string(kKeyId) + "/" + stamp.substr(0, 8) + "/" +
                             region + "/s3/aws4_request, SignedHeaders=";
  REQUIRE(auth.rfind(prefix, 0) == 0);
  const size_t names_end = auth.find(", Signature=");
  REQUIRE(names_end != std::string::npos);
  const std::string names = auth.substr(prefix.size(), names_end - prefix.size());
  std::vector<testing::Header> signed_headers;
  std::stringstream list(names);
  for (std::string name; std::getline(list, name, ';');) signed_headers.push_back({name, r.Get(name)});
  for (const char* needed : {"host", "x-amz-content-sha256", "x-amz-date"}) {
    CHECK((";" + names + ";").find(std::string(";") + needed + ";") != std::string::npos);
  }
  if (!r.Get("x-amz-security-token").empty()) CHECK(names.find("x-amz-security-token") != std::string::npos);
  const std::string canonical =
      testing::CanonicalRequest(r.method, r.path, r.query, signed_headers, r.Get("x-amz-content-sha256"));
  CHECK(auth.substr(names_end + 12) == testing::Signature(kSecret, stamp, region, canonical));
}

// ---- Requests, against the fake endpoint ----

Options OptionsFor(const FakeS3& fake, const std::string& url = "s3://bucket/team/models") {
  Options o;
  auto l = ParseUrl(url);
  REQUIRE(l.ok());
  o.location = *l;
  o.endpoint = fake.endpoint();
  o.region = "eu-west-3";
  o.credentials = {kKeyId, kSecret, ""};
  o.timeout = 5;
  return o;
}

ContentId IdOf(const std::string& text) { return HashBytes(text.data(), text.size()); }

std::string KeyPath(const std::string& prefix, const ContentId& id) {
  const std::string hex = id.Hex();
  return prefix + "/" + hex.substr(0, 2) + "/" + hex.substr(2, 2) + "/" + hex;
}

Status PutText(remote::RemoteStore& remote, const std::string& text) {
  MemorySource object(reinterpret_cast<const uint8_t*>(text.data()), text.size(), "object");
  return remote.Put(IdOf(text), object);
}

TEST_CASE("an upload goes path-style under the prefix, each key segment encoded, signed, with its body's hash") {
  FakeS3 fake([](const Request&) { return Response{}; });
  auto remote = Remote("s3://bucket/team runs/v1+2", OptionsFor(fake, "s3://bucket/team runs/v1+2"));
  const std::string object = "the object's bytes";
  REQUIRE(PutText(*remote, object).ok());
  const std::vector<Request> sent = fake.requests();
  REQUIRE(sent.size() == 1);
  const Request& put = sent[0];
  CHECK(put.method == "PUT");
  CHECK(put.path == KeyPath("/bucket/team%20runs/v1%2B2", IdOf(object)));
  CHECK(put.query.empty());
  CHECK(put.body == object);
  CHECK(put.Get("x-amz-content-sha256") == testing::Sha256Hex(object));
  CHECK(put.Get("host") == fake.endpoint().substr(7));
  CheckSigned(put, "eu-west-3");
  CHECK(remote->where() == "s3://bucket/team runs/v1+2");
}

TEST_CASE("an endpoint written with a trailing slash addresses the same paths") {
  FakeS3 fake([](const Request&) { return Response{}; });
  Options o = OptionsFor(fake);
  o.endpoint += "/";
  MemorySink sink;
  REQUIRE(Remote("s3://bucket/team/models", o)->Get(IdOf("x"), 100, sink).ok());
  REQUIRE(fake.requests().size() == 1);
  CHECK(fake.requests()[0].path == KeyPath("/bucket/team/models", IdOf("x")));
  CheckSigned(fake.requests()[0], "eu-west-3");
}

TEST_CASE("temporary credentials send their session token, signed with the rest") {
  FakeS3 fake([](const Request&) { return Response{}; });
  Options o = OptionsFor(fake);
  o.credentials.session_token = "session/token=";
  auto remote = Remote("s3://bucket/team/models", o);
  MemorySink sink;
  REQUIRE(remote->Get(IdOf("x"), 100, sink).ok());
  const std::vector<Request> sent = fake.requests();
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].Get("x-amz-security-token") == "session/token=");
  CHECK(sent[0].Get("x-amz-content-sha256") == kEmptyHash);
  CheckSigned(sent[0], "eu-west-3");
}

TEST_CASE("Has asks with one signed HEAD an object and tells 200 from 404") {
  const ContentId here = IdOf("here"), gone = IdOf("gone");
  const std::string here_path = KeyPath("/bucket/team/models", here);
  FakeS3 fake([&](const Request& r) {
    Response a;
    a.status = r.path == here_path ? 200 : 404;
    return a;
  });
  auto remote = Remote("s3://bucket/team/models", OptionsFor(fake));
  auto has = remote->Has({gone, here, gone});
  REQUIRE(has.ok());
  CHECK(*has == std::vector<bool>{false, true, false});
  const std::vector<Request> sent = fake.requests();
  REQUIRE(sent.size() == 3);
  for (const Request& r : sent) {
    CHECK(r.method == "HEAD");
    CheckSigned(r, "eu-west-3");
  }
}

TEST_CASE("Has fails on any other answer, naming the object and the HTTP status") {
  FakeS3 fake([](const Request&) {
    Response a;
    a.status = 500;
    return a;
  });
  auto remote = Remote("s3://bucket", OptionsFor(fake, "s3://bucket"));
  const ContentId id = IdOf("x");
  auto has = remote->Has({id});
  REQUIRE(!has.ok());
  CHECK(has.status().code() == StatusCode::kIoError);
  CHECK(has.status().message() == "cannot look for object " + id.Hex() + ": HTTP 500");
  // Without a prefix the key starts at the bucket.
  REQUIRE(!fake.requests().empty());
  CHECK(fake.requests()[0].path == KeyPath("/bucket", id));
}

TEST_CASE("a download lands in the sink; a missing object is NotFound, a missing bucket is not") {
  const std::string object = "stored bytes";
  FakeS3 fake([&](const Request& r) {
    Response a;
    if (r.path.find("/gone/") != std::string::npos) {
      a.status = 404;
      a.body = "<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>";
    } else if (r.path.find("/nobucket/") != std::string::npos) {
      a.status = 404;
      a.body = "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>";
    } else {
      a.body = object;
    }
    return a;
  });
  const ContentId id = IdOf(object);
  MemorySink sink;
  REQUIRE(Remote("s3://bucket/ok", OptionsFor(fake, "s3://bucket/ok"))->Get(id, object.size(), sink).ok());
  CHECK(sink.ToVector() == std::vector<uint8_t>(object.begin(), object.end()));

  MemorySink nothing;
  Status gone = Remote("s3://bucket/gone", OptionsFor(fake, "s3://bucket/gone"))->Get(id, 100, nothing);
  CHECK(gone.code() == StatusCode::kNotFound);
  CHECK(gone.message() == "object " + id.Hex() + " is not there");
  CHECK(nothing.ToVector().empty());  // the error's XML is not the object

  Status no_bucket = Remote("s3://bucket/nobucket", OptionsFor(fake, "s3://bucket/nobucket"))->Get(id, 100, nothing);
  CHECK(no_bucket.code() == StatusCode::kInvalidArgument);
  CHECK(no_bucket.message() == "download refused: HTTP 404 NoSuchBucket (The specified bucket does not exist)");
  CHECK(nothing.ToVector().empty());
}

TEST_CASE("a download cut short keeps what came; the next asks for the rest of the same copy, or starts again") {
  std::string object(100000, '\0');
  for (size_t i = 0; i < object.size(); ++i) object[i] = static_cast<char>((i * 7919) >> 3);
  std::string etag = "\"0a1b2c\"";
  std::atomic<bool> cut{true};
  FakeS3 fake([&](const Request& r) {
    Response a;
    a.headers.push_back("ETag: " + etag);
    const std::string range = r.Get("range");
    const size_t from = range.empty() ? 0 : std::stoul(range.substr(6));
    if (from >= object.size()) {
      a.status = 416;
      a.body = "<Error><Code>InvalidRange</Code><Message>The requested range is not satisfiable</Message></Error>";
      return a;
    }
    if (from > 0) {
      a.status = 206;
      a.headers.push_back("Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(object.size() - 1) +
                          "/" + std::to_string(object.size()));
    }
    a.body = object.substr(from);
    if (cut) a.cut_after = 40000;
    return a;
  });
  const std::string root = store::testing::TempDir();
  const std::string kept = root + "/kept";
  Options o = OptionsFor(fake);
  o.partial_dir = kept;
  std::unique_ptr<remote::RemoteStore> bucket = Remote("s3://bucket/team/models", o);
  remote::KeptGets* kept_gets = bucket->capabilities().kept_gets;
  REQUIRE(kept_gets != nullptr);
  const ContentId id = IdOf(object);
  const std::string name = kept + "/" + id.Hex() + "-0a1b2c-100000";

  MemorySink first;
  CHECK(kept_gets->GetKept(id, UINT64_MAX, first).status().code() == StatusCode::kIoError);
  auto held = ReadWholeFile(name);
  REQUIRE(held.ok());
  CHECK(held->size() == 40000);

  // The rest of the same copy: a range from where it stopped.
  cut = false;
  MemorySink rest;
  auto whole = kept_gets->GetKept(id, UINT64_MAX, rest);
  REQUIRE_MESSAGE(whole.ok(), whole.status().message());
  CHECK(fake.requests().back().Get("range") == "bytes=40000-");
  CHECK(rest.ToVector() == std::vector<uint8_t>(object.begin(), object.end()));
  auto landed = ReadWholeFile((*whole)->path());
  REQUIRE(landed.ok());
  CHECK(*landed == std::vector<uint8_t>(object.begin(), object.end()));
  whole->reset();  // as a fetch stopped before the object took its name from it

  // Kept whole: no request at all.
  const size_t asked = fake.requests().size();
  MemorySink again;
  REQUIRE(kept_gets->GetKept(id, UINT64_MAX, again).ok());
  CHECK(fake.requests().size() == asked);
  CHECK(again.ToVector() == std::vector<uint8_t>(object.begin(), object.end()));
  REQUIRE(std::system(("rm -rf " + kept).c_str()) == 0);

  // Another copy on the server since (its ETag): what was kept is dropped,
  // and the next try gets the object from its first byte.
  cut = true;
  MemorySink cut_short;
  CHECK(kept_gets->GetKept(id, UINT64_MAX, cut_short).status().code() == StatusCode::kIoError);
  etag = "\"ffee99\"";
  cut = false;
  MemorySink changed;
  const Status st = kept_gets->GetKept(id, UINT64_MAX, changed).status();
  CHECK(st.code() == StatusCode::kIoError);
  CHECK(st.message().find("changed on s3://bucket/team/models since part of it was kept") != std::string::npos);
  CHECK(store::testing::FilesIn(kept) == 0);
  MemorySink fresh;
  REQUIRE(kept_gets->GetKept(id, UINT64_MAX, fresh).ok());
  CHECK(fake.requests().back().Get("range").empty());
  CHECK(fresh.ToVector() == std::vector<uint8_t>(object.begin(), object.end()));

  // Kept bytes S3 cannot serve the rest of (a range past its end): the
  // refusal drops them, and the next try starts again.
  REQUIRE(std::system(("rm -rf " + kept + " && mkdir -p " + kept + " && head -c 150000 /dev/zero > " + kept + "/" +
                       id.Hex() + "-ffee99-200000").c_str()) == 0);
  MemorySink refused;
  CHECK(kept_gets->GetKept(id, UINT64_MAX, refused).status().code() == StatusCode::kInvalidArgument);
  CHECK(store::testing::FilesIn(kept) == 0);
  MemorySink after;
  REQUIRE(kept_gets->GetKept(id, UINT64_MAX, after).ok());
  CHECK(after.ToVector() == std::vector<uint8_t>(object.begin(), object.end()));
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("on four connections a download moves in ranges; one cut short keeps what came; another copy starts again") {
  std::string object(20 << 20, '\0');
  uint32_t seed = 7;
  for (char& c : object) {
    seed = seed * 1664525u + 1013904223u;
    c = static_cast<char>(seed >> 24);
  }
  std::mutex mu;
  std::string etag = "\"0a1b2c\"";  // guarded by mu
  std::atomic<size_t> cut{SIZE_MAX};
  std::atomic<bool> whole_only{false};
  FakeS3 fake([&](const Request& r) {
    Response a;
    {
      std::lock_guard<std::mutex> lock(mu);
      a.headers.push_back("ETag: " + etag);
    }
    const std::string range = r.Get("range");  // bytes=<from>-<last>
    if (range.empty() || whole_only) {
      a.body = object;
      return a;
    }
    const size_t dash = range.find('-');
    const size_t from = std::stoul(range.substr(6, dash - 6));
    const size_t last =
        std::min(dash + 1 < range.size() ? std::stoul(range.substr(dash + 1)) : SIZE_MAX, object.size() - 1);
    a.status = 206;
    a.headers.push_back("Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(last) + "/" +
                        std::to_string(object.size()));
    a.body = object.substr(from, last + 1 - from);
    a.cut_after = cut;
    return a;
  });
  const std::string root = store::testing::TempDir();
  const std::string kept = root + "/kept";
  Options o = OptionsFor(fake);
  o.partial_dir = kept;
  o.connections = 4;
  std::unique_ptr<remote::RemoteStore> bucket = Remote("s3://bucket/team/models", o);
  remote::KeptGets* kept_gets = bucket->capabilities().kept_gets;
  REQUIRE(kept_gets != nullptr);
  const ContentId id = IdOf(object);
  const std::vector<uint8_t> bytes(object.begin(), object.end());
  auto ranges_asked = [&](size_t since) {
    std::vector<std::string> asked;
    const std::vector<Request> all = fake.requests();
    for (size_t i = since; i < all.size(); ++i) asked.push_back(all[i].Get("range"));
    return asked;
  };

  // The first 4 MiB, then the other 16 in four ranges of at most 5 MiB.
  MemorySink all;
  auto whole = kept_gets->GetKept(id, UINT64_MAX, all);
  REQUIRE_MESSAGE(whole.ok(), whole.status().message());
  CHECK(all.ToVector() == bytes);
  const std::vector<std::string> asked = ranges_asked(0);
  REQUIRE(asked.size() == 5);
  CHECK(asked[0] == "bytes=0-4194303");
  CHECK(std::count(asked.begin(), asked.end(), "bytes=19922944-20971519") == 1);
  (*whole)->Done(OkStatus());
  CHECK(store::testing::FilesIn(kept) == 0);

  // Cut after 1 MiB of each reply: what came of every range is kept, and
  // the next try asks for the rest of each.
  cut = 1 << 20;
  MemorySink first;
  CHECK(kept_gets->GetKept(id, UINT64_MAX, first).status().code() == StatusCode::kIoError);
  CHECK(store::testing::FilesIn(kept) == 2);  // the spread file and its record
  cut = SIZE_MAX;
  size_t since = fake.requests().size();
  MemorySink rest;
  whole = kept_gets->GetKept(id, UINT64_MAX, rest);
  REQUIRE_MESSAGE(whole.ok(), whole.status().message());
  CHECK(rest.ToVector() == bytes);
  for (const std::string& range : ranges_asked(since)) CHECK(range.rfind("bytes=0-", 0) != 0);  // the start was kept
  (*whole)->Done(OkStatus());

  // Another copy on the server since (its ETag): what was kept is dropped.
  cut = 1 << 20;
  MemorySink again;
  CHECK(kept_gets->GetKept(id, UINT64_MAX, again).status().code() == StatusCode::kIoError);
  {
    std::lock_guard<std::mutex> lock(mu);
    etag = "\"ffee99\"";
  }
  cut = SIZE_MAX;
  MemorySink changed;
  const Status st = kept_gets->GetKept(id, UINT64_MAX, changed).status();
  CHECK(st.code() == StatusCode::kIoError);
  CHECK(st.message().find("changed on s3://bucket/team/models while it was fetched") != std::string::npos);
  CHECK(store::testing::FilesIn(kept) == 0);
  MemorySink fresh;
  whole = kept_gets->GetKept(id, UINT64_MAX, fresh);
  REQUIRE_MESSAGE(whole.ok(), whole.status().message());
  CHECK(fresh.ToVector() == bytes);
  (*whole)->Done(OkStatus());

  // A server that answers a range with the whole object: fetched whole.
  whole_only = true;
  since = fake.requests().size();
  MemorySink plain;
  whole = kept_gets->GetKept(id, UINT64_MAX, plain);
  REQUIRE_MESSAGE(whole.ok(), whole.status().message());
  CHECK(plain.ToVector() == bytes);
  CHECK(ranges_asked(since).back().empty());
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a refusal says S3's code and message; server errors and throttling may pass on a retry, others not") {
  struct Case {
    int status;
    std::string body;
    StatusCode code;
    std::string message;
  };
  const std::vector<Case> kCases = {
      {403, "", StatusCode::kInvalidArgument,
       "upload refused: HTTP 403 (access denied: check the credentials and the bucket's policy)"},
      {403, "<Error><Code>SignatureDoesNotMatch</Code><Message>Check your key</Message></Error>",
       StatusCode::kInvalidArgument, "upload refused: HTTP 403 SignatureDoesNotMatch (Check your key)"},
      {400, "<Error><Code>EntityTooLarge</Code></Error>", StatusCode::kInvalidArgument,
       "upload refused: HTTP 400 EntityTooLarge"},
      {503, "<Error><Code>SlowDown</Code><Message>Reduce your request rate.</Message></Error>", StatusCode::kIoError,
       "upload refused: HTTP 503 SlowDown (Reduce your request rate.)"},
      {500, "", StatusCode::kIoError, "upload refused: HTTP 500"},
      {429, "", StatusCode::kIoError, "upload refused: HTTP 429"},
      {408, "", StatusCode::kIoError, "upload refused: HTTP 408"},
  };
  for (const Case& c : kCases) {
    CAPTURE(c.message);
    FakeS3 fake([&](const Request&) {
      Response a;
      a.status = c.status;
      a.body = c.body;
      return a;
    });
    auto remote = Remote("s3://bucket/team/models", OptionsFor(fake));
    const Status put = PutText(*remote, "refused");
    CHECK(put.code() == c.code);
    CHECK(put.message() == c.message);
  }
}

TEST_CASE("a download larger than its limit is refused, by its announced length or as it arrives") {
  const std::string body(100, 'b');
  bool chunked = false;
  FakeS3 fake([&](const Request&) {
    Response a;
    a.body = body;
    a.chunked = chunked;
    return a;
  });
  auto remote = Remote("s3://bucket/team/models", OptionsFor(fake));
  const ContentId id = IdOf("large");
  MemorySink sink;
  Status announced = remote->Get(id, 99, sink);
  CHECK(announced.code() == StatusCode::kCorruption);
  CHECK(announced.message() == "the server offered 100 bytes, more than the 99 the object's checkpoint can take");
  CHECK(sink.ToVector().empty());

  chunked = true;  // no length given: counted as the body comes
  Status arrived = remote->Get(id, 99, sink);
  CHECK(arrived.code() == StatusCode::kCorruption);
  CHECK(arrived.message() == "the server sent more than the 99 bytes the object's checkpoint can take");

  MemorySink exact;
  CHECK(remote->Get(id, 100, exact).ok());
  CHECK(exact.ToVector().size() == 100);
}

// A sink whose every Append fails.
class FullSink : public ByteSink {
 public:
  Status Append(const void*, size_t) override { return IoError("the disk is full"); }
};

TEST_CASE("the sink's first error ends a download and is what it returns") {
  FakeS3 fake([](const Request&) {
    Response a;
    a.body = "bytes";
    return a;
  });
  FullSink full;
  const Status got = Remote("s3://bucket/team/models", OptionsFor(fake))->Get(IdOf("x"), 100, full);
  CHECK(got.code() == StatusCode::kIoError);
  CHECK(got.message() == "the disk is full");
}

// Answers an upload in parts as S3 does: an UploadId, an ETag per part,
// and `complete` for the request that completes it.
Response MultipartAnswer(const Request& r, int refuse_part, const Response& complete) {
  Response a;
  if (r.method == "POST" && r.query == "uploads=") {
    a.body =
        "<InitiateMultipartUploadResult><Bucket>bucket</Bucket><UploadId>up/1+a</UploadId>"
        "</InitiateMultipartUploadResult>";
  } else if (r.method == "PUT") {
    const std::string number = r.query.substr(11, r.query.find('&') - 11);  // after "partNumber="
    if (std::stoi(number) == refuse_part) a.status = 500;
    a.headers.push_back("ETag: \"etag-" + number + "\"");
  } else if (r.method == "POST") {
    a = complete;
  }
  return a;
}

TEST_CASE("an object larger than a part goes up in signed parts, each with its own hash, named in order to complete") {
  FakeS3 fake([](const Request& r) { return MultipartAnswer(r, 0, Response{}); });
  Options o = OptionsFor(fake);
  o.part_size = 4;
  const std::string object = "0123456789";
  REQUIRE(PutText(*Remote("s3://bucket/team/models", o), object).ok());
  const std::vector<Request> sent = fake.requests();
  REQUIRE(sent.size() == 5);
  const std::string path = KeyPath("/bucket/team/models", IdOf(object));
  const std::vector<std::pair<std::string, std::string>> kExpected = {
      {"POST", "uploads="},
      {"PUT", "partNumber=1&uploadId=up%2F1%2Ba"},
      {"PUT", "partNumber=2&uploadId=up%2F1%2Ba"},
      {"PUT", "partNumber=3&uploadId=up%2F1%2Ba"},
      {"POST", "uploadId=up%2F1%2Ba"},
  };
  const std::vector<std::string> kParts = {"", "0123", "4567", "89"};
  for (size_t i = 0; i < sent.size(); ++i) {
    CAPTURE(i);
    CHECK(sent[i].method == kExpected[i].first);
    CHECK(sent[i].query == kExpected[i].second);
    CHECK(sent[i].path == path);
    CHECK(sent[i].Get("x-amz-content-sha256") == testing::Sha256Hex(sent[i].body));
    CheckSigned(sent[i], "eu-west-3");
    if (i >= 1 && i <= 3) CHECK(sent[i].body == kParts[i]);
  }
  CHECK(sent[4].body ==
        "<CompleteMultipartUpload>"
        "<Part><PartNumber>1</PartNumber><ETag>\"etag-1\"</ETag></Part>"
        "<Part><PartNumber>2</PartNumber><ETag>\"etag-2\"</ETag></Part>"
        "<Part><PartNumber>3</PartNumber><ETag>\"etag-3\"</ETag></Part>"
        "</CompleteMultipartUpload>");
  CHECK(sent[4].Get("content-type") == "application/xml");
}

TEST_CASE("an upload in parts that fails is aborted so the server drops its parts") {
  SUBCASE("a part refused") {
    FakeS3 fake([](const Request& r) { return MultipartAnswer(r, 2, Response{}); });
    Options o = OptionsFor(fake);
    o.part_size = 4;
    const Status put = PutText(*Remote("s3://bucket/team/models", o), "0123456789");
    CHECK(put.code() == StatusCode::kIoError);
    CHECK(put.message() == "part 2 refused: HTTP 500");
    const std::vector<Request> sent = fake.requests();
    REQUIRE(sent.size() == 4);  // start, part 1, part 2, abort
    CHECK(sent[3].method == "DELETE");
    CHECK(sent[3].query == "uploadId=up%2F1%2Ba");
    CheckSigned(sent[3], "eu-west-3");
  }
  SUBCASE("the completion answered 200 with an error inside") {
    Response complete;
    complete.body = "<Error><Code>InternalError</Code><Message>Try again</Message></Error>";
    FakeS3 fake([&](const Request& r) { return MultipartAnswer(r, 0, complete); });
    Options o = OptionsFor(fake);
    o.part_size = 4;
    const Status put = PutText(*Remote("s3://bucket/team/models", o), "0123456789");
    CHECK(put.code() == StatusCode::kInvalidArgument);
    CHECK(put.message() == "cannot complete the upload: HTTP 200 InternalError (Try again)");
    const std::vector<Request> sent = fake.requests();
    REQUIRE(sent.size() == 6);
    CHECK(sent[5].method == "DELETE");
  }
  SUBCASE("no upload id to start with") {
    FakeS3 fake([](const Request&) { return Response{}; });  // 200, empty body
    Options o = OptionsFor(fake);
    o.part_size = 4;
    const Status put = PutText(*Remote("s3://bucket/team/models", o), "0123456789");
    CHECK(put.message() == "cannot start an upload in parts: HTTP 200");
    CHECK(fake.requests().size() == 1);  // nothing to abort
  }
}

TEST_CASE("an upload in parts of a file cut short is left for the next push, which sends only the parts S3 lacks") {
  std::atomic<int> refuse{2};
  std::atomic<bool> forgot{false};  // S3 aborted the upload meanwhile
  FakeS3 fake([&](const Request& r) {
    if (forgot && r.method == "PUT" && r.query.find("up%2F1%2Ba") != std::string::npos) {
      Response gone;
      gone.status = 404;
      gone.body = "<Error><Code>NoSuchUpload</Code><Message>The upload does not exist</Message></Error>";
      return gone;
    }
    if (forgot && r.method == "POST" && r.query == "uploads=") {
      Response started;
      started.body = "<InitiateMultipartUploadResult><UploadId>up2</UploadId></InitiateMultipartUploadResult>";
      return started;
    }
    return MultipartAnswer(r, refuse, Response{});
  });
  const std::string root = store::testing::TempDir();
  const std::string uploads = root + "/uploads";
  Options o = OptionsFor(fake);
  o.part_size = 4;
  o.uploads_dir = uploads;
  std::unique_ptr<remote::RemoteStore> bucket = Remote("s3://bucket/team/models", o);
  const std::string object = "0123456789";
  REQUIRE(std::system(("printf '" + object + "' > " + root + "/object").c_str()) == 0);
  auto file = ReadFile::Open(root + "/object");
  REQUIRE(file.ok());
  const ContentId id = IdOf(object);

  // Part 2 fails as a network would (500): nothing is aborted.
  const Status cut = bucket->PutFile(id, *file);
  CHECK(cut.code() == StatusCode::kIoError);
  for (const Request& r : fake.requests()) CHECK(r.method != "DELETE");
  CHECK(store::testing::FilesIn(uploads) == 1);

  // The next push of the same file sends part 2 and completes with all.
  const size_t before = fake.requests().size();
  refuse = 0;
  REQUIRE(bucket->PutFile(id, *file).ok());
  std::vector<Request> sent = fake.requests();
  sent.erase(sent.begin(), sent.begin() + before);
  REQUIRE(sent.size() == 3);  // parts 2 and 3 (one at a time, the first failure ended the try), then the end
  CHECK(sent[0].method == "PUT");
  CHECK(sent[0].query == "partNumber=2&uploadId=up%2F1%2Ba");
  CHECK(sent[0].body == "4567");
  CHECK(sent[1].query == "partNumber=3&uploadId=up%2F1%2Ba");
  CHECK(sent[2].query == "uploadId=up%2F1%2Ba");
  CHECK(sent[2].body ==
        "<CompleteMultipartUpload>"
        "<Part><PartNumber>1</PartNumber><ETag>\"etag-1\"</ETag></Part>"
        "<Part><PartNumber>2</PartNumber><ETag>\"etag-2\"</ETag></Part>"
        "<Part><PartNumber>3</PartNumber><ETag>\"etag-3\"</ETag></Part>"
        "</CompleteMultipartUpload>");
  CHECK(store::testing::FilesIn(uploads) == 0);  // done: nothing noted

  // Cut short again, then S3 drops the upload (a lifecycle rule): the
  // next push starts a new one and sends every part.
  refuse = 3;
  CHECK(bucket->PutFile(id, *file).code() == StatusCode::kIoError);
  CHECK(store::testing::FilesIn(uploads) == 1);
  refuse = 0;
  forgot = true;
  const size_t again = fake.requests().size();
  const Status fresh = bucket->PutFile(id, *file);
  CHECK_MESSAGE(fresh.ok(), fresh.message());
  sent = fake.requests();
  sent.erase(sent.begin(), sent.begin() + again);
  int parts = 0, starts = 0;
  for (const Request& r : sent) {
    parts += r.method == "PUT" && r.query.find("partNumber=") == 0;
    starts += r.method == "POST" && r.query == "uploads=";
  }
  CHECK(starts == 1);
  CHECK(parts >= 3);

  // Another file whose bytes differ in part 2 only (a record is for the
  // object and its place, not a file): parts 1 and 3 are not sent again.
  forgot = false;
  refuse = 2;
  CHECK(bucket->PutFile(id, *file).code() == StatusCode::kIoError);
  refuse = 0;
  REQUIRE(std::system(("printf '0123xxxx89' > " + root + "/other").c_str()) == 0);
  auto other = ReadFile::Open(root + "/other");
  REQUIRE(other.ok());
  const size_t before_other = fake.requests().size();
  REQUIRE(bucket->PutFile(id, *other).ok());
  sent = fake.requests();
  sent.erase(sent.begin(), sent.begin() + before_other);
  REQUIRE(sent.size() == 3);  // parts 2 and 3 (3 never went), the completion
  CHECK(sent[0].query == "partNumber=2&uploadId=up%2F1%2Ba");
  CHECK(sent[0].body == "xxxx");
  CHECK(sent[1].query == "partNumber=3&uploadId=up%2F1%2Ba");

  // Another place (a second remote) never takes up this one's upload.
  refuse = 2;
  CHECK(bucket->PutFile(id, *file).code() == StatusCode::kIoError);
  refuse = 0;
  const size_t before_backup = fake.requests().size();
  Options backup = OptionsFor(fake, "s3://bucket/backup");
  backup.part_size = 4;
  backup.uploads_dir = uploads;
  REQUIRE(Remote("s3://bucket/backup", backup)->PutFile(id, *file).ok());
  CHECK(fake.requests()[before_backup].query == "uploads=");
  CHECK(fake.requests()[before_backup].path == KeyPath("/bucket/backup", id));
  CHECK(store::testing::FilesIn(uploads) == 1);  // the first place's, still open
  // Put from memory (no file to tell the copy by) aborts a failed upload.
  refuse = 2;
  CHECK(PutText(*bucket, object).code() == StatusCode::kIoError);
  CHECK(fake.requests().back().method == "DELETE");
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a server that stops answering fails the request after the timeout and is not asked again") {
  FakeS3 fake([](const Request&) {
    Response a;
    a.silent = true;
    return a;
  });
  Options o = OptionsFor(fake);
  o.timeout = 1;
  auto remote = Remote("s3://bucket/team/models", o);
  const ContentId id = IdOf("x");
  auto first = remote->Has({id});
  REQUIRE(!first.ok());
  CHECK(first.status().code() == StatusCode::kIoError);
  const std::string url = fake.endpoint() + KeyPath("/bucket/team/models", id);
  CHECK(first.status().message().rfind("HEAD " + url + ": ", 0) == 0);
  const std::string hint = " (the timeout: GIT_ZIPNN_TIMEOUT, or git config zipnn.timeout)";
  REQUIRE(first.status().message().size() > hint.size());
  CHECK(first.status().message().substr(first.status().message().size() - hint.size()) == hint);
  MemorySink sink;
  const Status second = remote->Get(id, 100, sink);
  CHECK(second.message() == first.status().message());
  CHECK(fake.requests().size() == 1);
}

TEST_CASE("a server that trickles an object fails the request under the low-speed limit and is not asked again") {
  const std::string object(100000, 'z');
  FakeS3 fake([&](const Request&) {
    Response a;
    a.body = object;
    a.trickle_ms = 20;  // 50 bytes a second
    return a;
  });
  Options o = OptionsFor(fake);
  o.low_speed = {1000, 1};
  auto remote = Remote("s3://bucket/team/models", o);
  const ContentId id = IdOf("x");
  MemorySink sink;
  const Status first = remote->Get(id, object.size(), sink);
  CHECK(first.code() == StatusCode::kIoError);
  const std::string url = fake.endpoint() + KeyPath("/bucket/team/models", id);
  CHECK(first.message().rfind("GET " + url + ": the server is too slow: ", 0) == 0);
  CHECK(first.message().find(", less than the 1000 bytes a second it must keep up over 1 s (the limit: git config "
                             "zipnn.lowSpeedLimit and zipnn.lowSpeedTime; 0 turns it off)") != std::string::npos);
  MemorySink again;
  CHECK(remote->Get(id, object.size(), again).message() == first.message());
  CHECK(fake.requests().size() == 1);
}

TEST_CASE("the low-speed limit lets an object that moves at speed through, and a server that thinks first") {
  const std::string object(1 << 20, 'o');
  FakeS3 fake([&](const Request& r) {
    Response a;
    if (r.method == "GET") {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // looking for it
      a.body = object;
    }
    return a;
  });
  Options o = OptionsFor(fake);
  o.low_speed = {1000, 0.5};
  auto remote = Remote("s3://bucket/team/models", o);
  REQUIRE(PutText(*remote, object).ok());
  MemorySink sink;
  REQUIRE(remote->Get(IdOf(object), object.size(), sink).ok());
  CHECK(sink.buffer().size() == object.size());
}

TEST_CASE("an object or answer of unknown length that trickles is held to the low-speed limit too") {
  const std::string object(100000, 'z');
  FakeS3 fake([&](const Request&) {
    Response a;
    a.body = object;
    a.chunked = true;   // no Content-Length: curl knows no total
    a.trickle_ms = 20;  // 50 bytes a second
    return a;
  });
  Options o = OptionsFor(fake);
  o.low_speed = {1000, 1};
  auto remote = Remote("s3://bucket/team/models", o);
  MemorySink sink;
  const Status got = remote->Get(IdOf("x"), object.size(), sink);
  CHECK(got.code() == StatusCode::kIoError);
  CHECK_MESSAGE(got.message().find(": the server is too slow: ") != std::string::npos, got.message());
}

TEST_CASE("an endpoint that is not http or https is refused before a request; S3's keys are in no message") {
  // A file:// endpoint would have the "object" read from this machine's files.
  const char* tmp = std::getenv("TEST_TMPDIR");  // bazel's, removed after the test
  std::string made = std::string(tmp != nullptr ? tmp : "/tmp") + "/s3_test.XXXXXX";
  REQUIRE(::mkdtemp(made.data()) != nullptr);
  const std::string dir = made;
  const ContentId id = IdOf("x");
  const std::string key = std::string(dir) + KeyPath("/bucket", id);
  REQUIRE(MakeDirectories(key.substr(0, key.rfind('/'))).ok());
  { std::ofstream(key) << "local bytes"; }
  Options o;
  o.location = {"bucket", ""};
  o.endpoint = std::string("file://") + dir;
  o.region = "us-east-1";
  o.credentials = {kKeyId, kSecret, "SESSIONSECRET"};
  MemorySink sink;
  const Status got = Remote("s3://bucket", o)->Get(id, 100, sink);
  CHECK(got.code() == StatusCode::kInvalidArgument);
  CHECK(got.message() == "refused to send GET to file://" + key + ": a remote is spoken to over http or https only");
  CHECK(sink.buffer().size() == 0);
  // Nor is an object written there.
  const std::string put = std::string(dir) + KeyPath("/bucket", IdOf("pushed"));
  REQUIRE(MakeDirectories(put.substr(0, put.rfind('/'))).ok());
  CHECK(PutText(*Remote("s3://bucket", o), "pushed").code() == StatusCode::kInvalidArgument);
  CHECK(::access(put.c_str(), F_OK) != 0);
  // Refused by the server, or timed out: the secret key and session
  // token are signed and sent as headers, never printed.
  for (const bool silent : {false, true}) {
    FakeS3 fake([&](const Request&) {
      Response a;
      a.status = 403;
      a.body = "<Error><Code>SignatureDoesNotMatch</Code><Message>Check your key</Message></Error>";
      a.silent = silent;
      return a;
    });
    Options f = OptionsFor(fake);
    f.credentials.session_token = "SESSIONSECRET";
    f.timeout = 1;
    MemorySink nothing;
    const Status refused = Remote("s3://bucket/team/models", f)->Get(id, 100, nothing);
    CHECK(!refused.ok());
    CHECK(refused.message().find(kSecret) == std::string::npos);
    CHECK(refused.message().find("SESSIONSECRET") == std::string::npos);
  }
}

TEST_CASE("an endpoint nobody listens on is an I/O error naming the request") {
  std::string endpoint;
  {
    FakeS3 closed([](const Request&) { return Response{}; });
    endpoint = closed.endpoint();
  }  // its port is free again, and nobody listens there
  Options o;
  o.location = {"bucket", ""};
  o.endpoint = endpoint;
  o.region = "us-east-1";
  const ContentId id = IdOf("x");
  MemorySink sink;
  const Status got = Remote("s3://bucket", o)->Get(id, 100, sink);
  CHECK(got.code() == StatusCode::kIoError);
  CHECK(got.message().rfind("GET " + endpoint + KeyPath("/bucket", id) + ": ", 0) == 0);
}

}  // namespace
}  // namespace zipnn::s3
