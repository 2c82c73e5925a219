#include "lib/access/versions.h"

#include <utility>
#include <vector>

#include "lib/git/checkpoint_at.h"
#include "lib/git/git.h"
#include "lib/git/pointers.h"
#include "lib/git/repository.h"
#include "lib/remote/retention.h"
#include "lib/remote/transfer.h"
#include "lib/store/copies.h"

namespace zipnn::access {

Versions::Versions(const store::Store& store, Options options) : store_(store), options_(options) {}

const std::map<ContentId, std::string>& Versions::InIndex() const {
  if (!in_index_) {
    in_index_.emplace();
    if (!store_.work_dir.empty()) {
      auto repo = git::Repository::Discover(store_.work_dir);
      auto staged = repo.ok() ? git::StagedPointers(*repo) : Result<std::map<std::string, ContentId>>(repo.status());
      if (staged.ok()) {
        for (const auto& [path, id] : *staged) in_index_->emplace(id, path);
      }
    }
  }
  return *in_index_;
}

std::optional<ReadFile> Versions::FindCopy(const ContentId& id, const store::FindCopy& also) const {
  return FindCopyOfSize(id, std::nullopt, also);
}

std::optional<ReadFile> Versions::FindCopyOfSize(const ContentId& id, std::optional<uint64_t> size,
                                                 const store::FindCopy& also) const {
  // With a size, a copy must hold that many bytes too (a pointer may lie
  // about its size), and a work-tree file of another size (a save made
  // since) is not hashed in vain.
  if (also) {
    if (std::optional<ReadFile> copy = also(id); copy && (!size || copy->size() == *size)) return copy;
  }
  std::vector<std::string> paths;
  if (const auto it = InIndex().find(id); it != InIndex().end()) paths.push_back(it->second);
  std::optional<store::VerifiedCopy> copy = store::FindVerifiedCopy(store_, id, paths, size);
  if (!copy) return std::nullopt;
  return std::move(copy->file);
}

Result<bool> Versions::Fetch(const store::Pointer& pointer, const store::FindCopy& find_copy, ByteSink* deliver) const {
  if (!options_.fetch) return false;
  return remote::FetchChain(store_, pointer.id, pointer.size, find_copy, deliver);
}

bool Versions::FetchRecord(const ContentId& id) const {
  if (!options_.fetch) return false;
  Result<bool> got = remote::FetchRecord(store_, id);
  return got.ok() && *got;
}

Result<std::optional<store::Retained>> Versions::Retention(const ContentId& id) const {
  ZIPNN_ASSIGN_OR_RETURN(store::Resolved held, store_.Resolve(id));
  return std::move(held.retained);
}

namespace {

Status RemovedVersion(const store::Retained& r, const std::string& name) {
  return Removed(name + ": version " + r.id.Hex().substr(0, 12) + " was " + r.Describe() +
                 "; its exact bytes are no longer kept" +
                 (r.dropped ? "" : " (--approximate reads the approximate version)"));
}

}  // namespace

std::optional<Status> Versions::WriteRetained(const store::Pointer& pointer, const std::string& name, ByteSink& out,
                                              const store::FindCopy& find_copy, bool ask_remote) const {
  Result<std::optional<store::Retained>> record = Retention(pointer.id);
  if (!record.ok()) {
    // Retention took it, but what it made of it cannot be read: a
    // checkout still leaves the pointer, and fsck names the record.
    return Removed(name + ": version " + pointer.id.Hex().substr(0, 12) + " is not here, and " +
                   record.status().message() + " (`git zipnn fsck` names it)");
  }
  if (!*record) return std::nullopt;
  const store::Retained& r = **record;
  if (options_.approximate && !r.dropped) {
    store::Pointer approximate = pointer;
    approximate.id = r.approximate;
    return Write(approximate, name + " (approximate)", out);  // fetched, when it is on the remote only
  }
  // The remote may still hold the exact version: read through, not kept
  // (remote::FetchRetained).
  if (!ask_remote || !options_.fetch) return RemovedVersion(r, name);
  Result<bool> delivered = remote::FetchRetained(store_, pointer.id, pointer.size, find_copy, out);
  if (delivered.ok() && *delivered) return OkStatus();
  // A remote that holds them but cannot give them now (unreachable,
  // failing, sending bytes that are not the version's) is said as it is:
  // the bytes are not gone.
  if (!delivered.ok() && delivered.status().code() != StatusCode::kNotFound) {
    return Unavailable(name + ": version " + r.id.Hex().substr(0, 12) + " was " + r.Describe() +
                       " here, and the remote that keeps its exact bytes could not give them: " +
                       delivered.status().message());
  }
  return RemovedVersion(r, name);
}

Status Versions::Write(const store::Pointer& pointer, const std::string& name, ByteSink& out,
                       const store::FindCopy& also) const {
  if (options_.copies == Copies::kAll) {
    if (std::optional<ReadFile> copy = FindCopyOfSize(pointer.id, pointer.size, also))
      return CopyRange(*copy, 0, copy->size(), out);
  }
  store::FindCopy find_copy;
  if (options_.copies != Copies::kNone) find_copy = [&](const ContentId& id) { return FindCopy(id, also); };
  // A restore opens every object of the chain before it writes a byte, so
  // one that finds an object missing can be tried again after a fetch.
  Status restored = store::RestoreFile(store_, pointer, name, out, find_copy);
  if (restored.code() != StatusCode::kNotFound) return restored;
  if (std::optional<Status> retained = WriteRetained(pointer, name, out, find_copy)) return *retained;
  Result<bool> delivered = Fetch(pointer, find_copy, &out);
  if (!delivered.ok()) {
    // Retention on the remote took it: its record says what became of it.
    if (delivered.status().code() == StatusCode::kNotFound && FetchRecord(pointer.id)) {
      if (std::optional<Status> retained = WriteRetained(pointer, name, out, find_copy, /*ask_remote=*/false)) {
        return *retained;
      }
    }
    // Not there, or not kept: the remote said so. Anything else is the
    // remote not giving it (unreachable, refusing, failing, lying), which a
    // checkout may wait out (filters/checkpoint_filter.h).
    const StatusCode code = delivered.status().code();
    if (code == StatusCode::kNotFound || code == StatusCode::kRemoved) return Annotate(delivered.status(), name);
    return Annotate(Unavailable(delivered.status().message()), name);
  }
  return *delivered ? OkStatus() : store::RestoreFile(store_, pointer, name, out, find_copy);
}

Result<formats::Checkpoint> Versions::Open(const store::Pointer& pointer, const std::string& name) const {
  if (options_.copies == Copies::kAll) {
    if (std::optional<ReadFile> copy = FindCopyOfSize(pointer.id, pointer.size)) {
      return formats::Checkpoint(std::move(*copy));
    }
  }
  return formats::Checkpoint::Spool(store_.temp_dir, [&](ByteSink& out) { return Write(pointer, name, out); });
}

Result<Parts> Versions::OpenParts(const store::Pointer& pointer, const std::string& name) const {
  // No copy is looked for, whatever the Copies: hashing one costs a read
  // of the whole file, more than decoding the few chunks a part needs.
  Parts parts;
  auto opened = store::OpenVersion(store_, pointer.id);
  std::optional<store::Retained> retained;
  if (opened.status().code() == StatusCode::kNotFound) {
    ZIPNN_ASSIGN_OR_RETURN(retained, Retention(pointer.id));
    if (retained && options_.approximate && !retained->dropped) {
      store::Pointer approximate = pointer;
      approximate.id = retained->approximate;
      return OpenParts(approximate, name + " (approximate)");
    }
  }
  if (opened.status().code() == StatusCode::kNotFound && options_.fetch) {
    // A tensor of a version that is not here costs its own chunks on the
    // remote where it serves parts, not the objects of its chain.
    Result<std::unique_ptr<ByteSource>> there = remote::OpenRemoteVersion(store_, pointer.id, pointer.size);
    if (there.ok()) {
      parts.chain = std::move(*there);
      return parts;
    }
    if (retained) return RemovedVersion(*retained, name);
    if (there.status().code() != StatusCode::kUnsupported) return Annotate(there.status(), name);
  }
  if (opened.status().code() == StatusCode::kNotFound) {
    if (retained) return RemovedVersion(*retained, name);
    if (Result<bool> fetched = Fetch(pointer, nullptr, nullptr); !fetched.ok()) {
      if (fetched.status().code() == StatusCode::kNotFound && FetchRecord(pointer.id)) return OpenParts(pointer, name);
      return Annotate(fetched.status(), name);
    }
    opened = store::OpenVersion(store_, pointer.id);
    if (opened.status().code() == StatusCode::kNotFound) return store::MissingObject(store_, pointer, name);
  }
  if (opened.ok()) {
    if ((*opened)->size() != pointer.size) {
      return Corruption("object " + pointer.id.Hex() + " holds " + std::to_string((*opened)->size()) +
                        " bytes; its pointer at " + name + " says " + std::to_string(pointer.size));
    }
    parts.chain = std::move(*opened);
    return parts;
  }
  // An object older than format 5 has no raw checksums: read it whole.
  if (opened.status().code() != StatusCode::kUnsupported) return opened.status();
  ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint whole, Open(pointer, name));
  parts.whole.emplace(std::move(whole));
  return parts;
}

Result<formats::Checkpoint> Versions::OpenAt(const std::string& rev, const std::string& path) const {
  ZIPNN_RETURN_IF_ERROR(git::CheckRevision(rev));
  const std::string spec = rev + ":" + path;
  Result<store::Pointer> pointer = git::PointerAt(spec);
  if (pointer.ok()) return Open(*pointer, spec);
  if (pointer.status().code() != StatusCode::kInvalidArgument) return pointer.status();
  return git::UnfilteredAt(store_.temp_dir, spec);
}

Result<std::optional<ContentId>> RestorePointerFile(const Versions& versions, const std::string& path,
                                                    const std::string& file) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<store::Pointer> pointer, store::PointerInFile(file));
  if (!pointer) return std::optional<ContentId>();
  // Written out of git's sight until it is whole (a pull killed on the
  // way leaves no copy for `git add -A` to take).
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::CreateInWorkTree(file, versions.store().temp_dir));
  ZIPNN_RETURN_IF_ERROR(versions.Write(*pointer, path, out));
  ZIPNN_RETURN_IF_ERROR(out.Commit());
  return std::optional<ContentId>(pointer->id);
}

}  // namespace zipnn::access
