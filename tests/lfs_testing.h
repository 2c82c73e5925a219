// What the tests of git-zipnn's Git LFS store share (lfs_test.cc,
// lfs_parts_test.cc): git-lfs and git-zipnn set up in a test's HOME
// against the test server (lfs_server.h), a map kept in memory for the
// store alone, a credential helper that counts what it is asked, and
// counts of what the server holds.
#pragma once

#include <doctest/doctest.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "lib/remote/lfs.h"
#include "tests/git_repo.h"
#include "tests/lfs_server.h"

namespace zipnn::testing {

inline std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

inline size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// git-lfs installed in the test's HOME, and git's "store" helper holding
// `line` for the server.
inline void UseGitLfs(Repo& repo, const std::string& line) {
  REQUIRE_MESSAGE(repo.Sh("command -v git-lfs").code == 0, "git-lfs is not installed: run bash .ci/deps");
  REQUIRE(repo.Sh("git lfs install >/dev/null && printf '%s\\n' '" + line + "' > ../creds && " +
                  "git config --global credential.helper 'store --file=" + repo.root() + "/creds'")
              .code == 0);
}

// Runs a few lines of Python against the server (urllib), printing what
// they print.
inline Run Python(Repo& repo, const std::string& code) { return repo.Sh("python3 -c '" + code + "'"); }

// A map kept in memory, for the store's tests (git keeps the real one).
class MemoryMap : public lfs::ObjectMap {
 public:
  Result<std::vector<Entry>> Find(const ContentId& id) override {
    std::lock_guard<std::mutex> lock(mu_);
    const auto e = entries_.find(id);
    if (e == entries_.end()) return std::vector<Entry>{};
    return std::vector<Entry>{e->second};
  }
  Status Add(const Entry& entry) override {
    std::lock_guard<std::mutex> lock(mu_);
    entries_[entry.id] = entry;
    return OkStatus();
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.size();
  }

 private:
  std::mutex mu_;
  std::map<ContentId, Entry> entries_;
};

// Counts what the store asked of git's credential helpers.
struct Helper {
  std::string password = LfsServer::kPassword;
  int filled = 0;
  std::vector<bool> reported;
  lfs::CredentialSource Source() {
    return {[this](const std::string&) -> Result<lfs::Credential> {
              ++filled;
              return lfs::Credential{LfsServer::kUser, password};
            },
            [this](const std::string&, const lfs::Credential&, bool taken) { reported.push_back(taken); }};
  }
};

inline lfs::Options OptionsFor(const LfsServer& server, Helper& helper) {
  lfs::Options o;
  o.endpoint = server.Url("team.git") + "/info/lfs";
  o.credentials = helper.Source();
  o.timeout = 5;
  return o;
}

// git-zipnn and git-lfs installed in the test's HOME, and git's "store"
// helper answering for `server`.
inline void UseBoth(Repo& repo, const LfsServer& server) {
  UseGitLfs(repo, server.CredentialLine());
  REQUIRE(repo.Sh("git zipnn install >/dev/null && git config --global user.email t@example.com && "
                  "git config --global user.name T")
              .code == 0);
}

// The LFS objects the server holds for repository `name`, each checked to
// be named by the SHA-256 of its bytes.
inline size_t ServerObjects(Repo& repo, const LfsServer& server, const std::string& name) {
  const Run listed = repo.Sh("cd '" + server.root() + "/" + name +
                             "/lfs-objects' && for f in */*/*; do "
                             "[ \"$(sha256sum < $f | cut -c1-64)\" = \"${f##*/}\" ] || echo BAD $f; done");
  CHECK(listed.out.find("BAD") == std::string::npos);
  return Count(listed.out, "BAD") +
         Count(repo.Sh("find '" + server.root() + "/" + name + "/lfs-objects' -type f -name '*[0-9a-f]'").out, "\n");
}

}  // namespace zipnn::testing
