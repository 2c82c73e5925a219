// Tests of parents across series (parents.h): a twin or a fine-tune stored
// as a delta of a version of another series, and where none is taken.
// Real checkpoints from tests/data.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "lib/base/endian.h"
#include "lib/base/thread_pool.h"
#include "lib/formats/checkpoint.h"
#include "lib/formats/file_layout.h"
#include "lib/store/chain.h"
#include "lib/store/checkin.h"
#include "lib/store/parents.h"
#include "lib/store/repack.h"
#include "lib/store/restore.h"
#include "lib/store/series_fixture.h"
#include "lib/store/test_objects.h"

namespace zipnn::store {
namespace {

using testing::Bf16;
using testing::Copy;
using testing::Data;
using testing::IdOf;

// A repository whose versions belong to several series, each checked in
// with the versions of the other series as parent candidates (the
// filter's Recent), or with `named` alone.
struct Repo : testing::Fixture {
  std::map<std::string, std::vector<Version>> series;  // by name
  Fingerprints fingerprints{ParentCachesDir(store)};

  CheckedIn Put(const std::string& file, const std::string& path, const std::string& name,
                const std::string& step = "", std::optional<ParentCandidate> named = std::nullopt) {
    Copy(file, store.work_dir + "/" + path);
    const std::string spool = root + "/spool-" + std::to_string(++spooled_);
    Copy(file, spool);
    NewVersion v{spool, IdOf(spool), path, name, step};
    v.fingerprints = &fingerprints;
    v.parents = [&, name] {
      std::vector<ParentCandidate> candidates;
      if (named) candidates.push_back(*named);
      for (const auto& [other, versions] : series) {
        if (other != name && !versions.empty()) {
          candidates.push_back(ParentCandidate{versions.back().id, versions.back().path, false});
        }
      }
      return candidates;
    };
    auto checked = CheckIn(store, v, [&](bool) -> Result<std::vector<Version>> { return series[name]; });
    REQUIRE_MESSAGE(checked.ok(), checked.status().message());
    series[name].push_back(Version{v.id, step, path});
    CountingSink restored;
    REQUIRE(Restore(store, v.id, restored).ok());
    CHECK(restored.bytes() == checked->pointer.size);
    return *checked;
  }
  double Share(const ContentId& id) {
    const StoredInfo info = Info(id);
    auto link = ReadLink(store, id);
    REQUIRE(link.ok());
    return static_cast<double>(info.object_size) / static_cast<double>(link->raw_size);
  }
  int spooled_ = 0;
};

// `file` saved again under another name, as torch.save does: the zip's
// folder name (of `from`'s length) is in every member's name, nothing
// else differs.
std::string Renamed(const std::string& file, const std::string& from, const std::string& to, const std::string& out) {
  REQUIRE(from.size() == to.size());
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t replaced = 0;
  for (size_t at = bytes.find(from); at != std::string::npos; at = bytes.find(from, at + 1), ++replaced) {
    bytes.replace(at, from.size(), to);
  }
  REQUIRE(replaced > 0);
  std::ofstream(out, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return out;
}

TEST_CASE("a fingerprint names the tensors, not their values, order or container") {
  auto a = formats::Checkpoint::Open(Bf16(40));
  auto b = formats::Checkpoint::Open(Bf16(80));
  auto c = formats::Checkpoint::Open(Data("cnn-fp32/step-000040.safetensors"));
  REQUIRE((a.ok() && b.ok() && c.ok()));
  REQUIRE((a->ReadLayout().ok() && b->ReadLayout().ok() && c->ReadLayout().ok()));
  const auto fa = formats::TensorFingerprint(a->layout());
  REQUIRE(fa.has_value());
  CHECK(fa == formats::TensorFingerprint(b->layout()));
  CHECK(fa != formats::TensorFingerprint(c->layout()));  // fp32, not bf16
  formats::FileLayout reversed = a->layout();
  std::reverse(reversed.tensors.begin(), reversed.tensors.end());
  CHECK(formats::TensorFingerprint(reversed) == fa);
  reversed.tensors[0].name += "x";
  CHECK(formats::TensorFingerprint(reversed) != fa);
  CHECK_FALSE(formats::TensorFingerprint(formats::RawLayout(10, "")).has_value());
}

TEST_CASE("a twin in another series is a delta of it, at under 2% of raw, whether or not its series has versions") {
  Repo r;
  r.Put(Data("pt-gpt/step-000020.pt"), "ckpts/epoch=0-step=20.ckpt", "ckpts/epoch=#-step=#.ckpt", "0.20");
  const std::string twin = Renamed(Data("pt-gpt/step-000020.pt"), "step-000020/", "last-ckpt-0/", r.root + "/twin1");
  const CheckedIn first = r.Put(twin, "ckpts/last.ckpt", "ckpts/last.ckpt");
  REQUIRE(first.parent.has_value());
  CHECK(first.parent->path == "ckpts/epoch=0-step=20.ckpt");
  CHECK(first.parent->why == ParentWhy::kTwin);
  CHECK(r.Info(IdOf(twin)).base == IdOf(Data("pt-gpt/step-000020.pt")));
  CHECK(r.Info(IdOf(twin)).choice == container::BaseChoice::kTwin);
  CHECK(r.Share(IdOf(twin)) < 0.02);

  // The next save: last.ckpt has a version now, and is still a twin.
  r.Put(Data("pt-gpt/step-000040.pt"), "ckpts/epoch=1-step=40.ckpt", "ckpts/epoch=#-step=#.ckpt", "1.40");
  const std::string twin2 = Renamed(Data("pt-gpt/step-000040.pt"), "step-000040/", "last-ckpt-0/", r.root + "/twin2");
  const CheckedIn second = r.Put(twin2, "ckpts/last.ckpt", "ckpts/last.ckpt");
  REQUIRE(second.parent.has_value());
  CHECK(second.parent->why == ParentWhy::kTwin);
  CHECK(r.Share(IdOf(twin2)) < 0.02);
  // The first twin stays as it was: a delta, of its own twin.
  CHECK(r.Info(IdOf(twin)).base == IdOf(Data("pt-gpt/step-000020.pt")));
}

TEST_CASE("the first version of a series is a delta of a close version of another; an unlike one is not taken") {
  Repo r;
  r.Put(Bf16(40), "out/model.safetensors", "out/model.safetensors");
  // Other tensors (fp32, not bf16): no candidate.
  const CheckedIn unlike =
      r.Put(Data("cnn-fp32/step-000040.safetensors"), "other/model.safetensors", "other/model.safetensors");
  CHECK_FALSE(unlike.parent.has_value());
  CHECK(unlike.reason == BaseReason::kFirst);
  // The same tensors, trained on from the first: a delta of it.
  const CheckedIn tuned = r.Put(Bf16(80), "ft/checkpoint-10/model.safetensors", "ft/checkpoint-#/model.safetensors", "10");
  REQUIRE(tuned.parent.has_value());
  CHECK(tuned.parent->path == "out/model.safetensors");
  CHECK(tuned.parent->why == ParentWhy::kSameTensors);
  CHECK(tuned.reason == BaseReason::kNotBase);
  CHECK(r.Info(IdOf(Bf16(80))).depth == 1);
  // The next save of the fine-tune is the newest of a series that has a
  // version: stored whole, as any newest (only a twin displaces that).
  const CheckedIn next =
      r.Put(Bf16(120), "ft/checkpoint-20/model.safetensors", "ft/checkpoint-#/model.safetensors", "20");
  CHECK_FALSE(next.parent.has_value());
  CHECK(next.reason == BaseReason::kNewest);
  // The one before it stays a delta of its parent, and says why.
  CHECK(r.Info(IdOf(Bf16(80))).base == IdOf(Bf16(40)));
  CHECK(r.Info(IdOf(Bf16(80))).choice == container::BaseChoice::kSameTensors);
  CHECK(BaseChoiceText(r.Info(IdOf(Bf16(80))).choice) == "the same tensor names, dtypes and shapes");
  // A repack of its series keeps the parent (the series alone would make
  // it a base), under a policy that rewrites every base too.
  r.store.policy.base_interval = 1;
  std::vector<Version> tuned_series = r.series["ft/checkpoint-#/model.safetensors"];
  REQUIRE(RepackSeries(r.store, tuned_series, [](const RepackedVersion&) {}).ok());
  CHECK(r.Info(IdOf(Bf16(80))).base == IdOf(Bf16(40)));
  CountingSink restored;
  CHECK(Restore(r.store, IdOf(Bf16(80)), restored).ok());
}

// The safetensors `file` with every tensor renamed by `rename`, written to
// `out`: the same bytes under another naming scheme.
std::string RenamedTensors(const std::string& file, const std::function<std::string(const std::string&)>& rename,
                           const std::string& out) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const uint64_t n = LoadLE<uint64_t>(reinterpret_cast<const uint8_t*>(bytes.data()));
  const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n));
  nlohmann::json renamed = nlohmann::json::object();
  for (const auto& [name, entry] : header.items()) renamed[name == "__metadata__" ? name : rename(name)] = entry;
  std::string text = renamed.dump();
  while (text.size() % 8 != 0) text += ' ';
  uint8_t size[8];
  StoreLE<uint64_t>(size, text.size());
  std::ofstream(out, std::ios::binary) << std::string(reinterpret_cast<char*>(size), 8) << text << bytes.substr(8 + n);
  return out;
}

