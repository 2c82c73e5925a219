#include "lib/store/checkpoints.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "lib/base/buffer.h"
#include "lib/base/file.h"
#include "lib/container/object.h"
#include "lib/formats/detect.h"

namespace zipnn::store {

namespace {

// Series files are named by the hash of the path: any path is a file name.
std::string SeriesFile(const Repository& repo, const std::string& path) {
  return repo.series_dir + "/" + HashBytes(path.data(), path.size()).Hex();
}

std::vector<ContentId> ReadSeries(const Repository& repo, const std::string& path) {
  std::vector<ContentId> ids;
  std::ifstream in(SeriesFile(repo, path));
  std::string line;
  while (std::getline(in, line)) {
    if (auto id = ContentId::FromHex(line)) ids.push_back(*id);
  }
  return ids;
}

Status AppendSeries(const Repository& repo, const std::string& path, const ContentId& id) {
  RETURN_IF_ERROR(MakeDirectories(repo.series_dir));
  const std::string file = SeriesFile(repo, path);
  // One short O_APPEND write per version: concurrent adders interleave
  // whole lines.
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(file + ": cannot open the series index");
  const std::string line = id.Hex() + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  return ok ? OkStatus() : IoError(file + ": cannot append to the series index");
}

// A temporary file in the repository's temp folder, removed when done.
class TempFile {
 public:
  static Result<TempFile> Create(const std::string& dir) {
    RETURN_IF_ERROR(MakeDirectories(dir));
    std::string path = dir + "/restore-XXXXXX";
    const int fd = ::mkstemp(path.data());
    if (fd < 0) return IoError(dir + ": cannot create a temporary file");
    ::close(fd);
    return TempFile(path);
  }
  TempFile(TempFile&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  ~TempFile() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

Status RestoreDepth(const Repository& repo, const ContentId& id, ByteSink& out, int depth) {
  if (depth > kMaxChainDepth) return Corruption("chain of object " + id.Hex() + " is longer than 1000 (a loop?)");
  ASSIGN_OR_RETURN(ReadFile object, repo.objects.Open(id));
  ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(object));
  if (info.content_id != id) return Corruption(object.name() + ": holds " + info.content_id.Hex() + ", not " + id.Hex());
  container::DecodeOptions options;
  options.threads = repo.policy.threads;
  if (info.header.kind == container::ObjectKind::kBase) return container::DecodeObject(object, info, nullptr, options, out);
  // The base first, into a temporary file the delta reads from.
  ASSIGN_OR_RETURN(TempFile base_file, TempFile::Create(repo.temp_dir));
  {
    ASSIGN_OR_RETURN(AtomicFile sink, AtomicFile::Create(base_file.path(), /*overwrite=*/true));
    RETURN_IF_ERROR(RestoreDepth(repo, info.header.base_id, sink, depth + 1));
    RETURN_IF_ERROR(sink.Commit());
  }
  ASSIGN_OR_RETURN(ReadFile base, ReadFile::Open(base_file.path()));
  return container::DecodeObject(object, info, &base, options, out);
}

Result<uint64_t> ObjectSize(const Repository& repo, const ContentId& id) {
  ASSIGN_OR_RETURN(ReadFile object, repo.objects.Open(id));
  return object.size();
}

// Encodes `input` (layout from the format layer) standalone, or as a delta
// against `base`, into the store.
Status Encode(const Repository& repo, const ReadFile& input, const ContentId& id, const ReadFile* base,
              const ContentId& base_id, uint64_t* size) {
  ASSIGN_OR_RETURN(formats::FileLayout layout, formats::ReadLayout(input, formats::FormatChoice::kAuto));
  container::Layout regions;
  container::DeltaBase delta{base, base_id};
  if (base != nullptr) {
    ASSIGN_OR_RETURN(formats::FileLayout base_layout, formats::ReadLayout(*base, formats::FormatChoice::kAuto));
    regions = formats::ToDeltaRegions(layout, base_layout);
  } else {
    regions = formats::ToRegions(layout);
  }
  container::EncodeOptions options;
  options.chunk_size = repo.policy.chunk_size;
  options.threads = repo.policy.threads;
  options.zstd_level = repo.policy.zstd_level;
  return repo.objects.Put(id, [&](AtomicFile& out) -> Status {
    ASSIGN_OR_RETURN(container::EncodeResult r,
                     container::EncodeObject(input, regions, base != nullptr ? &delta : nullptr, options, out));
    if (r.content_id != id) return Corruption(input.name() + " changed while it was stored");
    *size = r.object_size;
    return OkStatus();
  });
}

}  // namespace

Result<StoredInfo> Describe(const Repository& repo, const ContentId& id) {
  StoredInfo info;
  ContentId at = id;
  for (int depth = 0; depth <= kMaxChainDepth; ++depth) {
    ASSIGN_OR_RETURN(ReadFile object, repo.objects.Open(at));
    ASSIGN_OR_RETURN(container::ObjectInfo header, container::ReadObjectInfo(object));
    if (depth == 0) {
      info.delta = header.header.kind == container::ObjectKind::kDelta;
      info.base = header.header.base_id;
      info.object_size = object.size();
    }
    if (header.header.kind == container::ObjectKind::kBase) {
      info.depth = depth;
      return info;
    }
    at = header.header.base_id;
  }
  return Corruption("chain of object " + id.Hex() + " is longer than 1000 (a loop?)");
}

Status Restore(const Repository& repo, const ContentId& id, ByteSink& out) { return RestoreDepth(repo, id, out, 0); }

Result<Pointer> CheckIn(const Repository& repo, const std::string& path, const std::string& file,
                        const ContentId& id) {
  ASSIGN_OR_RETURN(ReadFile input, ReadFile::Open(file));
  ASSIGN_OR_RETURN(formats::FileLayout layout, formats::ReadLayout(input, formats::FormatChoice::kAuto));
  Pointer pointer{id, input.size(), formats::FormatName(layout.format)};
  if (repo.objects.Has(id)) return pointer;

  // Where this version falls in its series.
  std::vector<ContentId> series = ReadSeries(repo, path);
  std::optional<ContentId> base_id;
  uint64_t reference = 0;  // the last base's size: what a standalone version costs
  if (!series.empty() && series.size() % repo.policy.base_interval != 0) {
    ContentId previous = series.back();
    ContentId last_base = previous;
    bool known = true;
    for (auto it = series.rbegin(); it != series.rend(); ++it) {
      auto info = Describe(repo, *it);
      if (!info.ok()) {
        known = false;
        break;
      }
      if (!info->delta) {
        last_base = *it;
        reference = info->object_size;
        break;
      }
    }
    if (known) {
      const ContentId against = repo.policy.delta_against == config::DeltaAgainst::kBase ? last_base : previous;
      auto info = Describe(repo, against);
      if (info.ok() && info->depth + 1 <= static_cast<int>(repo.policy.max_chain)) base_id = against;
    }
  }

  uint64_t size = 0;
  if (base_id) {
    ASSIGN_OR_RETURN(TempFile base_file, TempFile::Create(repo.temp_dir));
    {
      ASSIGN_OR_RETURN(AtomicFile sink, AtomicFile::Create(base_file.path(), /*overwrite=*/true));
      RETURN_IF_ERROR(Restore(repo, *base_id, sink));
      RETURN_IF_ERROR(sink.Commit());
    }
    ASSIGN_OR_RETURN(ReadFile base, ReadFile::Open(base_file.path()));
    // Encoded to a side path first: a delta that does not pay is replaced
    // by a base under the same id.
    Repository side = repo;
    side.objects = ObjectStore(repo.temp_dir + "/candidates");
    RETURN_IF_ERROR(Encode(side, input, id, &base, *base_id, &size));
    const bool pays = reference == 0 ||
                      static_cast<double>(size) <= static_cast<double>(reference) * (1 - repo.policy.min_gain);
    const std::string candidate = side.objects.PathOf(id);
    if (pays) {
      RETURN_IF_ERROR(repo.objects.Put(id, [&](AtomicFile& out) -> Status {
        ASSIGN_OR_RETURN(ReadFile from, ReadFile::Open(candidate));
        Buffer block(1 << 20);
        for (uint64_t at = 0; at < from.size(); at += block.size()) {
          const size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), from.size() - at));
          RETURN_IF_ERROR(from.ReadAt(at, block.data(), n));
          RETURN_IF_ERROR(out.Append(block.data(), n));
        }
        return OkStatus();
      }));
    }
    ::unlink(candidate.c_str());
    if (!pays) RETURN_IF_ERROR(Encode(repo, input, id, nullptr, ContentId{}, &size));
  } else {
    RETURN_IF_ERROR(Encode(repo, input, id, nullptr, ContentId{}, &size));
  }
  RETURN_IF_ERROR(AppendSeries(repo, path, id));
  return pointer;
}

}  // namespace zipnn::store
