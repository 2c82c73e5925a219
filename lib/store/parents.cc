#include "lib/store/parents.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "lib/base/file.h"
#include "lib/base/fs_ops.h"
#include "lib/base/strings.h"
#include "lib/base/thread_pool.h"
#include "lib/codec/dtype.h"
#include "lib/container/estimate.h"
#include "lib/container/object.h"
#include "lib/formats/file_layout.h"
#include "lib/store/chain.h"
#include "lib/store/copies.h"
#include "lib/store/restore.h"

namespace zipnn::store {
namespace {

// Bytes per sampled window: one chunk's worth of a typical tensor.
constexpr uint64_t kWindowBytes = 64u << 10;

// The fingerprint of the version `c` names, from the cache or, failing
// that, from its file in the work tree (header only, not verified: a
// fingerprint only says which versions to weigh; the bytes a delta is
// made of are verified apart).
std::optional<ContentId> FingerprintOf(const Store& store, const ParentCandidate& c, Fingerprints& fingerprints) {
  if (std::optional<ContentId> known = fingerprints.Find(c.id)) return known;
  if (store.work_dir.empty() || c.path.empty()) return std::nullopt;
  auto file = formats::Checkpoint::Open(store.work_dir + "/" + c.path);
  if (!file.ok() || !file->ReadLayout().ok()) return std::nullopt;
  return formats::TensorFingerprint(file->layout());
}

// The verified bytes of `id`, held at `path` in the work tree or kept,
// else decoded from the store.
Result<formats::Checkpoint> VerifiedBytes(const Store& store, const ContentId& id, const std::string& path) {
  if (std::optional<VerifiedCopy> copy = FindVerifiedCopy(store, id, {path})) {
    return formats::Checkpoint(std::move(copy->file));
  }
  return RestoreToScratch(store, id);
}

}  // namespace

const char* ParentWhyText(ParentWhy why) {
  switch (why) {
    case ParentWhy::kRule:
      return "named as its parent";
    case ParentWhy::kTwin:
      return "a twin: the same tensors, all or nearly all values equal";
    case ParentWhy::kSameTensors:
      return "the same tensor names, dtypes and shapes";
    case ParentWhy::kShared:
      return "tensors of the same bytes";
  }
  return "";
}

std::string BaseChoiceText(container::BaseChoice choice) {
  if (choice == container::BaseChoice::kSeries) return "";
  return ParentWhyText(static_cast<ParentWhy>(choice));
}

namespace {

// One short line appended to `file`: processes appending at once do not
// interleave within it. Best effort.
void AppendLine(const std::string& file, const std::string& line) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd < 0) return;
  (void)!FsWrite(fd, line.data(), line.size());
  ::close(fd);
}

// The text of the cache `file`; empty when there is none, or when it is
// no regular file or larger than a cache grows (a link to a device, a
// FIFO, a file filled by something else), which is then removed: a cache
// is built again, and reading it must never hang nor fill memory.
constexpr off_t kMaxCacheBytes = 64 << 20;
std::string ReadCache(const std::string& file) {
  struct stat st;
  if (::lstat(file.c_str(), &st) != 0) return "";
  if (!S_ISREG(st.st_mode) || st.st_size > kMaxCacheBytes) {
    (void)::unlink(file.c_str());
    return "";
  }
  auto bytes = ReadWholeFile(file);
  return bytes.ok() ? std::string(bytes->begin(), bytes->end()) : std::string();
}

// Replaces the cache `file` with `text`. Best effort.
void RewriteCache(const std::string& file, const std::string& text) {
  auto out = AtomicFile::Create(file, /*overwrite=*/true);
  if (out.ok() && out->Append(text.data(), text.size()).ok()) (void)out->Commit();
}

// Every "<a> <b>" line of `file` whose ids both read.
std::vector<std::pair<ContentId, ContentId>> ReadPairs(const std::string& file) {
  std::vector<std::pair<ContentId, ContentId>> pairs;
  std::istringstream in(ReadCache(file));
  for (std::string line; std::getline(in, line);) {
    if (line.size() != 65 || line[32] != ' ') continue;
    const auto a = ContentId::FromHex(line.substr(0, 32));
    const auto b = ContentId::FromHex(line.substr(33));
    if (a && b) pairs.emplace_back(*a, *b);
  }
  return pairs;
}

