// ObjectStore: objects addressed by the content id of the checkpoint they
// hold, under <root>/<2 hex>/<2 hex>/<32 hex> (root is .git/zipnn/objects
// unless configured elsewhere, e.g. a shared file system). Objects are
// immutable and appear atomically: written to a temporary file in their
// final folder, fsynced, then linked into place, so a reader sees a whole
// object or none, and two writers of the same id both succeed with one
// intact copy. Paths come from hex digits only: no id reaches outside the
// root.
//
// Thread-safe and safe across processes (the file system arbitrates).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/file.h"
#include "lib/base/status.h"

namespace zipnn::store {

// A lock on a whole store (flock on its root folder, so it holds across
// processes and repositories sharing the store, and dies with its
// process). Writers that record pointers in git hold it shared until git
// has them; gc holds it exclusive. Released when it goes away.
class StoreLock {
 public:
  enum class Mode { kShared, kExclusive };
  StoreLock(StoreLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  StoreLock& operator=(StoreLock&& o) noexcept;
  ~StoreLock();

 private:
  friend class ObjectStore;
  explicit StoreLock(int fd) : fd_(fd) {}
  int fd_;
};

class ObjectStore {
 public:
  explicit ObjectStore(std::string root) : root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  std::string PathOf(const ContentId& id) const;
  bool Has(const ContentId& id) const;
  // NotFound names the id and the store.
  Result<ReadFile> Open(const ContentId& id) const;
  // Stores the object `write` produces, unless the store has it already.
  // `check`, when given, reads the finished temporary file before it takes
  // the object's name. If either fails nothing is left behind.
  Status Put(const ContentId& id, const std::function<Status(AtomicFile&)>& write,
             const std::function<Status(const std::string& temp)>& check = {}) const;
  // Takes a finished, fsynced object file (written elsewhere, e.g. as a
  // candidate) as the object for `id`: a hard link when it is on the same
  // file system, else a copy. The caller removes `file`.
  Status Adopt(const ContentId& id, const std::string& file) const;
  // Puts a finished, fsynced object file in place of the object for `id`
  // (there or not): a rename when it is on the same file system, else a
  // copy written atomically. Readers see the old object or the new one,
  // whole; both hold the same content. `file` is gone after a rename.
  Status Replace(const ContentId& id, const std::string& file) const;
  // Marks an object as just used (its modification time becomes now), so
  // that gc's grace period protects it; NotFound when it is gone.
  Status Touch(const ContentId& id) const;

  // Takes the store's lock (creating the root if needed); `waiting` is
  // called once if another process holds it and this one must wait.
  Result<StoreLock> Lock(StoreLock::Mode mode, const std::function<void()>& waiting) const;

  // The repositories that use the store, so that a gc in one keeps what
  // the others need (several may set zipnn.storepath to one folder). Each
  // is its common git folder, as an absolute path (RegisterUser makes a
  // relative one absolute from the current folder), in a small file under
  // <root>/repositories/ that List leaves out. Registering is idempotent
  // and costs one stat when done already.
  Status RegisterUser(const std::string& git_dir) const;
  Result<std::vector<std::string>> Users() const;
  Status ForgetUser(const std::string& git_dir) const;

  // What is under the root, by the names git-zipnn gives what it writes
  // there; nothing else is ever taken for one of them.
  enum class Kind {
    kObject,     // <2 hex>/<2 hex>/<id>
    kTemporary,  // <id>.tmp-<8 hex> beside it (or of its record or note): being written, or left by a writer that died
    kSetAside,   // <id>.gc beside it: set aside by a gc (gc.h)
    kRecord,     // <id>.retained beside it: what retention made of it (retention.h)
    kNote,       // <id>.base beside it: why it is standalone (base_note.h)
    kForeign,    // anything else: not git-zipnn's (a team's README, a folder of reports)
  };
  struct Entry {
    std::string path;
    Kind kind = Kind::kForeign;
    std::optional<ContentId> id;  // of an object (kObject) only
    uint64_t size = 0;
    int64_t mtime = 0;  // seconds since the epoch
  };
  // Every file in the store's object folders, and every other entry
  // under the root but the registry of its users. A foreign folder is one
  // entry (its path ends with '/'), not entered: a store in a folder with
  // other files (zipnn.storepath naming a team folder, or $HOME) is not
  // walked through all of them.
  Result<std::vector<Entry>> List() const;
  // Whether `file_name`, in the folder of the object with the same id, is
  // one a writer gives that object while writing it (Kind::kTemporary).
  static bool IsTemporaryName(const std::string& file_name);

 private:
  std::string UserFile(const std::string& git_dir) const;
  std::string root_;
};

}  // namespace zipnn::store