// The keys and sizes of `file`'s tensors, as a listing gives them.
std::vector<KeyedTensor> KeyedTensorsOf(const std::string& file) {
  auto checkpoint = formats::Checkpoint::Open(file);
  REQUIRE(checkpoint.ok());
  REQUIRE(checkpoint->ReadLayout().ok());
  formats::FileLayout layout = checkpoint->layout();
  ThreadPool pool(2);
  REQUIRE(formats::HashTensorContents(checkpoint->file(), layout, pool).ok());
  std::vector<KeyedTensor> tensors;
  for (const formats::Tensor& t : layout.tensors) tensors.push_back(KeyedTensor{*t.content, t.length});
  return tensors;
}

TEST_CASE(
    "the tensor index finds the versions holding tensors of the same bytes, most first, and forgets what gc took") {
  testing::Fixture f;
  const std::string dir = ParentCachesDir(f.store);
  const std::vector<KeyedTensor> step40 = KeyedTensorsOf(Bf16(40)), step200 = KeyedTensorsOf(Bf16(200));
  const ContentId a = IdOf(Bf16(40)), b = IdOf(Bf16(200)), c = IdOf(Bf16(120));
  uint64_t indexed = 0;  // bytes of step 40's tensors the index keeps: the small ones it leaves out
  for (const KeyedTensor& t : step40) indexed += t.bytes >= kIndexedTensorBytes ? t.bytes : 0;
  REQUIRE(indexed > 0);
  {
    TensorIndex index(dir);
    CHECK(index.Find(step40, 1).empty());
    index.Keep(a, std::string(40, 'a'), step40);
    index.Keep(b, std::string(40, 'b'), step200);
    index.Keep(c, std::string(40, 'c'), {});  // a listing of no tensors
    // Half of step 40's tensors and half of step 200's, under any names.
    std::vector<KeyedTensor> mixed;
    for (size_t i = 0; i < step40.size(); ++i) mixed.push_back(i % 2 == 0 ? step40[i] : step200[i]);
    mixed.push_back(step40[14]);  // a tensor twice: held once, counted twice
    const auto found = index.Find(mixed, 1);
    REQUIRE(found.size() == 2);
    uint64_t from_a = step40[14].bytes >= kIndexedTensorBytes ? step40[14].bytes : 0;
    for (size_t i = 0; i < step40.size(); i += 2)
      from_a += step40[i].bytes >= kIndexedTensorBytes ? step40[i].bytes : 0;
    CHECK(std::find(found.begin(), found.end(), std::make_pair(a, from_a)) != found.end());
    CHECK(found.front().second >= found.back().second);
    CHECK(index.Find(step40, indexed + 1).empty());  // none holds more than all of them
  }
  std::ofstream(dir + "/tensors", std::ios::app) << "not a line\n"
                                                 << b.Hex() << " NOTHEX 00:1\n"
                                                 << c.Hex() << " " << std::string(40, 'd') << " zz:12,0123:4\n";
  TensorIndex again(dir);
  CHECK(again.Find(step40, 1) == (std::vector<std::pair<ContentId, uint64_t>>{{a, indexed}}));
  CHECK(again.Knows(std::string(40, 'c')));
  CHECK_FALSE(again.Knows("NOTHEX"));
  // gc: a version gone loses its tensors, and its listing is not read again.
  PruneParentCaches(f.store, [&](const ContentId& id) { return id != a; });
  TensorIndex pruned(dir);
  CHECK(pruned.Find(step40, 1).empty());
  CHECK(pruned.Knows(std::string(40, 'a')));
  // Stored anew: its listing's tensors are taken again.
  pruned.Keep(a, std::string(40, 'a'), step40);
  CHECK(TensorIndex(dir).Find(step40, 1).size() == 1);
}

