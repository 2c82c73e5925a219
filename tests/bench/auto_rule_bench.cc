// auto_rule_bench: how good is the auto rule? Codes every byte group of
// every chunk with each coder (huffman, rans, zstd, raw) and reports, per
// bucket of the statistic the rule looks at (share of the most common
// byte), how often each coder is the smallest and what auto stores
// against the best choice per group (the oracle). Not a test.
//
//   auto_rule_bench --dtype bf16 [--delta] FILE...
//
// With --delta, each file is XORed with the previous one first, as a delta
// object would be.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/codec/chunk_codec.h"
#include "lib/codec/grouping.h"
#include "lib/container/format.h"

namespace zipnn {
namespace {

using codec::CoderPolicy;

constexpr int kBuckets = 6;
const char* kBucketNames[kBuckets] = {"<50%", "50-70%", "70-80%", "80-90%", "90-97%", ">97%"};

int BucketOf(double top) {
  if (top < 0.5) return 0;
  if (top < 0.7) return 1;
  if (top < 0.8) return 2;
  if (top < 0.9) return 3;
  if (top < 0.97) return 4;
  return 5;
}

struct Bucket {
  uint64_t groups = 0;
  uint64_t raw = 0;
  std::array<uint64_t, 4> size{};  // huffman, rans, zstd, raw-or-zero
  std::array<uint64_t, 4> wins{};
  uint64_t oracle = 0;
  uint64_t chosen = 0;

