// Tests of the torch.save (zip) reader on real checkpoints: storages named
// and typed through the pickle, deltas matched by tensor name, and broken
// archives stored raw with a warning.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "lib/formats/formats_test_util.h"
#include "lib/formats/pytorch.h"

namespace zipnn::formats {
namespace {

using codec::DType;

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
    // A storage that is one whole tensor takes the shape the pickle gives.
    CHECK(w->shape == std::vector<uint64_t>{8, 1, 3, 3});
    // Each tensor is also a view, in the order the pickle builds them:
    // the model's first, then the optimizer's.
    REQUIRE(l.views.size() == l.tensors.size());
    CHECK(l.views.front().name == "model/c1.weight");
    CHECK(l.views.front().offset == w->offset);
    CHECK(l.views.back().name.rfind("optimizer/", 0) == 0);
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
    // Read in the pickle's order: every model tensor, then the optimizer's
    // (the zip holds storages by key, "0", "1", "10", ...).
    const std::vector<size_t> order = ReadingOrder(l);
    REQUIRE(order.size() == l.tensors.size());
    CHECK(l.tensors[order.front()].name == "model/tok.weight");
    size_t first_optimizer = order.size();
    for (size_t i = 0; i < order.size(); ++i) {
      if (l.tensors[order[i]].name.rfind("optimizer/", 0) == 0 && first_optimizer == order.size()) first_optimizer = i;
    }
    for (size_t i = first_optimizer; i < order.size(); ++i) CHECK(l.tensors[order[i]].name.rfind("optimizer/", 0) == 0);
    CHECK(l.tensors[order[first_optimizer - 1]].name.rfind("model/", 0) == 0);
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

}  // namespace
}  // namespace zipnn::formats