TEST_CASE("the tensor index covers a file's tensors with the fewest versions, each adding a good part of its own") {
  testing::Fixture f;
  const std::string dir = ParentCachesDir(f.store);
  const std::string fp32_40 = Data("cnn-fp32/step-000040.safetensors"),
                    fp32_200 = Data("cnn-fp32/step-000200.safetensors");
  const std::vector<KeyedTensor> step40 = KeyedTensorsOf(fp32_40), step200 = KeyedTensorsOf(fp32_200);
  const ContentId whole = IdOf(fp32_40), first = IdOf(Bf16(120)), second = IdOf(Bf16(160)), other = IdOf(fp32_200);
  // Step 40's indexed tensors: the smallest apart, the others in two
  // halves, as two shards hold them.
  std::vector<KeyedTensor> indexed, half[2];
  for (const KeyedTensor& t : step40) {
    if (t.bytes >= kIndexedTensorBytes) indexed.push_back(t);
  }
  REQUIRE(indexed.size() >= 4);
  const auto smallest = std::min_element(indexed.begin(), indexed.end(),
                                         [](const KeyedTensor& x, const KeyedTensor& y) { return x.bytes < y.bytes; });
  const KeyedTensor small = *smallest;
  indexed.erase(smallest);
  for (size_t i = 0; i < indexed.size(); ++i) half[i < indexed.size() / 2 ? 0 : 1].push_back(indexed[i]);
  uint64_t bytes[2] = {0, 0};
  for (int h = 0; h < 2; ++h) {
    for (const KeyedTensor& t : half[h]) bytes[h] += t.bytes;
  }
  TensorIndex index(dir);
  index.Keep(first, std::string(40, 'a'), half[0]);
  index.Keep(second, std::string(40, 'b'), half[1]);
  // A version that holds the smallest among its own tensors of other
  // bytes: far less than a quarter of it, not worth reading whole.
  std::vector<KeyedTensor> mostly_other = step200;
  mostly_other.push_back(small);
  index.Keep(other, std::string(40, 'c'), mostly_other);
  const auto covered = index.Cover(step40, 8);
  REQUIRE(covered.size() == 2);
  const int larger = bytes[1] > bytes[0] ? 1 : 0;
  CHECK(covered[0].id == (larger == 0 ? first : second));
  CHECK(covered[0].adds == bytes[larger]);
  CHECK(covered[1].adds == bytes[1 - larger]);
  CHECK(covered[1].held == bytes[1 - larger]);
  CHECK(index.Cover(step40, 1).size() == 1);
  // A version that holds them all leaves the halves nothing to add; one
  // skipped (the new version's own series) is not taken.
  index.Keep(whole, std::string(40, 'd'), step40);
  const auto all = index.Cover(step40, 8);
  REQUIRE(all.size() == 1);
  CHECK(all[0].id == whole);
  CHECK(index.Cover(step40, 8, {whole}).size() == 2);
  // A training state holding a half beside far more of its own (an
  // optimizer's moments) adds as much as that half's shard, and is not
  // worth reading whole: it is passed over for the shard, whichever
  // comes first in id order.
  for (const char* hex : {"00000000000000000000000000000001", "fffffffffffffffffffffffffffffffe"}) {
    const ContentId state = *ContentId::FromHex(hex);
    TensorIndex with_state(testing::TempDir());
    with_state.Keep(first, std::string(40, 'a'), half[0]);
    with_state.Keep(second, std::string(40, 'b'), half[1]);
    std::vector<KeyedTensor> moments = half[larger];
    for (const KeyedTensor& t : step200) moments.push_back(KeyedTensor{t.key, t.bytes * 8});
    with_state.Keep(state, std::string(40, 'e'), moments);
    const auto picked = with_state.Cover(step40, 8);
    REQUIRE(picked.size() == 2);
    CHECK(picked[0].id == (larger == 0 ? first : second));
    CHECK(picked[1].id == (larger == 0 ? second : first));
  }
}