struct TwinLine {
  std::optional<ContentId> key;
  ContentId id;
  std::string source;
};
// Every twin index line that reads: "<key or -> <version> <source>".
std::vector<TwinLine> ReadTwinLines(const std::string& file) {
  std::vector<TwinLine> lines;
  std::istringstream in(ReadCache(file));
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find(' ');
    const size_t second = first == std::string::npos ? first : line.find(' ', first + 1);
    if (second == std::string::npos || second != first + 33 || second + 1 >= line.size()) continue;
    const std::string key = line.substr(0, first);
    const auto id = ContentId::FromHex(line.substr(first + 1, 32));
    const std::string source = line.substr(second + 1);
    if (!id || source.find_first_not_of("0123456789abcdef") != std::string::npos) continue;
    if (key == "-") {
      lines.push_back(TwinLine{std::nullopt, *id, source});
    } else if (const auto k = ContentId::FromHex(key)) {
      lines.push_back(TwinLine{k, *id, source});
    }
  }
  return lines;
}

struct TensorLine {
  ContentId id;
  std::string source;
  std::string tensors;  // as written: "-", or "<key>:<bytes>,..."
};

// Every tensor index line that reads: "<version> <source> <tensors>".
std::vector<TensorLine> ReadTensorLines(const std::string& file) {
  std::vector<TensorLine> lines;
  std::istringstream in(ReadCache(file));
  for (std::string line; std::getline(in, line);) {
    const size_t second = line.find(' ', 33);
    if (line.size() < 35 || line[32] != ' ' || second == std::string::npos || second + 1 >= line.size()) continue;
    const auto id = ContentId::FromHex(line.substr(0, 32));
    std::string source = line.substr(33, second - 33);
    if (!id || source.empty() || source.find_first_not_of("0123456789abcdef") != std::string::npos) continue;
    lines.push_back(TensorLine{*id, std::move(source), line.substr(second + 1)});
  }
  return lines;
}

}  // namespace

std::string ParentCachesDir(const Store& store) {
  const size_t slash = store.cache_dir.find_last_of('/');
  return slash == std::string::npos || slash == 0 ? std::string() : store.cache_dir.substr(0, slash);
}

void NoteChild(const Store& store, const ContentId& parent, const ContentId& child) {
  NoteChildren(store, {{parent, child}});
}

void NoteChildren(const Store& store, const std::vector<std::pair<ContentId, ContentId>>& children) {
  const std::string dir = ParentCachesDir(store);
  if (children.empty() || dir.empty() || !MakeDirectories(dir).ok()) return;
  const std::string file = dir + "/children";
  const auto held = ReadPairs(file);
  std::set<std::pair<ContentId, ContentId>> known(held.begin(), held.end());
  std::string lines;
  for (const auto& pair : children) {
    if (known.insert(pair).second) lines += pair.first.Hex() + " " + pair.second.Hex() + "\n";
  }
  if (!lines.empty()) AppendLine(file, lines);
}

std::vector<std::pair<ContentId, ContentId>> NotedChildren(const Store& store) {
  const std::string dir = ParentCachesDir(store);
  return dir.empty() ? std::vector<std::pair<ContentId, ContentId>>() : ReadPairs(dir + "/children");
}

