#include "lib/store/checkpoints.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "lib/base/file.h"
#include "lib/container/object.h"
#include "lib/formats/detect.h"
#include "lib/store/storing.h"

namespace zipnn::store {

namespace {

std::string SeriesFile(const Repository& repo, const std::string& path) {
  return repo.series_dir + "/" + SeriesKey(path);
}

// The newest version of a series, kept raw (a hard link to the spooled
// input) so that the next add need not decode its chain. Checked by its
// hash before use; any mismatch is a miss.
std::string LatestFile(const Repository& repo, const std::string& path) {
  return repo.temp_dir + "/latest/" + SeriesKey(path);
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

// A series index has one line per version, in the order they were added:
// "<id> <step>". Returned in series order, each id once.
std::vector<Version> ReadSeriesFile(const std::string& file) {
  std::vector<Version> versions;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    if (auto id = ContentId::FromHex(line.substr(0, space))) {
      versions.push_back({*id, space == std::string::npos ? "" : line.substr(space + 1)});
    }
  }
  std::stable_sort(versions.begin(), versions.end(),
                   [](const Version& a, const Version& b) { return StepLess(a.step, b.step); });
  std::vector<Version> once;
  for (Version& v : versions) {
    const bool seen = std::any_of(once.begin(), once.end(), [&](const Version& o) { return o.id == v.id; });
    if (!seen) once.push_back(std::move(v));
  }
  return once;
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

}  // namespace

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

// Files about a series are named by the hash of its name: any name is a
// file name.
std::string SeriesKey(const std::string& path) {
  const std::string name = SeriesName(path);
  return HashBytes(name.data(), name.size()).Hex();
}

std::vector<Version> SeriesVersions(const Repository& repo, const std::string& path) {
  return ReadSeriesFile(SeriesFile(repo, path));
}

Result<std::map<std::string, std::vector<Version>>> RecordedSeries(const Repository& repo) {
  std::map<std::string, std::vector<Version>> all;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(repo.series_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) all[it->path().filename().string()] = ReadSeriesFile(it->path().string());
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return IoError(repo.series_dir + ": cannot list the series: " + ec.message());
  }
  return all;
}

namespace {

// One object of the chain of `top`, opened and checked: in the store,
// holding the content it is filed under, and neither met before on the
// way down from `top` (`passed`) nor deeper than kMaxChainDepth.
struct Link {
  ReadFile file;
  container::ObjectInfo info;
};
Result<Link> OpenLink(const Repository& repo, const ContentId& top, const ContentId& id,
                      std::vector<ContentId>& passed) {
  if (std::find(passed.begin(), passed.end(), id) != passed.end()) {
    return Corruption("chain of object " + top.Hex() + " loops: object " + id.Hex() + " comes back at depth " +
                      std::to_string(passed.size()) + " (a damaged store)");
  }
  if (passed.size() > static_cast<size_t>(kMaxChainDepth)) {
    return Corruption("chain of object " + top.Hex() + " is longer than " + std::to_string(kMaxChainDepth));
  }
  passed.push_back(id);
  ASSIGN_OR_RETURN(ReadFile file, repo.objects.Open(id));
  ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(file));
  if (info.content_id != id) return Corruption(file.name() + ": holds " + info.content_id.Hex() + ", not " + id.Hex());
  return Link{std::move(file), std::move(info)};
}

// Encodes `input` standalone, or as a delta against `base`, into `out`;
// the object's size in `*size`.
Status EncodeTo(const Repository& repo, const RawVersion& input, const RawVersion* base, AtomicFile& out,
                uint64_t* size) {
  const container::Layout regions =
      base != nullptr ? formats::ToDeltaRegions(*input.layout, *base->layout) : formats::ToRegions(*input.layout);
  std::optional<container::DeltaBase> delta;
  if (base != nullptr) delta = container::DeltaBase{base->file, base->id};
  container::EncodeOptions options;
  options.chunk_size = repo.policy.chunk_size;
  options.threads = repo.policy.threads;
  options.zstd_level = repo.policy.zstd_level;
  ASSIGN_OR_RETURN(container::EncodeResult r,
                   container::EncodeObject(*input.file, regions, delta ? &*delta : nullptr, options, out));
  if (r.content_id != input.id) return Corruption(input.file->name() + " changed while it was stored");
  *size = r.object_size;
  return OkStatus();
}

Result<Candidate> EncodeCandidateAs(const Repository& repo, const RawVersion& input, const RawVersion* base) {
  ASSIGN_OR_RETURN(TempFile file, TempFile::Create(repo.temp_dir + "/candidates", "object"));
  Candidate c{std::move(file), base != nullptr, 0};
  ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(c.file.path(), /*overwrite=*/true));
  RETURN_IF_ERROR(EncodeTo(repo, input, base, out, &c.size));
  RETURN_IF_ERROR(out.Commit());
  return c;
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

Status VisitChain(const Repository& repo, const ContentId& id, const std::function<void(const ChainLink&)>& visit) {
  std::vector<ContentId> passed;
  for (ContentId at = id;;) {
    ASSIGN_OR_RETURN(Link link, OpenLink(repo, id, at, passed));
    ChainLink shown;
    shown.id = at;
    shown.depth = static_cast<int>(passed.size()) - 1;
    shown.delta = link.info.header.kind == container::ObjectKind::kDelta;
    shown.base = link.info.header.base_id;
    shown.raw_size = link.info.header.raw_size;
    shown.object_size = link.file.size();
    visit(shown);
    if (!shown.delta) return OkStatus();
    at = shown.base;
  }
}

Status CheckStored(const Repository& repo, const Pointer& pointer, bool decode) {
  uint64_t raw_size = 0;
  if (decode) {
    CountingSink counted;
    RETURN_IF_ERROR(Restore(repo, pointer.id, counted));
    raw_size = counted.bytes();
  } else {
    RETURN_IF_ERROR(VisitChain(repo, pointer.id, [&](const ChainLink& link) {
      if (link.depth == 0) raw_size = link.raw_size;
    }));
  }
  if (raw_size != pointer.size) {
    return Corruption("object " + pointer.id.Hex() + " holds " + std::to_string(raw_size) + " bytes; its pointer says " +
                      std::to_string(pointer.size));
  }
  return OkStatus();
}

Result<StoredInfo> Describe(const Repository& repo, const ContentId& id) {
  StoredInfo info;
  RETURN_IF_ERROR(VisitChain(repo, id, [&](const ChainLink& link) {
    if (link.depth == 0) {
      info.delta = link.delta;
      info.base = link.base;
      info.object_size = link.object_size;
    }
    info.depth = link.depth;
  }));
  return info;
}

// One pass over the chunks of the whole chain: every link is opened and
// checked first (so a missing or looping base fails before anything is
// written to `out`); then each delta reads its base through the
// ObjectReader of the link below it, and decoding the top object pulls
// each chunk up through the levels, XORed onto the one below.
Status Restore(const Repository& repo, const ContentId& id, ByteSink& out) {
  std::vector<ContentId> passed;
  std::vector<Link> links;  // the top first, the base last
  for (ContentId at = id;;) {
    ASSIGN_OR_RETURN(Link link, OpenLink(repo, id, at, passed));
    const bool delta = link.info.header.kind == container::ObjectKind::kDelta;
    at = link.info.header.base_id;
    links.push_back(std::move(link));
    if (!delta) break;
  }
  std::vector<std::unique_ptr<container::ObjectReader>> readers;
  const ByteSource* below = nullptr;
  for (size_t i = links.size(); i-- > 1;) {
    ASSIGN_OR_RETURN(std::unique_ptr<container::ObjectReader> reader,
                     container::ObjectReader::Open(links[i].file, std::move(links[i].info), below));
    below = reader.get();
    readers.push_back(std::move(reader));
  }
  container::DecodeOptions options;
  options.threads = repo.policy.threads;
  return container::DecodeObject(links[0].file, links[0].info, below, options, out);
}

Status RestoreFile(const Repository& repo, const Pointer& pointer, const std::string& path, ByteSink& out) {
  Status s = Restore(repo, pointer.id, out);
  if (s.code() != StatusCode::kNotFound) return s;
  // Which object of the chain is missing: the version's own, or a base.
  ContentId missing = pointer.id;
  (void)VisitChain(repo, pointer.id, [&](const ChainLink& link) {
    if (link.delta) missing = link.base;
  });
  const std::string of = missing == pointer.id ? "" : " (a base of " + pointer.id.Hex() + ")";
  return NotFound("object " + missing.Hex() + of + " for " + path + " is not in the store " + repo.objects.root() +
                  " (fetch it, or restore the store)");
}

Result<Scratch> WriteScratch(const Repository& repo, const std::function<Status(ByteSink&)>& fill) {
  ASSIGN_OR_RETURN(TempFile file, TempFile::Create(repo.temp_dir, "restore"));
  {
    ASSIGN_OR_RETURN(AtomicFile sink, AtomicFile::Create(file.path(), /*overwrite=*/true));
    RETURN_IF_ERROR(fill(sink));
    RETURN_IF_ERROR(sink.CommitUnsynced());
  }
  ASSIGN_OR_RETURN(ReadFile reader, ReadFile::Open(file.path()));
  return Scratch{std::move(file), std::move(reader)};
}

Result<Scratch> RestoreToScratch(const Repository& repo, const ContentId& id) {
  return WriteScratch(repo, [&](ByteSink& out) { return Restore(repo, id, out); });
}

Result<Candidate> EncodeCandidate(const Repository& repo, const RawVersion& input, const RawVersion* base,
                                  uint64_t reference) {
  if (base == nullptr) return EncodeCandidateAs(repo, input, nullptr);
  ASSIGN_OR_RETURN(Candidate delta, EncodeCandidateAs(repo, input, base));
  const double most = static_cast<double>(reference) * (1 - repo.policy.min_gain);
  if (reference == 0 || static_cast<double>(delta.size) <= most) return delta;
  return EncodeCandidateAs(repo, input, nullptr);
}

Status TouchChain(const Repository& repo, const ContentId& id) {
  std::vector<ContentId> chain;
  RETURN_IF_ERROR(VisitChain(repo, id, [&](const ChainLink& link) { chain.push_back(link.id); }));
  for (const ContentId& link : chain) RETURN_IF_ERROR(repo.objects.Touch(link));
  return OkStatus();
}

Placement PlaceVersion(const Repository& repo, const std::vector<Version>& series, size_t position) {
  Placement placed;
  if (position == 0 || position % repo.policy.base_interval == 0) return placed;
  std::optional<ContentId> last_base;
  for (size_t i = position; i-- > 0;) {
    auto info = Describe(repo, series[i].id);
    if (!info.ok()) break;  // a lost object: start afresh with a base
    if (!info->delta) {
      last_base = series[i].id;
      placed.reference = info->object_size;
      break;
    }
  }
  if (!last_base) return placed;
  const ContentId against =
      repo.policy.delta_against == config::DeltaAgainst::kBase ? *last_base : series[position - 1].id;
  auto info = Describe(repo, against);
  if (info.ok() && info->depth + 1 <= static_cast<int>(repo.policy.max_chain)) placed.base = against;
  return placed;
}

Result<Pointer> CheckIn(const Repository& repo, const std::string& path, const std::string& file,
                        const ContentId& id) {
  ASSIGN_OR_RETURN(ReadFile input, ReadFile::Open(file));
  ASSIGN_OR_RETURN(formats::FileLayout layout, formats::ReadLayout(input, formats::FormatChoice::kAuto));
  Pointer pointer{id, input.size(), formats::FormatName(layout.format)};
  // Already stored: its chain is marked as used, so that a gc running now
  // keeps it. If gc took the object meanwhile, it is stored again below;
  // if it lost a base, it is stored again in its place.
  const bool present = repo.objects.Has(id);
  if (present && TouchChain(repo, id).ok()) return pointer;

  // Where this version falls in its series: after every version whose
  // step is not greater (so a path overwritten in place follows the order
  // of adds, and step-numbered files the order of their numbers).
  const std::vector<Version> series = SeriesVersions(repo, path);
  const std::string step = StepOf(path);
  const size_t position =
      std::upper_bound(series.begin(), series.end(), step,
                       [](const std::string& s, const Version& v) { return StepLess(s, v.step); }) -
      series.begin();
  Placement placed = PlaceVersion(repo, series, position);
  // The base's chain must outlive this delta: marked as used before it is
  // read (a gc that took part of it meanwhile makes this version a base).
  if (placed.base && !TouchChain(repo, *placed.base).ok()) placed.base.reset();

  const RawVersion raw{&input, &layout, id};
  if (!placed.base && !present) {
    uint64_t size = 0;
    RETURN_IF_ERROR(repo.objects.Put(id, [&](AtomicFile& out) { return EncodeTo(repo, raw, nullptr, out, &size); }));
  } else {
    // The base's bytes: the series' latest version as kept by the last
    // add, or decoded from the store.
    std::optional<ReadFile> latest;
    std::optional<Scratch> decoded;
    if (placed.base) {
      if (auto kept = ReadFile::Open(LatestFile(repo, path)); kept.ok()) {
        auto hash = HashSource(*kept);
        if (hash.ok() && *hash == *placed.base) latest.emplace(std::move(*kept));
      }
      if (!latest) {
        auto scratch = RestoreToScratch(repo, *placed.base);
        if (scratch.ok()) {
          decoded.emplace(std::move(*scratch));
        } else if (scratch.status().code() == StatusCode::kNotFound) {
          placed.base.reset();  // gc took it after all: this version becomes a base
        } else {
          return scratch.status();
        }
      }
    }
    std::optional<formats::FileLayout> base_layout;
    std::optional<RawVersion> base;
    if (placed.base) {
      const ReadFile& bytes = latest ? *latest : decoded->reader;
      ASSIGN_OR_RETURN(base_layout, formats::ReadLayout(bytes, formats::FormatChoice::kAuto));
      base = RawVersion{&bytes, &*base_layout, *placed.base};
    }
    ASSIGN_OR_RETURN(Candidate c, EncodeCandidate(repo, raw, base ? &*base : nullptr, placed.reference));
    RETURN_IF_ERROR(present ? repo.objects.Replace(id, c.file.path()) : repo.objects.Adopt(id, c.file.path()));
  }
  RETURN_IF_ERROR(AppendSeries(repo, path, id));
  if (position == series.size()) KeepLatest(repo, path, file);
  return pointer;
}

}  // namespace zipnn::store
