// Tests of retention: records (retention.h), thinning a real checkpoint
// within its stated bound, and applying rules to a store (retain.h):
// kept versions restore exactly, thinned ones as their approximate
// version, and nothing a kept version needs goes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/formats/checkpoint.h"
#include "lib/store/chain.h"
#include "lib/store/gc.h"
#include "lib/store/restore.h"
#include "lib/store/retain.h"
#include "lib/store/retention.h"
#include "lib/store/series_fixture.h"
#include "lib/store/test_objects.h"

namespace zipnn::store {
namespace {

using testing::Data;
using testing::Fixture;

std::string Step12(int step) {
  char name[64];
  std::snprintf(name, sizeof name, "cnn12-bf16/step-%06d.safetensors", step);
  return Data(name);
}

std::vector<uint8_t> Bytes(const std::string& path) {
  auto read = ReadWholeFile(path);
  REQUIRE(read.ok());
  return *read;
}

float Bf16Value(const uint8_t* p) {
  uint32_t bits = (static_cast<uint32_t>(p[1]) << 24) | (static_cast<uint32_t>(p[0]) << 16);
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

Retained SampleRecord() {
  Retained r;
  r.id = testing::IdOf(Step12(10));
  r.size = 1234;
  r.date = 1795000000;
  r.approximate = testing::IdOf(Step12(20));
  r.precision = codec::Precision{codec::Precision::Kind::kRelative, 5};
  r.tensors = {TensorError{"conv.weight", 0.00125, 0.015625, 10, 20},
               TensorError{" odd name %\nwith a newline ", 3e-9, 1, 1, 2}};
  return r;
}

TEST_CASE("a retention record reads back as written, names and all") {
  const Retained r = SampleRecord();
  auto back = ParseRecord(RecordText(r), r.id);
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  CHECK(back->id == r.id);
  CHECK(back->size == 1234);
  CHECK_FALSE(back->dropped);
  CHECK(back->date == r.date);
  CHECK(back->approximate == r.approximate);
  CHECK(back->precision.kind == codec::Precision::Kind::kRelative);
  CHECK(back->precision.bits == 5);
  REQUIRE(back->tensors.size() == 2);
  CHECK(back->tensors[1].name == " odd name %\nwith a newline ");
  CHECK(back->tensors[0].max_abs == 0.00125);
  CHECK(back->MaxRel() == 1);
  CHECK(back->Describe() ==
        "thinned by retention on 2026-11-18 (relative 5 mantissa bits; max error 0.00125 absolute, 1 relative)");

  Retained dropped;
  dropped.id = r.id;
  dropped.dropped = true;
  dropped.date = r.date;
  auto d = ParseRecord(RecordText(dropped), r.id);
  REQUIRE(d.ok());
  CHECK(d->dropped);
  CHECK(d->Describe() == "dropped by retention on 2026-11-18");
}

TEST_CASE("a damaged retention record, or another version's, is refused") {
  const Retained r = SampleRecord();
  std::string text = RecordText(r);
  CHECK(ParseRecord(text, r.approximate).status().message().find("it is the record of") != std::string::npos);
  std::string flipped = text;
  flipped[text.find("size 1234") + 5] = '9';
  CHECK(ParseRecord(flipped, r.id).status().message().find("checksum does not match") != std::string::npos);
  CHECK(ParseRecord(text.substr(0, text.size() / 2), r.id).status().code() == StatusCode::kCorruption);
  CHECK(ParseRecord("", r.id).status().code() == StatusCode::kCorruption);
}

TEST_CASE("thinning a real bf16 checkpoint keeps every value within its bound and every other byte") {
  Fixture f;
  auto exact = formats::Checkpoint::Open(Step12(60));
  REQUIRE(exact.ok());
  REQUIRE(exact->ReadLayout().ok());
  const codec::Precision precision{codec::Precision::Kind::kRelative, 5};
  std::vector<TensorError> errors;
  auto approx = formats::Checkpoint::Spool(f.root, [&](ByteSink& out) -> Status {
    ZIPNN_ASSIGN_OR_RETURN(errors, Thin(exact->View(), precision, out));
    return OkStatus();
  });
  REQUIRE(approx.ok());
  const std::vector<uint8_t> a = Bytes(Step12(60));
  std::vector<uint8_t> b(approx->file().size());
  REQUIRE(approx->file().ReadAt(0, b.data(), b.size()).ok());
  REQUIRE(a.size() == b.size());
  std::vector<bool> in_tensor(a.size(), false);
  size_t index = 0;
  uint64_t changed = 0;
  for (const formats::Tensor& t : exact->layout().tensors) {
    if (t.dtype != codec::DType::kBF16) continue;  // counters (int64) stay exact, below
    REQUIRE(index < errors.size());
    double max_rel = 0;
    for (uint64_t i = t.offset; i + 1 < t.offset + t.length; i += 2) {
      in_tensor[i] = in_tensor[i + 1] = true;
      const double x = Bf16Value(&a[i]), y = Bf16Value(&b[i]);
      if (x == 0) {
        CHECK(y == 0);
        continue;
      }
      const double rel = std::fabs(y - x) / std::fabs(x);
      REQUIRE(rel <= std::ldexp(1.0, -6));  // 2^-(5+1)
      max_rel = std::max(max_rel, rel);
      changed += a[i] != b[i] || a[i + 1] != b[i + 1];
    }
    CHECK(errors[index].name == t.name);
    CHECK(errors[index].max_rel == max_rel);  // the record holds what was measured
    ++index;
  }
  CHECK(index == errors.size());
  CHECK(changed > 0);
  for (size_t i = 0; i < a.size(); ++i) {
    if (!in_tensor[i]) REQUIRE(a[i] == b[i]);
  }
}

// A store with the 12 saves of tests/data/cnn12-bf16 as one series.
struct Saved : Fixture {
  Saved() {
    for (int s = 10; s <= 120; s += 10) {
      Add(Step12(s), "run/step-" + std::to_string(s) + ".safetensors", "run/step-#.safetensors", std::to_string(s));
    }
  }
  std::vector<ContentId> Ids() const {
    std::vector<ContentId> ids;
    for (const Version& v : held) ids.push_back(v.id);
    return ids;
  }
  Result<RetainTotals> Apply(const config::Policy::RetentionRule& rule) {
    auto plan = PlanSeries(store, held, rule, [](const ContentId&) { return VersionFacts{1, {}, false}; }, 2000000000);
    RetainOptions options;
    options.now = 2000000000;
    options.every_version = Ids();
    ZIPNN_ASSIGN_OR_RETURN(Removing removing, testing::Removal(store));
    return ApplyRetention(store, removing, {{"run/step-#.safetensors", plan}}, options);
  }
};

config::Policy::RetentionRule KeepNewest(uint32_t n, bool drop) {
  config::Policy::RetentionRule rule;
  rule.checkpoints = "run/**";
  rule.keep_newest = n;
  rule.drop = drop;
  rule.precision = codec::Precision{codec::Precision::Kind::kRelative, 4};
  return rule;
}

TEST_CASE("a plan keeps the newest, the named, the tagged, every Mth and the recent, and thins the rest") {
  Saved f;
  config::Policy::RetentionRule rule = KeepNewest(2, false);
  rule.keep_every = 5;
  rule.keep_since_date = 1000;
  const std::vector<ContentId> ids = f.Ids();
  auto facts = [&](const ContentId& id) {
    VersionFacts v{500, {}, false};
    if (id == ids[3]) v.named = true;
    if (id == ids[6]) v.tags = {"v1"};
    if (id == ids[8]) v.committed = 1500;
    if (id == ids[2]) v.committed = 0;  // staged, not committed
    return v;
  };
  auto plan = PlanSeries(f.store, f.held, rule, facts, 2000);
  REQUIRE(plan.size() == 12);
  std::vector<std::string> why;
  for (const auto& p : plan) why.push_back(p.fate == Fate::kKeep ? p.why : FateName(p.fate));
  CHECK(why == std::vector<std::string>{"every 5th", "thin", "not committed", "named", "thin", "every 5th",
                                        "tagged v1", "thin", "committed since 1970-01-01", "thin", "newest 2",
                                        "newest 2"});
}

TEST_CASE("retention keeps the newest exactly, thins the rest into a smaller store, and gc keeps what it left") {
  Saved f;
  const std::vector<ContentId> ids = f.Ids();
  auto totals = f.Apply(KeepNewest(3, false));
  REQUIRE_MESSAGE(totals.ok(), totals.status().message());
  CHECK(totals->removed == 9);
  CHECK(totals->store_after < totals->store_before);
  for (size_t i = 0; i < ids.size(); ++i) {
    CountingSink out;
    if (i >= 9) {
      CHECK(Restore(f.store, ids[i], out).ok());  // exact, checked against its id
      continue;
    }
    CHECK_FALSE(f.store.objects.Has(ids[i]));
    auto record = ReadRecord(f.store.objects, ids[i]);
    REQUIRE(record.ok());
    REQUIRE(record->has_value());
    CHECK((*record)->MaxRel() <= std::ldexp(1.0, -5));
    CHECK(Restore(f.store, (*record)->approximate, out).ok());  // the approximate bytes, checked against theirs
  }
  // Run again: nothing left to do.
  auto again = f.Apply(KeepNewest(3, false));
  REQUIRE(again.ok());
  CHECK(again->removed == 0);
  CHECK(again->store_after == again->store_before);
  // gc keeps the approximate versions the records name.
  Needed needed;
  for (const ContentId& id : ids) NeedChain(f.store, id, needed);
  SweepOptions sweep;
  sweep.started = 2000000000;
  sweep.keep_since = 2000000000;
  auto swept = Sweep(f.store, *testing::Removal(f.store), needed, sweep);
  REQUIRE(swept.ok());
  CHECK(swept->objects.empty());
  // Then dropping what was thinned removes the approximate versions too.
  auto dropped = f.Apply(KeepNewest(3, true));
  REQUIRE(dropped.ok());
  CHECK(dropped->store_after < dropped->store_before);
  for (size_t i = 0; i < 9; ++i) {
    auto record = ReadRecord(f.store.objects, ids[i]);
    REQUIRE(record.ok());
    REQUIRE(record->has_value());
    CHECK((*record)->dropped);
  }
  for (size_t i = 9; i < ids.size(); ++i) {
    CountingSink out;
    CHECK(Restore(f.store, ids[i], out).ok());
  }
}

TEST_CASE("a kept version stored as a delta of one that is dropped is re-stored first, and restores exactly") {
  Saved f;
  const std::vector<ContentId> ids = f.Ids();
  // Keep every 4th: with the newest whole and a base every 7, most kept
  // versions are deltas of versions that go.
  config::Policy::RetentionRule rule = KeepNewest(1, true);
  rule.keep_every = 4;
  size_t leaning = 0;
  for (size_t i = 0; i < ids.size(); i += 4) leaning += f.Info(ids[i]).delta;
  REQUIRE(leaning > 0);
  auto totals = f.Apply(rule);
  REQUIRE_MESSAGE(totals.ok(), totals.status().message());
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool kept = i % 4 == 0 || i == ids.size() - 1;
    CHECK(f.store.objects.Has(ids[i]) == kept);
    if (!kept) continue;
    CountingSink out;
    CHECK(Restore(f.store, ids[i], out).ok());
    // Its whole chain is among the kept versions.
    CHECK(VisitChain(f.store, ids[i], [&](const ChainLink& link) {
            if (link.delta) CHECK(f.store.objects.Has(link.base));
          }).ok());
  }
}

// Issue 53: the same content as a version of two series, one plan
// keeping it and another dropping it: it stays, whatever the order.
TEST_CASE("a content one series keeps and another drops stays, and restores exactly") {
  Saved f;
  const std::vector<ContentId> ids = f.Ids();
  // release/model.safetensors holds step 60's content, kept by its rule.
  const std::vector<Version> release = {Version{ids[5], "", "release/model.safetensors"}};
  auto facts = [](const ContentId&) { return VersionFacts{1, {}, false}; };
  auto plan = PlanSeries(f.store, f.held, KeepNewest(1, true), facts, 2000000000);
  auto kept = PlanSeries(f.store, release, KeepNewest(1, true), facts, 2000000000);
  REQUIRE(plan[5].fate == Fate::kDrop);
  REQUIRE(kept[0].fate == Fate::kKeep);
  RetainOptions options;
  options.now = 2000000000;
  options.every_version = ids;
  auto totals = ApplyRetention(f.store, *testing::Removal(f.store),
                               {{"run/step-#.safetensors", plan}, {"release/model.safetensors", kept}}, options);
  REQUIRE_MESSAGE(totals.ok(), totals.status().message());
  CHECK(totals->removed == 10);
  CountingSink out;
  CHECK(Restore(f.store, ids[5], out).ok());
}

TEST_CASE("a version another series holds is kept in the plan, and says where") {
  Saved f;
  const std::vector<ContentId> ids = f.Ids();
  auto facts = [](const ContentId&) { return VersionFacts{1, {}, false}; };
  Plans plans = {{"run/step-#.safetensors", PlanSeries(f.store, f.held, KeepNewest(1, true), facts, 2000000000)}};
  std::map<ContentId, std::set<std::string>> paths;
  for (const Version& v : f.held) paths[v.id].insert(v.path);
  paths[ids[4]].insert("release/model.safetensors");  // no rule covers it
  paths[ids[7]].insert("run/step-80.safetensors");     // its own series only
  auto series_of = [](const std::string& path) {
    return path.rfind("run/", 0) == 0 ? std::string("run/step-#.safetensors") : path;
  };
  KeepWhatOthersHold(plans, paths, series_of);
  const std::vector<PlannedVersion>& plan = plans[0].second;
  CHECK(plan[4].fate == Fate::kKeep);
  CHECK(plan[4].why == "also release/model.safetensors, which no rule covers");
  CHECK(plan[7].fate == Fate::kDrop);
  CHECK(plan[3].fate == Fate::kDrop);
  // Another series whose plan drops the same content too: it goes.
  plans.emplace_back("release/model.safetensors",
                     std::vector<PlannedVersion>{plan[3]});  // a copy of step 40's plan: dropped
  plans[0].second[3].fate = Fate::kDrop;
  paths[ids[3]].insert("release/model.safetensors");
  KeepWhatOthersHold(plans, paths, series_of);
  CHECK(plans[0].second[3].fate == Fate::kDrop);
}

// A walk-through of 2026-12-06: model.safetensors (rest: thin) and
// out/checkpoint-10/model.safetensors (rest: drop) held the same bytes.
// The content was thinned for one and dropped for the other, its record
// said dropped, and the approximate object was left that no record named.
TEST_CASE("a content one series thins and another drops is thinned once, for both, and leaves no stray object") {
  Saved f;
  const std::vector<ContentId> ids = f.Ids();
  auto facts = [](const ContentId&) { return VersionFacts{1, {}, false}; };
  Plans plans = {{"run/step-#.safetensors", PlanSeries(f.store, f.held, KeepNewest(1, false), facts, 2000000000)}};
  REQUIRE(plans[0].second[5].fate == Fate::kThin);
  // out/model.safetensors, a series of its own, holds step 60's bytes;
  // its rule drops them.
  PlannedVersion other = plans[0].second[5];
  other.version.path = "out/model.safetensors";
  other.fate = Fate::kDrop;
  plans.emplace_back("out/model.safetensors", std::vector<PlannedVersion>{other});
  std::map<ContentId, std::set<std::string>> paths;
  for (const Version& v : f.held) paths[v.id].insert(v.path);
  paths[ids[5]].insert("out/model.safetensors");
  auto series_of = [](const std::string& path) {
    return path.rfind("run/", 0) == 0 ? std::string("run/step-#.safetensors") : path;
  };
  KeepWhatOthersHold(plans, paths, series_of);
  CHECK(plans[0].second[5].fate == Fate::kThin);
  CHECK(plans[0].second[5].why.empty());
  CHECK(plans[1].second[0].fate == Fate::kThin);
  CHECK(plans[1].second[0].why == "also run/step-60.safetensors, whose rule thins it to relative 4 mantissa bits");

  RetainOptions options;
  options.now = 2000000000;
  options.every_version = ids;
  auto totals = ApplyRetention(f.store, *testing::Removal(f.store), plans, options);
  REQUIRE_MESSAGE(totals.ok(), totals.status().message());
  CHECK(totals->removed == 11);
  auto record = ReadRecord(f.store.objects, ids[5]);
  REQUIRE(record.ok());
  REQUIRE(record->has_value());
  CHECK_FALSE((*record)->dropped);
  CountingSink out;
  CHECK(Restore(f.store, (*record)->approximate, out).ok());
  // Every object left is one a version or a record needs.
  Needed needed;
  for (const ContentId& id : ids) NeedChain(f.store, id, needed);
  SweepOptions sweep;
  sweep.dry_run = true;
  sweep.started = 2000000000;
  sweep.keep_since = 2000000000;
  auto swept = Sweep(f.store, *testing::Removal(f.store), needed, sweep);
  REQUIRE(swept.ok());
  CHECK(swept->objects.empty());

  // Run again, thinned now: the drop of the other series does not take
  // the approximate version the first one's rule keeps.
  Plans again = {{"run/step-#.safetensors", PlanSeries(f.store, f.held, KeepNewest(1, false), facts, 2000000000)}};
  REQUIRE(again[0].second[5].fate == Fate::kThin);
  REQUIRE_FALSE(again[0].second[5].exact);
  PlannedVersion dropping = again[0].second[5];
  dropping.version.path = "out/model.safetensors";
  dropping.fate = Fate::kDrop;
  again.emplace_back("out/model.safetensors", std::vector<PlannedVersion>{dropping});
  KeepWhatOthersHold(again, paths, series_of);
  CHECK(again[1].second[0].fate == Fate::kThin);
  auto second = ApplyRetention(f.store, *testing::Removal(f.store), again, options);
  REQUIRE_MESSAGE(second.ok(), second.status().message());
  CHECK(second->unthinned == 0);
  auto kept = ReadRecord(f.store.objects, ids[5]);
  REQUIRE(kept.ok());
  REQUIRE(kept->has_value());
  CHECK_FALSE((*kept)->dropped);
  CountingSink again_out;
  CHECK(Restore(f.store, (*kept)->approximate, again_out).ok());
}

}  // namespace
}  // namespace zipnn::store
