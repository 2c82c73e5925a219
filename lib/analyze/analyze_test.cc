// Tests of the analysis on hand-built tensors with known changes, and of
// the policy what-if against the sizes the analysis measured on a real
// trajectory.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "lib/analyze/analysis.h"
#include "lib/analyze/report.h"
#include "lib/analyze/scan.h"
#include "lib/analyze/sizes.h"
#include "lib/base/file.h"
#include "lib/base/thread_pool.h"
#include "lib/container/estimate.h"
#include "lib/container/layout.h"
#include "lib/formats/detect.h"
#include "lib/formats/thin.h"

namespace zipnn::analyze {
namespace {

using codec::DType;

std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t != nullptr ? t : "/tmp";
}

// A checkpoint built in memory: tensors appended back to back.
struct Builder {
  std::vector<uint8_t> bytes;
  formats::FileLayout layout;

  template <typename T>
  Builder& Add(const std::string& name, DType dtype, const std::vector<T>& values, std::vector<uint64_t> shape = {}) {
    formats::Tensor t;
    t.name = name;
    t.dtype = dtype;
    t.shape = shape.empty() ? std::vector<uint64_t>{values.size()} : shape;
    t.offset = bytes.size();
    t.length = values.size() * sizeof(T);
    bytes.resize(bytes.size() + t.length);
    std::memcpy(bytes.data() + t.offset, values.data(), t.length);
    layout.tensors.push_back(t);
    layout.format = formats::Format::kSafetensors;
    layout.size = bytes.size();
    return *this;
  }

