// An OpenSSH server of the test's own on 127.0.0.1 (Debian's
// openssh-server): its own host key, one client key, and a client
// configuration that reaches it as host "zipnn-test". Sessions get the
// test's HOME and a PATH that starts with the git-zipnn under test, so the
// far side of a remote runs the same build. Stopped when it goes away.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <string>

#include "tests/git_repo.h"

namespace zipnn::testing {

class Sshd {
 public:
  // `path_first`: a folder whose programs sessions find before any other
  // (a stand-in for a host's own commands).
  explicit Sshd(Repo& repo, const std::string& path_first = "") : repo_(repo), dir_(repo.root() + "/ssh") {
    REQUIRE(repo_
                .Sh("mkdir -p '" + dir_ + "' && cd '" + dir_ +
                    "' && ssh-keygen -q -t ed25519 -N '' -f host_key && ssh-keygen -q -t ed25519 -N '' -f "
                    "client_key && cp client_key.pub authorized_keys")
                .code == 0);
    port_ = repo_
                .Sh("python3 -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); "
                    "print(s.getsockname()[1])'")
                .out;
    while (!port_.empty() && port_.back() == '\n') port_.pop_back();
    REQUIRE(!port_.empty());
    std::string path = repo_.Sh("echo \"$PATH\"").out;  // the test's, git-zipnn first
    if (!path_first.empty()) path = path_first + ":" + path;
    Write("sshd_config", "Port " + port_ + "\nListenAddress 127.0.0.1\nHostKey " + dir_ +
                             "/host_key\nAuthorizedKeysFile " + dir_ + "/authorized_keys\nPidFile " + dir_ +
                             "/sshd.pid\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
                             "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
                             "SetEnv HOME=" +
                             repo_.root() + "/home GIT_CONFIG_NOSYSTEM=1 PATH=" + path);
    // The port only for the name: ssh://127.0.0.1:<port>/ URLs must say it.
    Write("ssh_config", "Host zipnn-test\n  HostName 127.0.0.1\n  Port " + port_ + "\nHost *\n  IdentityFile " + dir_ +
                            "/client_key\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n"
                            "  UserKnownHostsFile /dev/null\n  BatchMode yes\n  LogLevel ERROR\n");
    // sshd started by root needs its privilege separation folder.
    REQUIRE(repo_
                .Sh("{ [ \"$(id -u)\" != 0 ] || mkdir -p /run/sshd; } && /usr/sbin/sshd -f '" + dir_ +
                    "/sshd_config' -E '" + dir_ + "/sshd.log'")
                .code == 0);
    Run up = repo_.Sh("for i in $(seq 100); do ssh -F '" + config() +
                      "' zipnn-test true && exit 0; sleep 0.1; done; cat '" + dir_ + "/sshd.log'; exit 1");
    const std::string log = up.out + up.err;
    REQUIRE_MESSAGE(up.code == 0, log);
    // git and git-zipnn run ssh with this configuration.
    REQUIRE(repo_.Sh("git config --global core.sshCommand \"ssh -F '" + config() + "'\"").code == 0);
  }
  ~Sshd() { repo_.Sh("kill $(cat '" + dir_ + "/sshd.pid')"); }

  const std::string& port() const { return port_; }
  std::string config() const { return dir_ + "/ssh_config"; }

 private:
  void Write(const std::string& name, const std::string& text) {
    REQUIRE(repo_.Sh("cat > '" + dir_ + "/" + name + "' <<'END'\n" + text + "\nEND").code == 0);
  }
  Repo& repo_;
  std::string dir_;
  std::string port_;
};

}  // namespace zipnn::testing
