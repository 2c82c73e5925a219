#include "lib/remote/remote_store.h"

#include <sys/stat.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "lib/base/buffer.h"
#include "lib/base/file.h"
#include "lib/store/base_note.h"
#include "lib/store/object_store.h"
#include "lib/store/receive.h"
#include "lib/store/retention.h"

namespace zipnn::remote {

using store::ObjectStore;

namespace {

constexpr size_t kCopyBlock = 1 << 20;

Status CopySource(const ByteSource& from, ByteSink& out) {
  Buffer block(kCopyBlock);
  for (uint64_t at = 0; at < from.size(); at += block.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), from.size() - at));
    ZIPNN_RETURN_IF_ERROR(from.ReadAt(at, block.data(), n));
    ZIPNN_RETURN_IF_ERROR(out.Append(block.data(), n));
  }
  return OkStatus();
}


// The retention record of `id` as a store of this machine keeps it: the
// text must parse as `id`'s record before it is written, atomically.
Status KeepRecord(const ObjectStore& store, const ContentId& id, const std::string& text) {
  ZIPNN_ASSIGN_OR_RETURN(store::Retained record, store::ParseRecord(text, id));
  return store::WriteRecord(store, record);
}

Result<std::optional<std::string>> RecordTextOf(const ObjectStore& store, const ContentId& id) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<store::Retained> record, store::ReadRecord(store, id));
  if (!record) return std::optional<std::string>();
  return std::optional<std::string>(store::RecordText(*record));
}

Result<std::optional<std::string>> BaseNoteOf(const ObjectStore& store, const ContentId& id) {
  return store::BaseNoteTextOf(store, id);
}

constexpr SideKindInfo kSideKinds[] = {
    {SideKind::kBaseNote, "note", "base note", "base note", store::kBaseNoteSuffix, store::kMaxBaseNoteBytes,
     "put-note", "get-note", store::KeepBaseNote, BaseNoteOf},
    {SideKind::kRecord, "record", "retention record", "record", store::kRecordSuffix,
     store::kMaxRecordBytes,
     "put-record", "get-record", KeepRecord, RecordTextOf},
};

class Folder : public RemoteStore,
               public SideFiles,
               public Retention,
               public LockedRemoval,
               public Demotion,
               public OldTemporaries {
 public:
  Folder(std::string root, bool links) : store_(std::move(root)), links_(links) {}
  const std::string& where() const override { return store_.root(); }

  // A misfiled or damaged copy does not count: the push replaces it.
  Result<std::vector<bool>> Has(const std::vector<ContentId>& ids) override {
    std::vector<bool> has;
    has.reserve(ids.size());
    for (const ContentId& id : ids) has.push_back(HoldsIntact(store_, id));
    return has;
  }

  Status Put(const ContentId& id, const ByteSource& object) override {
    return store::ReceiveObject(
        store_, id, [&](AtomicFile& out) { return CopySource(object, out); },
        [&](const std::string& temp) { return CheckObjectFile(temp, id); });
  }

  Status PutFile(const ContentId& id, const ReadFile& object) override {
    if (links_) {
      // What a failed check says names the object that was linked.
      auto check = [&](const std::string& temp) { return Replaced(CheckObjectFile(temp, id), temp, object.name()); };
      ZIPNN_ASSIGN_OR_RETURN(bool linked, store::ReceiveLinked(store_, id, object.name(), check));
      if (linked) return OkStatus();
    }
    return Put(id, object);
  }

  Capabilities capabilities() override {
    Capabilities c;
    c.side_files = this;
    c.retention = this;
    c.locked_removal = this;
    c.demotion = this;
    c.old_temporaries = this;
    return c;
  }

  Result<size_t> RemoveOldTemporaries() override { return store::RemoveOldTemporaries(store_); }

  Result<uint64_t> Demote(const ContentId& id, const ReadFile& delta) override {
    // The delta comes from the local store, which proved it decodes to its
    // id when it made it: checked here as a Put is, record by record.
    return store::DemoteObject(
        store_, id, [&](AtomicFile& out) { return CopySource(delta, out); },
        [&](const std::string& temp) { return CheckObjectFile(temp, id); });
  }

  Result<std::optional<Held>> Stat(const ContentId& id) override { return store::StatObject(store_, id); }

  Status Replace(const ContentId& id, const ReadFile& object) override {
    return store::ReplaceObject(
        store_, id, [&](AtomicFile& out) { return CopySource(object, out); },
        [&](const std::string& temp) { return CheckObjectFile(temp, id); });
  }

  Status Remove(const ContentId& id) override { return store::RemoveObject(store_, id); }

  Result<Pruned> RemoveUnneeded(const std::set<ContentId>& ids) override { return store::PruneObjects(store_, ids); }

  Result<std::vector<ContentId>> List() override { return store::ListObjects(store_); }

  Status PutSide(SideKind kind, const ContentId& id, const std::string& text) override {
    return Side(kind).keep(store_, id, text);
  }

  Result<std::optional<std::string>> GetSide(SideKind kind, const ContentId& id) override {
    return Side(kind).read(store_, id);
  }

  Status Get(const ContentId& id, uint64_t limit, ByteSink& out) override {
    // Only a plain file: a FIFO put in an object's place would block the
    // open for ever.
    struct stat st;
    if (::stat(store_.PathOf(id).c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      return Corruption(store_.PathOf(id) + " is not a plain file");
    }
    ZIPNN_ASSIGN_OR_RETURN(ReadFile file, store_.Open(id));
    if (file.size() > limit) return ObjectTooBig(id, file.size(), limit);
    return CopySource(file, out);
  }

 private:
  ObjectStore store_;
  const bool links_;
};

}  // namespace

const SideKindInfo& Side(SideKind kind) {
  for (const SideKindInfo& k : kSideKinds) {
    if (k.kind == kind) return k;
  }
  return kSideKinds[0];  // every kind has its row
}

const SideKindInfo* SideNamed(const std::string& name) {
  for (const SideKindInfo& k : kSideKinds) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

Status PutSide(RemoteStore& remote, SideKind kind, const ContentId& id, const std::string& text) {
  SideFiles* sides = remote.capabilities().side_files;
  if (sides == nullptr) return Unsupported(remote.where() + " cannot keep the " + Side(kind).what + " of " + id.Hex());
  return sides->PutSide(kind, id, text);
}

Result<std::optional<std::string>> GetSide(RemoteStore& remote, SideKind kind, const ContentId& id) {
  SideFiles* sides = remote.capabilities().side_files;
  if (sides == nullptr) return std::optional<std::string>();
  return sides->GetSide(kind, id);
}

Status ObjectTooBig(const ContentId& id, uint64_t size, uint64_t limit) {
  return Corruption("object " + id.Hex() + " would be " + std::to_string(size) + " bytes, more than the " +
                    std::to_string(limit) + " its checkpoint can take");
}

std::unique_ptr<RemoteStore> FolderRemote(std::string root, bool links) {
  return std::make_unique<Folder>(std::move(root), links);
}

uint64_t ObjectSizeLimit(uint64_t raw_size) {
  constexpr uint64_t kSlack = 1 << 20;
  if (raw_size > (UINT64_MAX - kSlack) / 2) return UINT64_MAX;
  return 2 * raw_size + kSlack;
}

}  // namespace zipnn::remote
