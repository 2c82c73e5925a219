#include "lib/git/discover.h"

#include <optional>
#include <utility>

#include "lib/base/file.h"
#include "lib/config/policy.h"
#include "lib/git/git.h"
#include "lib/git/run.h"
#include "lib/git/repository.h"
#include "lib/series/series.h"

namespace zipnn::git {

namespace {

// Where a repository whose git folder is `git_dir` keeps its objects
// unless zipnn.storepath says otherwise, and its other folders always.
std::string ZipnnDir(const std::string& git_dir) { return git_dir + "/zipnn"; }

}  // namespace

Result<OpenedRepository> OpenStoreRepository() {
  ZIPNN_ASSIGN_OR_RETURN(std::string git_dir, GitDir());
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> configured, ConfigGet("zipnn.storepath"));
  const std::string zipnn_dir = ZipnnDir(git_dir);
  OpenedRepository opened{store::Repository{store::ObjectStore(configured ? *configured : zipnn_dir + "/objects"),
                                            zipnn_dir + "/tmp", zipnn_dir + "/cache/raw", "", config::Policy{}},
                          {}};
  // A store this repository cannot write to is one it does not add to
  // either, so a failed registration costs nothing.
  (void)opened.repo.objects.RegisterUser(git_dir);
  auto top = TopLevel();
  if (top.ok()) {
    opened.repo.work_dir = *top;
    config::LoadedPolicy loaded = config::LoadPolicyLenient(*top + "/.zipnn.yaml");
    opened.repo.policy = std::move(loaded.policy);
    opened.warnings = std::move(loaded.warnings);
  }
  return opened;
}

Result<std::string> StoreOfRepository(const std::string& path) {
  std::string git_dir;
  if (FileExists(path + "/.git")) {
    git_dir = path + "/.git";
  } else if (FileExists(path + "/HEAD") && FileExists(path + "/objects")) {
    git_dir = path;
  } else {
    return NotFound(path + " is not a git repository, so it has no object store (set remote.<name>.zipnnurl)");
  }
  ZIPNN_ASSIGN_OR_RETURN(git_dir,
                         GitOutput({"--git-dir=" + git_dir, "rev-parse", "--path-format=absolute", "--git-common-dir"}));
  ZIPNN_ASSIGN_OR_RETURN(GitRun configured, RunGit({"--git-dir=" + git_dir, "config", "--get", "zipnn.storepath"}));
  std::string store = configured.out;
  while (!store.empty() && store.back() == '\n') store.pop_back();
  return configured.exit_code == 0 && !store.empty() ? store : ZipnnDir(git_dir) + "/objects";
}

Result<std::unique_ptr<SeriesVersions>> OpenSeries(const store::Repository& repo) {
  ZIPNN_ASSIGN_OR_RETURN(Repository git_repo, Repository::Discover());
  ZIPNN_ASSIGN_OR_RETURN(series::Rules rules, series::Rules::WithPatterns(repo.policy.series));
  return std::make_unique<SeriesVersions>(std::move(git_repo), std::move(rules));
}

std::string WhyBase(const store::Repository& repo, SeriesVersions& series, const std::string& path,
                    const ContentId& id) {
  auto versions = series.Of(series.rules().Place(path).name, /*deep=*/true);
  if (!versions.ok()) return "";
  for (size_t i = 0; i < versions->size(); ++i) {
    if ((*versions)[i].id != id) continue;
    auto info = store::Describe(repo, id);
    if (!info.ok() || info->delta) return "";
    return store::BaseReasonText(store::WhyBase(repo, *versions, i), repo.policy);
  }
  return "";
}

Result<std::optional<store::Version>> PreviousInSeries(SeriesVersions& series, const std::string& path) {
  const series::Placed placed = series.rules().Place(path);
  if (placed.step.empty()) return std::optional<store::Version>();
  ZIPNN_ASSIGN_OR_RETURN(std::vector<store::Version> versions, series.Of(placed.name, /*deep=*/true));
  std::optional<store::Version> previous;
  for (const store::Version& v : versions) {  // in step order
    if (v.path != path && series::StepLess(v.step, placed.step)) previous = v;
  }
  return previous;
}

}  // namespace zipnn::git