  std::shared_ptr<analyze::Input> Make(const std::string& label) const {
    auto checkpoint =
        formats::Checkpoint::Spool(TempDir(), [&](ByteSink& out) { return out.Append(bytes.data(), bytes.size()); });
    REQUIRE(checkpoint.ok());
    checkpoint->SetLayout(layout);
    return std::make_shared<analyze::Input>(analyze::Input{label, "", "", std::move(*checkpoint)});
  }
};

uint16_t Bf16(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return static_cast<uint16_t>(b >> 16);
}

Analysis Run(const std::vector<const Builder*>& checkpoints, Options options = {}) {
  options.policy.threads = options.policy.threads == 0 ? 2 : options.policy.threads;
  Analyzer analyzer(options);
  for (size_t i = 0; i < checkpoints.size(); ++i) {
    REQUIRE(analyzer.Add(checkpoints[i]->Make(std::to_string(i))).ok());
  }
  return analyzer.Finish();
}

const TensorChange& Find(const Analysis& a, size_t checkpoint, const std::string& name) {
  for (const TensorChange& t : a.tensors) {
    if (t.checkpoint == checkpoint && t.tensor.name == name) return t;
  }
  FAIL("no tensor " << name << " at " << checkpoint);
  return a.tensors.front();
}

int Slot(const std::string& label) {
  for (int s = 0; s < kGroupSlots; ++s) {
    if (SlotLabel(s) == label) return s;
  }
  return -1;
}

TEST_CASE("counts changed elements and changed bytes per byte group exactly") {
  // bf16: 100 elements change the lowest mantissa bit, 50 the lowest
  // exponent bit, 10 only the sign (which the rotation puts in man0).
  std::vector<uint16_t> ref(1000), target;
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = Bf16(0.01f * static_cast<float>(i + 1));
  target = ref;
  for (size_t i = 0; i < 100; ++i) target[i] ^= 0x0001;
  for (size_t i = 100; i < 150; ++i) target[i] ^= 0x0080;
  for (size_t i = 150; i < 160; ++i) target[i] ^= 0x8000;
  // f32: 7 elements change in byte 1 only, 3 in the top mantissa byte and
  // the exponent.
  std::vector<uint32_t> f32_ref(64), f32_target;
  for (size_t i = 0; i < f32_ref.size(); ++i) {
    const float v = 1.0f + static_cast<float>(i) / 64;
    std::memcpy(&f32_ref[i], &v, 4);
  }
  f32_target = f32_ref;
  for (size_t i = 0; i < 7; ++i) f32_target[i] ^= 0x00000100;
  for (size_t i = 10; i < 13; ++i) f32_target[i] ^= 0x00c00000;
  const std::vector<int64_t> steps = {41};

  Builder a, b;
  a.Add("w", DType::kBF16, ref)
      .Add("g", DType::kF32, f32_ref)
      .Add("frozen", DType::kBF16, ref)
      .Add("step", DType::kI64, steps)
      .Add("reshaped", DType::kBF16, ref, {10, 100})
      .Add("removed", DType::kBF16, ref);
  b.Add("w", DType::kBF16, target)
      .Add("g", DType::kF32, f32_target)
      .Add("frozen", DType::kBF16, ref)
      .Add("step", DType::kI64, std::vector<int64_t>{42})
      .Add("reshaped", DType::kBF16, ref, {100, 10})
      .Add("added", DType::kBF16, ref);
  const Analysis an = Run({&a, &b});
  REQUIRE(an.rows.size() == 2);

  const TensorChange& w = Find(an, 1, "w");
  CHECK(w.status == TensorStatus::kChanged);
  CHECK(w.stats.elements == 1000);
  CHECK(w.stats.changed == 160);
  CHECK(w.stats.group_changed[Slot("man0")] == 110);
  CHECK(w.stats.group_changed[Slot("exp")] == 50);
  CHECK(w.stats.group_bytes[Slot("exp")] == 1000);

  const TensorChange& g = Find(an, 1, "g");
  CHECK(g.stats.changed == 10);
  // Rotated left by one bit: raw bit 8 lands in byte 1 (man1); raw bits 22
  // and 23 land in bits 23 and 24, bytes 2 (man2) and 3 (exp).
  CHECK(g.stats.group_changed[Slot("man0")] == 0);
  CHECK(g.stats.group_changed[Slot("man1")] == 7);
  CHECK(g.stats.group_changed[Slot("man2")] == 3);
  CHECK(g.stats.group_changed[Slot("exp")] == 3);

  CHECK(Find(an, 1, "frozen").status == TensorStatus::kFrozen);
  CHECK(Find(an, 1, "reshaped").status == TensorStatus::kReshaped);
  CHECK(Find(an, 1, "added").status == TensorStatus::kAdded);
  CHECK(Find(an, 1, "added").stats.changed == 1000);
  CHECK(Find(an, 1, "removed").status == TensorStatus::kRemoved);
  const TensorChange& step = Find(an, 1, "step");
  CHECK(step.stats.changed == 1);
  CHECK(step.stats.group_changed[Slot("b0")] == 1);  // 41 ^ 42 = 3: only the low byte
  CHECK(step.stats.group_changed[Slot("b1")] == 0);

  const CheckpointRow& row = an.rows[1];
  CHECK(row.reference == 0u);
  CHECK(row.changed_tensors == 3);  // w, g, step
  CHECK(row.frozen_tensors == 1);
  CHECK(row.added_tensors == 1);
  CHECK(row.reshaped_tensors == 1);
  CHECK(row.removed_tensors == 1);
  // Selected tensors of the target: w, g, frozen, step, reshaped, added.
  CHECK(row.parameters == 1000 + 64 + 1000 + 1 + 1000 + 1000);
  CHECK(row.change.changed == 160 + 10 + 0 + 1 + 1000 + 1000);
  CHECK_FALSE(an.rows[0].reference.has_value());
}

TEST_CASE("relative update is the norm of the difference over the norm of the reference") {
  std::vector<float> ref(100, 1.0f), target(100, 1.0f);
  for (size_t i = 0; i < 4; ++i) target[i] = 2.0f;  // ||diff||^2 = 4, ||ref||^2 = 100
  std::vector<float> with_nan = ref;
  with_nan[7] = std::nanf("");
  // f16 1.0 -> 1.5 in one of two elements: ||diff|| = 0.5, ||ref|| = sqrt(2).
  const std::vector<uint16_t> half_ref = {0x3C00, 0x3C00}, half_target = {0x3E00, 0x3C00};
  Builder a, b;
  a.Add("w", DType::kF32, ref).Add("n", DType::kF32, ref).Add("h", DType::kF16, half_ref);
  b.Add("w", DType::kF32, target).Add("n", DType::kF32, with_nan).Add("h", DType::kF16, half_target);
  const Analysis an = Run({&a, &b});
  CHECK(Find(an, 1, "w").stats.RelativeUpdate() == doctest::Approx(0.2).epsilon(1e-12));
  const TensorChange& n = Find(an, 1, "n");
  CHECK(n.stats.non_finite == 1);
  CHECK(n.stats.changed == 1);
  CHECK(n.stats.RelativeUpdate() == 0.0);  // the NaN pair is left out
  CHECK(Find(an, 1, "h").stats.RelativeUpdate() == doctest::Approx(0.5 / std::sqrt(2.0)).epsilon(1e-12));
  // The row sums squares over its tensors: (4 + 0 + 0.25) / (100 + 99 + 2).
  CHECK(an.rows[1].change.RelativeUpdate() == doctest::Approx(std::sqrt(4.25 / 201)).epsilon(1e-12));

  // A one-element tensor (an optimizer's step counter, 100 -> 200) keeps
  // its own figure but stays out of the row's: it counts, it is no weight.
  Builder c = a, d = b;
  c.Add("optimizer/state/0/step", DType::kF32, std::vector<float>{100.0f});
  d.Add("optimizer/state/0/step", DType::kF32, std::vector<float>{200.0f});
  const Analysis counted = Run({&c, &d});
  CHECK(Find(counted, 1, "optimizer/state/0/step").stats.RelativeUpdate() == doctest::Approx(1.0));
  CHECK(counted.rows[1].change.RelativeUpdate() == doctest::Approx(std::sqrt(4.25 / 201)).epsilon(1e-12));
  CHECK(counted.rows[1].change.changed == an.rows[1].change.changed + 1);
}

TEST_CASE("a tensor summary: rms of the finite values of each float dtype, non-finite counted, none for integers") {
  // 13 values (not a multiple of the 8 sums kept), 2 of them not finite.
  std::vector<float> f32;
  for (int i = 1; i <= 11; ++i) f32.push_back(static_cast<float>(i) * 0.5f);
  f32.push_back(std::nanf(""));
  f32.push_back(INFINITY);
  double squares = 0;
  for (int i = 1; i <= 11; ++i) squares += (i * 0.5) * (i * 0.5);
  std::vector<uint16_t> bf16;
  for (int i = 1; i <= 11; ++i) bf16.push_back(Bf16(static_cast<float>(i) * 0.5f));
  bf16.push_back(0x7FC0);                                      // NaN
  const std::vector<uint16_t> f16 = {0x3C00, 0x4000, 0x7C00};  // 1, 2, inf
  const std::vector<int32_t> ints = {3, 4};
  Builder b;
  b.Add("f32", DType::kF32, f32)
      .Add("bf16", DType::kBF16, bf16)
      .Add("f16", DType::kF16, f16)
      .Add("i32", DType::kI32, ints);
  MemorySource source(b.bytes.data(), b.bytes.size(), "built");
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    auto summaries = SummarizeTensors(source, b.layout, pool);
    REQUIRE(summaries.ok());
    REQUIRE(summaries->size() == 4);
    const auto& s = *summaries;
    CHECK(s[0].rms == doctest::Approx(std::sqrt(squares / 11)).epsilon(1e-15));
    CHECK(s[0].non_finite == 2);
    CHECK(s[1].rms == doctest::Approx(std::sqrt(squares / 11)).epsilon(1e-15));
    CHECK(s[1].non_finite == 1);
    CHECK(s[2].rms == doctest::Approx(std::sqrt(5.0 / 2)).epsilon(1e-15));
    CHECK(s[2].non_finite == 1);
    CHECK(std::isnan(s[3].rms));
    CHECK(s[3].non_finite == 0);
    CHECK(s[3].hash == HashBytes(ints.data(), ints.size() * sizeof(int32_t)));
  }
}

