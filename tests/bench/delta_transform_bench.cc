// Delta transforms on a real trajectory: each checkpoint after the first
// coded as a delta against the one before it (tensors matched by name,
// dtype and shape, as the store does) three ways: every chunk XORed,
// every chunk taken as the difference, and each chunk the cheaper way
// (the default; lib/codec/delta_transform.h, docs/codec.md). Not a test:
// it prints figures.
//
//   delta_transform_bench [--chunk-size N] [--runs 3] [--groups] step-000010.safetensors step-000020.safetensors ...
//
// Per step: the object sizes (whole objects, as a share of the raw size),
// the order-0 bound of each transform's byte groups (every chunk of every
// region, summed; for the chosen one the smaller of the two per chunk),
// how far the chosen object lies above its bound, and the one-thread
// encode and decode speed of the XOR and the chosen objects (median of
// --runs, in memory). Totals follow. With --groups, the bounds per dtype
// and byte group too: where a transform gains and loses.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/file.h"
#include "lib/base/thread_pool.h"
#include "lib/codec/delta_transform.h"
#include "lib/codec/entropy.h"
#include "lib/codec/grouping.h"
#include "lib/container/estimate.h"
#include "lib/container/object.h"
#include "lib/formats/detect.h"
#include "lib/formats/file_layout.h"

