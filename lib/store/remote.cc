#include "lib/store/remote.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "lib/base/buffer.h"
#include "lib/base/file.h"
#include "lib/base/thread_pool.h"
#include "lib/container/format.h"
#include "lib/container/object.h"
#include "lib/store/object_store.h"

namespace zipnn::store {

namespace {

constexpr size_t kCopyBlock = 1 << 20;

Status CopySource(const ByteSource& from, ByteSink& out) {
  Buffer block(kCopyBlock);
  for (uint64_t at = 0; at < from.size(); at += block.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), from.size() - at));
    RETURN_IF_ERROR(from.ReadAt(at, block.data(), n));
    RETURN_IF_ERROR(out.Append(block.data(), n));
  }
  return OkStatus();
}

class Folder : public RemoteStore {
 public:
  explicit Folder(std::string root) : store_(std::move(root)) {}
  const std::string& where() const override { return store_.root(); }

  Result<std::vector<bool>> Has(const std::vector<ContentId>& ids) override {
    std::vector<bool> has;
    has.reserve(ids.size());
    for (const ContentId& id : ids) has.push_back(store_.Has(id));
    return has;
  }

  Status Put(const ContentId& id, const ByteSource& object) override {
    return store_.Put(
        id, [&](AtomicFile& out) { return CopySource(object, out); },
        [&](const std::string& temp) { return CheckObjectFile(temp, id); });
  }

  Status Get(const ContentId& id, ByteSink& out) override {
    ASSIGN_OR_RETURN(ReadFile file, store_.Open(id));
    return CopySource(file, out);
  }

 private:
  ObjectStore store_;
};

// Tries `once` up to `attempts` times. Only what may pass is tried again:
// a read or write that failed, or bytes damaged on the way.
Status WithRetries(int attempts, const std::function<Status()>& once) {
  Status st;
  for (int i = 0; i < std::max(1, attempts); ++i) {
    st = once();
    if (st.code() != StatusCode::kIoError && st.code() != StatusCode::kCorruption) return st;
  }
  return st;
}

// Runs `move` over `ids`, options.parallel at a time, adding what each
// moved to `report` and telling options.progress.
Status MoveAll(const std::vector<ContentId>& ids, const TransferOptions& options, TransferReport& report,
               const std::function<Result<uint64_t>(const ContentId&)>& move) {
  ThreadPool pool(std::max(1, options.parallel));
  return RunOrdered<uint64_t>(
      pool, ids.size(), [&](size_t i) { return move(ids[i]); },
      [&](size_t, uint64_t bytes) -> Status {
        ++report.moved;
        report.bytes += bytes;
        if (options.progress) options.progress(report.moved, report.bytes);
        return OkStatus();
      });
}

}  // namespace

std::unique_ptr<RemoteStore> FolderRemote(std::string root) { return std::make_unique<Folder>(std::move(root)); }

Status CheckObject(const ByteSource& object, const ContentId& id) {
  ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(object));
  if (info.content_id != id) {
    return Corruption(object.name() + ": holds " + info.content_id.Hex() + ", not " + id.Hex());
  }
  ASSIGN_OR_RETURN(auto stats, container::ScanObject(object, info));  // every record's checksum
  (void)stats;
  return OkStatus();
}

Status CheckObjectFile(const std::string& path, const ContentId& id) {
  ASSIGN_OR_RETURN(ReadFile file, ReadFile::Open(path));
  return CheckObject(file, id);
}

Result<TransferReport> PushObjects(const Repository& repo, RemoteStore& remote, const std::vector<ContentId>& ids,
                                   const TransferOptions& options) {
  // Every object of every chain, each once, ordered base first so that a
  // push cut short leaves whole chains behind as far as it went.
  std::map<ContentId, int> height;  // links above the base (0: a base)
  for (const ContentId& id : ids) {
    std::vector<ContentId> chain;
    RETURN_IF_ERROR(VisitChain(repo, id, [&](const ChainLink& link) { chain.push_back(link.id); }));
    for (size_t i = 0; i < chain.size(); ++i) height[chain[i]] = static_cast<int>(chain.size() - 1 - i);
  }
  std::vector<ContentId> all;
  for (const auto& [id, h] : height) all.push_back(id);
  std::stable_sort(all.begin(), all.end(), [&](const ContentId& a, const ContentId& b) { return height[a] < height[b]; });

  TransferReport report;
  report.needed = all.size();
  Result<std::vector<bool>> has = remote.Has(all);
  if (!has.ok()) {
    return Status(has.status().code(), "cannot ask " + remote.where() + " what it holds: " + has.status().message());
  }
  std::vector<ContentId> send;
  for (size_t i = 0; i < all.size(); ++i) {
    if ((*has)[i]) {
      ++report.present;
    } else {
      send.push_back(all[i]);
    }
  }
  RETURN_IF_ERROR(MoveAll(send, options, report, [&](const ContentId& id) -> Result<uint64_t> {
    ASSIGN_OR_RETURN(ReadFile object, repo.objects.Open(id));
    Status sent = WithRetries(options.attempts, [&] { return remote.Put(id, object); });
    if (!sent.ok()) return Status(sent.code(), "cannot send object " + id.Hex() + " to " + remote.where() + ": " + sent.message());
    return object.size();
  }));
  return report;
}

Result<TransferReport> FetchObjects(const Repository& repo, RemoteStore& remote, const std::vector<ContentId>& ids,
                                    const TransferOptions& options) {
  TransferReport report;
  std::set<ContentId> seen;
  std::vector<ContentId> wanted = ids;
  // One round per chain level: the objects asked for, then their bases
  // (known once their headers are here), and so on down to the bases.
  while (!wanted.empty()) {
    std::vector<ContentId> get, next;
    std::map<ContentId, ContentId> needed_by;
    auto follow = [&](const ContentId& id) -> Status {
      ASSIGN_OR_RETURN(ReadFile object, repo.objects.Open(id));
      ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(object));
      if (info.header.kind == container::ObjectKind::kDelta) next.push_back(info.header.base_id);
      return OkStatus();
    };
    for (const ContentId& id : wanted) {
      if (!seen.insert(id).second) continue;
      ++report.needed;
      if (repo.objects.Has(id)) {
        ++report.present;
        RETURN_IF_ERROR(follow(id));
      } else {
        get.push_back(id);
      }
    }
    if (seen.size() > ids.size() + static_cast<size_t>(kMaxChainDepth) * std::max<size_t>(1, ids.size())) {
      return Corruption("the chains of the objects asked for do not end (a loop?)");
    }
    RETURN_IF_ERROR(MoveAll(get, options, report, [&](const ContentId& id) -> Result<uint64_t> {
      uint64_t bytes = 0;
      Status got = WithRetries(options.attempts, [&] {
        return repo.objects.Put(
            id,
            [&](AtomicFile& out) {
              RETURN_IF_ERROR(remote.Get(id, out));
              bytes = out.size();
              return OkStatus();
            },
            [&](const std::string& temp) { return CheckObjectFile(temp, id); });
      });
      if (got.code() == StatusCode::kNotFound) {
        return NotFound("object " + id.Hex() + " is not on the remote store " + remote.where());
      }
      if (!got.ok()) return Status(got.code(), "cannot fetch object " + id.Hex() + " from " + remote.where() + ": " + got.message());
      return bytes;
    }));
    for (const ContentId& id : get) RETURN_IF_ERROR(follow(id));
    wanted = std::move(next);
  }
  return report;
}

}  // namespace zipnn::store
