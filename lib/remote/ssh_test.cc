// Tests of the ssh side of remote stores: which URLs are ssh and where
// they point, which are refused (a host that ssh would take for an
// option, a port that is no number, no folder), shell quoting that no
// path escapes, and the ssh command line git's way.
#include "lib/remote/ssh.h"

#include <doctest/doctest.h>

namespace zipnn::remote {
namespace {

SshTarget Parsed(const std::string& url) {
  auto t = ParseSshUrl(url);
  REQUIRE_MESSAGE(t.ok(), t.status().message());
  REQUIRE(t->has_value());
  return **t;
}

TEST_CASE("ssh URLs in git's forms point at a host, a port and a folder") {
  SshTarget t = Parsed("ssh://alice@gpu1.lab:2222/srv/models.git");
  CHECK(t.host == "alice@gpu1.lab");
  CHECK(t.port == "2222");
  CHECK(t.path == "/srv/models.git");
  t = Parsed("git+ssh://gpu1/srv/x");
  CHECK(t.host == "gpu1");
  CHECK(t.port.empty());
  t = Parsed("ssh://gpu1/~/runs/x");  // from the home folder
  CHECK(t.path == "~/runs/x");
  t = Parsed("bob@gpu2:runs/x");  // scp-like: relative to the home folder
  CHECK(t.host == "bob@gpu2");
  CHECK(t.path == "runs/x");
  t = Parsed("ssh://[::1]:2200/srv/x");
  CHECK(t.host == "::1");
  CHECK(t.port == "2200");
  t = Parsed("[fe80::1]:srv/x");
  CHECK(t.host == "fe80::1");
  CHECK(t.path == "srv/x");
}

TEST_CASE("paths and other schemes are not ssh") {
  for (const char* url : {"/srv/models.git", "../hub.git", "./a:b", "file:///srv/x", "s3://bucket/x", "https://host/x",
                          "dir/with:colon"}) {
    CAPTURE(url);
    auto t = ParseSshUrl(url);
    REQUIRE(t.ok());
    CHECK(!t->has_value());
  }
}

TEST_CASE("a host that ssh would read as an option, a port that is no number, or no folder is refused") {
  struct Case {
    const char* url;
    const char* message;
  };
  for (const Case& c :
       {Case{"ssh://-oProxyCommand=touch%20x/srv", ": not a host name ssh can be given"},
        Case{"-oProxyCommand=x:srv", ": not a host name ssh can be given"},
        Case{"ssh://user@-evil/srv", ": not a host name ssh can be given"},
        Case{"ssh://host:22x/srv", ": the port is not a number"}, Case{"ssh://host", ": names no folder on the host"},
        Case{"ssh://host/", ": names no folder on the host"}}) {
    CAPTURE(c.url);
    auto t = ParseSshUrl(c.url);
    REQUIRE(!t.ok());
    CHECK(t.status().code() == StatusCode::kInvalidArgument);
    CHECK(t.status().message() == std::string(c.url) + c.message);
  }
}

TEST_CASE("shell quoting keeps every path one word") {
  CHECK(ShellQuote("runs/x") == "'runs/x'");
  CHECK(ShellQuote("a b;rm -rf ~") == "'a b;rm -rf ~'");
  CHECK(ShellQuote("it's") == "'it'\\''s'");
  CHECK(ShellQuote("$(touch x)`y`") == "'$(touch x)`y`'");
  CHECK(ShellQuote("wow!") == "'wow'\\!''");
  CHECK(ShellQuote("") == "''");
}

TEST_CASE("ssh runs as git runs it: the user's command line through sh, else a program, else ssh") {
  const SshTarget t{"alice@gpu1", "2222", "/srv/x"};
  CHECK(SshArgv(t, "git-zipnn serve-store '/srv/x'", std::nullopt, "") ==
        std::vector<std::string>{"ssh", "-p", "2222", "alice@gpu1", "git-zipnn serve-store '/srv/x'"});
  CHECK(SshArgv(t, "cmd", std::nullopt, "/opt/ssh-wrapper") ==
        std::vector<std::string>{"/opt/ssh-wrapper", "-p", "2222", "alice@gpu1", "cmd"});
  // The user's line is run by sh with our arguments as "$@", never pasted
  // into the line.
  const SshTarget no_port{"gpu1", "", "/srv/x"};
  CHECK(SshArgv(no_port, "cmd", std::string("ssh -i ~/.ssh/lab"), "/ignored") ==
        std::vector<std::string>{"/bin/sh", "-c", "ssh -i ~/.ssh/lab \"$@\"", "ssh -i ~/.ssh/lab", "gpu1", "cmd"});
}

}  // namespace
}  // namespace zipnn::remote