uint32_t HangingElsewhere(const Store& store, const ContentId& id) {
  const std::string dir = ParentCachesDir(store);
  if (dir.empty()) return 0;
  std::multimap<ContentId, ContentId> children;
  for (const auto& [parent, child] : ReadPairs(dir + "/children")) children.emplace(parent, child);
  // Breadth first, a level per step, each child counted while it is still
  // a delta of the one above it; no deeper than a restore follows.
  uint32_t reach = 0;
  std::vector<ContentId> level{id};
  for (uint32_t distance = 1; !level.empty() && distance <= config::kMaxChainLimit; ++distance) {
    std::vector<ContentId> next;
    for (const ContentId& above : level) {
      const auto [from, to] = children.equal_range(above);
      for (auto it = from; it != to; ++it) {
        auto link = ReadLink(store, it->second);
        const bool not_here = !link.ok() && link.status().code() == StatusCode::kNotFound;
        if (!not_here && !link.ok()) continue;
        if (!not_here) {
          const std::vector<ContentId> needs = link->needs();
          if (std::find(needs.begin(), needs.end(), above) == needs.end()) continue;
        }
        reach = distance;
        next.push_back(it->second);
      }
    }
    level = std::move(next);
  }
  return reach;
}

void PruneParentCaches(const Store& store, const std::function<bool(const ContentId&)>& keep) {
  const std::string dir = ParentCachesDir(store);
  if (dir.empty()) return;
  // twins: a version gone keeps its line without its key, so that its
  // listing (which git keeps) is not read again.
  if (const std::string file = dir + "/twins"; FileExists(file)) {
    std::string kept;
    for (const TwinLine& line : ReadTwinLines(file)) {
      kept += (line.key && keep(line.id) ? line.key->Hex() : std::string("-")) + " " + line.id.Hex() + " " +
              line.source + "\n";
    }
    RewriteCache(file, kept);
  }
  // tensors: a version gone keeps its line without its tensors, as above.
  if (const std::string file = dir + "/tensors"; FileExists(file)) {
    std::string kept;
    for (const TensorLine& line : ReadTensorLines(file)) {
      kept += line.id.Hex() + " " + line.source + " " + (keep(line.id) ? line.tensors : std::string("-")) + "\n";
    }
    RewriteCache(file, kept);
  }
  for (const bool both : {false, true}) {
    // fingerprints: "<version> <fingerprint>"; children: "<parent> <child>".
    const std::string file = dir + (both ? "/children" : "/fingerprints");
    if (!FileExists(file)) continue;
    std::string kept;
    for (const auto& [a, b] : ReadPairs(file)) {
      if (keep(a) && (!both || keep(b))) kept += a.Hex() + " " + b.Hex() + "\n";
    }
    RewriteCache(file, kept);
  }
}

void Fingerprints::Load() {
  if (loaded_) return;
  loaded_ = true;
  for (const auto& [id, fingerprint] : ReadPairs(file_)) known_[id] = fingerprint;
}

std::optional<ContentId> Fingerprints::Find(const ContentId& id) {
  Load();
  const auto it = known_.find(id);
  if (it == known_.end()) return std::nullopt;
  return it->second;
}

void Fingerprints::Keep(const ContentId& id, const ContentId& fingerprint) {
  Load();
  if (!known_.emplace(id, fingerprint).second) return;
  if (dir_.empty() || !MakeDirectories(dir_).ok()) return;
  AppendLine(file_, id.Hex() + " " + fingerprint.Hex() + "\n");
}

void TwinIndex::Load() {
  if (loaded_) return;
  loaded_ = true;
  for (TwinLine& line : ReadTwinLines(file_)) {
    sources_[line.source] |= line.key.has_value();
    if (line.key) keyed_.emplace_back(*line.key, line.id);
  }
}

bool TwinIndex::Knows(const std::string& source) {
  Load();
  return sources_.count(source) > 0;
}

std::vector<ContentId> TwinIndex::Find(const ContentId& key) {
  Load();
  std::vector<ContentId> found;
  for (const auto& [k, id] : keyed_) {
    if (k == key && std::find(found.begin(), found.end(), id) == found.end()) found.push_back(id);
  }
  return found;
}

void TwinIndex::Keep(const std::optional<ContentId>& key, const ContentId& id, const std::string& source) {
  Load();
  // A source read before is read again only to give a key it lacked (a
  // version gc took, stored anew).
  const auto known = sources_.find(source);
  if (known != sources_.end() && (known->second || !key)) return;
  sources_[source] = key.has_value();
  if (key) keyed_.emplace_back(*key, id);
  if (dir_.empty() || !MakeDirectories(dir_).ok()) return;
  AppendLine(file_, (key ? key->Hex() : std::string("-")) + " " + id.Hex() + " " + source + "\n");
}

