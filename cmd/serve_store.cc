// git zipnn serve-store: serves one object store on standard input and
// output with the store protocol (lib/remote/served.h). It is the command
// an ssh remote runs on the far host; nobody needs to run it by hand.
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "cmd/command.h"
#include "lib/base/file.h"
#include "lib/ops/workspace.h"
#include "lib/remote/served.h"

namespace zipnn::cmd {

namespace {

// "~" and "~/x" from the home folder, "~user/x" from that user's: the
// client quotes the path, so no shell expands it here.
Result<std::string> ExpandHome(const std::string& path) {
  if (path.empty() || path[0] != '~') return path;
  const size_t slash = std::min(path.find('/'), path.size());
  const std::string user = path.substr(1, slash - 1);
  std::string home;
  if (user.empty()) {
    const char* env = std::getenv("HOME");
    if (env != nullptr) home = env;
  }
  if (home.empty()) {
    const passwd* pw = user.empty() ? ::getpwuid(::getuid()) : ::getpwnam(user.c_str());
    if (pw == nullptr || pw->pw_dir == nullptr) return NotFound(path + ": no such user's home folder");
    home = pw->pw_dir;
  }
  return home + path.substr(slash);
}

Result<std::string> StoreRoot(const std::string& path, bool repository) {
  ZIPNN_ASSIGN_OR_RETURN(std::string where, ExpandHome(path));
  if (!repository) return where;
  // git's own ssh transport also tries <path>.git.
  if (!FileExists(where) && FileExists(where + ".git")) where += ".git";
  return ops::StoreOfRepository(where);
}

}  // namespace

Action SetupServeStore(CLI::App& sub) {
  auto path = std::make_shared<std::string>();
  auto repository = std::make_shared<bool>(false);
  sub.add_option("path", *path, "The store's folder, or with --repository a git repository whose store to serve")
      ->required();
  sub.add_flag("--repository", *repository,
               "PATH is a git repository: serve its store (zipnn.storepath, else .git/zipnn/objects)");
  return [path, repository]() -> Status {
    FdChannel client(0, 1, "standard output");
    Result<std::string> root = StoreRoot(*path, *repository);
    if (!root.ok()) {
      // The client shows the reason; said here too, a user over ssh would
      // read it twice.
      if (remote::RefuseToServe(client, root.status().message()).ok()) std::exit(1);
      return root.status();
    }
    return remote::ServeStore(store::ObjectStore(*root), client);
  };
}

}  // namespace zipnn::cmd
