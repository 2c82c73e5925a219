#include "lib/git/discover.h"

#include <filesystem>
#include <optional>
#include <utility>

#include "lib/base/file.h"
#include "lib/base/thread_pool.h"
#include "lib/config/policy.h"
#include "lib/git/git.h"
#include "lib/git/run.h"
#include "lib/git/repository.h"
#include "lib/store/base_note.h"
#include "lib/store/parents.h"
#include "lib/series/series.h"

namespace zipnn::git {

namespace {

// Where a repository whose git folder is `git_dir` keeps its objects
// unless zipnn.storepath says otherwise, and its other folders always.
std::string ZipnnDir(const std::string& git_dir) { return git_dir + "/zipnn"; }

// The folder a relative zipnn.storepath is read from, for the repository
// whose (common, absolute) git folder is `git_dir`: the top of its main
// work tree, the folder that holds its .git, as `git worktree list` names
// it; for a bare repository, or a git folder kept apart from its work
// tree, the git folder itself. It depends on the repository alone, never
// on the folder or linked worktree a command runs in, so every command,
// the filter, serve-store and a gc reading another repository sharing the
// store all find the same store.
std::string RelativeStoreBase(const std::string& git_dir) {
  const std::filesystem::path dir(git_dir);
  return dir.filename() == ".git" ? dir.parent_path().string() : git_dir;
}

// `git <where> <how> --get zipnn.storepath`: nullopt when unset or empty.
// `where` are git's first arguments (--git-dir=...), or none to read the
// repository around the current folder.
Result<std::optional<std::string>> ConfigValue(const std::vector<std::string>& where,
                                               const std::vector<std::string>& how) {
  std::vector<std::string> args = where;
  args.insert(args.end(), how.begin(), how.end());
  args.insert(args.end(), {"--get", "zipnn.storepath"});
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit(args));
  if (run.exit_code == 1) return std::optional<std::string>();  // unset
  while (!run.err.empty() && run.err.back() == '\n') run.err.pop_back();
  if (run.exit_code != 0) return Status(StatusCode::kGit, "git config zipnn.storepath: " + run.err);
  while (!run.out.empty() && run.out.back() == '\n') run.out.pop_back();
  return run.out.empty() ? std::optional<std::string>() : std::optional<std::string>(run.out);
}

// zipnn.storepath of the repository whose git folder is `git_dir`, set
// to `raw` (nullopt or empty: unset), as an absolute path: "~/" and
// "~user/" expanded as git expands a path-valued key (`git config
// --type=path`, asked with `where`), a relative path taken from
// RelativeStoreBase. nullopt when unset. `warnings` gets a word about a
// store an older git-zipnn made elsewhere from the same setting.
Result<std::optional<std::string>> StorePath(const std::string& git_dir, const std::optional<std::string>& raw,
                                             const std::vector<std::string>& where,
                                             std::vector<std::string>* warnings) {
  if (!raw || raw->empty()) return std::optional<std::string>();
  const std::string base = RelativeStoreBase(git_dir);
  std::string path = *raw;
  if (path[0] == '~') {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> expanded, ConfigValue(where, {"config", "--type=path"}));
    if (!expanded) return expanded;
    path = *expanded;
  }
  if (path[0] != '/') path = base + "/" + path;
  // Before paths were read as git reads them, "~/x" was a folder named "~"
  // in the folder the command ran in, usually the top of the work tree.
  const std::string old = base + "/" + *raw;
  std::error_code ec;
  if (warnings != nullptr && (*raw)[0] == '~' && std::filesystem::is_directory(old, ec) &&
      !std::filesystem::equivalent(old, path, ec)) {
    warnings->push_back("zipnn.storepath '" + *raw + "' is the folder " + path +
                        "; older versions of git-zipnn took it for " + old +
                        ", which still exists: move what it holds into the store (cp -Rn '" + old + "/.' '" + path +
                        "/') and remove it");
  }
  return std::optional<std::string>(path);
}

// StorePath of the value git holds.
Result<std::optional<std::string>> ConfiguredStore(const std::string& git_dir, const std::vector<std::string>& where,
                                                   std::vector<std::string>* warnings) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> raw, ConfigValue(where, {"config"}));
  return StorePath(git_dir, raw, where, warnings);
}

}  // namespace

std::string ScratchDirOf(const std::string& git_dir) { return ZipnnDir(git_dir) + "/tmp"; }

Result<store::OpenedStore> OpenStore(const Folders& folders, const ConfigSnapshot& config) {
  const std::string& git_dir = folders.git_dir;
  std::vector<std::string> warnings;
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> configured,
                         StorePath(git_dir, config.Get("zipnn.storepath"), {}, &warnings));
  const std::string zipnn_dir = ZipnnDir(git_dir);
  store::OpenedStore opened =
      store::Store::Open({configured ? *configured : zipnn_dir + "/objects", zipnn_dir, git_dir, folders.top});
  // What the store path said first, then .zipnn.yaml.
  warnings.insert(warnings.end(), opened.warnings.begin(), opened.warnings.end());
  opened.warnings = std::move(warnings);
  return opened;
}

Result<store::OpenedStore> OpenStore() {
  ZIPNN_ASSIGN_OR_RETURN(Folders folders, RepositoryFolders());
  ZIPNN_ASSIGN_OR_RETURN(ConfigSnapshot config, ConfigSnapshot::Read(kStartKeys));
  return OpenStore(folders, config);
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
  ZIPNN_ASSIGN_OR_RETURN(
      git_dir, GitOutput({"--git-dir=" + git_dir, "rev-parse", "--path-format=absolute", "--git-common-dir"}));
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> configured,
                         ConfiguredStore(git_dir, {"--git-dir=" + git_dir}, nullptr));
  return configured ? *configured : ZipnnDir(git_dir) + "/objects";
}

Result<std::unique_ptr<SeriesVersions>> OpenSeries(const store::Store& store) {
  ZIPNN_ASSIGN_OR_RETURN(Repository git_repo, Repository::Discover());
  ZIPNN_ASSIGN_OR_RETURN(series::Rules rules, series::Rules::WithPatterns(store.policy.series));
  return std::make_unique<SeriesVersions>(std::move(git_repo), std::move(rules));
}

std::string WhyBase(const store::Store& store, SeriesVersions& series, const std::string& path, const ContentId& id) {
  // What the store noted when it made the object (or received it with
  // its note); else worked out from its place in the series now.
  if (std::optional<store::BaseNote> note = store::ReadBaseNote(store.objects, id)) return store::DescribeNote(*note);
  auto versions = series.Of(series.rules().Place(path).name, /*deep=*/true);
  if (!versions.ok()) return "";
  const std::optional<store::SeriesAt> at = store::SeriesAt::Find(*versions, id);
  if (!at) return "";
  auto info = store::Describe(store, id);
  if (!info.ok() || info->delta) return "";
  return store::BaseReasonText(store::WhyBase(store, *at), store.policy);
}

std::string ParentNote(SeriesVersions& series, container::BaseChoice choice, const ContentId& base,
                       const std::string& detail) {
  if (choice == container::BaseChoice::kSeries) return "";
  std::string where = base.Hex();
  if (auto path = series.PathOf(base); path.ok() && *path) where = **path;
  return "a delta of " + where + " (" + store::BaseChoiceText(choice) + (detail.empty() ? "" : ": " + detail) + ")";
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