namespace zipnn {
namespace {

using codec::kAutoTransform;
using codec::Transform;
using codec::TransformPolicy;
using Clock = std::chrono::steady_clock;

constexpr TransformPolicy kPolicies[3] = {Transform::kXor, Transform::kDifference, kAutoTransform};

// One checkpoint in memory with its layout.
struct Loaded {
  std::vector<uint8_t> bytes;
  formats::FileLayout layout;
};

Result<Loaded> Load(const std::string& path) {
  Loaded l;
  ZIPNN_ASSIGN_OR_RETURN(l.bytes, ReadWholeFile(path));
  MemorySource src(l.bytes.data(), l.bytes.size(), path);
  ZIPNN_ASSIGN_OR_RETURN(l.layout, formats::ReadLayout(src, formats::kAutoFormat));
  return l;
}

template <typename F>
double MedianSeconds(int runs, F f) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Per dtype: the bound of each byte group under XOR and under the
// difference, and the raw bytes of the delta regions of that dtype.
struct GroupTotals {
  std::vector<double> xor_bytes, difference_bytes;
  uint64_t raw = 0;
};

double GroupBytes(codec::DType t, const uint8_t* bytes, size_t n, std::vector<uint8_t>& grouped,
                  std::vector<double>& per_group) {
  grouped.resize(n);
  codec::SplitGroups(t, bytes, n, grouped.data());
  double total = 0;
  for (int g = 0; g < codec::GroupCount(t, n); ++g) {
    const double b =
        codec::EntropyBits(codec::CountBytes(grouped.data() + codec::GroupOffset(t, n, g), codec::GroupSize(t, n, g))) /
        8;
    if (per_group.size() <= static_cast<size_t>(g)) per_group.resize(g + 1);
    per_group[g] += b;
    total += b;
  }
  return total;
}

void CountGroups(const Loaded& target, const Loaded& base, const container::Layout& layout, uint32_t chunk_size,
                 std::map<codec::DType, GroupTotals>& groups) {
  std::vector<uint8_t> delta, grouped;
  for (const container::ChunkSpan& span : container::PlanChunks(layout, chunk_size)) {
    const container::Region& region = layout.regions[span.region];
    if (!region.delta || !codec::DifferenceApplies(region.dtype)) continue;
    const uint8_t* t = target.bytes.data() + span.offset;
    const uint8_t* b = base.bytes.data() + region.base_offset + (span.offset - region.offset);
    GroupTotals& g = groups[region.dtype];
    g.raw += span.length;
    delta.resize(span.length);
    codec::XorTo(delta.data(), t, b, span.length);
    GroupBytes(region.dtype, delta.data(), span.length, grouped, g.xor_bytes);
    codec::DifferenceTo(region.dtype, delta.data(), t, b, span.length);
    GroupBytes(codec::DifferenceGrouping(region.dtype), delta.data(), span.length, grouped, g.difference_bytes);
  }
}

// One step, or the totals: per policy (kPolicies order) the object size,
// the bound, and the encode and decode seconds (XOR and auto only).
struct Figures {
  uint64_t raw = 0;
  double size[3] = {0, 0, 0};
  double bound[3] = {0, 0, 0};
  double encode[3] = {0, 0, 0};
  double decode[3] = {0, 0, 0};
  void Add(const Figures& o) {
    raw += o.raw;
    for (int p = 0; p < 3; ++p) {
      size[p] += o.size[p], bound[p] += o.bound[p], encode[p] += o.encode[p], decode[p] += o.decode[p];
    }
  }
};

Result<Figures> Measure(const Loaded& target, const Loaded& base, uint32_t chunk_size, int runs, ThreadPool& pool) {
  const container::Layout layout = formats::ToDeltaRegions(target.layout, base.layout);
  MemorySource src(target.bytes.data(), target.bytes.size(), "target");
  MemorySource base_src(base.bytes.data(), base.bytes.size(), "base");
  const container::DeltaBase delta{&base_src, HashBytes(base.bytes.data(), base.bytes.size())};
  Figures f;
  f.raw = target.bytes.size();
  for (int p = 0; p < 3; ++p) {
    container::EncodeOptions o;
    o.chunk_size = chunk_size;
    o.threads = 1;
    o.transform = kPolicies[p];
    MemorySink object;
    auto encode = [&]() -> Status {
      object.Clear();
      return container::EncodeObject(src, layout, &delta, o, object).status();
    };
    ZIPNN_RETURN_IF_ERROR(encode());
    f.size[p] = static_cast<double>(object.buffer().size());
    ZIPNN_ASSIGN_OR_RETURN(f.bound[p], container::EntropyBound(src, layout, &base_src, chunk_size, pool, kPolicies[p]));
    if (kPolicies[p] == Transform::kDifference) continue;  // timed: today's XOR and the default
    Status failed;
    f.encode[p] = MedianSeconds(runs, [&] {
      Status s = encode();
      if (!s.ok()) failed = s;
    });
    ZIPNN_RETURN_IF_ERROR(failed);
    MemorySource obj(object.buffer().data(), object.buffer().size(), "object");
    ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(obj));
    MemorySink restored;
    container::DecodeOptions d;
    d.threads = 1;
    f.decode[p] = MedianSeconds(runs, [&] {
      restored.Clear();
      Status s = container::DecodeObject(obj, info, &base_src, d, restored);
      if (!s.ok()) failed = s;
    });
    ZIPNN_RETURN_IF_ERROR(failed);
    if (restored.ToVector() != target.bytes) return Corruption("a delta did not restore its target");
  }
  return f;
}

void PrintRow(const std::string& name, const Figures& f) {
  const double raw = static_cast<double>(f.raw);
  auto mbs = [raw](double s) { return s > 0 ? raw / s / 1e6 : 0.0; };
  std::printf("%-26s %10llu %7.2f%% %7.2f%% %7.2f%% %8.4f %7.2f%% %7.2f%% %7.2f%% %+7.2f%% %6.0f %6.0f %6.0f %6.0f\n",
              name.c_str(), static_cast<unsigned long long>(f.raw), 100 * f.size[0] / raw, 100 * f.size[1] / raw,
              100 * f.size[2] / raw, f.size[2] / f.size[0], 100 * f.bound[0] / raw, 100 * f.bound[1] / raw,
              100 * f.bound[2] / raw, 100 * (f.size[2] / f.bound[2] - 1), mbs(f.encode[0]), mbs(f.encode[2]),
              mbs(f.decode[0]), mbs(f.decode[2]));
}

int Run(int argc, char** argv) {
  CLI::App app("XOR, difference and chosen deltas along a trajectory", "delta_transform_bench");
  std::vector<std::string> files;
  uint32_t chunk_size = container::kDefaultChunkSize;
  int runs = 3;
  bool show_groups = false;
  app.add_option("files", files, "Checkpoints in trajectory order")->required();
  app.add_option("--chunk-size", chunk_size, "Chunk size");
  app.add_option("--runs", runs, "Timed runs per speed (median reported)")->check(CLI::Range(1, 100));
  app.add_flag("--groups", show_groups, "Also the bounds per dtype and byte group");
  CLI11_PARSE(app, argc, argv);
  ThreadPool pool(ThreadPool::DefaultThreads());
  std::printf("%-26s %10s %8s %8s %8s %8s %8s %8s %8s %8s %6s %6s %6s %6s\n", "file", "raw", "xor", "diff", "chosen",
              "ch/xor", "H0 xor", "H0 diff", "H0 ch", "ch-H0", "cX", "cC", "dX", "dC");
  Figures total;
  std::map<codec::DType, GroupTotals> groups;
  std::optional<Loaded> previous;
  for (const std::string& path : files) {
    Result<Loaded> loaded = Load(path);
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", loaded.status().message().c_str());
      return 1;
    }
    if (previous) {
      Result<Figures> f = Measure(*loaded, *previous, chunk_size, runs, pool);
      if (!f.ok()) {
        std::fprintf(stderr, "%s: %s\n", path.c_str(), f.status().message().c_str());
        return 1;
      }
      total.Add(*f);
      PrintRow(path.substr(path.find_last_of('/') + 1), *f);
      if (show_groups) {
        CountGroups(*loaded, *previous, formats::ToDeltaRegions(loaded->layout, previous->layout), chunk_size, groups);
      }
    }
    previous.emplace(std::move(*loaded));
  }
  if (total.raw == 0) return 0;
  PrintRow("total", total);
  std::printf(
      "# sizes: whole objects as a share of raw; xor, diff: every chunk one way; chosen: each chunk the\n"
      "# cheaper way (the default); H0: order-0 bound of the byte groups per chunk (chosen: the smaller\n"
      "# of the two per chunk); ch-H0: chosen object over its bound; cX, cC, dX, dC: encode and decode\n"
      "# MB/s of the XOR and the chosen objects, one thread, median of %d\n",
      runs);
  if (!show_groups) return 0;
  // Group g of the XOR delta holds byte g of each rotated element, group g
  // of the difference byte g of the zigzagged one: the same bits but for
  // the sign's place, so the rows compare like with like.
  std::printf("\n%-8s %-6s %10s %10s %9s\n", "dtype", "group", "xor", "diff", "diff/xor");
  for (const auto& [dtype, g] : groups) {
    const double share = static_cast<double>(g.raw) / codec::DTypeWidth(dtype);  // bytes in one group
    for (size_t k = 0; k < g.xor_bytes.size() && k < g.difference_bytes.size(); ++k) {
      std::printf("%-8s %-6s %9.2f%% %9.2f%% %9.4f\n", std::string(codec::DTypeName(dtype)).c_str(),
                  codec::GroupLabel(dtype, static_cast<int>(k)).c_str(), 100 * g.xor_bytes[k] / share,
                  100 * g.difference_bytes[k] / share, g.difference_bytes[k] / g.xor_bytes[k]);
    }
  }
  return 0;
}

}  // namespace
}  // namespace zipnn

int main(int argc, char** argv) { return zipnn::Run(argc, argv); }