TEST_CASE("an rms is exactly that of eight running sums, element i in sum i mod 8, whatever the code path") {
  // Listings made by any build must agree to the bit (git keeps them):
  // the vector path must add in the scalar order. Values of every kind:
  // normal, subnormal, signed zeros, infinities, NaNs, huge.
  std::vector<uint32_t> bits;
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 3001; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    bits.push_back(static_cast<uint32_t>(x >> 11));
  }
  for (uint32_t special : {0x7F800000u, 0xFF800000u, 0x7FC00001u, 0x00000001u, 0x80000000u, 0x7F7FFFFFu}) {
    bits[static_cast<size_t>(special % 2999)] = special;
  }
  std::vector<float> f32(bits.size());
  std::memcpy(f32.data(), bits.data(), bits.size() * 4);
  std::vector<uint16_t> bf16;
  for (uint32_t b : bits) bf16.push_back(static_cast<uint16_t>(b >> 16));
  auto expected = [](auto value, size_t count) {
    double lanes[8] = {};
    uint64_t finite = 0;
    for (size_t i = 0; i < count; ++i) {
      const double v = value(i);
      if (!std::isfinite(v)) continue;
      lanes[i % 8] += v * v;
      ++finite;
    }
    const double sum =
        ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    return std::make_pair(std::sqrt(sum / static_cast<double>(finite)), count - finite);
  };
  const auto want_f32 = expected([&](size_t i) { return static_cast<double>(f32[i]); }, f32.size());
  const auto want_bf16 = expected(
      [&](size_t i) {
        const uint32_t b = static_cast<uint32_t>(bf16[i]) << 16;
        float f;
        std::memcpy(&f, &b, 4);
        return static_cast<double>(f);
      },
      bf16.size());
  Builder b;
  b.Add("f32", DType::kF32, f32).Add("bf16", DType::kBF16, bf16);
  MemorySource source(b.bytes.data(), b.bytes.size(), "built");
  ThreadPool pool(2);
  auto s = SummarizeTensors(source, b.layout, pool);
  REQUIRE(s.ok());
  CHECK((*s)[0].rms == want_f32.first);
  CHECK((*s)[0].non_finite == want_f32.second);
  CHECK((*s)[1].rms == want_bf16.first);
  CHECK((*s)[1].non_finite == want_bf16.second);
  CHECK(want_f32.second >= 3);
}

