// The pure parts of the Git LFS store: the endpoint a git remote's URL
// names, the lines of the object map, and URLs made safe to print.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "lib/base/io.h"
#include "lib/base/rate.h"
#include "lib/remote/http.h"
#include "lib/remote/lfs.h"

namespace zipnn::lfs {
namespace {

TEST_CASE("the LFS endpoint of a git remote's URL is the one Git LFS derives") {
  const std::pair<const char*, const char*> cases[] = {
      {"https://github.com/team/runs.git", "https://github.com/team/runs.git/info/lfs"},
      {"https://github.com/team/runs", "https://github.com/team/runs.git/info/lfs"},
      {"https://huggingface.co/team/run-17/", "https://huggingface.co/team/run-17.git/info/lfs"},
      {"http://127.0.0.1:8080/a/b.git?x=1", "http://127.0.0.1:8080/a/b.git/info/lfs"},
      {"git@github.com:team/runs.git", "https://github.com/team/runs.git/info/lfs"},
      {"ssh://git@gitlab.com:2222/group/sub/runs", "https://gitlab.com/group/sub/runs.git/info/lfs"},
  };
  for (const auto& c : cases) {
    const char* url = c.first;
    const char* endpoint = c.second;
    CAPTURE(url);
    auto got = EndpointOf(url);
    REQUIRE(got.ok());
    CHECK(*got == endpoint);
  }
  for (const char* url : {"/srv/models.git", "s3://bucket/x", "file:///srv/x"}) {
    CAPTURE(url);
    CHECK(!EndpointOf(url).ok());
  }
}

TEST_CASE("map lines name stored forms and their frames and read back; lines of other shapes are skipped") {
  const ContentId id = HashBytes("version", 7), base = HashBytes("base", 4);
  const std::string sha(64, 'a'), other(64, 'b'), frame(64, 'f');
  ObjectMap::Entry whole{id, {sha, 123}, false, {}, ""};
  CHECK(MapLines(whole) == std::vector<std::string>{sha + " 123 whole"});
  ObjectMap::Entry delta{id, {other, 45}, true, base, frame};
  CHECK(MapLines(delta) == std::vector<std::string>{other + " 45 delta " + base.Hex(), "frame " + other + " " + frame});
  std::vector<std::string> lines = MapLines(delta);
  lines.push_back(MapLines(whole).front());
  const std::vector<ObjectMap::Entry> back = ParseMapLines(id, lines);
  REQUIRE(back.size() == 2);
  CHECK(back[0].oid.sha256 == other);
  CHECK(back[0].oid.size == 45);
  CHECK(back[0].delta);
  CHECK(back[0].base == base);
  CHECK(back[0].frame == frame);  // the frame goes with the form of its oid only
  CHECK(back[1].oid.sha256 == sha);
  CHECK(!back[1].delta);
  CHECK(back[1].frame.empty());
  for (const std::string& bad :
       {sha + " 123", sha + " 12x whole", sha.substr(1) + " 1 whole", sha + " 1 delta", sha + " 1 delta zz",
        sha + " 1 whole extra", sha + " 1 copy", sha + " 99999999999999999999 whole", std::string(""), "frame " + sha,
        "frame " + sha + " " + frame + " extra", "frame " + sha + " " + frame.substr(1)}) {
    CAPTURE(bad);
    const std::vector<ObjectMap::Entry> parsed = ParseMapLines(id, {MapLines(whole).front(), bad});
    REQUIRE(parsed.size() == 1);
    CHECK(parsed[0].frame.empty());
  }
}

TEST_CASE("a whole form's base note is a map line of its own; a later reason wins over newest, whatever the order") {
  const ContentId id = HashBytes("version", 7), base = HashBytes("base", 4);
  const std::string sha(64, 'a'), other(64, 'b');
  ObjectMap::Entry whole{id, {sha, 123}, false, {}, "", store::BaseNote{store::BaseReason::kNewest, 0, 0}};
  CHECK(MapLines(whole) == std::vector<std::string>{sha + " 123 whole", "base " + sha + " newest"});
  ObjectMap::Entry delta{id, {other, 45}, true, base, "", store::BaseNote{store::BaseReason::kDue, 3, 0}};
  CHECK(MapLines(delta) == std::vector<std::string>{other + " 45 delta " + base.Hex()});  // a delta has none
  // Both notes in the map (a union of two pushes): the reason it stayed
  // whole is kept, in either order.
  for (bool later_first : {false, true}) {
    std::vector<std::string> lines = {sha + " 123 whole", "base " + sha + " newest"};
    lines.insert(later_first ? lines.begin() : lines.end(), "base " + sha + " due 3");
    const std::vector<ObjectMap::Entry> back = ParseMapLines(id, lines);
    REQUIRE(back.size() == 1);
    REQUIRE(back[0].note);
    CHECK(store::ReasonWords(*back[0].note) == "due 3");
  }
  // Notes that do not parse, or name no form, are skipped.
  for (const std::string& bad : {"base " + sha, "base " + sha + " due", "base " + sha + " sideways",
                                 "base " + sha.substr(1) + " first", "base " + other + " first"}) {
    CAPTURE(bad);
    const std::vector<ObjectMap::Entry> parsed = ParseMapLines(id, {sha + " 123 whole", bad});
    REQUIRE(parsed.size() == 1);
    CHECK(!parsed[0].note);
  }
}

TEST_CASE("a URL is printed without its user and password, nor its query's values") {
  CHECK(http::Redacted("https://alice:s3cret@host:8443/a/b?c=d@e") == "https://host:8443/a/b?c=REDACTED");
  CHECK(http::Redacted("https://token@host/x") == "https://host/x");
  CHECK(http::Redacted("https://host/x@y") == "https://host/x@y");
  CHECK(http::Redacted("not a url") == "not a url");
}

TEST_CASE("a request goes over http or https only: a file or another protocol is refused before anything is sent") {
  CHECK(http::IsHttpUrl("http://host/x"));
  CHECK(http::IsHttpUrl("HTTPS://host/x"));
  for (const char* other : {"file:///etc/passwd", "ftp://host/x", "gopher://host/x", "dict://host:11211/stats",
                            "scp://host/x", "smtp://host", "/local/path", "", "httpx://host"}) {
    CAPTURE(other);
    CHECK_FALSE(http::IsHttpUrl(other));
  }
  // A PUT to a file:// link writes nothing there (curl would write it).
  const char* tmp = std::getenv("TEST_TMPDIR");  // bazel's, removed after the test
  std::string made = std::string(tmp != nullptr ? tmp : "/tmp") + "/lfs_url_test.XXXXXX";
  REQUIRE(::mkdtemp(made.data()) != nullptr);
  const std::string dir = made;
  const std::string victim = std::string(dir) + "/victim";
  { std::ofstream(victim) << "precious\n"; }
  const std::string bytes = "the object's bytes";
  const MemorySource body(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "object");
  http::Client client(3, LowSpeed{});
  http::Request put;
  put.method = "PUT";
  put.url = "file://" + victim + "?X-Amz-Signature=s3cr3t";
  put.upload = &body;
  put.size = bytes.size();
  Result<http::Reply> sent = client.Send(put);
  REQUIRE_FALSE(sent.ok());
  CHECK(sent.status().code() == StatusCode::kInvalidArgument);
  CHECK(sent.status().message() == "refused to send PUT to file://" + victim +
                                       "?X-Amz-Signature=REDACTED: a remote is spoken to over http or https only");
  std::ifstream in(victim);
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(kept == "precious\n");
  // Nor is one read from.
  http::Request get;
  get.url = "file://" + victim;
  MemorySink sink;
  get.download = &sink;
  CHECK(client.Send(get).status().code() == StatusCode::kInvalidArgument);
  CHECK(sink.ToVector().empty());
  std::remove(victim.c_str());
  ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace zipnn::lfs