TEST_CASE("a first version holding another series' tensors under other names is a delta of it, at next to nothing") {
  Repo r;
  r.Put(Bf16(200), "base/model.safetensors", "base/model.safetensors");
  r.Put(Bf16(40), "old/model.safetensors", "old/model.safetensors");
  const std::string renamed = RenamedTensors(
      Bf16(200), [](const std::string& name) { return "base_model.model." + name; }, r.root + "/renamed");
  auto shared = [&](const std::string& path, const ContentId& id) {
    ParentCandidate c{id, path, false};
    c.shared_bytes = 1;
    return c;
  };
  // Found by its tensors (the filter's TensorIndex): a delta of the version
  // that holds them, whatever the names, and none of one that does not.
  const CheckedIn put = r.Put(renamed, "ft/adapter.safetensors", "ft/adapter.safetensors", "",
                              shared("base/model.safetensors", IdOf(Bf16(200))));
  REQUIRE(put.parent.has_value());
  CHECK(put.parent->why == ParentWhy::kShared);
  CHECK(put.parent->path == "base/model.safetensors");
  CHECK(r.Share(IdOf(renamed)) < 0.02);
  CHECK(r.Info(IdOf(renamed)).choice == container::BaseChoice::kShared);
  CHECK(r.Info(IdOf(renamed)).format == 7);
  CHECK(BaseChoiceText(r.Info(IdOf(renamed)).choice) == "tensors of the same bytes");
  // By names alone the same file finds nothing: every name differs.
  Repo by_name;
  by_name.Put(Bf16(200), "base/model.safetensors", "base/model.safetensors");
  const CheckedIn alone = by_name.Put(renamed, "ft/adapter.safetensors", "ft/adapter.safetensors");
  CHECK_FALSE(alone.parent.has_value());
  CHECK(by_name.Share(IdOf(renamed)) > 0.5);
}

// `rest` (a save of the model `frozen` is a save of) with its first
// tensors, about `share` of the tensor bytes in file order, `frozen`'s:
// a fine-tune whose lower layers are frozen.
std::string FrozenPart(const std::string& frozen, const std::string& rest, double share, const std::string& out) {
  auto checkpoint = formats::Checkpoint::Open(rest);
  REQUIRE(checkpoint.ok());
  REQUIRE(checkpoint->ReadLayout().ok());
  const formats::FileLayout layout = checkpoint->layout();
  std::ifstream a(frozen, std::ios::binary), b(rest, std::ios::binary);
  const std::string from((std::istreambuf_iterator<char>(a)), std::istreambuf_iterator<char>());
  std::string bytes((std::istreambuf_iterator<char>(b)), std::istreambuf_iterator<char>());
  REQUIRE(from.size() == bytes.size());
  uint64_t total = 0, taken = 0;
  for (const formats::Tensor& t : layout.tensors) total += t.length;
  for (const formats::Tensor& t : layout.tensors) {
    if (static_cast<double>(taken) >= share * static_cast<double>(total)) break;
    bytes.replace(t.offset, t.length, from, t.offset, t.length);
    taken += t.length;
  }
  std::ofstream(out, std::ios::binary) << bytes;
  return out;
}

