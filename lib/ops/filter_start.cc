#include "lib/ops/filter_start.h"

#include <algorithm>

#include "lib/git/discover.h"
#include "lib/git/hook.h"
#include "lib/git/listings.h"
#include "lib/git/setup.h"
#include "lib/remote/select.h"

namespace zipnn::ops {

Result<FilterStart> StartFilter(Context& context, const std::function<void(const std::string&)>& said) {
  ZIPNN_ASSIGN_OR_RETURN(git::Folders folders, git::RepositoryFolders());
  ZIPNN_ASSIGN_OR_RETURN(git::ConfigSnapshot config, git::ConfigSnapshot::Read(git::kStartKeys));
  const git::EnsuredHooks hooks = git::EnsureHooks(folders.hooks);
  for (const std::string& line : hooks.said) said(line);
  // Past this size a checkpoint is written after git's checkout, when
  // our hooks run then (hook.h); a value git would not take is said, and
  // the default holds, since git's own work comes first.
  uint64_t outside_above = 0;
  if (hooks.writes_after_checkout) {
    const Result<std::optional<int64_t>> set = config.GetInt(std::string(kCheckoutOutsideKey));
    if (!set.ok()) {
      said("warning: zipnn.checkoutOutsideAbove is \"" + config.Get(std::string(kCheckoutOutsideKey)).value_or("") +
           "\", not a size (a number, with k, m or g after it: 512m, 2g); the default, 1g, holds");
    }
    outside_above = set.ok() && *set ? static_cast<uint64_t>(std::max<int64_t>(0, **set)) : kCheckoutOutsideAbove;
  }
  ZIPNN_ASSIGN_OR_RETURN(store::Store * opened, context.StoreFrom(folders, config));
  Result<std::unique_ptr<git::SeriesVersions>> series = context.TakeSeries();
  FilterStart start{std::move(*opened), nullptr, OkStatus(), config.Flag("zipnn.skipsmudgeerrors"),
                    std::make_unique<git::ConfigSnapshot>(std::move(config))};
  start.checkout_outside_above = outside_above;
  if (series.ok()) {
    start.series = std::move(*series);
  } else {
    start.series_error = series.status();
  }
  return start;
}

std::optional<git::TextconvCache> ListingsCache(const FilterStart& start) {
  return git::TextconvCache::Open(git::kDriver, *start.config);
}

void TakeListingsFromDefaultRemote() {
  // One read of git's config for both the choice of remote and the refs.
  const Result<remote::RemoteSettings> settings = remote::RemoteSettings::Read();
  if (!settings.ok()) return;
  if (auto remote = remote::DefaultRemote(*settings); remote.ok()) {
    (void)git::TakeListings(*remote, &settings->config());
  }
}

}  // namespace zipnn::ops
