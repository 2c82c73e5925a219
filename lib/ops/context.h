// One command's context: the composition root. It opens what a command
// works with, each once and on first use: the repository's store (with
// the policy of its .zipnn.yaml), git's repository, the series git holds,
// and the stores of remotes. Commands build one Context and ask it; the
// use cases of lib/ops take it. Opening the store warns on stderr about
// each mistake in .zipnn.yaml, at that moment and once per Context.
//
// A Context owns what it opened; pointers it returns live as long as it.
// Not thread-safe: one command's thread asks it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/store/store.h"

namespace zipnn::git {
class ConfigSnapshot;
class Repository;
class SeriesVersions;
struct Folders;
}  // namespace zipnn::git

namespace zipnn::remote {
class RemoteSettings;
class RemoteStore;
}  // namespace zipnn::remote

namespace zipnn::ops {

class Context {
 public:
  struct Options {
    int threads = 0;  // > 0: the store's policy.threads (a command's --threads)
    // Whether the store's warnings go to stderr as it opens; else only
    // to warnings() (env, which shows them among its lines).
    bool print_warnings = true;
  };
  Context();
  explicit Context(Options options);
  ~Context();
  Context(Context&&) noexcept;
  Context& operator=(Context&&) noexcept;

  // The store of the repository around the current folder (its
  // zipnn.storepath, or .git/zipnn/objects), with the policy in force.
  // Failing to open it fails every later call the same way.
  Result<store::Store*> Store();
  // The same from folders and config already read (the filter, which
  // reads them once for all it needs to start); before any Store().
  Result<store::Store*> StoreFrom(const git::Folders& folders, const git::ConfigSnapshot& config);
  // git's repository around the current folder (libgit2).
  Result<git::Repository*> Git();
  // The series git holds (HEAD's history and the index), by the store's
  // policy; opens the store first.
  Result<git::SeriesVersions*> Series();
  // Hands the series over to one that keeps them (the filter); the
  // Context opens them again if asked after.
  Result<std::unique_ptr<git::SeriesVersions>> TakeSeries();
  // Every remote's settings, read with one `git config` call, once.
  Result<const remote::RemoteSettings*> RemoteSettings();
  // The object store of the git remote `name` (lib/remote/select.h).
  Result<remote::RemoteStore*> Remote(const std::string& name);
  // What opening the store had to say of .zipnn.yaml's mistakes.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  Result<store::Store*> Opened();
  store::Store* Keep(store::OpenedStore opened);

  Options options_;
  bool store_tried_ = false;
  std::optional<store::Store> store_;
  Status store_error_;
  std::vector<std::string> warnings_;
  std::unique_ptr<git::Repository> git_;
  Status git_error_;
  std::unique_ptr<git::SeriesVersions> series_;
  std::optional<Status> series_error_;
  std::unique_ptr<remote::RemoteSettings> settings_;
  Status settings_error_;
  std::map<std::string, std::unique_ptr<remote::RemoteStore>> remotes_;
};

}  // namespace zipnn::ops
