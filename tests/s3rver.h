// An S3 server of the test's own on 127.0.0.1: s3rver from the npm
// registry, which .ci/deps installs under kS3rver (nothing is fetched at
// test time). Its objects are plain files under data(); its one key pair
// is S3RVER / S3RVER; bucket "zipnn" exists from the start. Stopped when
// it goes away.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "tests/git_repo.h"

namespace zipnn::testing {

inline constexpr char kS3rver[] = "/opt/git-zipnn/s3rver/node_modules/.bin/s3rver";

class S3rver {
 public:
  explicit S3rver(Repo& repo) : repo_(repo), dir_(repo.root() + "/s3") {
    REQUIRE_MESSAGE(repo_.Sh(std::string("test -x ") + kS3rver).code == 0,
                    "s3rver is not installed: run bash .ci/deps");
    REQUIRE(repo_.Sh("mkdir -p '" + dir_ + "/data'").code == 0);
    port_ = StartListening(
        repo_, dir_, std::string(kS3rver) + " -d '" + dir_ + "/data' -a 127.0.0.1 -p 0 -s --configure-bucket zipnn");
  }
  ~S3rver() { repo_.Sh("kill $(cat '" + dir_ + "'/*pid)"); }

  // Starts tests/s3_fault_proxy.py before the server: it answers uploads
  // of `key` with 503 SlowDown the first `times` times (-1: always), or
  // with `mode` (and `file`) another fault of the proxy's on downloads.
  // Returns its endpoint.
  std::string Proxy(const std::string& key, int times, const std::string& mode = "throttle",
                    const std::string& file = "") {
    const std::string name = dir_ + "/proxy" + std::to_string(++proxies_);
    REQUIRE(repo_
                .Sh("{ python3 '" + repo_.Runfile("tests/s3_fault_proxy.py") + "' " + port_ + " " + key + " " +
                    std::to_string(times) + " " + mode + " '" + file + "' > '" + name + ".log' 2>&1 & echo $! > '" +
                    name + ".pid'; }")
                .code == 0);
    Run up = repo_.Sh("for i in $(seq 200); do grep -o 'on 127.0.0.1:[0-9]*' '" + name +
                      ".log' && exit 0; sleep 0.05; done; cat '" + name + ".log'; exit 1");
    const std::string log = up.out + up.err;
    REQUIRE_MESSAGE(up.code == 0, log);
    std::string at = up.out.substr(3);
    while (!at.empty() && at.back() == '\n') at.pop_back();
    return "http://" + at;
  }
  // The requests every proxy passed or failed, one "METHOD PATH" a line.
  std::string ProxyRequests() { return repo_.Sh("cat '" + dir_ + "'/proxy*.log").out; }

  std::string endpoint() const { return "http://127.0.0.1:" + port_; }
  // Where the server keeps the objects of bucket "zipnn".
  std::string data() const { return dir_ + "/data/zipnn"; }

 private:
  Repo& repo_;
  std::string dir_;
  std::string port_;
  int proxies_ = 0;
};

}  // namespace zipnn::testing
