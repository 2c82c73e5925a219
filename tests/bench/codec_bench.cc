// codec_bench: compression ratio, entropy bound and speed of the engine on
// real checkpoint files, beside zstd -3 on the same bytes. Not a test: it
// prints figures. Everything runs in memory, so disk speed does not count.
//
//   codec_bench --dtype bf16 [--delta] [--transform auto|xor|difference] [--runs 5] [--zstd-cli] FILE...
//
// Per file: raw size; object size and ratio with the auto rule; the
// order-0 entropy bound of the byte groups (summed per chunk, as the coder
// sees them, and over the whole file); compress and decompress GB/s with 1
// thread and with all cores (median of --runs); zstd -3 ratio and speed.
// With --delta each file after the first is coded as a delta against the
// one before it (its chunks taken as --transform says; the bounds are
// those of that transform, for auto the smaller per chunk, and vs-file is
// left out), and --zstd-cli adds the size of
// `zstd -19 --patch-from=<previous>` from Debian's zstd binary.
#include <zstd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/file.h"
#include "lib/base/thread_pool.h"
#include "lib/codec/chunk_codec.h"
#include "lib/codec/delta_transform.h"
#include "lib/container/estimate.h"
#include "lib/codec/grouping.h"
#include "lib/codec/huffman.h"
#include "lib/container/object.h"

