#include "lib/store/store.h"

#include <cstdio>
#include <utility>

#include "lib/base/thread_pool.h"

namespace zipnn::store {

OpenedStore Store::Open(const StorePlace& place) {
  OpenedStore opened{Store{ObjectStore(place.objects), place.zipnn_dir + "/tmp", place.zipnn_dir + "/cache/raw", "",
                           config::Policy{}, place.zipnn_dir + "/cache/rebased"},
                     {}};
  Store& store = opened.store;
  store.added_dir = place.zipnn_dir + "/added";
  (void)store.objects.RegisterUser(place.user);
  if (place.work_dir) {
    store.work_dir = *place.work_dir;
    config::LoadedPolicy loaded = config::LoadPolicyLenient(*place.work_dir + "/.zipnn.yaml");
    store.policy = std::move(loaded.policy);
    store.policy.threads = config::EffectiveThreads(store.policy, ThreadPool::DefaultThreads());
    for (const std::string& w : loaded.warnings) opened.warnings.push_back(w + " (ignored; the defaults hold)");
  }
  return opened;
}

Result<Adding> Store::BeginAdding(const std::string& command) const {
  ZIPNN_ASSIGN_OR_RETURN(StoreLock lock, objects.Lock(StoreLock::Mode::kShared, [&command] {
    std::fprintf(stderr, "%s: waiting for a gc of the store to finish\n", command.c_str());
  }));
  return Adding(std::move(lock));
}

Result<Removing> Store::BeginRemoving(const std::string& command) const {
  ZIPNN_ASSIGN_OR_RETURN(StoreLock lock, objects.Lock(StoreLock::Mode::kExclusive, [&command] {
    std::fprintf(stderr, "%s: waiting for running adds to finish\n", command.c_str());
  }));
  return Removing(std::move(lock));
}

Result<Resolved> Store::Resolve(const ContentId& id) const {
  if (objects.Has(id)) return Resolved{Resolved::Kind::kExact, std::nullopt};
  ZIPNN_ASSIGN_OR_RETURN(std::optional<Retained> record, ReadRecord(objects, id));
  if (!record) return Resolved{};
  const Resolved::Kind kind = record->dropped ? Resolved::Kind::kDropped : Resolved::Kind::kApproximate;
  return Resolved{kind, std::move(record)};
}

}  // namespace zipnn::store