TEST_CASE("a twin key is of the tensor lines alone: their order and the checkpoint line do not count") {
  const ContentId a = HashBytes("a", 1), b = HashBytes("b", 1);
  const std::string one = "checkpoint " + a.Hex() + ": 100 bytes, safetensors, 2 tensors\n" +
                          "x fp32 [2] hash 0011223344556677 rms 1.000000e+00\ny bf16 [4] hash 8899aabbccddeeff\n";
  const std::string other = "checkpoint " + b.Hex() + ": 140 bytes, pytorch, 2 tensors\n" +
                            "y bf16 [4] hash 8899aabbccddeeff\nx fp32 [2] hash 0011223344556677 rms 1.000000e+00\n";
  REQUIRE(TwinKey(one).has_value());
  CHECK(TwinKey(one) == TwinKey(other));
  std::string changed = other;
  changed[changed.find("8899")] = '9';
  CHECK(TwinKey(changed) != TwinKey(one));
  CHECK(TwinKey(other.substr(0, other.find("y bf16"))) != TwinKey(one));  // a tensor fewer
  CHECK_FALSE(TwinKey("checkpoint " + a.Hex() + ": 5 bytes, raw, 0 tensors\n").has_value());
  CHECK_FALSE(TwinKey("").has_value());
  CHECK(ListedCheckpoint(one) == a);
  CHECK(ListedCheckpoint(other) == b);
  CHECK_FALSE(ListedCheckpoint("git-zipnn: cannot show this checkpoint: missing\n").has_value());
  CHECK_FALSE(ListedCheckpoint("checkpoint " + a.Hex()).has_value());
}

TEST_CASE("exponent histograms count the biased exponent of every element per dtype") {
  const std::vector<uint16_t> bf = {Bf16(1.0f), Bf16(1.5f), Bf16(2.0f), Bf16(0.5f), Bf16(0.0f), Bf16(-3.0f)};
  const std::vector<float> f = {1.0f, 4.0f, INFINITY};
  Builder a;
  a.Add("b", DType::kBF16, bf).Add("f", DType::kF32, f).Add("i", DType::kI64, std::vector<int64_t>{7});
  const Analysis an = Run({&a});
  REQUIRE(an.histogram_at == 0u);
  REQUIRE(an.histograms.size() == 2);
  const ExponentHistogram& h = an.histograms[0].dtype == DType::kBF16 ? an.histograms[0] : an.histograms[1];
  CHECK(h.total == 6);
  CHECK(h.counts[127] == 2);  // 1.0 and 1.5
  CHECK(h.counts[128] == 2);  // 2.0 and -3.0
  CHECK(h.counts[126] == 1);
  CHECK(h.counts[0] == 1);
  const ExponentHistogram& g = an.histograms[0].dtype == DType::kF32 ? an.histograms[0] : an.histograms[1];
  CHECK(g.counts[127] == 1);
  CHECK(g.counts[129] == 1);
  CHECK(g.counts[255] == 1);
}

TEST_CASE("a tensor filter limits the statistics to the tensors it selects") {
  std::vector<float> x(10, 1.0f), y(10, 2.0f);
  Builder a, b;
  a.Add("blocks.0.attn", DType::kF32, x).Add("blocks.0.mlp", DType::kF32, x);
  b.Add("blocks.0.attn", DType::kF32, y).Add("blocks.0.mlp", DType::kF32, x);
  Options o;
  o.select = [](const std::string& n) { return n.find("mlp") != std::string::npos; };
  const Analysis an = Run({&a, &b}, o);
  REQUIRE(an.rows.size() == 2);
  CHECK(an.rows[1].tensors == 1);
  CHECK(an.rows[1].change.changed == 0);
  CHECK(an.rows[1].frozen_tensors == 1);
  for (const TensorChange& t : an.tensors) CHECK(t.tensor.name == "blocks.0.mlp");
}

