// The order-0 bound of a delta's byte groups under the two transforms of
// issue 20: XOR (today's delta) and the arithmetic difference in the
// ordered-integer domain (lib/codec/delta_transform.h). For each
// checkpoint of a trajectory after the first, against the one before it:
// the regions a delta object would XOR (tensors matched by name, dtype and
// shape), cut into chunks as the encoder cuts them, each chunk's byte
// groups counted under each transform. Prints per step the bound of XOR,
// of the difference, and of the better of the two per chunk (what a
// per-chunk choice could reach), and the totals; with --groups, the
// totals per dtype and byte group too (where a transform gains).
//
//   delta_bound_bench [--chunk-size N] [--groups] step-000010.safetensors step-000020.safetensors ...
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/codec/delta_transform.h"
#include "lib/codec/entropy.h"
#include "lib/codec/grouping.h"
#include "lib/container/layout.h"
#include "lib/formats/checkpoint.h"
#include "lib/formats/file_layout.h"

namespace zipnn {
namespace {

// Order-0 bytes of each byte group of n bytes grouped as type t, added
// to `per_group` (by group index), and their sum.
double GroupBytes(codec::DType t, const uint8_t* bytes, size_t n, std::vector<uint8_t>& grouped,
                  std::vector<double>& per_group) {
  grouped.resize(n);
  codec::SplitGroups(t, bytes, n, grouped.data());
  double total = 0;
  for (int g = 0; g < codec::GroupCount(t, n); ++g) {
    const double bytes_g = codec::EntropyBits(codec::CountBytes(grouped.data() + codec::GroupOffset(t, n, g),
                                                                 codec::GroupSize(t, n, g))) / 8;
    if (per_group.size() <= static_cast<size_t>(g)) per_group.resize(g + 1);
    per_group[g] += bytes_g;
    total += bytes_g;
  }
  return total;
}

// Per dtype: the bound of each byte group under XOR and under the
// difference, and the group's raw bytes.
struct GroupTotals {
  std::vector<double> xor_bytes, difference_bytes;
  uint64_t raw = 0;
};

struct Bound {
  double xor_bytes = 0, difference_bytes = 0, best_bytes = 0;
  uint64_t raw = 0;
  void Add(const Bound& o) {
    xor_bytes += o.xor_bytes, difference_bytes += o.difference_bytes, best_bytes += o.best_bytes, raw += o.raw;
  }
};

Result<Bound> Measure(const formats::Checkpoint& target, const formats::Checkpoint& base, uint32_t chunk_size,
                      std::map<codec::DType, GroupTotals>& groups) {
  const container::Layout layout = formats::ToDeltaRegions(target.layout(), base.layout());
  Bound bound;
  std::vector<uint8_t> t, b, delta, grouped;
  for (const container::ChunkSpan& span : container::PlanChunks(layout, chunk_size)) {
    const container::Region& region = layout.regions[span.region];
    if (!region.delta || region.dtype == codec::DType::kBytes) continue;
    t.resize(span.length);
    b.resize(span.length);
    delta.resize(span.length);
    ZIPNN_RETURN_IF_ERROR(target.file().ReadAt(span.offset, t.data(), span.length));
    ZIPNN_RETURN_IF_ERROR(base.file().ReadAt(region.base_offset + (span.offset - region.offset), b.data(), span.length));
    GroupTotals& by_group = groups[region.dtype];
    by_group.raw += span.length;
    codec::XorTo(delta.data(), t.data(), b.data(), span.length);
    const double x = GroupBytes(region.dtype, delta.data(), span.length, grouped, by_group.xor_bytes);
    codec::DifferenceTo(region.dtype, delta.data(), t.data(), b.data(), span.length);
    const double d = GroupBytes(codec::DifferenceGrouping(region.dtype), delta.data(), span.length, grouped,
                                by_group.difference_bytes);
    bound.xor_bytes += x;
    bound.difference_bytes += d;
    bound.best_bytes += std::min(x, d);
    bound.raw += span.length;
  }
  return bound;
}

int Run(int argc, char** argv) {
  CLI::App app("Order-0 bounds of XOR and difference deltas along a trajectory", "delta_bound_bench");
  std::vector<std::string> files;
  uint32_t chunk_size = 256 << 10;
  bool show_groups = false;
  app.add_option("files", files, "Checkpoints in trajectory order")->required();
  app.add_option("--chunk-size", chunk_size, "Chunk size");
  app.add_flag("--groups", show_groups, "Also the totals per dtype and byte group");
  CLI11_PARSE(app, argc, argv);
  std::printf("%-28s %12s %10s %10s %10s %9s %9s\n", "file", "delta raw", "xor", "diff", "best", "diff/xor",
              "best/xor");
  Bound total;
  std::map<codec::DType, GroupTotals> groups;
  std::optional<formats::Checkpoint> previous;
  for (const std::string& path : files) {
    auto opened = formats::Checkpoint::Open(path);
    Status laid = opened.ok() ? opened->ReadLayout() : opened.status();
    if (!laid.ok()) {
      std::fprintf(stderr, "%s\n", laid.message().c_str());
      return 1;
    }
    if (previous) {
      Result<Bound> b = Measure(*opened, *previous, chunk_size, groups);
      if (!b.ok()) {
        std::fprintf(stderr, "%s\n", b.status().message().c_str());
        return 1;
      }
      total.Add(*b);
      std::printf("%-28s %12llu %9.2f%% %9.2f%% %9.2f%% %9.4f %9.4f\n", path.substr(path.find_last_of('/') + 1).c_str(),
                  static_cast<unsigned long long>(b->raw), 100 * b->xor_bytes / b->raw,
                  100 * b->difference_bytes / b->raw, 100 * b->best_bytes / b->raw,
                  b->difference_bytes / b->xor_bytes, b->best_bytes / b->xor_bytes);
    }
    previous.emplace(std::move(*opened));
  }
  if (total.raw == 0) return 0;
  std::printf("%-28s %12llu %9.2f%% %9.2f%% %9.2f%% %9.4f %9.4f\n", "total", static_cast<unsigned long long>(total.raw),
              100 * total.xor_bytes / total.raw, 100 * total.difference_bytes / total.raw,
              100 * total.best_bytes / total.raw, total.difference_bytes / total.xor_bytes,
              total.best_bytes / total.xor_bytes);
  std::printf("# %% of the delta regions' raw bytes; bound = order-0 entropy of each byte group per chunk\n");
  if (!show_groups) return 0;
  // Group g of the XOR delta holds byte g of each rotated element, group g
  // of the difference byte g of the zigzagged one: the same bits but for
  // the sign's place, so the rows compare like with like.
  std::printf("\n%-8s %-6s %10s %10s %9s\n", "dtype", "group", "xor", "diff", "diff/xor");
  for (const auto& [dtype, g] : groups) {
    const size_t width = static_cast<size_t>(codec::DTypeWidth(dtype));
    for (size_t k = 0; k < g.xor_bytes.size() && k < g.difference_bytes.size(); ++k) {
      const double share = static_cast<double>(g.raw) / static_cast<double>(width);  // bytes in one group
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
