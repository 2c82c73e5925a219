#include "lib/git/textconv_cache.h"

#include <ctime>
#include <map>
#include <optional>
#include <string_view>

#include "lib/git/git.h"
#include "lib/git/libgit2.h"

namespace zipnn::git {

namespace {

using SignaturePtr = std::unique_ptr<git_signature, Freer<git_signature_free>>;

// How often Write starts again when the ref moved under it.
constexpr int kAttempts = 12;

// A note's place in a notes tree: the note of object <40 hex> is a blob
// at a path whose parts, '/' removed, spell the id ("ab/cdef...", or flat
// "abcdef..." as a small tree keeps it).
struct Place {
  std::string path;
  git_oid blob;
};

// Every note in `tree`, by the id of the object it is on.
Status ListNotes(git_repository* repo, const git_tree* tree, const std::string& path, const std::string& spelled,
                 std::map<std::string, Place>& notes) {
  for (size_t i = 0; i < git_tree_entrycount(tree); ++i) {
    const git_tree_entry* entry = git_tree_entry_byindex(tree, i);
    const std::string name = git_tree_entry_name(entry);
    const std::string id = spelled + name;
    const std::string at = path.empty() ? name : path + "/" + name;
    if (git_tree_entry_type(entry) == GIT_OBJECT_BLOB && id.size() == GIT_OID_HEXSZ) {
      notes[id] = Place{at, *git_tree_entry_id(entry)};
    } else if (git_tree_entry_type(entry) == GIT_OBJECT_TREE && id.size() < GIT_OID_HEXSZ) {
      git_tree* raw = nullptr;
      if (git_tree_lookup(&raw, repo, git_tree_entry_id(entry)) < 0) return GitError("cannot read notes folder " + at);
      TreePtr sub(raw);
      ZIPNN_RETURN_IF_ERROR(ListNotes(repo, sub.get(), at, id, notes));
    }
  }
  return OkStatus();
}

std::string Hex(const git_oid& id) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &id);
  return hex;
}

// The tree of the cache's commit `commit`, or null when that commit is not
// git's cache for `validity` (git would throw such a cache away).
Result<TreePtr> CacheTree(git_repository* repo, const git_oid& commit, const std::string& validity) {
  git_commit* raw = nullptr;
  if (git_commit_lookup(&raw, repo, &commit) < 0) {
    git_error_clear();
    return TreePtr();
  }
  CommitPtr c(raw);
  const char* summary = git_commit_summary(c.get());
  if (summary == nullptr || validity != summary) return TreePtr();
  git_tree* tree = nullptr;
  if (git_commit_tree(&tree, c.get()) < 0) return GitError("cannot read the tree of the textconv cache");
  return TreePtr(tree);
}

// The hex id of the blob git stores for `bytes`.
Result<std::string> BlobId(const std::string& bytes) {
  git_oid blob;
  if (git_odb_hash(&blob, bytes.data(), bytes.size(), GIT_OBJECT_BLOB) < 0) return GitError("cannot hash a blob");
  return Hex(blob);
}

// The cache as the ref holds it now.
struct Current {
  std::optional<git_oid> commit;  // none: no ref
  TreePtr tree;                   // null: no ref, or not git's cache for the command
  std::map<std::string, Place> notes;
};
Result<Current> ReadCurrent(git_repository* repo, const std::string& ref, const std::string& validity) {
  Current now;
  git_oid commit;
  if (git_reference_name_to_id(&commit, repo, ref.c_str()) == 0) now.commit = commit;
  git_error_clear();
  if (now.commit) {
    ZIPNN_ASSIGN_OR_RETURN(now.tree, CacheTree(repo, *now.commit, validity));
  }
  if (now.tree) ZIPNN_RETURN_IF_ERROR(ListNotes(repo, now.tree.get(), "", "", now.notes));
  return now;
}

constexpr std::string_view kListingFailure = "git-zipnn: cannot show this checkpoint: ";

}  // namespace

std::string ListingFailure(const std::string& why) { return std::string(kListingFailure) + why + "\n"; }

bool IsListingFailure(const std::string& text) { return text.rfind(kListingFailure, 0) == 0; }

std::optional<std::string> TextconvCache::Note(const std::string& pointer_text) {
  auto id = BlobId(pointer_text);
  if (!id.ok()) return std::nullopt;
  return NoteOfBlob(*id);
}

Status TextconvCache::LoadHeld(git_repository* repo) {
  if (held_) return OkStatus();
  ZIPNN_ASSIGN_OR_RETURN(Current now, ReadCurrent(repo, ref_, validity_));
  held_.emplace();
  for (const auto& [object, place] : now.notes) (*held_)[object] = Held{Hex(place.blob), 0};
  return OkStatus();
}

std::optional<std::string> TextconvCache::ReadHeld(git_repository* repo, const Held& held) const {
  if (held.note.empty()) return pending_[held.pending].listing;
  git_oid oid;
  git_blob* raw = nullptr;
  if (git_oid_fromstr(&oid, held.note.c_str()) < 0 || git_blob_lookup(&raw, repo, &oid) < 0) {
    git_error_clear();
    return std::nullopt;
  }
  BlobPtr note(raw);
  return std::string(static_cast<const char*>(git_blob_rawcontent(note.get())),
                     static_cast<size_t>(git_blob_rawsize(note.get())));
}

