#include "lib/ops/maintain.h"

#include "lib/git/git.h"
#include "lib/git/repository.h"
#include "lib/git/series_versions.h"

namespace zipnn::ops {

Result<GcNeeds> NeededObjects(Context& context, const std::vector<std::string>& forget, bool dry_run) {
  ZIPNN_ASSIGN_OR_RETURN(store::Store * store, context.Store());
  ZIPNN_ASSIGN_OR_RETURN(git::Repository * git_repo, context.Git());
  GcNeeds needs;
  Result<git::FoundPointers> read = git::FindPointers(*git_repo, /*all=*/true);
  if (!read.ok()) {
    // What git holds that could not be read may need any object.
    return WithHint(read.status(), "\nnothing was removed: what this repository needs is unknown");
  }
  needs.found = std::move(*read);
  for (const auto& [pointer, place] : needs.found.pointers) store::NeedChain(*store, pointer.id, needs.needed);
  ZIPNN_ASSIGN_OR_RETURN(needs.others, git::NeedOthers(*store, git_repo->common_dir(), forget, dry_run, needs.needed));
  return needs;
}

Result<std::map<std::string, std::vector<store::Version>>> SeriesToRepack(Context& context,
                                                                           const std::vector<std::string>& paths) {
  ZIPNN_ASSIGN_OR_RETURN(git::SeriesVersions * series, context.Series());
  ZIPNN_ASSIGN_OR_RETURN(auto all, series->All());
  std::map<std::string, std::vector<store::Version>> chosen;
  if (paths.empty()) return all;
  for (const std::string& p : paths) {
    auto full = git::TrackedPath(p);
    if (!full.ok()) return NotFound(p + " is not a checkpoint git holds here (`git zipnn ls-files` lists them)");
    const std::string name = series->rules().Place(*full).name;
    chosen[name] = all[name];
  }
  return chosen;
}

}  // namespace zipnn::ops
