#include "lib/ops/workspace.h"

#include "lib/git/checkpoint_at.h"
#include "lib/git/discover.h"
#include "lib/git/git.h"

namespace zipnn::ops {

Result<store::Pointer> PointerAt(const std::string& spec) { return git::PointerAt(spec); }

std::string GitSpec(const std::string& spec) { return spec.find(':') == std::string::npos ? "HEAD:./" + spec : spec; }

Result<std::string> TrackedPath(const std::string& given) { return git::TrackedPath(given); }

Result<std::vector<std::string>> TrackedPaths() { return git::TrackedPaths(); }

Result<std::string> TopLevel() { return git::TopLevel(); }

Status CheckRevision(const std::string& rev) { return git::CheckRevision(rev); }

void RestageUnchanged(const std::vector<std::string>& paths, const std::string& top) {
  git::RestageUnchanged(paths, top);
}

Result<std::vector<std::string>> Remotes() { return git::Remotes(); }

Result<std::optional<std::string>> ConfigGet(const std::string& key) { return git::ConfigGet(key); }

Result<std::optional<std::string>> ConfigGetAt(const std::string& scope, const std::string& key) {
  return git::ConfigGetAt(scope, key);
}

Result<std::string> GitVersion() { return git::GitVersion(); }

Result<Folders> RepositoryFolders() {
  ZIPNN_ASSIGN_OR_RETURN(git::Folders folders, git::RepositoryFolders());
  return Folders{folders.git_dir, folders.hooks, folders.top};
}

Result<std::string> StoreOfRepository(const std::string& path) { return git::StoreOfRepository(path); }

}  // namespace zipnn::ops