  // One group: its size with each coder, its raw size, the smallest of
  // the sizes, and what auto stored.
  void Add(const std::array<uint64_t, 4>& s, size_t n, uint64_t best, uint64_t stored) {
    for (int c = 0; c < 4; ++c) {
      size[c] += s[c];
      if (s[c] == best) ++wins[c];
    }
    ++groups;
    raw += n;
    oracle += best;
    chosen += stored;
  }
};

int Main(int argc, char** argv) {
  CLI::App app("auto_rule_bench: the auto coder choice against the best choice per group");
  std::vector<std::string> files;
  std::string dtype_name = "bf16";
  bool delta = false;
  uint32_t chunk = container::kDefaultChunkSize;
  app.add_option("files", files)->required();
  app.add_option("--dtype", dtype_name);
  app.add_flag("--delta", delta);
  app.add_option("--chunk-size", chunk);
  CLI11_PARSE(app, argc, argv);
  const codec::DType dtype = *codec::ParseDType(dtype_name);

  codec::GroupEncoder huffman(CoderPolicy::kHuffman, 3, false), rans(CoderPolicy::kRans, 3, false),
      zstd(CoderPolicy::kZstd, 3, false), raw(CoderPolicy::kRaw, 3, false);
  codec::ChunkEncoder automatic(CoderPolicy::kAuto, 3);
  std::array<Bucket, kBuckets> buckets;
  Bucket runs;  // groups holding a zero run longer than 3% of the chunk
  std::vector<uint8_t> prev;
  std::vector<uint8_t> grouped(chunk);
  for (const std::string& name : files) {
    auto data = ReadWholeFile(name);
    if (!data.ok()) {
      std::fprintf(stderr, "%s\n", data.status().ToString().c_str());
      return 1;
    }
    std::vector<uint8_t> x = *data;
    const bool use = !delta || prev.size() == x.size();
    if (delta && use) codec::XorInto(x.data(), prev.data(), x.size());
    if (!use) {
      prev = std::move(*data);
      continue;
    }
    // The auto encoder gets the target and its base, as in a delta object
    // (it weighs size over speed there); the single coders get the XOR.
    const std::vector<uint8_t> target = std::move(*data);
    size_t stripe_pos = 0;
    for (size_t at = 0; at < x.size(); at += chunk, ++stripe_pos) {
      const size_t len = std::min<size_t>(chunk, x.size() - at);
      if (stripe_pos % 2 == 0) automatic.Reset();  // stripes of 512 KiB at 256 KiB chunks
      Buffer record;
      if (delta)
        automatic.Encode({dtype, target.data() + at, len, prev.data() + at}, record);
      else
        automatic.Encode({dtype, x.data() + at, len}, record);
      auto groups = codec::ParseChunkRecord(dtype, record.data(), record.size(), len);
      codec::SplitGroups(dtype, x.data() + at, len, grouped.data());
      for (int g = 0; g < codec::GroupCount(dtype, len); ++g) {
        const uint8_t* in = grouped.data() + codec::GroupOffset(dtype, len, g);
        const size_t n = codec::GroupSize(dtype, len, g);
        if (n == 0) continue;
        const codec::Histogram h = codec::CountBytes(in, n);
        const double top = static_cast<double>(*std::max_element(h.begin(), h.end())) / static_cast<double>(n);
        Bucket& b = buckets[BucketOf(top)];
        std::array<uint64_t, 4> s;
        codec::GroupEncoder* encoders[4] = {&huffman, &rans, &zstd, &raw};
        for (int c = 0; c < 4; ++c) {
          Buffer out;
          encoders[c]->Encode(in, n, len, out);
          s[c] = codec::IsAllZero(in, n) && c == 3 ? 0 : out.size();
        }
        const uint64_t best = *std::min_element(s.begin(), s.end());
        b.Add(s, n, best, groups->group[g].stored);
        if (codec::HasZeroRunLongerThan(
                in, n, static_cast<size_t>(codec::AutoRule::kZstdZeroRunShare * static_cast<double>(len)))) {
          runs.Add(s, n, best, groups->group[g].stored);
        }
      }
    }
    prev = target;
  }
  std::printf("%-8s %7s %9s | %9s %9s %9s %9s | %5s %5s %5s %5s | %9s %9s %7s\n", "top byte", "groups", "raw",
              "huffman", "rans", "zstd", "raw/zero", "wH", "wR", "wZ", "wRaw", "oracle", "auto", "auto+");
  uint64_t oracle = 0, chosen = 0, raw_total = 0;
  for (int k = 0; k <= kBuckets; ++k) {
    const Bucket& b = k < kBuckets ? buckets[k] : runs;
    if (k == kBuckets) std::printf("-- of all the above, groups with a zero run over 3%% of the chunk:\n");
    if (b.groups == 0) continue;
    auto pct = [&](uint64_t v) { return 100.0 * static_cast<double>(v) / static_cast<double>(b.raw); };
    std::printf(
        "%-8s %7llu %9llu | %8.2f%% %8.2f%% %8.2f%% %8.2f%% | %5llu %5llu %5llu %5llu | %8.2f%% %8.2f%% %+6.2f%%\n",
        k < kBuckets ? kBucketNames[k] : "runs", (unsigned long long)b.groups, (unsigned long long)b.raw,
        pct(b.size[0]), pct(b.size[1]), pct(b.size[2]), pct(b.size[3]), (unsigned long long)b.wins[0],
        (unsigned long long)b.wins[1], (unsigned long long)b.wins[2], (unsigned long long)b.wins[3], pct(b.oracle),
        pct(b.chosen), 100.0 * (static_cast<double>(b.chosen) / static_cast<double>(b.oracle) - 1));
    if (k == kBuckets) break;
    oracle += b.oracle;
    chosen += b.chosen;
    raw_total += b.raw;
  }
  std::printf("all: oracle %.2f%% of raw, auto %.2f%% (%+.2f%% over the oracle)\n",
              100.0 * static_cast<double>(oracle) / static_cast<double>(raw_total),
              100.0 * static_cast<double>(chosen) / static_cast<double>(raw_total),
              100.0 * (static_cast<double>(chosen) / static_cast<double>(oracle) - 1));
  std::printf("# sizes are payloads as a share of the group bytes; w* = groups where that coder is smallest\n");
  return 0;
}

}  // namespace
}  // namespace zipnn

int main(int argc, char** argv) { return zipnn::Main(argc, argv); }
