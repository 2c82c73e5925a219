// Tests of region building (ToRegions) and tensor-aware deltas
// (ToDeltaRegions): alignment, which tensors get regions of their own, and
// deltas that survive added, removed, renamed and reordered tensors.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "lib/formats/formats_test_util.h"
#include "lib/formats/checkpoint.h"
#include "lib/formats/file_layout.h"

namespace zipnn::formats {
namespace {

using codec::DType;

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

// The layout of `file` with each tensor's content hash.
FileLayout HashedLayoutOf(const std::vector<uint8_t>& file) {
  FileLayout layout = LayoutOf(file);
  MemorySource src(file.data(), file.size(), "file");
  ThreadPool pool(2);
  REQUIRE(HashTensorContents(src, layout, pool).ok());
  return layout;
}

TEST_CASE("tensors of the same bytes under other names are taken against them once both sides carry hashes") {
  const std::vector<uint8_t> base = Load(kData + "cnn-bf16/step-000200.safetensors");
  const std::vector<Entry> model = EntriesOf(base);
  // An adapter file: the frozen model under a prefix, in another order,
  // and adapter weights of its own (from another save, so real values).
  const std::vector<Entry> other = EntriesOf(Load(kData + "cnn-bf16/step-000040.safetensors"));
  std::vector<Entry> adapter;
  for (auto it = model.rbegin(); it != model.rend(); ++it) {
    Entry e = *it;
    e.name = "base_model.model." + e.name;
    adapter.push_back(std::move(e));
  }
  Entry lora = other[0];
  lora.name = "lora_A.weight";
  adapter.push_back(lora);
  const std::vector<uint8_t> file = MakeSafetensors(adapter);
  const size_t standalone = RoundTrip(file, ToRegions(LayoutOf(file))).size();

  // By name nothing matches: the file is coded as if alone.
  const container::Layout by_name = ToDeltaRegions(LayoutOf(file), LayoutOf(base));
  CHECK(SharedByContent(LayoutOf(file), LayoutOf(base)).bytes == 0);
  CHECK(RoundTrip(file, by_name, &base).size() * 10 > standalone * 9);

  // By content every model tensor is its own bytes in the base: what is
  // left is the header and the adapter's own tensor.
  const FileLayout hashed = HashedLayoutOf(file);
  const FileLayout base_hashed = HashedLayoutOf(base);
  const container::Layout by_content = ToDeltaRegions(hashed, base_hashed);
  REQUIRE(by_content.Validate(file.size(), base.size()).ok());
  uint64_t model_bytes = 0;
  for (const Entry& e : model) model_bytes += e.data.size();
  CHECK(SharedByContent(hashed, base_hashed).bytes == model_bytes);
  CHECK(SharedByContent(hashed, base_hashed).tensors == model.size());
  const size_t shared = RoundTrip(file, by_content, &base).size();  // decodes it back, bit-exact
  const size_t lora_alone = RoundTrip(lora.data, container::Layout::Single(DType::kBF16, lora.data.size())).size();
  CHECK(shared < lora_alone + standalone / 20);
  MESSAGE("adapter file: " << file.size() << " bytes, alone " << standalone << ", by content " << shared);
  // What the regions say, read back with the names of both files.
  const auto taken = TensorsTakenUnderOtherNames(LayoutOf(file), by_content, LayoutOf(base));
  CHECK(taken.size() == model.size());
  for (const auto& [in_file, in_base] : taken) {
    // Its own bytes (the step counters of three layers are equal: any of them).
    CHECK(hashed.tensors[in_file].content == base_hashed.tensors[in_base].content);
  }
  CHECK(TensorsTakenUnderOtherNames(LayoutOf(file), by_name, LayoutOf(base)).empty());

  SUBCASE("a tensor whose name twin changed takes the one of its bytes") {
    // Two tensors of the same dtype and shape trade their values.
    std::vector<Entry> swapped = model;
    auto named = [&](const std::string& name) -> Entry& {
      return *std::find_if(swapped.begin(), swapped.end(), [&](const Entry& e) { return e.name == name; });
    };
    std::swap(named("b3.running_mean").data, named("b3.running_var").data);
    const std::vector<uint8_t> f = MakeSafetensors(swapped);
    const FileLayout h = HashedLayoutOf(f);
    CHECK(SharedByContent(h, base_hashed).bytes == 2 * 64 * 2);
    const container::Layout regions = ToDeltaRegions(h, base_hashed);
    REQUIRE(regions.Validate(f.size(), base.size()).ok());
    const Tensor& mean =
        *std::find_if(h.tensors.begin(), h.tensors.end(), [](const Tensor& t) { return t.name == "b3.running_mean"; });
    const Tensor& var_in_base = *std::find_if(base_hashed.tensors.begin(), base_hashed.tensors.end(),
                                              [](const Tensor& t) { return t.name == "b3.running_var"; });
    bool taken = false;
    for (const container::Region& r : regions.regions) {
      if (r.delta && r.offset <= mean.offset && mean.offset < r.offset + r.length) {
        taken = r.base_offset + (mean.offset - r.offset) == var_in_base.offset;
      }
    }
    CHECK(taken);
    RoundTrip(f, regions, &base);
  }
  SUBCASE("a lying hash costs bytes, never the content") {
    // The hashes say the adapter's tensor is a model tensor; the delta is
    // then the XOR of two different tensors, and still decodes exactly.
    FileLayout lying = hashed;
    for (Tensor& t : lying.tensors) {
      if (t.name == "lora_A.weight") t.content = base_hashed.tensors[0].content;
    }
    RoundTrip(file, ToDeltaRegions(lying, base_hashed), &base);  // REQUIREs the bytes back
  }
}

TEST_CASE("tensors the base does not hold are taken from the first reference that holds their bytes") {
  // A model saved again in other shards: one file holding the model of
  // step 200 and tensors of steps 40 and 120 under new names.
  const std::vector<uint8_t> base = Load(kData + "cnn-bf16/step-000200.safetensors");
  const std::vector<uint8_t> step40 = Load(kData + "cnn-bf16/step-000040.safetensors");
  const std::vector<uint8_t> step120 = Load(kData + "cnn-bf16/step-000120.safetensors");
  const std::vector<uint8_t> step160 = Load(kData + "cnn-bf16/step-000160.safetensors");
  std::vector<Entry> entries = EntriesOf(base);
  // The largest tensor of each (a conv and a linear weight, 32 and 64 KiB).
  auto largest = [](const std::vector<Entry>& all) {
    return *std::max_element(all.begin(), all.end(),
                             [](const Entry& a, const Entry& b) { return a.data.size() < b.data.size(); });
  };
  Entry from40 = largest(EntriesOf(step40)), from120 = largest(EntriesOf(step120));
  from40.name = "ema40." + from40.name;
  from120.name = "ema120." + from120.name;
  entries.push_back(from40);
  entries.push_back(from120);
  const std::vector<uint8_t> file = MakeSafetensors(entries);
  const FileLayout hashed = HashedLayoutOf(file);
  const FileLayout base_hashed = HashedLayoutOf(base);
  // Step 160 holds none of them (it is left out); steps 40 and 120 do.
  const FileLayout h160 = HashedLayoutOf(step160), h40 = HashedLayoutOf(step40), h120 = HashedLayoutOf(step120);
  const std::vector<const FileLayout*> references = {&h160, &h40, &h120};
  container::Layout regions = ToDeltaRegions(hashed, base_hashed, references);
  REQUIRE(regions.Validate(file.size(), {base.size(), step160.size(), step40.size(), step120.size()}).ok());
  const Shared taken = TakenFromReferences(hashed, base_hashed, references);
  CHECK(taken.tensors == 2);
  CHECK(taken.bytes == from40.data.size() + from120.data.size());
  const std::vector<size_t> kept = regions.KeepUsedReferences(references.size());
  CHECK(kept == std::vector<size_t>{1, 2});
  REQUIRE(regions.Validate(file.size(), {base.size(), step40.size(), step120.size()}).ok());
  // Each tensor's region starts at its bytes in its source.
  auto source_of = [&](const std::string& name) {
    const Tensor& t =
        *std::find_if(hashed.tensors.begin(), hashed.tensors.end(), [&](const Tensor& x) { return x.name == name; });
    for (const container::Region& r : regions.regions) {
      if (r.offset <= t.offset && t.offset < r.offset + r.length) return r.delta ? static_cast<int>(r.source) : -1;
    }
    return -1;
  };
  CHECK(source_of(from40.name) == 1);
  CHECK(source_of(from120.name) == 2);
  CHECK(source_of(entries[0].name) == 0);
  // The names the base holds under other names leave the references' out.
  CHECK(TensorsTakenUnderOtherNames(LayoutOf(file), regions, LayoutOf(base)).empty());
  // Bit-exact back, and next to nothing stored; with the base alone the
  // two tensors are coded again.
  const size_t with = RoundTrip(file, regions, &base, {&step40, &step120}).size();
  const size_t without = RoundTrip(file, ToDeltaRegions(hashed, base_hashed), &base).size();
  CHECK(with * 20 < without);
  MESSAGE("resharded file: " << file.size() << " bytes, base alone " << without << ", with references " << with);
}

FileLayout Synthetic(std::vector<Tensor> tensors, uint64_t size) {
  FileLayout f;
  f.format = Format::kSafetensors;
  f.size = size;
  f.tensors = std::move(tensors);
  return f;
}

TEST_CASE("region building keeps element alignment and never absorbs large or opaque ranges") {
  using codec::DType;
  const FileLayout f = Synthetic({Tensor{"a", DType::kBF16, {4}, 16, 8}, Tensor{"b", DType::kI16, {3}, 24, 6},
                                  Tensor{"c", DType::kI64, {256}, 30, 2048}, Tensor{"d", DType::kBF16, {2}, 2078, 4},
                                  Tensor{"e", DType::kU8, {3}, 2082, 3}, Tensor{"f", DType::kF32, {1}, 2085, 4}},
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