TEST_CASE("statistics and sizes do not depend on the number of threads") {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0, 0.02f);
  std::vector<uint16_t> ref(1500000), target;  // three 1 MiB blocks
  for (uint16_t& v : ref) v = Bf16(normal(rng));
  target = ref;
  for (size_t i = 0; i < target.size(); i += 3) target[i] = Bf16(normal(rng));
  Builder a, b;
  a.Add("w", DType::kBF16, ref);
  b.Add("w", DType::kBF16, target);
  Options one, three;
  one.policy.threads = 1;
  three.policy.threads = 3;
  const Analysis x = Run({&a, &b}, one), y = Run({&a, &b}, three);
  CHECK(x.rows[1].change.diff_sq == y.rows[1].change.diff_sq);  // bit for bit
  CHECK(x.rows[1].change.ref_sq == y.rows[1].change.ref_sq);
  CHECK(x.rows[1].change.changed == y.rows[1].change.changed);
  CHECK(x.rows[1].vs_previous.automatic == y.rows[1].vs_previous.automatic);
  CHECK(x.rows[1].vs_previous.bound == y.rows[1].vs_previous.bound);
  CHECK(x.rows[1].standalone.zstd == y.rows[1].standalone.zstd);
  CHECK(x.rows[1].change.changed > 400000);
}

TEST_CASE("the entropy bound is the order-0 information of each group of each chunk") {
  // One bf16 region: low bytes take 4 values evenly (2 bits each), high
  // bytes are constant (0 bits). Two chunks, each balanced on its own.
  std::vector<uint8_t> data(2 * 4096);
  for (size_t i = 0; i < data.size() / 2; ++i) {
    data[2 * i] = static_cast<uint8_t>(i % 4);
    data[2 * i + 1] = 0x3f;
  }
  const MemorySource source(data.data(), data.size(), "data");
  ThreadPool pool(2);
  auto bound =
      container::EntropyBound(source, container::Layout::Single(DType::kBF16, data.size()), nullptr, 4096, pool);
  REQUIRE(bound.ok());
  CHECK(*bound == doctest::Approx(4096 * 2 / 8.0));
  // As a delta against itself everything is zero: no information at all.
  auto zero = container::EntropyBound(
      source, container::Layout::Single(DType::kBF16, data.size()).AsDeltaOfSameLayout(), &source, 4096, pool);
  REQUIRE(zero.ok());
  CHECK(*zero == 0.0);
}

// The real trajectory the store's tests use.
std::vector<std::shared_ptr<Input>> Trajectory() {
  std::vector<std::shared_ptr<Input>> inputs;
  for (int step = 10; step <= 120; step += 10) {
    char name[96];
    std::snprintf(name, sizeof name, "tests/data/cnn12-bf16/step-%06d.safetensors", step);
    auto checkpoint = formats::Checkpoint::Open(name);
    REQUIRE(checkpoint.ok());
    REQUIRE(checkpoint->ReadLayout().ok());
    inputs.push_back(std::make_shared<Input>(Input{std::to_string(step), "", "", std::move(*checkpoint)}));
  }
  return inputs;
}

const PolicyOutcome& Policy(const Analysis& a, uint32_t k, config::DeltaAgainst against,
                            config::Newest newest = config::Newest::kDelta) {
  for (const PolicyOutcome& p : a.policies) {
    if (p.base_interval == k && p.against == against && p.newest == newest) return p;
  }
  FAIL("no policy k=" << k);
  return a.policies.front();
}

