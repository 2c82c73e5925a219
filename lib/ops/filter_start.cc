#include "lib/ops/filter_start.h"

#include "lib/git/discover.h"
#include "lib/git/hook.h"
#include "lib/git/listings.h"
#include "lib/git/setup.h"
#include "lib/remote/select.h"

namespace zipnn::ops {

Result<FilterStart> StartFilter(Context& context, const std::function<void(const std::string&)>& said) {
  ZIPNN_ASSIGN_OR_RETURN(git::Folders folders, git::RepositoryFolders());
  ZIPNN_ASSIGN_OR_RETURN(git::ConfigSnapshot config, git::ConfigSnapshot::Read(git::kStartKeys));
  const std::string hook = git::EnsureHook(folders.hooks);
  if (!hook.empty()) said(hook);
  ZIPNN_ASSIGN_OR_RETURN(store::Store * opened, context.StoreFrom(folders, config));
  Result<std::unique_ptr<git::SeriesVersions>> series = context.TakeSeries();
  FilterStart start{std::move(*opened), nullptr, OkStatus(), config.Flag("zipnn.skipsmudgeerrors"),
                    std::make_unique<git::ConfigSnapshot>(std::move(config))};
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