TEST_CASE("the newest that shares part of its tensors takes those of the same bytes from versions stored whole") {
  Repo r;
  const std::string model = Data("cnn-fp32/step-000200.safetensors");
  r.Put(model, "base/model.safetensors", "base/model.safetensors");
  // Its convolutions frozen (40% of its bytes), its classifier trained on.
  const std::string first = FrozenPart(model, Data("cnn-fp32/step-000040.safetensors"), 0.3, r.root + "/ft1");
  const std::string second = FrozenPart(model, Data("cnn-fp32/step-000080.safetensors"), 0.3, r.root + "/ft2");
  r.Put(first, "ft/model.safetensors", "ft/model.safetensors");
  // The tensor index's word: `holder` holds the bytes of `file`'s tensors
  // that `model` holds.
  uint64_t total = 0, frozen = 0;
  {
    auto mine = formats::Checkpoint::Open(second);
    REQUIRE(mine.ok());
    REQUIRE(mine->ReadLayout().ok());
    std::ifstream a(model, std::ios::binary), b(second, std::ios::binary);
    const std::string x((std::istreambuf_iterator<char>(a)), std::istreambuf_iterator<char>());
    const std::string y((std::istreambuf_iterator<char>(b)), std::istreambuf_iterator<char>());
    for (const formats::Tensor& t : mine->layout().tensors) {
      total += t.length;
      if (x.compare(t.offset, t.length, y, t.offset, t.length) == 0) frozen += t.length;
    }
  }
  REQUIRE(frozen > total / 3);
  REQUIRE(frozen < total / 2);
  const auto found = [&](const std::string& path, const ContentId& id) {
    ParentCandidate c{id, path, false};
    c.shared_bytes = c.adds_bytes = frozen;
    return c;
  };
  // Alone in its series' place the newest would be whole; with the base
  // stored whole holding part of it, it takes those tensors, and only
  // those: its other tensors, the base's under the same names, are coded
  // alone, so it decodes without a chain of deltas below them.
  const CheckedIn put =
      r.Put(second, "ft/model.safetensors", "ft/model.safetensors", "", found("base/model.safetensors", IdOf(model)));
  REQUIRE(put.parent.has_value());
  CHECK(put.parent->why == ParentWhy::kShared);
  CHECK(put.parent->path == "base/model.safetensors");
  const StoredInfo taken = r.Info(IdOf(second));
  CHECK(taken.delta);
  CHECK(taken.depth == 1);
  CHECK(r.Share(IdOf(second)) < 0.7 * r.Share(IdOf(model)));
  auto object = ReadFile::Open(r.store.objects.PathOf(IdOf(second)));
  REQUIRE(object.ok());
  auto info = container::ReadObjectInfo(*object);
  REQUIRE(info.ok());
  uint64_t against_base = 0, alone = 0;
  for (const container::Region& region : info->header.layout.regions) {
    if (region.dtype == codec::DType::kBytes) continue;
    (region.delta ? against_base : alone) += region.length;
  }
  CHECK(against_base == frozen);
  CHECK(alone == total - frozen);
  // When the next save comes, the one before is re-stored in its series as
  // a whole newest is, when a delta of the version before it pays.
  const double was = r.Share(IdOf(second));
  const std::string third = FrozenPart(model, Data("cnn-fp32/step-000120.safetensors"), 0.3, r.root + "/ft3");
  const CheckedIn next =
      r.Put(third, "ft/model.safetensors", "ft/model.safetensors", "", found("base/model.safetensors", IdOf(model)));
  REQUIRE(next.parent.has_value());
  REQUIRE(next.demoted.has_value());
  CHECK(next.demoted->id == IdOf(second));
  CHECK(r.Info(IdOf(second)).choice == container::BaseChoice::kSeries);
  CHECK(r.Share(IdOf(second)) < (1 - r.store.policy.min_gain) * was);
  CountingSink restored;
  REQUIRE(Restore(r.store, IdOf(second), restored).ok());  // checked against its id
  // A version that is itself a delta gives nothing to the newest: a copy
  // of the base under other names (a delta of it) is passed over.
  Repo deep;
  deep.Put(model, "base/model.safetensors", "base/model.safetensors");
  const std::string renamed = RenamedTensors(
      model, [](const std::string& name) { return "model." + name; }, deep.root + "/renamed");
  ParentCandidate base{IdOf(model), "base/model.safetensors", false};
  base.shared_bytes = base.adds_bytes = 1;
  deep.Put(renamed, "copy/model.safetensors", "copy/model.safetensors", "", base);
  REQUIRE(deep.Info(IdOf(renamed)).delta);
  deep.Put(first, "ft/model.safetensors", "ft/model.safetensors");
  deep.series.erase("base/model.safetensors");
  const CheckedIn whole = deep.Put(second, "ft/model.safetensors", "ft/model.safetensors", "",
                                   found("copy/model.safetensors", IdOf(renamed)));
  CHECK_FALSE(whole.parent.has_value());
  CHECK_FALSE(deep.Info(IdOf(second)).delta);
}