TEST_CASE("the policy what-if adds up the sizes each policy would store") {
  Options o;
  o.base_interval = 4;
  Analyzer analyzer(o);
  const std::vector<std::shared_ptr<Input>> inputs = Trajectory();
  for (auto& in : inputs) REQUIRE(analyzer.Add(in).ok());
  const Analysis an = analyzer.Finish();
  REQUIRE(an.rows.size() == 12);
  REQUIRE(an.policies.size() == 28);  // the default policy (7, previous, newest whole, chain 3) is in the grid
  using config::DeltaAgainst;
  uint64_t all_bases = 0, chain_of_previous = an.rows[0].standalone.automatic, every_other = 0;
  for (const CheckpointRow& r : an.rows) {
    all_bases += r.standalone.automatic;
    if (r.index > 0) chain_of_previous += r.vs_previous.automatic;
    every_other += r.index % 2 == 0 ? r.standalone.automatic : r.vs_previous.automatic;
    // The auto rule is never worse than Huffman only or zstd only.
    CHECK(r.standalone.automatic <= std::min(r.standalone.huffman, r.standalone.zstd));
    if (r.index > 0) CHECK(r.vs_previous.automatic <= std::min(r.vs_previous.huffman, r.vs_previous.zstd));
    // Each delta chunk taken the cheaper way: never more than 0.1% above
    // all-XOR, and here below both single transforms.
    CHECK(r.standalone.by_transform == decltype(r.standalone.by_transform){});
    if (r.index > 0) {
      const uint64_t xor_only = r.vs_previous.by_transform[static_cast<size_t>(codec::Transform::kXor)];
      const uint64_t difference = r.vs_previous.by_transform[static_cast<size_t>(codec::Transform::kDifference)];
      CHECK(r.vs_previous.automatic * 1000 <= xor_only * 1001);
      CHECK(r.vs_previous.automatic <= difference);
      CHECK(difference < xor_only);
    }
  }
  const PolicyOutcome& k1 = Policy(an, 1, DeltaAgainst::kPrevious);
  CHECK(k1.stored_bytes == all_bases);
  CHECK(k1.bases == 12);
  CHECK(k1.worst_chain == 0);
  // Every delta of this trajectory saves more than min_gain, so with no
  // periodic base the chain runs the whole trajectory.
  const PolicyOutcome& inf = Policy(an, 0, DeltaAgainst::kPrevious);
  CHECK(inf.stored_bytes == chain_of_previous);
  CHECK(inf.bases == 1);
  CHECK(inf.worst_chain == 11);
  // Every second version a base, the others a delta against it.
  const PolicyOutcome& k2 = Policy(an, 2, DeltaAgainst::kBase);
  CHECK(k2.stored_bytes == every_other);
  CHECK(k2.worst_chain == 1);
  const PolicyOutcome& k10 = Policy(an, 10, DeltaAgainst::kPrevious);
  CHECK(!k10.current);
  CHECK(k10.worst_chain == 9);
  CHECK(k10.bases == 2);
  // A clone of the last checkpoint fetches its chain: a delta on step 100.
  CHECK(k10.latest_bytes == an.rows[10].standalone.automatic + an.rows[11].vs_previous.automatic);
  // Deltas against a base further away cost more than against the previous.
  CHECK(Policy(an, 0, DeltaAgainst::kBase).stored_bytes > inf.stored_bytes);

  // The newest whole, every 10th a base: steps 10 (first) and 100 (due)
  // are bases; 20 to 60 deltas of the version before them; 70 to 90 of
  // the version after them; 110, the newest, whole.
  using config::Newest;
  const PolicyOutcome& whole = Policy(an, 10, DeltaAgainst::kPrevious, Newest::kWhole);
  CHECK(!whole.current);
  CHECK(whole.max_chain == 5);
  uint64_t expected =
      an.rows[0].standalone.automatic + an.rows[10].standalone.automatic + an.rows[11].standalone.automatic;
  for (size_t i = 1; i <= 5; ++i) expected += an.rows[i].vs_previous.automatic;
  // The deltas of the second half, measured each against the next.
  ThreadPool pool(2);
  for (size_t i = 6; i <= 9; ++i) {
    const formats::CheckpointView older = inputs[i]->checkpoint.View(ContentId{});
    const formats::CheckpointView newer = inputs[i + 1]->checkpoint.View(ContentId{});
    auto sizes = MeasureSizes(older, &newer, o.policy, Coders::kAutoOnly, pool);
    REQUIRE(sizes.ok());
    expected += sizes->automatic;
  }
  CHECK(whole.stored_bytes == expected);
  CHECK(whole.bases == 3);
  CHECK(whole.worst_chain == 5);
  CHECK(whole.latest_bytes == an.rows[11].standalone.automatic);
  // The default, every 7th a base: steps 10 and 80 are bases, 20 to 40
  // chain down to 10, 50 to 70 up to 80, 90 and 100 down to 80, and 110
  // is whole: no chain longer than 3.
  const PolicyOutcome& seventh = Policy(an, 7, DeltaAgainst::kPrevious, Newest::kWhole);
  CHECK(seventh.current);
  CHECK(seventh.max_chain == 3);
  CHECK(seventh.worst_chain == 3);
  CHECK(seventh.bases == 3);
  CHECK(seventh.latest_bytes == an.rows[11].standalone.automatic);
  CHECK(Policy(an, 1, DeltaAgainst::kPrevious, Newest::kWhole).stored_bytes == all_bases);
  // No periodic base: one chain down to the first, and the newest whole.
  const PolicyOutcome& open = Policy(an, 0, DeltaAgainst::kPrevious, Newest::kWhole);
  CHECK(open.stored_bytes == chain_of_previous - an.rows[11].vs_previous.automatic + an.rows[11].standalone.automatic);
  CHECK(open.worst_chain == 10);
  CHECK(open.bases == 2);
}

