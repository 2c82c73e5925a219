#include "lib/git/shared_store.h"

#include <algorithm>
#include <filesystem>

#include "lib/git/discover.h"
#include "lib/git/pointers.h"
#include "lib/git/repository.h"

namespace zipnn::git {

namespace {

bool SameFolder(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

// Whether `given` (as typed, perhaps relative, perhaps gone) names the
// registered folder `user`.
bool Names(const std::string& given, const std::string& user) {
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(given, ec).lexically_normal().string();
  return given == user || SameFolder(given, user) || (!ec && (absolute == user || absolute == user + "/"));
}

}  // namespace

Result<OthersNeed> NeedOthers(const store::Store& store, const std::string& own_git_dir,
                              const std::vector<std::string>& forget, bool dry_run, store::Needed& needed) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> users, store.objects.Users());
  auto forgotten = [&](const std::string& user) {
    return std::any_of(forget.begin(), forget.end(), [&](const std::string& f) { return Names(f, user); });
  };
  for (const std::string& f : forget) {
    if (std::none_of(users.begin(), users.end(), [&](const std::string& u) { return Names(f, u); })) {
      std::string list;
      for (const std::string& u : users) list += "\n  " + u;
      return InvalidArgument("--forget " + f + ": not a repository of the store " + store.objects.root() +
                             "; its repositories are:" + list);
    }
  }
  OthersNeed others;
  std::vector<std::string> unknown;
  for (const std::string& user : users) {
    if (user == own_git_dir || SameFolder(user, own_git_dir)) continue;
    // A relative entry was not written by RegisterUser: from here it could
    // name any folder.
    const bool absolute = !user.empty() && user[0] == '/';
    Result<Repository> other = absolute ? Repository::Discover(user) : InvalidArgument("not an absolute path");
    if (other.ok()) {
      auto its_store = StoreOfRepository(user);
      if (its_store.ok() && !SameFolder(*its_store, store.objects.root())) {
        if (!dry_run) ZIPNN_RETURN_IF_ERROR(store.objects.ForgetUser(user));  // it moved to another store
        continue;
      }
      if (forgotten(user)) {
        return InvalidArgument("--forget " + user + ": that repository is still there and keeps its checkpoints in " +
                               "this store; gc keeps what it needs (to stop sharing, set its zipnn.storepath to "
                               "another folder)");
      }
      auto found = FindPointers(*other, /*all=*/true);
      if (found.ok()) {
        for (const auto& [pointer, place] : found->pointers) store::NeedChain(store, pointer.id, needed);
        others.pointers += found->pointers.size();
        others.sharing.push_back(user);
        continue;
      }
      other = found.status();
    }
    if (forgotten(user)) {
      if (!dry_run) ZIPNN_RETURN_IF_ERROR(store.objects.ForgetUser(user));
      others.forgot.push_back(user);
      continue;
    }
    const bool gone = absolute && !std::filesystem::exists(user);
    unknown.push_back(user + (gone ? " (no longer exists)" : " (" + other.status().message() + ")"));
  }
  if (!unknown.empty()) {
    std::string list;
    for (const std::string& u : unknown) list += "\n  " + u;
    return Unsupported("the store " + store.objects.root() + " is shared with repositories that cannot be read:" + list +
                       "\nnothing was removed: what they need is unknown. If one is gone for good, "
                       "name it: git zipnn gc --forget <its git folder>");
  }
  return others;
}

}  // namespace zipnn::git
