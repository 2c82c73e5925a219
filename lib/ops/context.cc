#include "lib/ops/context.h"

#include <cstdio>
#include <utility>

#include "lib/git/discover.h"
#include "lib/git/git.h"
#include "lib/git/repository.h"
#include "lib/git/series_versions.h"
#include "lib/remote/remote_store.h"
#include "lib/remote/select.h"

namespace zipnn::ops {

Context::Context() : Context(Options{}) {}
Context::Context(Options options) : options_(options) {}
Context::~Context() = default;
Context::Context(Context&&) noexcept = default;
Context& Context::operator=(Context&&) noexcept = default;

Result<store::Store*> Context::Opened() {
  if (!store_) return store_error_;
  return &*store_;
}

Result<store::Store*> Context::Store() {
  if (store_tried_) return Opened();
  store_tried_ = true;
  Result<store::OpenedStore> opened = git::OpenStore();
  if (!opened.ok()) {
    store_error_ = opened.status();
    return store_error_;
  }
  return Keep(std::move(*opened));
}

Result<store::Store*> Context::StoreFrom(const git::Folders& folders, const git::ConfigSnapshot& config) {
  if (store_tried_) return Opened();
  store_tried_ = true;
  Result<store::OpenedStore> opened = git::OpenStore(folders, config);
  if (!opened.ok()) {
    store_error_ = opened.status();
    return store_error_;
  }
  return Keep(std::move(*opened));
}

// Each mistake in .zipnn.yaml costs its key the default; said as the
// store opens.
store::Store* Context::Keep(store::OpenedStore opened) {
  warnings_ = std::move(opened.warnings);
  if (options_.print_warnings) {
    for (const std::string& warning : warnings_) std::fprintf(stderr, "git-zipnn: warning: %s\n", warning.c_str());
  }
  store_.emplace(std::move(opened.store));
  if (options_.threads > 0) store_->policy.threads = options_.threads;
  return &*store_;
}

Result<git::Repository*> Context::Git() {
  if (git_) return git_.get();
  if (!git_error_.ok()) return git_error_;
  Result<git::Repository> found = git::Repository::Discover();
  if (!found.ok()) {
    git_error_ = found.status();
    return git_error_;
  }
  git_ = std::make_unique<git::Repository>(std::move(*found));
  return git_.get();
}

Result<git::SeriesVersions*> Context::Series() {
  if (series_) return series_.get();
  if (series_error_) return *series_error_;
  ZIPNN_ASSIGN_OR_RETURN(store::Store* store, Store());
  Result<std::unique_ptr<git::SeriesVersions>> opened = git::OpenSeries(*store);
  if (!opened.ok()) {
    series_error_ = opened.status();
    return *series_error_;
  }
  series_ = std::move(*opened);
  return series_.get();
}

Result<std::unique_ptr<git::SeriesVersions>> Context::TakeSeries() {
  ZIPNN_RETURN_IF_ERROR(Series().status());
  return std::move(series_);
}

Result<const remote::RemoteSettings*> Context::RemoteSettings() {
  if (settings_) return settings_.get();
  if (!settings_error_.ok()) return settings_error_;
  Result<remote::RemoteSettings> read = remote::RemoteSettings::Read();
  if (!read.ok()) {
    settings_error_ = read.status();
    return settings_error_;
  }
  settings_ = std::make_unique<remote::RemoteSettings>(std::move(*read));
  return settings_.get();
}

Result<remote::RemoteStore*> Context::Remote(const std::string& name) {
  auto known = remotes_.find(name);
  if (known != remotes_.end()) return known->second.get();
  ZIPNN_ASSIGN_OR_RETURN(const remote::RemoteSettings* settings, RemoteSettings());
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<remote::RemoteStore> opened, remote::OpenRemoteStore(*settings, name));
  return remotes_.emplace(name, std::move(opened)).first->second.get();
}

}  // namespace zipnn::ops