TEST_CASE("a policy that allows no chain stores every version as a base") {
  Options o;
  o.policy.max_chain = 0;  // set in .zipnn.yaml: never a delta
  Analyzer analyzer(o);
  for (auto& in : Trajectory()) REQUIRE(analyzer.Add(in).ok());
  const Analysis an = analyzer.Finish();
  REQUIRE(an.policies.size() == 29);  // the grid, and the current policy apart
  const PolicyOutcome& current = an.policies.back();
  CHECK(current.current);
  CHECK(current.base_interval == 7);
  CHECK(current.max_chain == 0);
  CHECK(current.bases == 12);
  CHECK(current.worst_chain == 0);
  CHECK(current.stored_bytes == Policy(an, 1, config::DeltaAgainst::kPrevious).stored_bytes);
  CHECK(Policy(an, 0, config::DeltaAgainst::kPrevious).max_chain == kNoChainLimit);
}

TEST_CASE("the thinning what-if stores what thinned copies of the checkpoints store, with their errors") {
  Options o;
  o.base_interval = 5;
  o.policy.threads = 2;
  using Kind = codec::Precision::Kind;
  const std::vector<codec::Precision> precisions = {{Kind::kRelative, 5}, {Kind::kRelative, 3}, {Kind::kAbsolute, 8}};
  o.thinning = precisions;
  Analyzer analyzer(o);
  const std::vector<std::shared_ptr<Input>> inputs = Trajectory();
  for (auto& in : inputs) REQUIRE(analyzer.Add(in).ok());
  const Analysis an = analyzer.Finish();
  REQUIRE(an.thinning.size() == 3);
  uint64_t exact = 0;
  for (const CheckpointRow& r : an.rows) exact += r.index % 5 == 0 ? r.standalone.automatic : r.vs_previous.automatic;
  CHECK(an.exact_stored == exact);

  // The same figures from thinned copies written out whole: a base at 0,
  // 5 and 10, the others deltas against the thinned one before.
  ThreadPool pool(2);
  for (size_t i = 0; i < precisions.size(); ++i) {
    const codec::Precision& p = precisions[i];
    CAPTURE(p.Text());
    std::vector<std::vector<uint8_t>> copies;
    uint64_t stored = 0;
    double max_abs = 0, max_rel = 0;
    uint64_t changed = 0, values = 0;
    for (size_t at = 0; at < inputs.size(); ++at) {
      const formats::CheckpointView exact_view = inputs[at]->checkpoint.View();
      MemorySink out;
      auto errors = formats::Thin(exact_view, p, out);
      REQUIRE(errors.ok());
      for (const formats::TensorError& e : *errors) {
        max_abs = std::max(max_abs, e.max_abs);
        max_rel = std::max(max_rel, e.max_rel);
        changed += e.changed;
        values += e.values;
      }
      copies.push_back(out.ToVector());
      const MemorySource copy(copies[at].data(), copies[at].size(), "copy");
      const formats::CheckpointView view{&copy, exact_view.layout, {}};
      std::optional<MemorySource> before;
      std::optional<formats::CheckpointView> against;
      if (at % 5 != 0) {
        before.emplace(copies[at - 1].data(), copies[at - 1].size(), "before");
        against = formats::CheckpointView{&*before, exact_view.layout, {}};
      }
      auto sizes = MeasureSizes(view, against ? &*against : nullptr, o.policy, Coders::kAutoOnly, pool);
      REQUIRE(sizes.ok());
      stored += sizes->automatic;
    }
    const ThinningOutcome& outcome = an.thinning[i];
    CHECK(outcome.stored_bytes == stored);
    CHECK(outcome.max_abs == max_abs);
    CHECK(outcome.max_rel == max_rel);
    CHECK(outcome.changed == changed);
    CHECK(outcome.values == values);
    // A coarser precision stores less, and the error stays in its bound.
    CHECK(outcome.stored_bytes < an.exact_stored);
    CHECK(outcome.changed > 0);
    if (p.kind == Kind::kRelative) CHECK(outcome.max_rel <= p.Bound());
    if (p.kind == Kind::kAbsolute) CHECK(outcome.max_abs <= p.Bound());
  }
  CHECK(an.thinning[1].stored_bytes < an.thinning[0].stored_bytes);
}

