#include "lib/remote/lfs_files.h"

#include <openssl/evp.h>
#include <sys/stat.h>

#include <cstdio>

#include "lib/base/fs_ops.h"
#include "lib/base/libcrypto.h"
#include "lib/base/strings.h"

namespace zipnn::lfs {

namespace {

constexpr char kVersionLine[] = "version https://git-lfs.github.com/spec/v1";
constexpr size_t kReadBlock = 1 << 20;

bool IsHex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// An object file read from the start, checked as it ends.
class CheckedReader : public ByteReader {
 public:
  CheckedReader(ReadFile file, LfsPointer pointer) : file_(std::move(file)), pointer_(std::move(pointer)) {}
  Result<size_t> Read(void* out, size_t n) override {
    const uint64_t left = file_.size() - at_;
    if (left == 0) {
      if (!checked_) {
        checked_ = true;
        const std::string got = hash_.HexDigest();
        if (at_ != pointer_.size || got != pointer_.sha256) {
          return Corruption("the Git LFS object " + file_.name() + " does not hold what its pointer names (" +
                            std::to_string(at_) + " bytes of SHA-256 " + got + ", not " +
                            std::to_string(pointer_.size) + " of " + pointer_.sha256 + ")");
        }
      }
      return size_t{0};
    }
    const size_t k = static_cast<size_t>(std::min<uint64_t>({n, left, kReadBlock}));
    ZIPNN_RETURN_IF_ERROR(file_.ReadAt(at_, out, k));
    hash_.Update(out, k);
    at_ += k;
    return k;
  }

 private:
  ReadFile file_;
  LfsPointer pointer_;
  Sha256Hasher hash_;
  uint64_t at_ = 0;
  bool checked_ = false;
};

}  // namespace

struct Sha256Hasher::Context {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(ctx); }
};

Sha256Hasher::Sha256Hasher() : context_(std::make_unique<Context>()) {
  EVP_DigestInit_ex(context_->ctx, EVP_sha256(), nullptr);
}
Sha256Hasher::~Sha256Hasher() = default;

void Sha256Hasher::Update(const void* data, size_t n) { EVP_DigestUpdate(context_->ctx, data, n); }

std::string Sha256Hasher::HexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(context_->ctx, digest, &size);
  static const char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) {
    hex += kDigits[digest[i] >> 4];
    hex += kDigits[digest[i] & 15];
  }
  return hex;
}

std::optional<LfsPointer> ParseLfsPointer(std::string_view text) {
  if (text.size() > 1024 || !StartsWith(text, std::string(kVersionLine) + "\n")) return std::nullopt;
  LfsPointer pointer;
  bool oid = false, size = false;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (StartsWith(line, "oid sha256:") && IsHex64(line.substr(11))) {
      pointer.sha256 = std::string(line.substr(11));
      oid = true;
    } else if (StartsWith(line, "size ") && line.size() > 5 && line.size() <= 5 + 19) {
      uint64_t n = 0;
      for (char c : line.substr(5)) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + static_cast<uint64_t>(c - '0');
      }
      pointer.size = n;
      size = true;
    } else if (StartsWith(line, "ext-")) {
      return std::nullopt;
    }
  }
  if (!oid || !size) return std::nullopt;
  return pointer;
}

std::string FormatLfsPointer(const LfsPointer& pointer) {
  return std::string(kVersionLine) + "\noid sha256:" + pointer.sha256 + "\nsize " + std::to_string(pointer.size) +
         "\n";
}

std::string LfsFolder::ObjectPath(const std::string& sha256) const {
  return dir_ + "/objects/" + sha256.substr(0, 2) + "/" + sha256.substr(2, 2) + "/" + sha256;
}

bool LfsFolder::Has(const LfsPointer& pointer) const {
  struct stat st;
  return ::stat(ObjectPath(pointer.sha256).c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         static_cast<uint64_t>(st.st_size) == pointer.size;
}

Result<std::unique_ptr<ByteReader>> LfsFolder::Open(const LfsPointer& pointer) const {
  ZIPNN_ASSIGN_OR_RETURN(ReadFile file, ReadFile::Open(ObjectPath(pointer.sha256)));
  return std::unique_ptr<ByteReader>(new CheckedReader(std::move(file), pointer));
}

Result<std::unique_ptr<LfsFolder::Writer>> LfsFolder::Create() const {
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(dir_ + "/tmp"));
  ZIPNN_ASSIGN_OR_RETURN(TempFile temp, TempFile::Create(dir_ + "/tmp", "zipnn-export"));
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::InTemp(temp));
  return std::unique_ptr<Writer>(new Writer(*this, std::move(temp), std::move(file)));
}

Status LfsFolder::Writer::Append(const void* data, size_t n) {
  hash_.Update(data, n);
  size_ += n;
  return file_.Append(data, n);
}

Result<LfsPointer> LfsFolder::Writer::Commit() {
  ZIPNN_RETURN_IF_ERROR(file_.Commit());
  const LfsPointer pointer{hash_.HexDigest(), size_};
  const std::string path = folder_.ObjectPath(pointer.sha256);
  const std::string dir = path.substr(0, path.rfind('/'));
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(dir));
  if (FsRename(temp_.path().c_str(), path.c_str()) != 0) {
    return IoError("cannot put the Git LFS object " + path + " in place");
  }
  ZIPNN_RETURN_IF_ERROR(SyncFolder(dir));
  return pointer;
}

}  // namespace zipnn::lfs
