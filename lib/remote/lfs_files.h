// Git LFS's side of a repository, as `git zipnn migrate` reads and writes
// it: LFS pointers (the text git holds in place of an LFS file) and the
// local LFS object folder (`.git/lfs/objects/<2>/<2>/<sha256>`, or under
// lfs.storage). Nothing read from that folder is trusted: an object is
// read only through a reader that checks its SHA-256 and size as it ends.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "lib/base/file.h"
#include "lib/base/io.h"
#include "lib/base/status.h"

namespace zipnn::lfs {

// SHA-256 fed piece by piece.
class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;
  void Update(const void* data, size_t n);
  std::string HexDigest();  // once, at the end

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

// What an LFS pointer names (spec v1: "version https://git-lfs.github.com/
// spec/v1", "oid sha256:<64 hex>", "size <n>").
struct LfsPointer {
  std::string sha256;
  uint64_t size = 0;
};
// The pointer `text` holds; nullopt when it is no LFS pointer (a pointer
// with extensions is none: its object is not the file's bytes).
std::optional<LfsPointer> ParseLfsPointer(std::string_view text);
std::string FormatLfsPointer(const LfsPointer& pointer);

// The local LFS folder (`lfs_dir`, the one holding objects/ and tmp/).
class LfsFolder {
 public:
  explicit LfsFolder(std::string lfs_dir) : dir_(std::move(lfs_dir)) {}
  const std::string& dir() const { return dir_; }
  std::string ObjectPath(const std::string& sha256) const;
  // Whether the object is here with the size the pointer gives.
  bool Has(const LfsPointer& pointer) const;
  // The object's bytes; the last Read fails unless they hash to the
  // pointer's oid and have its size.
  Result<std::unique_ptr<ByteReader>> Open(const LfsPointer& pointer) const;

  // A new object, written and then named by its hash.
  class Writer : public ByteSink {
   public:
    Status Append(const void* data, size_t n) override;
    // Puts the bytes in place under their oid (durably); their pointer.
    Result<LfsPointer> Commit();

   private:
    friend class LfsFolder;
    Writer(const LfsFolder& folder, TempFile temp, AtomicFile file)
        : folder_(folder), temp_(std::move(temp)), file_(std::move(file)) {}
    const LfsFolder& folder_;
    TempFile temp_;
    AtomicFile file_;
    Sha256Hasher hash_;
    uint64_t size_ = 0;
  };
  Result<std::unique_ptr<Writer>> Create() const;

 private:
  std::string dir_;
};

}  // namespace zipnn::lfs
