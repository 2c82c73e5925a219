// A Git LFS server of the test's own on 127.0.0.1 (tests/lfs_server.py):
// git's smart HTTP and the LFS batch API on one port, for the
// repositories under root(), every request behind HTTP basic credentials
// kUser:kPassword. Its objects are plain files (ObjectPath). A `mode`
// other than "honest" makes it misbehave (see the script). Stopped when
// it goes away.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "tests/git_repo.h"

namespace zipnn::testing {

class LfsServer {
 public:
  static constexpr char kUser[] = "alice";
  static constexpr char kPassword[] = "s3cret-pw";

  explicit LfsServer(Repo& repo, const std::string& mode = "honest", const std::string& name = "lfs")
      : repo_(repo), dir_(repo.root() + "/" + name) {
    REQUIRE(repo_.Sh("mkdir -p '" + dir_ + "/root'").code == 0);
    port_ = StartListening(repo_, dir_,
                           "python3 '" + repo_.Runfile("tests/lfs_server.py") + "' '" + dir_ + "/root' " + kUser + ":" +
                               kPassword + " " + mode);
  }
  ~LfsServer() { repo_.Sh("kill $(cat '" + dir_ + "/pid')"); }

  // Makes an empty bare repository `name` (say "team.git") on the server,
  // its HEAD on branch main.
  void AddRepository(const std::string& name) {
    REQUIRE(repo_.Sh("git init -q --bare -b main '" + root() + "/" + name + "'").code == 0);
  }
  // The URL a client clones `name` from, without credentials.
  std::string Url(const std::string& name) const { return "http://127.0.0.1:" + port_ + "/" + name; }
  // A line for git's "store" credential helper that answers for the server.
  std::string CredentialLine(const std::string& password = kPassword) const {
    return std::string("http://") + kUser + ":" + password + "@127.0.0.1:" + port_;
  }
  const std::string root() const { return dir_ + "/root"; }
  // Where the server keeps the LFS object `oid` of repository `name`.
  std::string ObjectPath(const std::string& name, const std::string& oid) const {
    return root() + "/" + name + "/lfs-objects/" + oid.substr(0, 2) + "/" + oid.substr(2, 2) + "/" + oid;
  }
  // Answers every request from now on in `mode` (see the script).
  void SetMode(const std::string& mode) {
    REQUIRE(repo_.Sh("printf '%s' '" + mode + "' > '" + dir_ + "/mode'").code == 0);
  }
  // Sets what a host may set (see the script): "max_size" or
  // "multipart_chunk", to `bytes`.
  void Set(const std::string& setting, uint64_t bytes) {
    REQUIRE(repo_.Sh("printf '%s' " + std::to_string(bytes) + " > '" + dir_ + "/" + setting + "'").code == 0);
  }
  // Where the "filelinks" mode sends uploads.
  std::string Victim() const { return dir_ + "/victim"; }
  // Every request answered so far, "METHOD PATH STATUS" a line.
  std::string Requests() { return repo_.Sh("grep -E '^[A-Z]+ /' '" + dir_ + "/log'").out; }
  // The bytes of objects its downloads sent so far.
  uint64_t BytesSent() {
    return std::stoull("0" +
                       repo_.Sh("awk '$1 == \"sent\" { n += $2 } END { printf \"%d\", n }' '" + dir_ + "/log'").out);
  }

 private:
  Repo& repo_;
  std::string dir_;
  std::string port_;
};

}  // namespace zipnn::testing
