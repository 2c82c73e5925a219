// Tests of the format layer on real checkpoints (tests/data, made by
// make_trajectory.py) and on hand-made broken ones: layouts, the raw
// fallback for every lying header, region building, tensor-aware deltas,
// and exact round trips through the container.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lib/base/endian.h"
#include "lib/base/file.h"
#include "lib/container/object.h"
#include "lib/formats/detect.h"
#include "lib/formats/safetensors.h"

namespace zipnn::formats {
namespace {

using codec::DType;

std::vector<uint8_t> Load(const std::string& path) {
  auto data = ReadWholeFile(path);
  REQUIRE(data.ok());
  return *data;
}

FileLayout LayoutOf(const std::vector<uint8_t>& bytes, FormatChoice choice = FormatChoice::kAuto) {
  MemorySource src(bytes.data(), bytes.size(), "file");
  auto layout = ReadLayout(src, choice);
  REQUIRE(layout.ok());
  return *layout;
}

// Encodes with `layout` (and `base`), decodes, and returns the object.
std::vector<uint8_t> RoundTrip(const std::vector<uint8_t>& bytes, const container::Layout& layout,
                               const std::vector<uint8_t>* base = nullptr) {
  MemorySource src(bytes.data(), bytes.size(), "file");
  MemorySource base_src(base ? base->data() : nullptr, base ? base->size() : 0, "base");
  container::DeltaBase db{&base_src, base ? HashBytes(base->data(), base->size()) : ContentId{}};
  MemorySink object;
  container::EncodeOptions options;
  options.threads = 2;
  auto r = container::EncodeObject(src, layout, base ? &db : nullptr, options, object);
  REQUIRE(r.ok());
  const std::vector<uint8_t> obj = object.ToVector();
  MemorySource obj_src(obj.data(), obj.size(), "object");
  auto info = container::ReadObjectInfo(obj_src);
  REQUIRE(info.ok());
  MemorySink out;
  REQUIRE(container::DecodeObject(obj_src, *info, base ? &base_src : nullptr, {}, out).ok());
  CHECK(out.ToVector() == bytes);
  return obj;
}

struct Entry {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> data;
};

// A safetensors file from entries, in the order given, header padded to 8.
std::vector<uint8_t> MakeSafetensors(const std::vector<Entry>& entries) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t at = 0;
  for (const Entry& e : entries) {
    header[e.name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {at, at + e.data.size()}}};
    at += e.data.size();
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string text = header.dump();
  while (text.size() % 8 != 0) text += ' ';
  std::vector<uint8_t> out(8);
  StoreLE<uint64_t>(out.data(), text.size());
  out.insert(out.end(), text.begin(), text.end());
  for (const Entry& e : entries) out.insert(out.end(), e.data.begin(), e.data.end());
  return out;
}

// The tensors of a real checkpoint as entries (bf16 weights of a CNN).
std::vector<Entry> EntriesOf(const std::vector<uint8_t>& file) {
  const FileLayout layout = LayoutOf(file);
  std::vector<Entry> entries;
  for (const Tensor& t : layout.tensors) {
    Entry e;
    e.name = t.name;
    e.dtype = t.dtype == DType::kBF16 ? "BF16" : t.dtype == DType::kI64 ? "I64" : "F32";
    e.shape = t.shape;
    e.data.assign(file.begin() + t.offset, file.begin() + t.offset + t.length);
    entries.push_back(std::move(e));
  }
  return entries;
}

const std::string kData = "tests/data/";

TEST_CASE("reads the tensors of real safetensors checkpoints in bf16, fp16 and fp32") {
  for (const auto& [dir, dtype] : {std::pair<std::string, DType>{"cnn-bf16", DType::kBF16},
                                   {"cnn-fp16", DType::kF16},
                                   {"cnn-fp32", DType::kF32}}) {
    CAPTURE(dir);
    const std::vector<uint8_t> file = Load(kData + dir + "/step-000040.safetensors");
    const FileLayout layout = LayoutOf(file);
    CHECK(layout.format == Format::kSafetensors);
    CHECK(layout.warnings.empty());
    REQUIRE(layout.tensors.size() == 25);  // 4 convs/linears + 3 batch norms x 5 + 2 more linears
    const uint64_t header = LoadLE<uint64_t>(file.data());
    CHECK(layout.tensors.front().offset == 8 + header);
    CHECK(layout.tensors.front().name == "c1.weight");
    CHECK(layout.tensors.front().dtype == dtype);
    CHECK(layout.tensors.front().shape == std::vector<uint64_t>{16, 1, 3, 3});
    // Tensors are contiguous to the end of the file; counters are I64.
    for (size_t i = 1; i < layout.tensors.size(); ++i) {
      CHECK(layout.tensors[i].offset == layout.tensors[i - 1].offset + layout.tensors[i - 1].length);
    }
    CHECK(layout.tensors.back().offset + layout.tensors.back().length == file.size());
    size_t counters = 0;
    for (const Tensor& t : layout.tensors) {
      if (t.name.find("num_batches_tracked") != std::string::npos) {
        ++counters;
        CHECK(t.dtype == DType::kI64);
        CHECK(t.shape.empty());
      } else {
        CHECK(t.dtype == dtype);
      }
    }
    CHECK(counters == 3);
    RoundTrip(file, ToRegions(layout));
  }
}

TEST_CASE("large tensors get regions of their own; tiny ones join them; the header stays apart") {
  const std::vector<uint8_t> file = Load(kData + "cnn-bf16/step-000040.safetensors");
  const FileLayout layout = LayoutOf(file);
  const container::Layout regions = ToRegions(layout);
  REQUIRE(regions.Validate(file.size(), 0).ok());
  // The JSON header, then one region per tensor over 1 KiB (the biases,
  // batch-norm vectors and I64 step counters join them).
  size_t large = 0;
  for (const Tensor& t : layout.tensors) large += t.length > 1024;
  CHECK(large == 4);
  REQUIRE(regions.regions.size() == 1 + large);
  CHECK(regions.regions[0].dtype == DType::kBytes);
  CHECK(regions.regions[0].length == 8 + LoadLE<uint64_t>(file.data()));
  for (size_t i = 1; i < regions.regions.size(); ++i) CHECK(regions.regions[i].dtype == DType::kBF16);
  // Stored as compactly as its tensor bytes given the right dtype: the
  // header and counters cost little beside the weights.
  const std::vector<uint8_t> object = RoundTrip(file, regions);
  const std::vector<uint8_t> single = RoundTrip(file, container::Layout::Single(DType::kBF16, file.size()));
  CHECK(object.size() <= single.size());
}

std::vector<uint8_t> Broken(const std::string& json, size_t data_bytes, uint64_t claimed_length = 0) {
  std::vector<uint8_t> out(8);
  StoreLE<uint64_t>(out.data(), claimed_length != 0 ? claimed_length : json.size());
  out.insert(out.end(), json.begin(), json.end());
  for (size_t i = 0; i < data_bytes; ++i) out.push_back(static_cast<uint8_t>(i * 7));
  return out;
}

TEST_CASE("lying safetensors headers are stored as raw bytes with a warning, and restored exactly") {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  struct Case {
    std::vector<uint8_t> file;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {Broken(ok, 8, 1u << 20), "length 1048576 runs past the end of the file"},
      {Broken(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 8), "is not valid JSON"},
      {Broken(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", 8), "entry 'a' has offsets outside the data"},
      {Broken(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,4]}})", 8), "entry 'a' has offsets outside the data"},
      {Broken(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "entry 'a' holds 8 bytes, not dtype x shape"},
      {Broken(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8),
       "entry 'a' holds 8 bytes, not dtype x shape"},
      {Broken(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
       "entry 'a' has a shape that is not a list of sizes"},
      {Broken(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
       "has overlapping tensors 'a' and 'b'"},
      {Broken(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", 8), "entry 'a' has no dtype"},
      {Broken(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8), "entry 'a' has no valid data_offsets"},
      {Broken(R"({"a":7})", 8), "entry 'a' is not an object"},
      {Broken(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8, uint64_t{1} << 62),
       "length 4611686018427387904 runs past the end of the file"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.problem);
    const FileLayout layout = LayoutOf(c.file);
    CHECK(layout.format == Format::kRaw);
    CHECK(layout.tensors.empty());  // too small for a dtype guess
    REQUIRE(layout.warnings.size() == 1);
    CHECK(layout.warnings[0] == "file: safetensors header " + c.problem + "; stored as raw bytes");
    RoundTrip(c.file, ToRegions(layout));
  }
  // The same header, honest, is read as a tensor.
  const FileLayout good = LayoutOf(Broken(ok, 8));
  CHECK(good.format == Format::kSafetensors);
  CHECK(good.tensors.size() == 1);
}

TEST_CASE("files are told apart by content, and unknown dtypes stay opaque") {
  std::vector<uint8_t> text(300, 'x');
  CHECK(LayoutOf(text).format == Format::kRaw);
  CHECK(LayoutOf(text).warnings.empty());
  CHECK(LayoutOf(Load(kData + "cnn-bf16/step-000040.safetensors"), FormatChoice::kRaw).format == Format::kRaw);
  const FileLayout odd = LayoutOf(Broken(R"({"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", 8));
  CHECK(odd.format == Format::kSafetensors);
  REQUIRE(odd.tensors.size() == 1);
  CHECK(odd.tensors[0].dtype == DType::kBytes);
  CHECK(!ParseFormatChoice("zip"));
}

TEST_CASE("tensor-aware delta of consecutive checkpoints matches the byte-offset XOR within 1%") {
  const std::vector<uint8_t> base = Load(kData + "cnn-bf16/step-000040.safetensors");
  const std::vector<uint8_t> target = Load(kData + "cnn-bf16/step-000080.safetensors");
  const container::Layout by_name = ToDeltaRegions(LayoutOf(target), LayoutOf(base));
  REQUIRE(by_name.Validate(target.size(), base.size()).ok());
  for (const container::Region& r : by_name.regions) CHECK(r.delta);
  const std::vector<uint8_t> tensor_delta = RoundTrip(target, by_name, &base);
  const std::vector<uint8_t> offset_delta =
      RoundTrip(target, container::Layout::Single(DType::kBF16, target.size()).AsDeltaOfSameLayout(), &base);
  CHECK(static_cast<double>(tensor_delta.size()) <= static_cast<double>(offset_delta.size()) * 1.01);
}

TEST_CASE("a delta survives added, removed, renamed and reordered tensors and costs only them") {
  // Late in training, where a delta is a fraction of a standalone object.
  const std::vector<uint8_t> base = Load(kData + "cnn-bf16/step-000160.safetensors");
  const std::vector<uint8_t> next = Load(kData + "cnn-bf16/step-000200.safetensors");
  std::vector<Entry> entries = EntriesOf(next);
  const std::vector<uint8_t> same = MakeSafetensors(entries);
  const size_t unchanged = RoundTrip(same, ToDeltaRegions(LayoutOf(same), LayoutOf(base)), &base).size();
  const size_t standalone = RoundTrip(same, ToRegions(LayoutOf(same))).size();
  CHECK(unchanged * 2 < standalone);

  SUBCASE("removed") { entries.erase(entries.begin() + 3); }
  SUBCASE("added") { entries.push_back(Entry{"extra.bias", "BF16", {8}, std::vector<uint8_t>(16, 0x3f)}); }
  SUBCASE("renamed") { entries[0].name = "conv_in.weight"; }
  SUBCASE("reordered") { std::swap(entries[0], entries[entries.size() - 1]); }
  const std::vector<uint8_t> changed = MakeSafetensors(entries);
  const FileLayout layout = LayoutOf(changed);
  REQUIRE(layout.format == Format::kSafetensors);
  const std::vector<uint8_t> delta = RoundTrip(changed, ToDeltaRegions(layout, LayoutOf(base)), &base);
  // Still a delta: far below a standalone object, near the unchanged one.
  CHECK(delta.size() * 2 < standalone);
  CHECK(delta.size() < unchanged + 1024);
}

}  // namespace
}  // namespace zipnn::formats

namespace zipnn::formats {
namespace {

FileLayout Synthetic(std::vector<Tensor> tensors, uint64_t size) {
  FileLayout f;
  f.format = Format::kSafetensors;
  f.size = size;
  f.tensors = std::move(tensors);
  return f;
}

TEST_CASE("region building keeps element alignment and never absorbs large or opaque ranges") {
  using codec::DType;
  const FileLayout f = Synthetic({Tensor{"a", DType::kBF16, {4}, 16, 8},
                                  Tensor{"b", DType::kI16, {3}, 24, 6},
                                  Tensor{"c", DType::kI64, {256}, 30, 2048},
                                  Tensor{"d", DType::kBF16, {2}, 2078, 4},
                                  Tensor{"e", DType::kU8, {3}, 2082, 3},
                                  Tensor{"f", DType::kF32, {1}, 2085, 4}},
                                 2089);
  const container::Layout l = ToRegions(f);
  REQUIRE(l.Validate(2089, 0).ok());
  // header bytes | a, and b (3 whole bf16), as bf16 | c i64, too big to
  // absorb | d, e and f: tiny tensors; e (3 bytes) is no whole number of
  // bf16, so the run takes e's dtype and f joins it.
  REQUIRE(l.regions.size() == 4);
  CHECK(l.regions[0].dtype == DType::kBytes);
  CHECK(l.regions[0].length == 16);
  CHECK(l.regions[1].dtype == DType::kBF16);
  CHECK(l.regions[1].length == 14);
  CHECK(l.regions[2].dtype == DType::kI64);
  CHECK(l.regions[2].length == 2048);
  CHECK(l.regions[3].dtype == DType::kU8);
  CHECK(l.regions[3].length == 11);
}

}  // namespace
}  // namespace zipnn::formats

namespace zipnn::formats {
namespace {

// The tensor bytes of a real checkpoint, without its header.
std::vector<uint8_t> TensorBytes(const std::string& path) {
  const std::vector<uint8_t> file = Load(path);
  const uint64_t start = 8 + LoadLE<uint64_t>(file.data());
  return std::vector<uint8_t>(file.begin() + static_cast<ptrdiff_t>(start), file.end());
}

TEST_CASE("unknown files get a dtype from a sample only when it pays") {
  for (const auto& [dir, dtype] : {std::pair<std::string, DType>{"cnn-bf16", DType::kBF16},
                                   {"cnn-fp16", DType::kBF16},  // 16-bit floats group alike
                                   {"cnn-fp32", DType::kF32}}) {
    CAPTURE(dir);
    const std::vector<uint8_t> weights = TensorBytes(kData + dir + "/step-000040.safetensors");
    const FileLayout layout = LayoutOf(weights);
    CHECK(layout.format == Format::kRaw);
    REQUIRE(layout.tensors.size() == 1);
    CHECK(layout.tensors[0].dtype == dtype);
    CHECK(layout.tensors[0].length == weights.size());
    // It pays: smaller than the bytes stored untyped.
    FileLayout untyped = layout;
    untyped.tensors.clear();
    CHECK(RoundTrip(weights, ToRegions(layout)).size() < RoundTrip(weights, ToRegions(untyped)).size());
  }
  // Text compresses better with zstd than any grouping: no guess.
  std::string text;
  for (int i = 0; i < 400; ++i) text += "step " + std::to_string(i) + " loss " + std::to_string(1.0 / (i + 1)) + "\n";
  CHECK(LayoutOf(std::vector<uint8_t>(text.begin(), text.end())).tensors.empty());
  // Noise: nothing pays.
  std::vector<uint8_t> noise(100000);
  uint32_t x = 1;
  for (auto& b : noise) b = static_cast<uint8_t>((x = x * 1664525u + 1013904223u) >> 24);
  CHECK(LayoutOf(noise).tensors.empty());
  // A forced raw read never guesses.
  CHECK(LayoutOf(TensorBytes(kData + "cnn-fp32/step-000040.safetensors"), FormatChoice::kRaw).tensors.empty());
}

TEST_CASE("a lying safetensors file large enough to sample still gets its dtype guessed") {
  std::vector<uint8_t> file = Load(kData + "cnn-fp32/step-000040.safetensors");
  file.resize(file.size() / 2);  // the header now points past the end
  const FileLayout layout = LayoutOf(file);
  CHECK(layout.format == Format::kRaw);
  CHECK(layout.warnings.size() == 1);
  REQUIRE(layout.tensors.size() == 1);
  CHECK(layout.tensors[0].dtype == DType::kF32);
  RoundTrip(file, ToRegions(layout));
}

}  // namespace
}  // namespace zipnn::formats

#include "lib/formats/pytorch.h"
#include "lib/formats/torch_pickle.h"
#include "lib/formats/zip.h"

namespace zipnn::formats {
namespace {

const Tensor* Find(const FileLayout& l, const std::string& name) {
  for (const Tensor& t : l.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

TEST_CASE("torch.save zips: storages named by their tensors, typed by their storage class") {
  SUBCASE("CNN with SGD momentum") {
    const std::vector<uint8_t> file = Load(kData + "pt-cnn/step-000040.pt");
    const FileLayout l = LayoutOf(file);
    REQUIRE(l.format == Format::kPytorch);
    CHECK(l.warnings.empty());
    const Tensor* w = Find(l, "model/c1.weight");
    REQUIRE(w != nullptr);
    CHECK(w->dtype == DType::kF32);
    CHECK(w->length == 8 * 1 * 3 * 3 * 4);
    const Tensor* counter = Find(l, "model/b1.num_batches_tracked");
    REQUIRE(counter != nullptr);
    CHECK(counter->dtype == DType::kI64);
    CHECK(Find(l, "optimizer/state/0/momentum_buffer") != nullptr);
    RoundTrip(file, ToRegions(l));
  }
  SUBCASE("GPT with AdamW moments") {
    const std::vector<uint8_t> file = Load(kData + "pt-gpt/step-000020.pt");
    const FileLayout l = LayoutOf(file);
    REQUIRE(l.format == Format::kPytorch);
    CHECK(l.tensors.size() == 68);
    CHECK(Find(l, "model/tok.weight") != nullptr);
    const Tensor* m = Find(l, "optimizer/state/0/exp_avg");
    const Tensor* v = Find(l, "optimizer/state/0/exp_avg_sq");
    REQUIRE(m != nullptr);
    REQUIRE(v != nullptr);
    CHECK(m->dtype == DType::kF32);
    CHECK(v->length == m->length);
    // Every storage member is a tensor; what lies between them is zip
    // records and the pickle.
    const std::vector<uint8_t> object = RoundTrip(file, ToRegions(l));
    CHECK(object.size() < file.size() * 80 / 100);
  }
}

TEST_CASE("a delta between torch.save checkpoints matches storages by tensor name") {
  const std::vector<uint8_t> base = Load(kData + "pt-cnn/step-000040.pt");
  const std::vector<uint8_t> next = Load(kData + "pt-cnn/step-000080.pt");
  const container::Layout regions = ToDeltaRegions(LayoutOf(next), LayoutOf(base));
  size_t delta = 0;
  for (const container::Region& r : regions.regions) delta += r.delta;
  CHECK(delta * 2 > regions.regions.size());
  const std::vector<uint8_t> d = RoundTrip(next, regions, &base);
  const std::vector<uint8_t> alone = RoundTrip(next, ToRegions(LayoutOf(next)));
  CHECK(d.size() < alone.size());
}

// Offset of the central directory entry of the member whose name ends in `tail`.
size_t CentralEntry(const std::vector<uint8_t>& zip, const std::string& tail) {
  for (size_t i = 0; i + 46 < zip.size(); ++i) {
    if (LoadLE<uint32_t>(zip.data() + i) != 0x02014b50) continue;
    const uint16_t n = LoadLE<uint16_t>(zip.data() + i + 28);
    const std::string name(reinterpret_cast<const char*>(zip.data() + i + 46), n);
    if (name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0) return i;
  }
  FAIL("no such member");
  return 0;
}

// Offset of the stored bytes of the member whose name ends in `tail`.
size_t MemberData(const std::vector<uint8_t>& zip, const std::string& tail) {
  const uint32_t local = LoadLE<uint32_t>(zip.data() + CentralEntry(zip, tail) + 42);
  return local + 30 + LoadLE<uint16_t>(zip.data() + local + 26) + LoadLE<uint16_t>(zip.data() + local + 28);
}

TEST_CASE("unreadable torch zips are stored raw with a warning, and restored exactly") {
  const std::vector<uint8_t> good = Load(kData + "pt-cnn/step-000040.pt");
  struct Case {
    std::vector<uint8_t> file;
    std::string problem;
  };
  std::vector<Case> cases;
  {
    auto f = good;
    StoreLE<uint16_t>(f.data() + CentralEntry(f, "/data/3") + 10, 8);  // deflate
    cases.push_back({f, "member 'step-000040/data/3' is compressed"});
  }
  {
    auto f = good;
    f.resize(f.size() - 30);  // the end-of-directory record is gone
    cases.push_back({f, "is unreadable (zip archive: no end-of-directory record)"});
  }
  {
    auto f = good;
    f[MemberData(f, "data.pkl") + 2] = 0xff;  // an opcode no pickle has
    cases.push_back({f, "data.pkl is unreadable (pickle opcode 0xff is not supported)"});
  }
  {
    auto f = good;
    StoreLE<uint32_t>(f.data() + CentralEntry(f, "/data/5") + 42, 0x7fffffff);  // local header far away
    cases.push_back({f, "is unreadable (zip archive: local header of 'step-000040/data/5' out of range)"});
  }
  for (const Case& c : cases) {
    CAPTURE(c.problem);
    const FileLayout l = LayoutOf(c.file);
    CHECK(l.format == Format::kRaw);
    REQUIRE(l.warnings.size() == 1);
    CHECK(l.warnings[0] == "file: torch zip " + c.problem + "; stored as raw bytes");
    RoundTrip(c.file, ToRegions(l));
  }
  // A zip that is not torch's: raw, no warning.
  auto other = good;
  const size_t entry = CentralEntry(other, "data.pkl");
  other[entry + 46 + LoadLE<uint16_t>(other.data() + entry + 28) - 1] = 'x';  // data.pkx
  const FileLayout l = LayoutOf(other);
  CHECK(l.format == Format::kRaw);
  CHECK(l.warnings.empty());
}

TEST_CASE("the pickle reader survives random and mutated pickles") {
  const std::vector<uint8_t> file = Load(kData + "pt-gpt/step-000020.pt");
  MemorySource src(file.data(), file.size(), "pt");
  auto members = ReadZipDirectory(src);
  REQUIRE(members.ok());
  const ZipMember* pkl = nullptr;
  for (const ZipMember& m : *members) {
    if (m.name.size() > 8 && m.name.compare(m.name.size() - 8, 8, "data.pkl") == 0) pkl = &m;
  }
  REQUIRE(pkl != nullptr);
  const std::vector<uint8_t> good(file.begin() + static_cast<ptrdiff_t>(pkl->data_offset),
                                  file.begin() + static_cast<ptrdiff_t>(pkl->data_offset + pkl->size));
  auto storages = ReadTorchPickle(good.data(), good.size());
  REQUIRE(storages.ok());
  CHECK(storages->size() == 68);
  std::mt19937 rng(5);
  size_t rejected = 0;
  for (int t = 0; t < 3000; ++t) {
    std::vector<uint8_t> p = good;
    if (t % 3 == 0) p.resize(rng() % p.size());
    for (int k = 0; k < 1 + static_cast<int>(rng() % 3); ++k) {
      if (!p.empty()) p[rng() % p.size()] = static_cast<uint8_t>(rng());
    }
    if (!ReadTorchPickle(p.data(), p.size()).ok()) ++rejected;
  }
  CHECK(rejected > 0);
}

}  // namespace
}  // namespace zipnn::formats

namespace zipnn::formats {
namespace {

// The same archive in zip64 form: zip64 end-of-directory record and
// locator, 0xffff/0xffffffff in the classic record, and the first
// member's local header offset moved into a zip64 extra field.
std::vector<uint8_t> ToZip64(const std::vector<uint8_t>& zip) {
  const size_t eocd = zip.size() - 22;  // torch writes no comment
  REQUIRE(LoadLE<uint32_t>(zip.data() + eocd) == 0x06054b50);
  const uint64_t entries = LoadLE<uint16_t>(zip.data() + eocd + 10);
  const uint64_t dir_offset = LoadLE<uint32_t>(zip.data() + eocd + 16);
  std::vector<uint8_t> out(zip.begin(), zip.begin() + static_cast<ptrdiff_t>(dir_offset));
  // Directory, first entry rewritten.
  size_t pos = dir_offset;
  for (uint64_t i = 0; i < entries; ++i) {
    const uint16_t name = LoadLE<uint16_t>(zip.data() + pos + 28);
    const uint16_t extra = LoadLE<uint16_t>(zip.data() + pos + 30);
    const uint16_t comment = LoadLE<uint16_t>(zip.data() + pos + 32);
    std::vector<uint8_t> e(zip.begin() + static_cast<ptrdiff_t>(pos),
                           zip.begin() + static_cast<ptrdiff_t>(pos + 46 + name + extra + comment));
    if (i == 0) {
      const uint32_t local = LoadLE<uint32_t>(e.data() + 42);
      StoreLE<uint32_t>(e.data() + 42, 0xffffffffu);
      StoreLE<uint16_t>(e.data() + 30, static_cast<uint16_t>(extra + 12));
      std::vector<uint8_t> field(12);
      StoreLE<uint16_t>(field.data(), 0x0001);
      StoreLE<uint16_t>(field.data() + 2, 8);
      StoreLE<uint64_t>(field.data() + 4, local);
      e.insert(e.begin() + 46 + name + extra, field.begin(), field.end());
    }
    out.insert(out.end(), e.begin(), e.end());
    pos += 46 + name + extra + comment;
  }
  const uint64_t dir_size = out.size() - dir_offset;
  const uint64_t record = out.size();
  std::vector<uint8_t> z(56 + 20 + 22, 0);
  StoreLE<uint32_t>(z.data(), 0x06064b50);
  StoreLE<uint64_t>(z.data() + 4, 44);
  StoreLE<uint64_t>(z.data() + 24, entries);
  StoreLE<uint64_t>(z.data() + 32, entries);
  StoreLE<uint64_t>(z.data() + 40, dir_size);
  StoreLE<uint64_t>(z.data() + 48, dir_offset);
  StoreLE<uint32_t>(z.data() + 56, 0x07064b50);
  StoreLE<uint64_t>(z.data() + 56 + 8, record);
  StoreLE<uint32_t>(z.data() + 56 + 16, 1);
  uint8_t* e = z.data() + 76;
  StoreLE<uint32_t>(e, 0x06054b50);
  StoreLE<uint16_t>(e + 8, 0xffff);
  StoreLE<uint16_t>(e + 10, 0xffff);
  StoreLE<uint32_t>(e + 12, 0xffffffffu);
  StoreLE<uint32_t>(e + 16, 0xffffffffu);
  out.insert(out.end(), z.begin(), z.end());
  return out;
}

TEST_CASE("zip64 archives are read like classic ones") {
  const std::vector<uint8_t> classic = Load(kData + "pt-cnn/step-000040.pt");
  const std::vector<uint8_t> zip64 = ToZip64(classic);
  MemorySource a(classic.data(), classic.size(), "classic"), b(zip64.data(), zip64.size(), "zip64");
  auto ma = ReadZipDirectory(a);
  auto mb = ReadZipDirectory(b);
  REQUIRE(ma.ok());
  REQUIRE(mb.ok());
  REQUIRE(ma->size() == mb->size());
  for (size_t i = 0; i < ma->size(); ++i) {
    CHECK((*ma)[i].name == (*mb)[i].name);
    CHECK((*ma)[i].data_offset == (*mb)[i].data_offset);
    CHECK((*ma)[i].size == (*mb)[i].size);
  }
  const FileLayout layout = LayoutOf(zip64);
  CHECK(layout.format == Format::kPytorch);
  CHECK(layout.tensors.size() == LayoutOf(classic).tensors.size());
  RoundTrip(zip64, ToRegions(layout));
}

}  // namespace
}  // namespace zipnn::formats

namespace zipnn::formats {
namespace {

TEST_CASE("an opaque range that changed is coded against the base's as zstd history") {
  const std::vector<uint8_t> base = Load(kData + "cnn-bf16/step-000160.safetensors");
  std::vector<Entry> entries = EntriesOf(Load(kData + "cnn-bf16/step-000200.safetensors"));
  entries.push_back(Entry{"head.scale", "BF16", {4}, std::vector<uint8_t>(8, 0x3f)});
  const std::vector<uint8_t> target = MakeSafetensors(entries);
  const container::Layout with = ToDeltaRegions(LayoutOf(target), LayoutOf(base));
  REQUIRE(with.Validate(target.size(), base.size()).ok());
  // The header grew by one entry: not XORable, but prefixed.
  const uint64_t base_header = 8 + LoadLE<uint64_t>(base.data());
  CHECK(with.regions[0].prefix_length == base_header);
  CHECK(with.regions[0].base_offset == 0);
  container::Layout without = with;
  without.regions[0].prefix_length = 0;
  const size_t prefixed = RoundTrip(target, with, &base).size();
  const size_t plain = RoundTrip(target, without, &base).size();
  CHECK(prefixed + 200 < plain);
}

}  // namespace
}  // namespace zipnn::formats

// Inputs the fuzz targets found (tests/fuzz/regressions/), each reduced to
// the case it stands for.
namespace zipnn::formats {
namespace {

TEST_CASE("rejects a safetensors header of length 0 as not valid JSON") {
  // The empty header was read into an empty buffer: a copy to a null
  // pointer (regressions/safetensors/empty-header-null-read).
  const std::vector<uint8_t> file = Broken("", 8);
  MemorySource src(file.data(), file.size(), "file");
  auto layout = ReadSafetensors(src);
  REQUIRE(layout.ok());
  CHECK(layout->format == Format::kRaw);
  REQUIRE(layout->warnings.size() == 1);
  CHECK(layout->warnings[0] == "file: safetensors header is not valid JSON; stored as raw bytes");
}

TEST_CASE("a safetensors header with more JSON values or nesting than any checkpoint is raw, before it is built") {
  // 100 MiB of "[{},{},...]" made the parsed tree take over 4 GB.
  std::string many = "{\"a\":[";
  for (size_t i = 0; i <= (1u << 20); ++i) many += i == 0 ? "0" : ",0";
  many += "]}";
  const std::string deep = "{\"a\":" + std::string(64, '[') + std::string(64, ']') + "}";
  const std::string fine = "{\"a\":" + std::string(63, '[') + std::string(63, ']') + "}";
  const struct {
    const std::string& header;
    const char* warning;
  } kCases[] = {
      {many, "file: safetensors header has more than 1048576 JSON values; stored as raw bytes"},
      {deep, "file: safetensors header nests deeper than 64; stored as raw bytes"},
      {fine, "file: safetensors header entry 'a' is not an object; stored as raw bytes"},
  };
  for (const auto& c : kCases) {
    CAPTURE(c.warning);
    const std::vector<uint8_t> file = Broken(c.header, 8);
    MemorySource src(file.data(), file.size(), "file");
    auto layout = ReadSafetensors(src);
    REQUIRE(layout.ok());
    CHECK(layout->format == Format::kRaw);
    REQUIRE(layout->warnings.size() == 1);
    CHECK(layout->warnings[0] == c.warning);
  }
}

// A pickle of `levels` dicts nested under one key of `key_bytes` bytes,
// written once and fetched from the memo at every level; the innermost
// holds a float storage under "w".
std::vector<uint8_t> NestedUnderOneKey(size_t key_bytes, int levels) {
  std::vector<uint8_t> p = {0x80, 0x02, 'X', 0, 0, 0, 0};
  StoreLE<uint32_t>(p.data() + 3, static_cast<uint32_t>(key_bytes));
  p.insert(p.end(), key_bytes, 'k');
  static constexpr char kStorage[] =
      "q\x00" "0"                                   // memo 0: the key
      "}" "X\x01\x00\x00\x00" "w"                    // {"w": ...
      "(" "X\x07\x00\x00\x00" "storage" "ctorch\nFloatStorage\n"
      "X\x01\x00\x00\x00" "0" "X\x03\x00\x00\x00" "cpu" "K\x04" "t" "Q" "s";  // ... persid(storage, 4 floats)}
  p.insert(p.end(), kStorage, kStorage + sizeof kStorage - 1);  // literals hold NULs: sized, not measured
  static constexpr char kWrap[] = "q\x01" "0" "}" "h\x00" "h\x01" "s";  // {key: the dict before}
  for (int i = 0; i < levels; ++i) p.insert(p.end(), kWrap, kWrap + sizeof kWrap - 1);
  p.push_back('.');
  return p;
}

TEST_CASE("does not follow tensor paths past 1024 bytes, so one long key nested 200 deep stays small") {
  // The paths of 200 dicts under one 100 kB key took gigabytes
  // (regressions/pytorch/long-key-nested-paths.pkl).
  const std::vector<uint8_t> deep = NestedUnderOneKey(100000, 200);
  auto none = ReadTorchPickle(deep.data(), deep.size());
  REQUIRE(none.ok());
  CHECK(none->empty());
  const std::vector<uint8_t> shallow = NestedUnderOneKey(3, 2);
  auto named = ReadTorchPickle(shallow.data(), shallow.size());
  REQUIRE(named.ok());
  REQUIRE(named->size() == 1);
  CHECK((*named)[0].name == "kkk/kkk/w");
  CHECK((*named)[0].key == "0");
  CHECK((*named)[0].dtype == DType::kF32);
  // "<1022 bytes>/w" is 1024 bytes, just followed; one more byte is not.
  const std::vector<uint8_t> at_limit = NestedUnderOneKey(1022, 1);
  const std::vector<uint8_t> past_limit = NestedUnderOneKey(1023, 1);
  CHECK(ReadTorchPickle(at_limit.data(), at_limit.size())->size() == 1);
  CHECK(ReadTorchPickle(past_limit.data(), past_limit.size())->empty());
}

TEST_CASE("rejects a pickle global longer than 1024 bytes, or one not named by two strings") {
  // STACK_GLOBAL named one 75 kB string from the memo 15000 times, for 5
  // bytes each: 2 GB of names (regressions/pytorch/stack-global-long-name.pkl).
  std::vector<uint8_t> p = {0x80, 0x04, 'X', 0, 0, 0, 0};
  StoreLE<uint32_t>(p.data() + 3, 1000);
  p.insert(p.end(), 1000, 'm');
  static constexpr char kTwice[] = "q\x00" "h\x00" "\x93" "N.";  // STACK_GLOBAL(m..., m...)
  p.insert(p.end(), kTwice, kTwice + sizeof kTwice - 1);
  auto r = ReadTorchPickle(p.data(), p.size());
  REQUIRE(!r.ok());
  CHECK(r.status().message() == "pickle names a global longer than 1024 bytes");

  static constexpr char kNumbers[] = "\x80\x04" "K\x01" "K\x02" "\x93" ".";
  r = ReadTorchPickle(reinterpret_cast<const uint8_t*>(kNumbers), sizeof kNumbers - 1);
  REQUIRE(!r.ok());
  CHECK(r.status().message() == "pickle STACK_GLOBAL takes two strings");

  std::string line = "\x80\x02" "c" + std::string(1100, 'm') + "\nx\n.";
  r = ReadTorchPickle(reinterpret_cast<const uint8_t*>(line.data()), line.size());
  REQUIRE(!r.ok());
  CHECK(r.status().message() == "pickle names a global longer than 1024 bytes");
}

TEST_CASE("rejects a pickle that memoizes more than 2^20 values") {
  // MEMOIZE adds a memo entry for one byte: a 40 MB pickle of them took
  // over 2 GB (too large to keep under regressions/).
  std::vector<uint8_t> p = {0x80, 0x04, 'N'};
  p.insert(p.end(), size_t{1} << 20, 0x94);
  p.push_back('.');
  auto full = ReadTorchPickle(p.data(), p.size());
  REQUIRE(full.ok());
  CHECK(full->empty());
  p.insert(p.end() - 1, 0x94);
  auto over = ReadTorchPickle(p.data(), p.size());
  REQUIRE(!over.ok());
  CHECK(over.status().message() == "pickle memoizes too many values");
}

TEST_CASE("rejects a pickle that opens more than 1024 marks, so a file of '(' stays small") {
  // A MARK takes one byte and was counted as no value: 30 MB of '(' took
  // 302 MB for the stack of marks alone.
  std::vector<uint8_t> p = {0x80, 0x02};
  p.insert(p.end(), size_t{30} << 20, '(');
  p.push_back('.');
  auto many = ReadTorchPickle(p.data(), p.size());
  REQUIRE(!many.ok());
  CHECK(many.status().message() == "pickle opens more than 1024 marks");

  // 1024 open marks are read; the 1025th is refused.
  std::vector<uint8_t> at_limit = {0x80, 0x02};
  at_limit.insert(at_limit.end(), 1024, '(');
  at_limit.push_back('N');
  at_limit.push_back('.');
  auto read = ReadTorchPickle(at_limit.data(), at_limit.size());
  REQUIRE(read.ok());
  CHECK(read->empty());
  at_limit.insert(at_limit.begin() + 2, '(');
  auto over = ReadTorchPickle(at_limit.data(), at_limit.size());
  REQUIRE(!over.ok());
  CHECK(over.status().message() == "pickle opens more than 1024 marks");

  // Marks closed again do not add up: 2000 lists of one value each.
  std::vector<uint8_t> closed = {0x80, 0x02};
  for (int i = 0; i < 2000; ++i) closed.insert(closed.end(), {'(', 'N', 'l', '0'});
  closed.insert(closed.end(), {'N', '.'});
  CHECK(ReadTorchPickle(closed.data(), closed.size()).ok());

  // In a torch zip the same pickle leaves the file raw, with a warning.
  std::vector<uint8_t> file = Load(kData + "pt-cnn/step-000040.pt");
  const size_t data = MemberData(file, "data.pkl");
  const uint32_t size = LoadLE<uint32_t>(file.data() + CentralEntry(file, "data.pkl") + 24);
  REQUIRE(size > 1025);
  std::fill(file.begin() + static_cast<ptrdiff_t>(data), file.begin() + static_cast<ptrdiff_t>(data + size), '(');
  const FileLayout l = LayoutOf(file);
  CHECK(l.format == Format::kRaw);
  REQUIRE(l.warnings.size() == 1);
  CHECK(l.warnings[0] == "file: torch zip data.pkl is unreadable (pickle opens more than 1024 marks); stored as raw bytes");
  RoundTrip(file, ToRegions(l));
}

TEST_CASE("a zip whose directory is empty has no members and is raw without a warning") {
  // As above, for the zero-byte directory
  // (regressions/pytorch/empty-zip-directory-null-read).
  std::vector<uint8_t> zip(22, 0);
  StoreLE<uint32_t>(zip.data(), 0x06054b50);  // the end-of-directory record alone
  MemorySource src(zip.data(), zip.size(), "file");
  auto members = ReadZipDirectory(src);
  REQUIRE(members.ok());
  CHECK(members->empty());
  auto layout = ReadPytorch(src);
  REQUIRE(layout.ok());
  CHECK(layout->format == Format::kRaw);
  CHECK(layout->warnings.empty());
}

}  // namespace
}  // namespace zipnn::formats
