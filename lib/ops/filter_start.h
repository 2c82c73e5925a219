// What git's filter (clean, smudge, filter-process) starts from: the
// repository's folders and git-zipnn's config, one git run each (a `git
// add` waits for them before its first byte); the pre-push hook written
// when the repository has none (lib/git/hook.h); the store, and the
// series git holds. cmd/ builds the filter (filters/) from them.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "lib/base/status.h"
#include "lib/git/git.h"
#include "lib/git/series_versions.h"
#include "lib/git/textconv_cache.h"
#include "lib/ops/context.h"
#include "lib/store/store.h"

namespace zipnn::ops {

struct FilterStart {
  store::Store store;
  // The series git holds; none (every version stored standalone) when the
  // repository cannot be read in-process, which must not stop git:
  // `series_error` says why.
  std::unique_ptr<git::SeriesVersions> series;
  Status series_error;
  bool skip_smudge_errors = false;  // zipnn.skipsmudgeerrors
  std::unique_ptr<git::ConfigSnapshot> config;
  // Checkpoints of more bytes are left as pointers by smudge, for the
  // post-checkout and post-merge hooks to write (0: none is; so when
  // those hooks are another program's).
  uint64_t checkout_outside_above = 0;
};

// The setting, and its default: git holds each file a filter hands it
// whole in memory, so larger checkpoints are written outside git.
inline constexpr char kCheckoutOutsideKey[] = "zipnn.checkoutoutsideabove";
inline constexpr uint64_t kCheckoutOutsideAbove = uint64_t{1} << 30;
// `said` hears what writing the hook has to say. The store is handed over
// from `context`, which is spent for it.
Result<FilterStart> StartFilter(Context& context, const std::function<void(const std::string&)>& said);

// Clean lists what it stores for git's textconv cache when git keeps one
// (lib/git/textconv_cache.h).
std::optional<git::TextconvCache> ListingsCache(const FilterStart& start);

// A checkout that left pointers (GIT_ZIPNN_SKIP_SMUDGE) fetched no
// object, and with it no listings (lib/git/listings.h): it takes them
// from the default remote now, so that `git log -p` in such a clone
// restores nothing either. Failing costs only time later.
void TakeListingsFromDefaultRemote();

}  // namespace zipnn::ops