TEST_CASE("a named parent is taken when its delta pays; a parent at max_chain is passed over") {
  Repo r;
  r.store.policy.max_chain = 1;
  r.Put(Bf16(40), "a/model.safetensors", "a/model.safetensors");
  const CheckedIn named = r.Put(Bf16(80), "b/model.safetensors", "b/model.safetensors", "",
                                ParentCandidate{IdOf(Bf16(40)), "a/model.safetensors", true});
  REQUIRE(named.parent.has_value());
  CHECK(named.parent->why == ParentWhy::kRule);
  // b's version is at depth 1, max_chain: nothing may be a delta of it.
  r.series.erase("a/model.safetensors");
  const CheckedIn passed = r.Put(Bf16(120), "c/model.safetensors", "c/model.safetensors");
  CHECK_FALSE(passed.parent.has_value());
  CHECK(passed.reason == BaseReason::kFirst);
}

TEST_CASE("a named parent whose delta does not pay gives way to one found by its tensors, with a word why") {
  Repo r;
  r.Put(Bf16(40), "a/model.safetensors", "a/model.safetensors");
  r.Put(Data("cnn-fp32/step-000040.safetensors"), "x/model.safetensors", "x/model.safetensors");
  const CheckedIn tuned = r.Put(Bf16(80), "b/model.safetensors", "b/model.safetensors", "",
                                ParentCandidate{IdOf(Data("cnn-fp32/step-000040.safetensors")), "x/model.safetensors",
                                                true});
  REQUIRE(tuned.parent.has_value());
  CHECK(tuned.parent->path == "a/model.safetensors");
  CHECK(tuned.parent->why == ParentWhy::kSameTensors);
  CHECK(tuned.named_parent_unused ==
        "x/model.safetensors (a delta of it saves less than min_gain against this checkpoint alone)");
}

TEST_CASE("a version with a child in another series counts it when it is re-stored") {
  Repo r;
  // last.ckpt twice (an older save, then this one), then its twin under
  // the epoch's name: a delta of it.
  r.Put(Data("pt-gpt/step-000040.pt"), "ckpts/last.ckpt", "ckpts/last.ckpt");
  const std::string last = Renamed(Data("pt-gpt/step-000020.pt"), "step-000020/", "last-ckpt-0/", r.root + "/last0");
  r.Put(last, "ckpts/last.ckpt", "ckpts/last.ckpt");
  const CheckedIn twin = r.Put(Data("pt-gpt/step-000020.pt"), "ckpts/epoch=0.ckpt", "ckpts/epoch=#.ckpt", "0");
  REQUIRE(twin.parent.has_value());
  CHECK(HangingElsewhere(r.store, IdOf(last)) == 1);
  CHECK(HangingElsewhere(r.store, IdOf(Data("pt-gpt/step-000020.pt"))) == 0);
  // When a newer last.ckpt comes, a re-store of this one as a delta of
  // the older one would put its twin at depth 2: with max_chain 1 it
  // stays whole; without the twin it would be re-stored.
  r.store.policy.max_chain = 1;
  REQUIRE_FALSE(r.Info(IdOf(Data("pt-gpt/step-000040.pt"))).delta);
  const std::vector<Version>& lasts = r.series["ckpts/last.ckpt"];
  REQUIRE(lasts.size() == 2);
  const ContentId newer = IdOf(Bf16(40));  // stands for the next save
  const auto kept = PlaceDemoted(r.store, SeriesAt(lasts, 1), newer, true, nullptr, HangingElsewhere(r.store, IdOf(last)));
  REQUIRE(kept.has_value());
  CHECK_FALSE(kept->base.has_value());
  CHECK(kept->reason == BaseReason::kChain);
  const auto free = PlaceDemoted(r.store, SeriesAt(lasts, 1), newer, true, nullptr, 0);
  REQUIRE(free.has_value());
  CHECK(free->base == IdOf(Data("pt-gpt/step-000040.pt")));
  // A lost cache forgets the child: nothing breaks, the count is 0.
  std::remove((ParentCachesDir(r.store) + "/children").c_str());
  CHECK(HangingElsewhere(r.store, IdOf(last)) == 0);
  // As in a clone that did not store the twin: the next last.ckpt finds it
  // among the recent versions of other series before its own series'
  // newest is re-stored, and it counts again.
  r.store.policy.max_chain = 10;
  r.Put(Data("pt-cnn/step-000040.pt"), "ckpts/last.ckpt", "ckpts/last.ckpt");
  CHECK(HangingElsewhere(r.store, IdOf(last)) >= 1);
  std::ifstream children(ParentCachesDir(r.store) + "/children");
  int lines = 0;
  for (std::string line; std::getline(children, line);) ++lines;
  CHECK(lines == 1);  // noted once
}