namespace zipnn {
namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double MedianSeconds(int runs, F f) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    auto start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Bound {
  double per_chunk = 0;  // bytes
  double whole = 0;      // bytes
};

// Order-0 entropy of every byte group: per chunk, and per group over the file.
Bound EntropyBound(codec::DType dtype, const uint8_t* data, size_t n, uint32_t chunk) {
  Bound b;
  std::vector<codec::Histogram> whole(codec::kMaxGroups);
  for (auto& h : whole) h.fill(0);
  std::vector<uint8_t> grouped(chunk);
  for (size_t at = 0; at < n; at += chunk) {
    const size_t len = std::min<size_t>(chunk, n - at);
    codec::SplitGroups(dtype, data + at, len, grouped.data());
    for (int g = 0; g < codec::GroupCount(dtype, len); ++g) {
      codec::Histogram h =
          codec::CountBytes(grouped.data() + codec::GroupOffset(dtype, len, g), codec::GroupSize(dtype, len, g));
      b.per_chunk += codec::EntropyBits(h) / 8;
      for (int s = 0; s < 256; ++s) whole[g][s] += h[s];
    }
  }
  for (auto& h : whole) b.whole += codec::EntropyBits(h) / 8;
  return b;
}

std::string ZstdPatchFromSize(const std::string& prev, const std::string& file) {
  std::string cmd = "zstd -q -19 --patch-from='" + prev + "' -c '" + file + "' 2>/dev/null | wc -c";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "?";
  char buf[64] = {0};
  if (std::fgets(buf, sizeof buf, p) == nullptr) buf[0] = 0;
  pclose(p);
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "?" : s;
}

int Main(int argc, char** argv) {
  CLI::App app("codec_bench: ratio, entropy bound and speed on real checkpoints");
  std::vector<std::string> files;
  std::string dtype_name = "bf16";
  bool delta = false, zstd_cli = false;
  std::string transform_name = "auto";
  int runs = 5;
  uint32_t chunk = container::kDefaultChunkSize;
  app.add_option("files", files, "Checkpoint files (in trajectory order for --delta)")->required();
  app.add_option("--dtype", dtype_name, "Element type of the files");
  app.add_flag("--delta", delta, "Code each file as a delta against the previous one");
  app.add_flag("--zstd-cli", zstd_cli, "Also report zstd -19 --patch-from (delta) sizes");
  app.add_option("--transform", transform_name, "How delta chunks are taken: auto, xor or difference");
  app.add_option("--runs", runs, "Timed runs per figure (median reported)");
  app.add_option("--chunk-size", chunk, "Chunk size");
  CLI11_PARSE(app, argc, argv);
  std::optional<codec::DType> dtype = codec::ParseDType(dtype_name);
  if (!dtype) {
    std::fprintf(stderr, "unknown dtype %s\n", dtype_name.c_str());
    return 2;
  }
  const Result<codec::TransformPolicy> transform = codec::ParseTransformPolicy(transform_name);
  if (!transform.ok()) {
    std::fprintf(stderr, "unknown transform %s\n", transform_name.c_str());
    return 2;
  }
  const int cores = ThreadPool::DefaultThreads();
  std::printf("# dtype %s, chunk %u, %d cores, median of %d runs, deltas by %s; GB/s = raw bytes (1e9) per second\n",
              dtype_name.c_str(), chunk, cores, runs, transform_name.c_str());
  std::printf("%-26s %6s %10s %7s %8s %8s %6s %6s %6s %6s %7s %6s %6s %6s%s\n", "file", "mode", "raw", "ratio",
              "vs-chunk", "vs-file", "c1", "cN", "d1", "dN", "zstd3", "zc1", "zcN", "zd1",
              zstd_cli ? "  patch-from-19" : "");

  std::vector<uint8_t> prev;
  std::string prev_name;
  for (const std::string& name : files) {
    auto data_or = ReadWholeFile(name);
    if (!data_or.ok()) {
      std::fprintf(stderr, "%s\n", data_or.status().ToString().c_str());
      return 1;
    }
    std::vector<uint8_t> data = std::move(*data_or);
    const bool is_delta = delta && !prev.empty() && prev.size() == data.size();
    if (delta && !prev.empty() && !is_delta)
      std::fprintf(stderr, "%s: size differs from previous; coded standalone\n", name.c_str());
    MemorySource src(data.data(), data.size(), name);
    MemorySource base_src(prev.data(), prev.size(), prev_name);
    container::Layout layout = container::Layout::Single(*dtype, data.size());
    container::DeltaBase base{&base_src, HashBytes(prev.data(), prev.size())};
    if (is_delta) layout = layout.AsDeltaOfSameLayout();

    // What the coder sees: the bytes, or their delta against the previous
    // file. With the automatic choice that is decided per chunk, so only
    // the per-chunk bound is known.
    std::vector<uint8_t> coded = data;
    codec::DType grouping = *dtype;
    if (is_delta && *transform != codec::Transform::kDifference) {
      codec::XorInto(coded.data(), prev.data(), coded.size());
    } else if (is_delta) {
      codec::DifferenceTo(*dtype, coded.data(), data.data(), prev.data(), coded.size());
      grouping = codec::DifferenceGrouping(*dtype);
    }
    Bound bound = EntropyBound(grouping, coded.data(), coded.size(), chunk);
    if (is_delta && *transform == codec::kAutoTransform) {
      ThreadPool pool(cores);
      bound.per_chunk = *container::EntropyBound(src, layout, &base_src, chunk, pool, *transform);
      bound.whole = 0;
    }

    // Sinks are reused across runs, as zstd's buffers are below, so that
    // first-touch page faults of fresh memory are not counted.
    MemorySink object;
    object.Reserve(data.size() + data.size() / 8 + 4096);
    auto encode = [&](int threads) {
      container::EncodeOptions o;
      o.chunk_size = chunk;
      o.threads = threads;
      o.transform = *transform;
      object.Clear();
      auto r = container::EncodeObject(src, layout, is_delta ? &base : nullptr, o, object);
      if (!r.ok()) {
        std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
        std::exit(1);
      }
    };
    const double c1 = MedianSeconds(runs, [&] { encode(1); });
    const double cn = MedianSeconds(runs, [&] { encode(cores); });
    const Buffer& obj = object.buffer();
    MemorySource obj_src(obj.data(), obj.size(), name + ".zipnn");
    auto info = container::ReadObjectInfo(obj_src);
    MemorySink restored;
    restored.Reserve(data.size());
    auto decode = [&](int threads) {
      container::DecodeOptions o;
      o.threads = threads;
      restored.Clear();
      Status s = container::DecodeObject(obj_src, *info, is_delta ? &base_src : nullptr, o, restored);
      if (!s.ok() || restored.buffer().size() != data.size()) {
        std::fprintf(stderr, "decode failed: %s\n", s.ToString().c_str());
        std::exit(1);
      }
    };
    const double d1 = MedianSeconds(runs, [&] { decode(1); });
    const double dn = MedianSeconds(runs, [&] { decode(cores); });

    // zstd -3 on the same bytes the engine is given: one thread, and all
    // cores through libzstd's worker threads (as `zstd -3 -T0`).
    std::vector<uint8_t> z(ZSTD_compressBound(data.size()));
    size_t zsize = 0;
    auto zstd = [&](int workers) {
      ZSTD_CCtx* cctx = ZSTD_createCCtx();
      ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 3);
      if (workers > 1) ZSTD_CCtx_setParameter(cctx, ZSTD_c_nbWorkers, workers);
      zsize = ZSTD_compress2(cctx, z.data(), z.size(), data.data(), data.size());
      ZSTD_freeCCtx(cctx);
    };
    const double zc = MedianSeconds(runs, [&] { zstd(1); });
    const double zcn = MedianSeconds(runs, [&] { zstd(cores); });
    std::vector<uint8_t> back(data.size());
    const double zd = MedianSeconds(runs, [&] { ZSTD_decompress(back.data(), back.size(), z.data(), zsize); });

    const double raw = static_cast<double>(data.size());
    auto gbs = [raw](double s) { return raw / s / 1e9; };
    std::string short_name = name.substr(name.find_last_of('/') + 1);
    std::printf("%-26s %6s %10zu %6.2f%% %+7.2f%% %+7.2f%% %6.2f %6.2f %6.2f %6.2f %6.2f%% %6.2f %6.2f %6.2f%s\n",
                short_name.c_str(), is_delta ? "delta" : "alone", data.size(), 100.0 * obj.size() / raw,
                100.0 * (obj.size() / bound.per_chunk - 1),
                bound.whole > 0 ? 100.0 * (obj.size() / bound.whole - 1) : 0.0, gbs(c1), gbs(cn), gbs(d1), gbs(dn),
                100.0 * zsize / raw, gbs(zc), gbs(zcn), gbs(zd),
                zstd_cli && is_delta ? ("  " + ZstdPatchFromSize(prev_name, name)).c_str() : "");
    prev = std::move(data);
    prev_name = name;
  }
  std::printf(
      "# ratio = object / raw; vs-chunk, vs-file = object over the order-0 entropy of the byte\n"
      "# groups counted per chunk / over the whole file; c = compress, d = decompress, 1 = one\n"
      "# thread, N = all cores; zstd3 = zstd -3 of the same bytes, zc1/zcN/zd1 its GB/s.\n");
  return 0;
}

}  // namespace
}  // namespace zipnn

int main(int argc, char** argv) { return zipnn::Main(argc, argv); }