TEST_CASE("the thinning what-if's precisions follow the float types of the checkpoint") {
  auto texts = [](const formats::FileLayout& layout) {
    std::string all;
    for (const codec::Precision& p : ThinningOutcome::DefaultsFor(layout)) all += p.Text() + "; ";
    return all;
  };
  formats::FileLayout layout;
  formats::Tensor t;
  t.dtype = DType::kI64;
  layout.tensors.push_back(t);
  CHECK(texts(layout).empty());
  layout.tensors[0].dtype = DType::kBF16;
  CHECK(texts(layout) == "relative 5 mantissa bits; relative 4 mantissa bits; relative 3 mantissa bits; ");
  layout.tensors.push_back(t);
  layout.tensors[1].dtype = DType::kF32;
  CHECK(texts(layout) == "absolute 2^-27; absolute 2^-23; absolute 2^-20; relative 10 mantissa bits; "
                         "relative 5 mantissa bits; relative 4 mantissa bits; relative 3 mantissa bits; ");
  // None asked: no thinning rows, and none in the report.
  Options o;
  o.thinning = std::vector<codec::Precision>{};
  const Analysis an = Run({}, o);
  CHECK(an.thinning.empty());
}

TEST_CASE("data tables carry the same figures as the analysis") {
  Analyzer analyzer(Options{});
  auto inputs = Trajectory();
  for (size_t i = 0; i < 3; ++i) REQUIRE(analyzer.Add(inputs[i]).ok());
  const Analysis an = analyzer.Finish();
  const std::vector<DataTable> tables = DataTables(an);
  REQUIRE(tables.size() == 5);
  const DataTable& rows = tables[0];
  CHECK(rows.name == "checkpoints");
  REQUIRE(rows.rows.size() == 3);
  auto column = [&](const DataTable& t, const std::string& name) {
    auto it = std::find(t.columns.begin(), t.columns.end(), name);
    REQUIRE(it != t.columns.end());
    return static_cast<size_t>(it - t.columns.begin());
  };
  CHECK(std::get<uint64_t>(rows.rows[2][column(rows, "previous_auto")]) == an.rows[2].vs_previous.automatic);
  CHECK(std::holds_alternative<std::monostate>(rows.rows[0][column(rows, "changed_params")]));
  CHECK(std::get<double>(rows.rows[1][column(rows, "changed_exp")]) ==
        an.rows[1].change.GroupChangedFraction(Slot("exp")));
  CHECK(tables[1].rows.size() == an.tensors.size());
  CHECK(tables[3].rows.size() == an.policies.size());
  // The exact row, then one row per precision: bf16 takes relative 5, 4, 3.
  const DataTable& thinning = tables[4];
  REQUIRE(thinning.rows.size() == 4);
  CHECK(std::get<uint64_t>(thinning.rows[0][column(thinning, "stored_bytes")]) == an.exact_stored);
  CHECK(std::get<std::string>(thinning.rows[1][column(thinning, "precision")]) == "relative 5 mantissa bits");
  CHECK(std::get<uint64_t>(thinning.rows[3][column(thinning, "stored_bytes")]) == an.thinning[2].stored_bytes);
  CHECK(std::get<double>(thinning.rows[2][column(thinning, "max_rel_error")]) == an.thinning[1].max_rel);
  const std::string text = TextReport(an, TextOptions{});
  CHECK(text.find("Policy what-if") != std::string::npos);
  // Under the table, the row that stores least at the policy's restore
  // and clone speed, said as the lines of .zipnn.yaml that choose it.
  const auto now =
      std::find_if(an.policies.begin(), an.policies.end(), [](const PolicyOutcome& p) { return p.current; });
  REQUIRE(now != an.policies.end());
  const PolicyOutcome* best = &*now;
  for (const PolicyOutcome& p : an.policies) {
    if (p.worst_chain <= now->worst_chain && p.latest_bytes <= now->latest_bytes && p.stored_bytes < best->stored_bytes)
      best = &p;
  }
  if (best == &*now) {
    CHECK(text.find("  The policy in use (*) stores least of those whose restores and clones are as fast.\n") !=
          std::string::npos);
  } else {
    CHECK(text.find("  Stores least with restores and clones as fast as now: `newest: " +
                    std::string(NewestName(best->newest)) +
                    "`, `base_interval: " + std::to_string(best->base_interval) + "`") != std::string::npos);
  }
  CHECK(text.find("Tensors of 30 against 20") != std::string::npos);
  CHECK(text.find("Thinning what-if") != std::string::npos);
  CHECK(text.find("relative 3 mantissa bits") != std::string::npos);
}

}  // namespace
}  // namespace zipnn::analyze