TEST_CASE("under newest: delta, a version its series stores whole takes the tensors other series hold") {
  Repo r;
  r.store.policy.newest = config::Newest::kDelta;
  r.store.policy.base_interval = 1;  // every version a base of its series
  r.store.policy.max_chain = 3;
  // Beside each model, its weights under other names (a training state).
  const auto state_of = [&](const std::string& model, const std::string& out) {
    return RenamedTensors(
        model, [](const std::string& name) { return "model." + name; }, out);
  };
  const auto held_by = [](const std::string& model) {
    ParentCandidate c{IdOf(model), "out/model.safetensors", false};
    c.shared_bytes = c.adds_bytes = 1 << 20;
    return c;
  };
  const std::string a1 = Data("cnn-fp32/step-000080.safetensors"), a2 = Data("cnn-fp32/step-000120.safetensors");
  const std::string s1 = state_of(a1, r.root + "/s1"), s2 = state_of(a2, r.root + "/s2");
  r.Put(a1, "out/model.safetensors", "out/model.safetensors");
  REQUIRE(r.Put(s1, "out/state.safetensors", "out/state.safetensors", "", held_by(a1)).parent.has_value());
  r.Put(a2, "out/model.safetensors", "out/model.safetensors");
  // Its series makes it a base (due every version): it is a delta of the
  // model it holds instead, at next to nothing.
  const CheckedIn second = r.Put(s2, "out/state.safetensors", "out/state.safetensors", "", held_by(a2));
  REQUIRE(second.parent.has_value());
  CHECK(second.parent->id == IdOf(a2));
  CHECK(second.reason == BaseReason::kNotBase);
  CHECK(r.Share(IdOf(s2)) < 0.05);
}

TEST_CASE("a repack leaves whole a version whose child in another series would pass max_chain") {
  Repo r;
  r.store.policy.max_chain = 1;
  const std::string a0 = Data("cnn-fp32/step-000040.safetensors"), a1 = Data("cnn-fp32/step-000080.safetensors"),
                    a2 = Data("cnn-fp32/step-000120.safetensors");
  r.Put(a0, "out/model.safetensors", "out/model.safetensors");
  r.Put(a1, "out/model.safetensors", "out/model.safetensors");
  // The same weights under other names, beside it: a delta of it.
  const std::string state = RenamedTensors(
      a1, [](const std::string& name) { return "model." + name; }, r.root + "/state");
  ParentCandidate holder{IdOf(a1), "out/model.safetensors", false};
  holder.shared_bytes = holder.adds_bytes = 1;
  REQUIRE(r.Put(state, "out/state.safetensors", "out/state.safetensors", "", holder).parent.has_value());
  CHECK(r.Info(IdOf(state)).depth == 1);
  r.Put(a2, "out/model.safetensors", "out/model.safetensors");
  REQUIRE_FALSE(r.Info(IdOf(a1)).delta);  // its child would be at depth 2
  // Nor does a repack of its series make it a delta.
  REQUIRE(RepackSeries(r.store, r.series["out/model.safetensors"], [](const RepackedVersion&) {}).ok());
  CHECK_FALSE(r.Info(IdOf(a1)).delta);
  CHECK(r.Info(IdOf(state)).depth == 1);
}

TEST_CASE("a child another clone noted counts on its parent while its object is not here to say otherwise") {
  Repo r;
  r.Put(Bf16(40), "out/model.safetensors", "out/model.safetensors");
  const ContentId parent = IdOf(Bf16(40));
  const ContentId absent = HashBytes("a child stored elsewhere", 24), above = HashBytes("its own child", 13);
  CHECK(HangingElsewhere(r.store, parent) == 0);
  NoteChildren(r.store, {{parent, absent}, {absent, above}, {parent, absent}});
  CHECK(NotedChildren(r.store) == (std::vector<std::pair<ContentId, ContentId>>{{parent, absent}, {absent, above}}));
  // Neither object is here: each is taken to rest on the one below.
  CHECK(HangingElsewhere(r.store, parent) == 2);
  // A child that is here and whole no longer rests on it.
  r.Put(Data("cnn-fp32/step-000040.safetensors"), "other/model.safetensors", "other/model.safetensors");
  const ContentId whole = IdOf(Data("cnn-fp32/step-000040.safetensors"));
  REQUIRE_FALSE(r.Info(whole).delta);
  NoteChildren(r.store, {{IdOf(Bf16(120)), whole}});
  CHECK(HangingElsewhere(r.store, IdOf(Bf16(120))) == 0);
}