void TensorIndex::Load() {
  if (loaded_) return;
  loaded_ = true;
  const std::string text = ReadCache(file_);
  text_.reserve(text.size());
  // "<version> <source> <tensors>" lines, split by hand: no copy of a
  // line but its tensors part.
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line(text.data() + at, end - at);
    at = end + 1;
    const size_t second = line.size() > 34 ? line.find(' ', 33) : std::string_view::npos;
    if (second == std::string_view::npos || line[32] != ' ' || second + 1 >= line.size()) continue;
    const auto id = ContentId::FromHex(line.substr(0, 32));
    const std::string_view source = line.substr(33, second - 33);
    if (!id || source.empty() || source.find_first_not_of("0123456789abcdef") != std::string_view::npos) continue;
    const std::string_view tensors = line.substr(second + 1);
    sources_[std::string(source)] |= tensors != "-";
    if (tensors != "-") Hold(*id, tensors);
  }
}

void TensorIndex::Hold(const ContentId& id, std::string_view tensors) {
  held_.push_back(Held{id, text_.size(), text_.size() + tensors.size()});
  text_.append(tensors);
}

bool TensorIndex::Knows(const std::string& source) {
  Load();
  return sources_.count(source) > 0;
}

void TensorIndex::Keep(const ContentId& id, const std::string& source, const std::vector<KeyedTensor>& tensors) {
  Load();
  std::string text;
  for (const KeyedTensor& t : tensors) {
    if (t.bytes < kIndexedTensorBytes) continue;
    char item[48];
    std::snprintf(item, sizeof item, "%s%016llx:%llu", text.empty() ? "" : ",", static_cast<unsigned long long>(t.key),
                  static_cast<unsigned long long>(t.bytes));
    text += item;
  }
  const bool any = !text.empty();
  // A source read before is read again only to give tensors it lacked (a
  // version gc took, stored anew).
  const auto known = sources_.find(source);
  if (known != sources_.end() && (known->second || !any)) return;
  sources_[source] = any;
  if (any) Hold(id, text);
  if (dir_.empty() || !MakeDirectories(dir_).ok()) return;
  AppendLine(file_, id.Hex() + " " + source + " " + (any ? text : std::string("-")) + "\n");
}

namespace {

// The value of 16 lowercase hex digits, or nothing.
std::optional<uint64_t> HexKey(std::string_view hex) {
  if (hex.size() != 16) return std::nullopt;
  uint64_t key = 0;
  for (const char c : hex) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    key = key << 4 | static_cast<uint64_t>(digit);
  }
  return key;
}

}  // namespace

std::map<ContentId, TensorIndex::Holding> TensorIndex::Holders(const std::vector<KeyedTensor>& tensors,
                                                               std::unordered_map<uint64_t, uint64_t>& wanted) {
  Load();
  // The bytes of each content among `tensors` (every tensor of it).
  for (const KeyedTensor& t : tensors) {
    if (t.bytes >= kIndexedTensorBytes) wanted[t.key] += t.bytes;
  }
  std::map<ContentId, Holding> holders;
  if (wanted.empty()) return holders;
  // Each "<key>:<bytes>" item of a line.
  const std::string_view text = text_;
  auto each_item = [&](const Held& h, const auto& take) {
    for (size_t at = h.from; at < h.to;) {
      const size_t comma = std::min(text.find(',', at), h.to);
      const std::string_view item = text.substr(at, comma - at);
      at = comma + 1;
      if (item.size() >= 18 && item[16] == ':') take(item.substr(0, 16), item.substr(17));
    }
  };
  // Which version holds which of them: each content once a version,
  // however many of its tensors (or lines) hold it.
  for (const Held& h : held_) {
    const bool listed = holders.count(h.id) != 0;  // by a line before (another source of it)
    Holding* holding = nullptr;
    each_item(h, [&](std::string_view hex, std::string_view) {
      const std::optional<uint64_t> key = HexKey(hex);
      if (!key || wanted.count(*key) == 0) return;
      if (holding == nullptr) holding = &holders[h.id];
      holding->keys.insert(*key);
    });
    // The bytes of the whole version, of its first line that holds any
    // (only those lines are parsed that far).
    if (holding == nullptr || listed) continue;
    each_item(h, [&](std::string_view, std::string_view digits) {
      if (const auto bytes = DecimalAtMost(digits, UINT64_MAX / 2 - holding->own)) holding->own += *bytes;
    });
  }
  return holders;
}

