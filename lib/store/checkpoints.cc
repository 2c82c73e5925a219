#include "lib/store/checkpoints.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "lib/base/buffer.h"
#include "lib/base/file.h"
#include "lib/container/object.h"
#include "lib/formats/detect.h"

namespace zipnn::store {

namespace {

// A version in a series: its id and the step numbers of its file name.
struct Version {
  ContentId id;
  std::string step;
};

// Series files are named by the hash of the series name: any name is a
// file name.
std::string SeriesFile(const Repository& repo, const std::string& path) {
  const std::string name = SeriesName(path);
  return repo.series_dir + "/" + HashBytes(name.data(), name.size()).Hex();
}

// The newest version of a series, kept raw (a hard link to the spooled
// input) so that the next add need not decode its chain. Checked by its
// hash before use; any mismatch is a miss.
std::string LatestFile(const Repository& repo, const std::string& path) {
  const std::string name = SeriesName(path);
  return repo.temp_dir + "/latest/" + HashBytes(name.data(), name.size()).Hex();
}

// Best effort: without it the next add decodes the chain instead.
void KeepLatest(const Repository& repo, const std::string& path, const std::string& file) {
  if (!MakeDirectories(repo.temp_dir + "/latest").ok()) return;
  const std::string latest = LatestFile(repo, path);
  const std::string staged = latest + ".new";
  ::unlink(staged.c_str());
  if (::link(file.c_str(), staged.c_str()) != 0 || ::rename(staged.c_str(), latest.c_str()) != 0) {
    ::unlink(staged.c_str());
  }
}

// One line per version, in the order they were added: "<id> <step>".
std::vector<Version> ReadSeries(const Repository& repo, const std::string& path) {
  std::vector<Version> versions;
  std::ifstream in(SeriesFile(repo, path));
  std::string line;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    if (auto id = ContentId::FromHex(line.substr(0, space))) {
      versions.push_back({*id, space == std::string::npos ? "" : line.substr(space + 1)});
    }
  }
  return versions;
}

Status AppendSeries(const Repository& repo, const std::string& path, const ContentId& id) {
  RETURN_IF_ERROR(MakeDirectories(repo.series_dir));
  const std::string file = SeriesFile(repo, path);
  // One short O_APPEND write per version: concurrent adders interleave
  // whole lines.
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(file + ": cannot open the series index");
  const std::string line = id.Hex() + " " + StepOf(path) + "\n";
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  return ok ? OkStatus() : IoError(file + ": cannot append to the series index");
}

// Orders steps by their numbers in turn (by value, so 20 < 100).
bool StepLess(const std::string& a, const std::string& b) {
  std::istringstream x(a), y(b);
  std::string p, q;
  for (;;) {
    const bool more_a = static_cast<bool>(std::getline(x, p, '.'));
    const bool more_b = static_cast<bool>(std::getline(y, q, '.'));
    if (!more_a || !more_b) return more_b && !more_a;
    p.erase(0, std::min(p.find_first_not_of('0'), p.size()));
    q.erase(0, std::min(q.find_first_not_of('0'), q.size()));
    if (p.size() != q.size()) return p.size() < q.size();
    if (p != q) return p < q;
  }
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
    RETURN_IF_ERROR(sink.CommitUnsynced());
  }
  ASSIGN_OR_RETURN(ReadFile base, ReadFile::Open(base_file.path()));
  return container::DecodeObject(object, info, &base, options, out);
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

std::string SeriesName(const std::string& path) {
  const size_t slash = path.rfind('/');
  std::string name = path.substr(0, slash == std::string::npos ? 0 : slash + 1);
  bool in_digits = false;
  for (size_t i = name.size(); i < path.size(); ++i) {
    const bool digit = path[i] >= '0' && path[i] <= '9';
    if (!digit) name += path[i];
    if (digit && !in_digits) name += '#';
    in_digits = digit;
  }
  return name;
}

std::string StepOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  std::string step;
  bool in_digits = false;
  for (size_t i = slash == std::string::npos ? 0 : slash + 1; i < path.size(); ++i) {
    const bool digit = path[i] >= '0' && path[i] <= '9';
    if (digit && !in_digits && !step.empty()) step += '.';
    if (digit) step += path[i];
    in_digits = digit;
  }
  return step;
}

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

  // Where this version falls in its series: after every version whose
  // step is not greater (so a path overwritten in place follows the order
  // of adds, and step-numbered files the order of their numbers).
  std::vector<Version> series = ReadSeries(repo, path);
  std::stable_sort(series.begin(), series.end(),
                   [](const Version& a, const Version& b) { return StepLess(a.step, b.step); });
  const std::string step = StepOf(path);
  const size_t position =
      std::upper_bound(series.begin(), series.end(), step,
                       [](const std::string& s, const Version& v) { return StepLess(s, v.step); }) -
      series.begin();
  std::optional<ContentId> base_id;
  uint64_t reference = 0;  // the last base's size: what a standalone version costs
  if (position > 0 && position % repo.policy.base_interval != 0) {
    const ContentId previous = series[position - 1].id;
    std::optional<ContentId> last_base;
    for (size_t i = position; i-- > 0;) {
      auto info = Describe(repo, series[i].id);
      if (!info.ok()) break;  // a lost object: start afresh with a base
      if (!info->delta) {
        last_base = series[i].id;
        reference = info->object_size;
        break;
      }
    }
    if (last_base) {
      const ContentId against = repo.policy.delta_against == config::DeltaAgainst::kBase ? *last_base : previous;
      auto info = Describe(repo, against);
      if (info.ok() && info->depth + 1 <= static_cast<int>(repo.policy.max_chain)) base_id = against;
    }
  }

  uint64_t size = 0;
  if (base_id) {
    // The base's bytes: the series' latest version as kept by the last
    // add, or decoded from the store.
    std::optional<ReadFile> base;
    std::optional<TempFile> base_file;
    if (auto latest = ReadFile::Open(LatestFile(repo, path)); latest.ok()) {
      auto hash = HashSource(*latest);
      if (hash.ok() && *hash == *base_id) base.emplace(std::move(*latest));
    }
    if (!base) {
      ASSIGN_OR_RETURN(TempFile decoded, TempFile::Create(repo.temp_dir));
      {
        ASSIGN_OR_RETURN(AtomicFile sink, AtomicFile::Create(decoded.path(), /*overwrite=*/true));
        RETURN_IF_ERROR(Restore(repo, *base_id, sink));
        RETURN_IF_ERROR(sink.CommitUnsynced());
      }
      ASSIGN_OR_RETURN(ReadFile opened, ReadFile::Open(decoded.path()));
      base.emplace(std::move(opened));
      base_file.emplace(std::move(decoded));
    }
    // Encoded to a side path first: a delta that does not pay is replaced
    // by a base under the same id.
    Repository side = repo;
    side.objects = ObjectStore(repo.temp_dir + "/candidates");
    RETURN_IF_ERROR(Encode(side, input, id, &*base, *base_id, &size));
    const bool pays = reference == 0 ||
                      static_cast<double>(size) <= static_cast<double>(reference) * (1 - repo.policy.min_gain);
    const std::string candidate = side.objects.PathOf(id);
    if (pays) RETURN_IF_ERROR(repo.objects.Adopt(id, candidate));
    ::unlink(candidate.c_str());
    if (!pays) RETURN_IF_ERROR(Encode(repo, input, id, nullptr, ContentId{}, &size));
  } else {
    RETURN_IF_ERROR(Encode(repo, input, id, nullptr, ContentId{}, &size));
  }
  RETURN_IF_ERROR(AppendSeries(repo, path, id));
  if (position == series.size()) KeepLatest(repo, path, file);
  return pointer;
}

}  // namespace zipnn::store