TEST_CASE("the fingerprint cache keeps what it is given, and passes over damaged lines") {
  const std::string dir = testing::TempDir();
  const ContentId a = IdOf(Bf16(40)), b = IdOf(Bf16(80));
  {
    Fingerprints f(dir);
    CHECK_FALSE(f.Find(a).has_value());
    f.Keep(a, b);
  }
  std::ofstream(dir + "/fingerprints", std::ios::app) << "not a line\n" << b.Hex() << " zz\n";
  Fingerprints again(dir);
  CHECK(again.Find(a) == b);
  CHECK_FALSE(again.Find(b).has_value());
  // gc keeps the lines of the versions still needed, in both caches.
  testing::Fixture f;
  Fingerprints kept(ParentCachesDir(f.store));
  kept.Keep(a, b);
  kept.Keep(b, a);
  NoteChild(f.store, a, b);
  PruneParentCaches(f.store, [&](const ContentId& id) { return id == a; });
  Fingerprints pruned(ParentCachesDir(f.store));
  CHECK(pruned.Find(a) == b);
  CHECK_FALSE(pruned.Find(b).has_value());
  std::ifstream children(ParentCachesDir(f.store) + "/children");
  std::string line;
  CHECK_FALSE(std::getline(children, line));  // a's child b is gone
}

TEST_CASE("the twin index finds versions by key, knows the listings it read, and forgets what gc took") {
  const std::string dir = testing::TempDir();
  const ContentId key = IdOf(Bf16(40)), other = IdOf(Bf16(80));
  const ContentId a = IdOf(Bf16(120)), b = IdOf(Bf16(160)), c = IdOf(Bf16(200));
  const std::string blob_a(40, 'a'), blob_b(40, 'b'), blob_c(40, 'c');
  {
    TwinIndex index(dir);
    CHECK(index.Find(key).empty());
    CHECK_FALSE(index.Knows(blob_a));
    index.Keep(key, a, blob_a);
    index.Keep(other, b, blob_b);
    index.Keep(std::nullopt, c, blob_c);  // a listing of no tensors
    index.Keep(other, c, blob_a);         // a source read once only
    CHECK(index.Find(key) == std::vector<ContentId>{a});
  }
  std::ofstream(dir + "/twins", std::ios::app) << "not a line\n" << key.Hex() << " " << b.Hex() << " NOTHEX\n"
                                                << key.Hex() << " " << b.Hex() << "\n";
  TwinIndex again(dir);
  CHECK(again.Find(key) == std::vector<ContentId>{a});
  CHECK(again.Find(other) == std::vector<ContentId>{b});
  CHECK(again.Knows(blob_a));
  CHECK(again.Knows(blob_c));
  CHECK_FALSE(again.Knows("NOTHEX"));
  // gc: a version gone loses its key, and its listing is not read again.
  testing::Fixture f;
  {
    TwinIndex kept(ParentCachesDir(f.store));
    kept.Keep(key, a, blob_a);
    kept.Keep(key, b, blob_b);
  }
  PruneParentCaches(f.store, [&](const ContentId& id) { return id == a; });
  TwinIndex pruned(ParentCachesDir(f.store));
  CHECK(pruned.Find(key) == std::vector<ContentId>{a});
  CHECK(pruned.Knows(blob_b));
  // b stored anew: its listing's key is taken again, and kept.
  pruned.Keep(key, b, blob_b);
  CHECK(pruned.Find(key) == (std::vector<ContentId>{a, b}));
  CHECK(TwinIndex(ParentCachesDir(f.store)).Find(key) == (std::vector<ContentId>{a, b}));
}

TEST_CASE("a cache that is no regular file, or grew past any cache's size, is dropped, never read") {
  for (const std::string kind : {"device", "fifo", "huge"}) {
    CAPTURE(kind);
    const std::string dir = testing::TempDir();
    const std::string file = dir + "/twins";
    if (kind == "device") REQUIRE(::symlink("/dev/zero", file.c_str()) == 0);
    if (kind == "fifo") REQUIRE(::mkfifo(file.c_str(), 0644) == 0);
    if (kind == "huge") {
      std::ofstream{file} << "x";
      REQUIRE(::truncate(file.c_str(), off_t{65} << 20) == 0);  // sparse: takes no disk
    }
    TwinIndex index(dir);
    CHECK(index.Find(HashBytes("k", 1)).empty());  // returns: no hang, no memory filled
    struct stat st;
    CHECK(::lstat(file.c_str(), &st) != 0);  // removed
    index.Keep(HashBytes("k", 1), HashBytes("v", 1), std::string(40, 'a'));
    CHECK(TwinIndex(dir).Find(HashBytes("k", 1)) == std::vector<ContentId>{HashBytes("v", 1)});
  }
}

}  // namespace
}  // namespace zipnn::store