std::vector<std::pair<ContentId, uint64_t>> TensorIndex::Find(const std::vector<KeyedTensor>& tensors, uint64_t least) {
  std::unordered_map<uint64_t, uint64_t> wanted;
  std::vector<std::pair<ContentId, uint64_t>> found;
  for (const auto& [id, holding] : Holders(tensors, wanted)) {
    uint64_t bytes = 0;
    for (const uint64_t key : holding.keys) bytes += wanted.at(key);
    if (bytes >= least) found.emplace_back(id, bytes);
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return found;
}

bool ReferencesAllowed(const config::Policy& policy) { return policy.delta_transform == codec::kAutoTransform; }

std::vector<TensorIndex::Covering> TensorIndex::Cover(const std::vector<KeyedTensor>& tensors, size_t most,
                                                      const std::set<ContentId>& skip) {
  std::unordered_map<uint64_t, uint64_t> wanted;
  std::map<ContentId, Holding> holders = Holders(tensors, wanted);
  for (const ContentId& id : skip) holders.erase(id);
  std::vector<Covering> picked;
  std::set<uint64_t> covered;
  auto adds = [&](const Holding& h) {
    uint64_t bytes = 0;
    for (const uint64_t key : h.keys) bytes += covered.count(key) == 0 ? wanted.at(key) : 0;
    return bytes;
  };
  while (picked.size() < most && !holders.empty()) {
    // The one adding most (the first of equals, in id order: the same in
    // every clone) of those worth reading whole, for a good part of them:
    // a training state holding a model's weights beside its optimizer's
    // moments adds as much as the model file, and is passed over for it.
    auto best = holders.end();
    uint64_t best_adds = 0;
    for (auto it = holders.begin(); it != holders.end(); ++it) {
      const uint64_t bytes = adds(it->second);
      if (bytes > best_adds && bytes >= it->second.own / 4) best = it, best_adds = bytes;
    }
    if (best == holders.end() || best_adds < kIndexedTensorBytes) break;
    uint64_t held = 0;
    for (const uint64_t key : best->second.keys) {
      held += wanted.at(key);
      covered.insert(key);
    }
    picked.push_back(Covering{best->first, held, best_adds});
    holders.erase(best);
  }
  return picked;
}

Result<double> SampledRatio(const Store& store, const formats::CheckpointView& input,
                            const formats::CheckpointView& base, double* matched_share) {
  const container::Layout regions = formats::ToDeltaRegions(*input.layout, *base.layout);
  uint64_t matched = 0;
  for (const container::Region& r : regions.regions) {
    if (r.delta && codec::DTypeWidth(r.dtype) > 1) matched += r.length;
  }
  if (matched_share != nullptr) {
    uint64_t typed = 0;
    for (const container::Region& r : regions.regions) {
      if (codec::DTypeWidth(r.dtype) > 1) typed += r.length;
    }
    *matched_share = typed == 0 ? 0 : static_cast<double>(matched) / static_cast<double>(typed);
  }
  if (matched == 0) return 1.0;
  // Windows at even steps through the matched bytes, each aligned to its
  // dtype, so a sample sees every part of the model, not its first layers.
  const uint64_t windows = std::max<uint64_t>(1, std::min(matched, kSampleBytes) / kWindowBytes);
  const uint64_t stride = matched / windows;
  container::Layout as_delta, alone;
  uint64_t passed = 0;  // matched bytes before the region
  uint64_t next = stride / 2;
  for (const container::Region& r : regions.regions) {
    if (!r.delta || codec::DTypeWidth(r.dtype) <= 1) continue;
    const uint64_t width = static_cast<uint64_t>(codec::DTypeWidth(r.dtype));
    while (next < passed + r.length) {
      uint64_t at = (next - passed) / width * width;
      const uint64_t length = std::min(kWindowBytes, r.length - at) / width * width;
      if (length > 0) {
        as_delta.regions.push_back(container::Region{r.dtype, r.offset + at, length, true, r.base_offset + at, 0});
        alone.regions.push_back(container::Region{r.dtype, r.offset + at, length, false, 0, 0});
      }
      next += stride;
    }
    passed += r.length;
  }
  ThreadPool pool(container::WorkingThreads(store.policy.threads, store.policy.chunk_size));
  ZIPNN_ASSIGN_OR_RETURN(double delta, container::EntropyBound(*input.source, as_delta, base.source,
                                                               store.policy.chunk_size, pool,
                                                               store.policy.delta_transform));
  ZIPNN_ASSIGN_OR_RETURN(double standalone,
                         container::EntropyBound(*input.source, alone, nullptr, store.policy.chunk_size, pool));
  if (delta == 0) return 0.0;
  return standalone > 0 ? delta / standalone : 1.0;
}

Result<std::optional<Parent>> ChooseParent(const Store& store, const formats::CheckpointView& input,
                                           const std::vector<ParentCandidate>& candidates, Fingerprints& fingerprints,
                                           bool twins_only, std::vector<std::string>* not_here,
                                           std::vector<Parent>* holders) {
  const std::optional<ContentId> fingerprint = formats::TensorFingerprint(*input.layout);
  struct Weighed {
    const ParentCandidate* candidate = nullptr;
    double ratio = 1;
    bool other_names = false;                   // some tensor matched by its bytes under another name
    std::optional<formats::Checkpoint> proven;  // its bytes, when weighed on verified ones
    bool whole = false;                         // stored whole: its bytes decode alone
  };
  std::optional<Weighed> best;
  std::vector<Weighed> weighed_holders;  // found by shared tensors, on proven bytes, besides the best
  // The bytes of `input`'s tensors the tensor index counts (TensorIndex).
  uint64_t indexed = 0;
  for (const formats::Tensor& t : input.layout->tensors) indexed += t.length >= kIndexedTensorBytes ? t.length : 0;
  // Together, the versions found holding its tensors may hold all of them
  // (a consolidated copy of a sharded save): then, where only a twin will
  // do, they are weighed together as one (below).
  uint64_t held_together = 0;
  for (const ParentCandidate& c : candidates) held_together += c.adds_bytes;
  const auto nearly_all = [&](uint64_t bytes) {
    return static_cast<double>(bytes) >= (1 - kTwinRatio) * static_cast<double>(indexed);
  };
  const bool together = holders != nullptr && twins_only && nearly_all(held_together);
  // Or they hold a share of them worth a delta (coded alone, weights take
  // two thirds to four fifths of their bytes, so twice min_gain pays it):
  // then the tensors of the same bytes, and only those, may be taken from
  // the holders stored whole, and the version decodes about as fast as if
  // it were whole too (a fine-tune's frozen layers, the model's weights
  // inside a checkpoint that holds its optimizer's state as well).
  const bool whole_sources = store.policy.newest == config::Newest::kWhole;
  const bool partly = holders != nullptr && twins_only &&
                      static_cast<double>(held_together) >= 2 * store.policy.min_gain * static_cast<double>(indexed);
  for (const ParentCandidate& c : candidates) {
    if (c.id == input.id) continue;
    // (A listed twin's key holds its names, dtypes and shapes already; one
    // found by shared tensors holds them under other names.)
    const bool found_by_hash = c.listed_twin || c.shared_bytes > 0;
    if (!c.by_rule && !found_by_hash && (!fingerprint || FingerprintOf(store, c, fingerprints) != fingerprint)) {
      continue;
    }
    // Where only a twin will do, one that holds less than all but the
    // twin's share of the tensors' bytes is not read to be weighed (a
    // fine-tune's frozen layers: its parent would be decoded at every add).
    const bool holds_part = twins_only && c.shared_bytes > 0 && !c.listed_twin && !nearly_all(c.shared_bytes);
    if (holds_part && !together && !partly) continue;
    // Its chain counts in this version's, as any base's does.
    auto chain = Describe(store, c.id);
    if (!chain.ok() && found_by_hash && not_here != nullptr && chain.status().code() == StatusCode::kNotFound) {
      not_here->push_back(c.path);
    }
    if (!chain.ok() || static_cast<uint32_t>(chain->depth) + 1 > store.policy.max_chain) continue;
    // Tensors taken from a delta would decode through its chain: where the
    // newest is kept whole to restore as a base does, only holders stored
    // whole give them (under newest: delta every version sits on a chain).
    if (holds_part && !together && chain->depth > 0 && whole_sources) continue;
    // Weighed on its work-tree file when there is one (a sample need not
    // be proven: the delta is made of verified bytes below), else on a
    // kept copy; a found candidate is not decoded only to be weighed.
    // A listed twin, named by its hashes only, is decoded when no copy
    // holds it: a twin found is worth a restore.
    std::optional<formats::Checkpoint> hint;
    bool proven = false;
    if (!store.work_dir.empty() && !c.path.empty() && !found_by_hash) {
      if (auto file = formats::Checkpoint::Open(store.work_dir + "/" + c.path); file.ok()) hint.emplace(std::move(*file));
    }
    if (!hint) {
      proven = true;
      const std::vector<std::string> paths =
          found_by_hash ? std::vector<std::string>{c.path} : std::vector<std::string>{};
      if (std::optional<VerifiedCopy> kept = FindVerifiedCopy(store, c.id, paths)) {
        hint.emplace(std::move(kept->file));
      } else if (c.by_rule || found_by_hash) {
        auto bytes = RestoreToScratch(store, c.id);
        if (!bytes.ok()) continue;
        hint.emplace(std::move(*bytes));
      } else {
        continue;
      }
    }
    if (!hint->ReadLayout().ok()) continue;
    double ratio = 1;
    bool other_names = false;
    if (c.shared_bytes > 0) {
      // Its tensors are matched by content: what it does not hold is
      // stored alone, at the ratio 1.
      formats::FileLayout hashed = hint->layout();
      ThreadPool pool(container::WorkingThreads(store.policy.threads, store.policy.chunk_size));
      if (!formats::HashTensorContents(hint->file(), hashed, pool).ok()) continue;
      other_names = formats::SharedByContent(*input.layout, hashed).tensors > 0;
      hint->SetLayout(std::move(hashed));
      double matched = 0;
      ZIPNN_ASSIGN_OR_RETURN(const double sampled, SampledRatio(store, input, hint->View(c.id), &matched));
      ratio = matched * sampled + (1 - matched);
    } else {
      ZIPNN_ASSIGN_OR_RETURN(ratio, SampledRatio(store, input, hint->View(c.id)));
    }
    const bool twin = ratio < kTwinRatio;
    if ((twins_only && !twin) || (!c.by_rule && ratio > kCloseRatio)) {
      // Not a parent, but it may give tensors the parent lacks.
      if (holders != nullptr && c.shared_bytes > 0 && proven) {
        weighed_holders.push_back(Weighed{&c, ratio, other_names, std::move(hint), chain->depth == 0});
      }
      continue;
    }
    // The user's word is weighed only by whether the delta pays.
    Weighed now{&c, ratio, other_names, proven ? std::move(hint) : std::nullopt, chain->depth == 0};
    if (c.by_rule || !best || ratio < best->ratio) {
      std::optional<Weighed> was = std::move(best);
      best = std::move(now);
      now = was ? std::move(*was) : Weighed{};
    }
    // What is not the parent may still give the tensors it lacks.
    if (holders != nullptr && now.candidate != nullptr && now.candidate->shared_bytes > 0 && now.proven) {
      weighed_holders.push_back(std::move(now));
    }
    if (c.by_rule || twin) break;  // nothing is closer than a twin
  }
  // The bytes of `input`'s indexed tensors that `from` hold by content.
  const auto covered_by = [&](const std::vector<const Weighed*>& from) {
    std::set<uint64_t> held;
    for (const Weighed* w : from) {
      for (const formats::Tensor& t : w->proven->layout().tensors) {
        if (t.content) held.insert(*t.content);
      }
    }
    uint64_t covered = 0;
    for (const formats::Tensor& t : input.layout->tensors) {
      if (t.length >= kIndexedTensorBytes && t.content && held.count(*t.content) != 0) covered += t.length;
    }
    return covered;
  };
  const auto every_holder = [&] {
    std::vector<const Weighed*> all;
    for (const Weighed& w : weighed_holders) all.push_back(&w);
    return all;
  };
  bool equal_only = false;
  if (!best && together && !weighed_holders.empty() && nearly_all(covered_by(every_holder()))) {
    // No twin alone: the holders together are one when the tensors they
    // hold by content are nearly all its indexed bytes. The one holding
    // most is the parent; the delta takes the rest from the others.
    auto most = std::min_element(weighed_holders.begin(), weighed_holders.end(),
                                 [](const Weighed& a, const Weighed& b) { return a.ratio < b.ratio; });
    best = std::move(*most);
    best->other_names = true;
    weighed_holders.erase(most);
  } else if (!best && partly) {
    // Part of its bytes held: the holders stored whole give the tensors
    // of the same bytes, the one holding most of them as the parent.
    weighed_holders.erase(std::remove_if(weighed_holders.begin(), weighed_holders.end(),
                                         [&](const Weighed& w) { return whole_sources && !w.whole; }),
                          weighed_holders.end());
    uint64_t most = 0;
    size_t parent = weighed_holders.size();
    for (size_t i = 0; i < weighed_holders.size(); ++i) {
      if (const uint64_t held = covered_by({&weighed_holders[i]}); held > most) most = held, parent = i;
    }
    const double share =
        static_cast<double>(covered_by(every_holder())) / static_cast<double>(std::max<uint64_t>(indexed, 1));
    if (parent < weighed_holders.size() && share >= 2 * store.policy.min_gain) {
      best = std::move(weighed_holders[parent]);
      best->other_names = true;
      weighed_holders.erase(weighed_holders.begin() + static_cast<std::ptrdiff_t>(parent));
      equal_only = true;
    }
  }
  if (!best) return std::optional<Parent>();
  const ParentCandidate& c = *best->candidate;
  // The delta is made of bytes proven to be the parent (read again only
  // when it was weighed on its work-tree file), and its chain is marked as
  // used, so that a gc running now keeps it.
  ZIPNN_RETURN_IF_ERROR(TouchChain(store, c.id));
  if (!best->proven) {
    ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint verified, VerifiedBytes(store, c.id, c.path));
    ZIPNN_RETURN_IF_ERROR(verified.ReadLayout());
    best->proven.emplace(std::move(verified));
  }
  formats::Checkpoint& bytes = *best->proven;
  if (const auto kept = formats::TensorFingerprint(bytes.layout())) fingerprints.Keep(c.id, *kept);
  // Found by shared tensors and all under their own names, it is a twin
  // or a close version as any other.
  const ParentWhy why = c.by_rule                  ? ParentWhy::kRule
                        : best->other_names        ? ParentWhy::kShared
                        : best->ratio < kTwinRatio ? ParentWhy::kTwin
                                                   : ParentWhy::kSameTensors;
  if (holders != nullptr) {
    for (Weighed& w : weighed_holders) {
      if (w.candidate == best->candidate || w.candidate->id == c.id) continue;
      holders->push_back(Parent{w.candidate->id, w.candidate->path, ParentWhy::kShared, std::move(*w.proven), w.ratio});
    }
  }
  return std::optional<Parent>(Parent{c.id, c.path, why, std::move(bytes), best->ratio, equal_only});
}

}  // namespace zipnn::store