std::optional<std::string> TextconvCache::NoteOfBlob(const std::string& blob, std::string* note_blob) {
  auto repo = OpenAround(start_);
  if (!repo.ok() || !LoadHeld(repo->get()).ok()) return std::nullopt;
  auto it = held_->find(blob);
  if (it == held_->end()) return std::nullopt;
  if (note_blob != nullptr) *note_blob = it->second.note;
  return ReadHeld(repo->get(), it->second);
}

void TextconvCache::ReadNotes(const std::function<bool(const std::string& blob)>& wanted,
                              const std::function<void(const std::string& blob, const std::string& text)>& take) {
  auto repo = OpenAround(start_);
  if (!repo.ok() || !LoadHeld(repo->get()).ok()) return;
  for (const auto& [blob, held] : *held_) {
    if (!wanted(blob)) continue;
    if (std::optional<std::string> text = ReadHeld(repo->get(), held)) take(blob, *text);
  }
}

Result<std::string> PointerBlob(const std::string& pointer_text) { return BlobId(pointer_text); }

std::optional<TextconvCache> TextconvCache::Open(const std::string& driver, const ConfigSnapshot& config) {
  if (!config.Flag("diff." + driver + ".cachetextconv")) return std::nullopt;
  const std::optional<std::string> command = config.Get("diff." + driver + ".textconv");
  if (!command || command->empty()) return std::nullopt;
  return TextconvCache(".", "refs/notes/textconv/" + driver, *command);
}

void TextconvCache::Add(const std::string& pointer_text, std::string listing) {
  auto id = BlobId(pointer_text);
  if (id.ok()) AddForBlob(*id, std::move(listing));
}

void TextconvCache::AddForBlob(const std::string& blob, std::string listing) {
  if (held_) (*held_)[blob] = Held{"", pending_.size()};
  pending_.push_back(Entry{blob, std::move(listing)});
}

Status TextconvCache::Write() {
  if (pending_.empty()) return OkStatus();
  ZIPNN_ASSIGN_OR_RETURN(RepoPtr repo, OpenAround(start_));
  // The note each pointer blob should have, by the blob's id.
  std::map<std::string, const std::string*> wanted;
  for (const Entry& e : pending_) wanted[e.blob] = &e.listing;
  git_signature* signed_raw = nullptr;
  if (git_signature_new(&signed_raw, "git-zipnn", "git-zipnn", static_cast<git_time_t>(std::time(nullptr)), 0) < 0) {
    return GitError("cannot make a signature");
  }
  SignaturePtr signature(signed_raw);
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    ZIPNN_ASSIGN_OR_RETURN(Current now, ReadCurrent(repo.get(), ref_, validity_));
    std::vector<std::string> paths;
    std::vector<git_oid> blobs;
    for (const auto& [object, listing] : wanted) {
      git_oid blob;
      if (git_odb_hash(&blob, listing->data(), listing->size(), GIT_OBJECT_BLOB) < 0) {
        return GitError("cannot hash a listing");
      }
      auto it = now.notes.find(object);
      if (it != now.notes.end() && git_oid_equal(&it->second.blob, &blob)) continue;
      if (git_blob_create_from_buffer(&blob, repo.get(), listing->data(), listing->size()) < 0) {
        return GitError("cannot write a tensor listing");
      }
      paths.push_back(it != now.notes.end() ? it->second.path : object);
      blobs.push_back(blob);
    }
    if (paths.empty()) break;
    std::vector<git_tree_update> updates(paths.size());
    for (size_t i = 0; i < paths.size(); ++i) {
      updates[i] = git_tree_update{GIT_TREE_UPDATE_UPSERT, blobs[i], GIT_FILEMODE_BLOB, paths[i].c_str()};
    }
    git_oid tree_id;
    if (git_tree_create_updated(&tree_id, repo.get(), now.tree.get(), updates.size(), updates.data()) < 0) {
      return GitError("cannot write the textconv cache's tree");
    }
    git_tree* tree_raw = nullptr;
    if (git_tree_lookup(&tree_raw, repo.get(), &tree_id) < 0) return GitError("cannot read a tree just written");
    TreePtr tree(tree_raw);
    // As git writes its cache: no parent, the command as the message.
    git_oid commit;
    if (git_commit_create(&commit, repo.get(), nullptr, signature.get(), signature.get(), nullptr, validity_.c_str(),
                          tree.get(), 0, nullptr) < 0) {
      return GitError("cannot write the textconv cache's commit");
    }
    git_reference* ref = nullptr;
    const char* why = "git-zipnn: tensor listings";
    const int e = now.commit
                      ? git_reference_create_matching(&ref, repo.get(), ref_.c_str(), &commit, 1, &*now.commit, why)
                      : git_reference_create(&ref, repo.get(), ref_.c_str(), &commit, 0, why);
    if (e == 0) {
      git_reference_free(ref);
      break;
    }
    // Someone (git, after a listing it made) moved the ref: start again
    // from what it holds now.
    if (!LostRefRace(e)) return GitError("cannot update " + ref_);
    git_error_clear();
    PauseBeforeRetry(attempt);
  }
  pending_.clear();
  held_.reset();
  return OkStatus();
}

}  // namespace zipnn::git
