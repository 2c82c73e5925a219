// Tests of storing new versions of a series (CheckIn): a version stored
// once, damaged objects stored anew, delta transforms, min_gain weighed against the version coded standalone,
// where a base's bytes come from, and the raw cache's budget (placement
// has placement_test). Real checkpoints from tests/data.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lib/base/file.h"
#include "lib/container/format.h"
#include "lib/store/chain.h"
#include "lib/store/checkin.h"
#include "lib/store/copies.h"
#include "lib/store/gc.h"
#include "lib/store/rebased.h"
#include "lib/store/restore.h"
#include "lib/store/raw_cache.h"
#include "lib/store/repack.h"
#include "lib/store/series_fixture.h"
#include "lib/store/test_objects.h"

namespace zipnn::store {
namespace {

using testing::Bf16;
using testing::Copy;
using testing::Data;
using testing::Fixture;
using testing::IdOf;
using testing::Small;
using testing::TempDir;

TEST_CASE("the first version is a base; each next one a delta against the nearest earlier one") {
  Fixture f;
  f.StoreForward();
  CHECK(f.AddStep(40).reason == BaseReason::kFirst);
  CHECK(f.AddStep(80).reason == BaseReason::kNotBase);
  CHECK(f.AddStep(120).reason == BaseReason::kNotBase);
  CHECK(f.Info(IdOf(Bf16(80))).base == IdOf(Bf16(40)));
  CHECK(f.Info(IdOf(Bf16(120))).base == IdOf(Bf16(80)));
  CHECK(f.Info(IdOf(Bf16(120))).depth == 2);
  // An earlier step added later goes before the others: nothing is before
  // it, so it is a base.
  Fixture g;
  g.StoreForward();
  g.AddStep(120);
  CHECK(g.AddStep(40).reason == BaseReason::kFirst);
  CHECK(g.AddStep(80).reason == BaseReason::kNotBase);
  CHECK(g.Info(IdOf(Bf16(80))).base == IdOf(Bf16(40)));
}

TEST_CASE("a demotion is noted under the version that caused it, for pushes; gc drops notes of what it removes") {
  Fixture f;
  f.store.rebased_dir = f.root + "/rebased";
  f.AddStep(40);
  f.AddStep(80);
  CHECK(f.AddStep(120).demoted);
  CHECK(RebasedOn(f.store, IdOf(Bf16(120))) == std::vector<ContentId>{IdOf(Bf16(80))});
  CHECK(RebasedOn(f.store, IdOf(Bf16(80))).empty());
  std::ofstream(f.store.rebased_dir + "/not-an-id") << "x\n";
  // A gc that keeps 120 keeps its note; one that removes it drops it.
  Needed needed;
  NeedChain(f.store, IdOf(Bf16(120)), needed);
  SweepOptions options;
  options.started = options.keep_since = std::time(nullptr) + 60;
  REQUIRE(Sweep(f.store, *testing::Removal(f.store), needed, options).ok());
  CHECK(RebasedOn(f.store, IdOf(Bf16(120))).size() == 1);
  CHECK(!FileExists(f.store.rebased_dir + "/not-an-id"));
  Needed nothing;
  REQUIRE(Sweep(f.store, *testing::Removal(f.store), nothing, options).ok());
  CHECK(RebasedOn(f.store, IdOf(Bf16(120))).empty());
  CHECK(std::filesystem::is_empty(f.store.rebased_dir));
}

TEST_CASE("a version already stored is not stored again") {
  Fixture f;
  f.AddStep(40);
  const CheckedIn again = f.AddStep(40);
  CHECK(!again.stored);
  CHECK(again.pointer.format == "safetensors");
}

// Flips one byte in the middle of `id`'s object, as a failing disk would.
void Damage(const Store& store, const ContentId& id) {
  const std::string path = store.objects.PathOf(id);
  std::fstream object(path, std::ios::in | std::ios::out | std::ios::binary);
  object.seekg(0, std::ios::end);
  const std::streamoff middle = object.tellg() / 2;
  char byte = 0;
  object.seekg(middle);
  object.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x5a);
  object.seekp(middle);
  object.write(&byte, 1);
}

TEST_CASE("a damaged object is stored anew, and nothing is built on a damaged chain") {
  Fixture f;
  f.StoreForward();
  f.AddStep(40);
  f.AddStep(80);
  Damage(f.store, IdOf(Bf16(40)));
  CountingSink broken;
  CHECK(!Restore(f.store, IdOf(Bf16(80)), broken).ok());
  // The next version would be a delta on 80, whose base is damaged.
  const CheckedIn next = f.AddStep(120);
  CHECK(next.stored);
  CHECK(next.reason == BaseReason::kDamagedBase);
  CHECK(next.damaged.find("checksum mismatch") != std::string::npos);
  // Adding the damaged version again replaces its object, and what was
  // built on it restores again.
  const CheckedIn again = f.AddStep(40);
  CHECK(again.stored);
  CHECK(again.damaged.find("checksum mismatch") != std::string::npos);
  CountingSink restored;
  CHECK(Restore(f.store, IdOf(Bf16(80)), restored).ok());
}

// The format version and the chunk transforms of the stored object `id`.
std::pair<uint16_t, std::vector<codec::Transform>> StoredTransforms(const Fixture& f, const ContentId& id) {
  auto file = f.store.objects.Open(id);
  REQUIRE(file.ok());
  auto info = container::ReadObjectInfo(*file);
  REQUIRE(info.ok());
  std::vector<codec::Transform> t;
  for (const container::ChunkRef& c : info->chunks) t.push_back(c.transform);
  return {info->header.version, t};
}

TEST_CASE("delta_transform: deltas take each chunk the cheaper way, or XOR only in format 2 for older readers") {
  using codec::Transform;
  Fixture f;
  f.StoreForward();
  f.AddStep(40);
  f.AddStep(80);
  const auto [version, transforms] = StoredTransforms(f, IdOf(Bf16(80)));
  CHECK(version == container::kStandaloneChunkVersion);
  CHECK(std::count(transforms.begin(), transforms.end(), Transform::kDifference) ==
        4);  // the weights; the header XORed
  Fixture g;
  g.StoreForward();
  g.store.policy.delta_transform = codec::Transform::kXor;
  g.AddStep(40);
  g.AddStep(80);
  const auto [old_version, old_transforms] = StoredTransforms(g, IdOf(Bf16(80)));
  CHECK(old_version == 2);
  CHECK(std::count(old_transforms.begin(), old_transforms.end(), Transform::kXor) == 5);
  CHECK(StoredTransforms(g, IdOf(Bf16(40))).first == 2);  // bases too, for older readers
  CHECK(StoredTransforms(f, IdOf(Bf16(40))).first == container::kRawChecksumVersion);

  // Set to xor later, a repack rewrites the format 5 and 6 objects as format 2
  // (their placement unchanged), so that older readers can restore them.
  f.AddStep(120);
  f.store.policy.delta_transform = codec::Transform::kXor;
  std::vector<Version> series = f.held;
  SortSeries(series);
  int rewritten = 0;
  REQUIRE(RepackSeries(f.store, series, [&](const RepackedVersion& v) { rewritten += v.rewritten ? 1 : 0; }).ok());
  CHECK(rewritten == 3);
  for (int step : {40, 80, 120}) CHECK(StoredTransforms(f, IdOf(Bf16(step))).first == 2);
  CHECK(f.Info(IdOf(Bf16(120))).base == IdOf(Bf16(80)));
  for (int step : {80, 120}) {
    MemorySink restored;
    REQUIRE(Restore(f.store, IdOf(Bf16(step)), restored).ok());
    auto want = ReadWholeFile(Bf16(step));
    REQUIRE(want.ok());
    CHECK(restored.ToVector() == *want);
  }
  // Repacked again under xor, nothing is left to rewrite.
  rewritten = 0;
  REQUIRE(RepackSeries(f.store, series, [&](const RepackedVersion& v) { rewritten += v.rewritten ? 1 : 0; }).ok());
  CHECK(rewritten == 0);

  // Under difference, the format 6 delta is rewritten as format 5, which
  // git-zipnn 0.5 and 0.6 read; the format 5 base stays as it is.
  Fixture h;
  h.StoreForward();
  h.AddStep(40);
  h.AddStep(80);
  REQUIRE(StoredTransforms(h, IdOf(Bf16(80))).first == container::kStandaloneChunkVersion);
  h.store.policy.delta_transform = codec::Transform::kDifference;
  std::vector<Version> pair = h.held;
  SortSeries(pair);
  rewritten = 0;
  REQUIRE(RepackSeries(h.store, pair, [&](const RepackedVersion& v) { rewritten += v.rewritten ? 1 : 0; }).ok());
  CHECK(rewritten == 1);
  CHECK(StoredTransforms(h, IdOf(Bf16(80))).first == container::kRawChecksumVersion);
  CHECK(h.Info(IdOf(Bf16(80))).base == IdOf(Bf16(40)));
}

TEST_CASE("min_gain is weighed against the version coded standalone") {
  // fp32 after bf16 of another run: no tensor matches in dtype, so the
  // "delta" is as large as the version alone and must not be kept.
  Fixture f;
  f.StoreForward();
  f.AddStep(40);
  Copy(Data("cnn-fp32/step-000080.safetensors"), f.store.work_dir + "/run/step-80.safetensors");
  const CheckedIn other =
      f.Add(Data("cnn-fp32/step-000080.safetensors"), "run/step-80.safetensors", "run/step-#.safetensors", "80");
  CHECK(other.reason == BaseReason::kNoGain);
  CHECK(!f.Info(other.pointer.id).delta);
  // A min_gain no delta can meet makes every version a base.
  Fixture g;
  g.StoreForward();
  g.store.policy.min_gain = 0.99;
  g.AddStep(40);
  CHECK(g.AddStep(80).reason == BaseReason::kNoGain);
  CHECK(BaseReasonText(BaseReason::kNoGain, g.store.policy) == "delta did not pay, min_gain 99%");
  // Worked out again later from the series: the first is first; the
  // second's place makes it a delta now, so it did not pay or was stored
  // under another policy.
  std::vector<Version> series = g.held;
  SortSeries(series);
  CHECK(WhyBase(g.store, SeriesAt(series, 0)) == BaseReason::kFirst);
  g.store.policy.min_gain = 0.1;
  CHECK(WhyBase(g.store, SeriesAt(series, 1)) == BaseReason::kNoGainOrPolicy);
  CHECK(BaseReasonText(BaseReason::kNoGainOrPolicy, g.store.policy) ==
        "delta did not pay (min_gain 10%), or stored under another policy");
  g.store.policy.base_interval = 1;
  CHECK(WhyBase(g.store, SeriesAt(series, 1)) == BaseReason::kDue);
}

TEST_CASE("a base's bytes come from the work tree when it still holds them, else from a raw copy or its chain") {
  Fixture f;
  f.StoreForward();
  f.AddStep(40);
  // The work tree's copy of step 40 is gone and nothing was kept (it had a
  // step): the chain is decoded, and the delta is the same.
  REQUIRE(std::system(("rm " + f.store.work_dir + "/run/step-40.safetensors").c_str()) == 0);
  f.AddStep(80);
  CHECK(f.Info(IdOf(Bf16(80))).base == IdOf(Bf16(40)));
  // Its base came from the store, not the work tree: this series deletes
  // old saves, so step 80 is kept raw for the next one.
  RawCache cache(f.store.cache_dir, f.store.policy.raw_cache);
  REQUIRE(cache.List().size() == 1);
  CHECK(cache.List()[0].id == IdOf(Bf16(80)));
  // A work-tree file that changed since is not used: its hash differs.
  Copy(Bf16(200), f.store.work_dir + "/run/step-80.safetensors");
  f.AddStep(120);
  CHECK(f.Info(IdOf(Bf16(120))).base == IdOf(Bf16(80)));
}

TEST_CASE("a verified copy is the first work-tree file that holds the version, else the raw copy, of its size") {
  Fixture f;
  const ContentId id = IdOf(Bf16(40));
  const uint64_t size = std::filesystem::file_size(Bf16(40));
  Copy(Bf16(80), f.store.work_dir + "/other.safetensors");
  Copy(Bf16(40), f.store.work_dir + "/held.safetensors");
  const std::vector<std::string> paths = {"", "other.safetensors", "missing.safetensors", "held.safetensors"};
  std::optional<VerifiedCopy> copy = FindVerifiedCopy(f.store, id, paths, size);
  REQUIRE(copy);
  CHECK(copy->in_work_tree);
  CHECK(copy->file.size() == size);
  // A size the bytes do not have (a pointer that lies) finds nothing.
  CHECK(!FindVerifiedCopy(f.store, id, paths, size + 1));
  // Without a work-tree file that holds it: the raw cache's copy.
  RawCache(f.store.cache_dir, f.store.policy.raw_cache).Keep("run/#", id, f.store.work_dir + "/held.safetensors");
  REQUIRE(std::system(("rm " + f.store.work_dir + "/held.safetensors").c_str()) == 0);
  copy = FindVerifiedCopy(f.store, id, paths);
  REQUIRE(copy);
  CHECK(!copy->in_work_tree);
  CHECK(!FindVerifiedCopy(f.store, IdOf(Bf16(120)), paths));
}

TEST_CASE("a delta is never built on a work-tree file that changes while it is read") {
  // A trainer rewriting step 40 in place while step 80 is added: a thread
  // flips a page in the middle of the file's tensors back and forth, so
  // the add may hash the file whole and then read other bytes of it while
  // it builds the delta. Whatever it saw, what it stores restores exactly
  // (Fixture::AddSpooled restores it, verified against its id).
  for (int attempt = 0; attempt < 20; ++attempt) {
    CAPTURE(attempt);
    Fixture f;
    f.AddStep(40);
    const std::string base = f.store.work_dir + "/run/step-40.safetensors";
    const int fd = ::open(base.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    struct stat st;
    REQUIRE(::fstat(fd, &st) == 0);
    const off_t at = st.st_size / 2;
    std::vector<char> page(4096);
    REQUIRE(::pread(fd, page.data(), page.size(), at) == static_cast<ssize_t>(page.size()));
    std::atomic<bool> done{false};
    std::thread flipper([&] {
      while (!done) {
        for (char& c : page) c = static_cast<char>(c ^ 0x5a);
        if (::pwrite(fd, page.data(), page.size(), at) < 0) break;
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    });
    struct Stop {  // even when a REQUIRE below fails
      std::atomic<bool>& done;
      std::thread& flipper;
      int fd;
      ~Stop() {
        done = true;
        flipper.join();
        ::close(fd);
      }
    } stop{done, flipper, fd};
    Copy(Bf16(80), f.root + "/work/run/step-80.safetensors");
    f.Add(Bf16(80), "run/step-80.safetensors", "run/step-#.safetensors", "80");
  }
}

TEST_CASE("an add stopped after it stored the newest, before it re-stored the one before, is finished by the next") {
  // The state such an add leaves: step 120 stored whole, its note that
  // step 80 is owed its re-store, and step 80 still whole.
  Fixture whole;
  whole.Add(Bf16(120), "model.safetensors", "model.safetensors", "");
  auto stopped = [&](bool noted) {
    auto f = std::make_unique<Fixture>();
    for (int s : {40, 80}) f->Add(Bf16(s), "model.safetensors", "model.safetensors", "");
    Copy(whole.store.objects.PathOf(IdOf(Bf16(120))), f->root + "/object");
    REQUIRE(f->store.objects.Adopt(IdOf(Bf16(120)), f->root + "/object").ok());
    if (noted) Copy(Bf16(40), f->root + "/demoting/" + IdOf(Bf16(120)).Hex());  // any bytes: it is a name
    return f;
  };
  const std::unique_ptr<Fixture> f = stopped(true);
  REQUIRE(!f->Info(IdOf(Bf16(80))).delta);
  const CheckedIn again = f->Add(Bf16(120), "model.safetensors", "model.safetensors", "");
  REQUIRE(again.demoted);
  CHECK(f->Info(IdOf(Bf16(80))).base == IdOf(Bf16(40)));
  CHECK(!f->Info(IdOf(Bf16(120))).delta);
  CHECK(!FileExists(f->root + "/demoting/" + IdOf(Bf16(120)).Hex()));
  for (int s : {40, 80, 120}) {
    CountingSink restored;
    REQUIRE(Restore(f->store, IdOf(Bf16(s)), restored).ok());
  }
  // Added again, nothing is owed: it is stored, and nothing changes.
  const CheckedIn third = f->Add(Bf16(120), "model.safetensors", "model.safetensors", "");
  CHECK(!third.stored);
  CHECK(!third.demoted);
  // Without the note, an add of a version stored already changes nothing.
  const std::unique_ptr<Fixture> g = stopped(false);
  CHECK(!g->Add(Bf16(120), "model.safetensors", "model.safetensors", "").demoted);
  CHECK(!g->Info(IdOf(Bf16(80))).delta);
}

TEST_CASE("a path overwritten in place keeps raw copies, within the budget") {
  Fixture f;
  f.StoreForward();
  for (int s : {40, 80, 120}) {
    Copy(Bf16(s), f.store.work_dir + "/model.safetensors");
    f.Add(Bf16(s), "model.safetensors", "model.safetensors", "");
  }
  // One copy, the newest's: step 80's went when step 120 came, though
  // step 120 re-stored it as a delta of step 40 (its bytes came from the
  // copy then; step 40's from the store).
  RawCache cache(f.store.cache_dir, f.store.policy.raw_cache);
  REQUIRE(cache.List().size() == 1);
  CHECK(cache.List()[0].id == IdOf(Bf16(120)));
  CHECK(f.Info(IdOf(Bf16(120))).depth == 2);
  // With no budget nothing is kept, and the next version still chains.
  Fixture g;
  g.StoreForward();
  g.store.policy.raw_cache = 0;
  for (int s : {40, 80}) g.Add(Bf16(s), "model.safetensors", "model.safetensors", "");
  CHECK(RawCache(g.store.cache_dir, 0).List().empty());
  CHECK(g.Info(IdOf(Bf16(80))).delta);
}

// The delta the newest version of a path overwritten in place is prepared
// as, in its own add, when the raw cache does not keep it (checkin.cc).
std::string Prepared(const Fixture& f, int step) { return f.root + "/prepared/" + IdOf(Bf16(step)).Hex(); }

// Restores `step` and checks it is exactly that checkpoint.
void RestoresExactly(const Fixture& f, int step) {
  CountingSink restored;
  REQUIRE(Restore(f.store, IdOf(Bf16(step)), restored).ok());  // checks the content id
  CHECK(restored.bytes() == std::filesystem::file_size(Bf16(step)));
}

TEST_CASE("a version the raw cache does not keep has its delta prepared in its own add, which the next add takes") {
  // Kept raw: nothing is prepared (the next add has its bytes).
  Fixture kept;
  for (int s : {40, 80, 120}) kept.Add(Bf16(s), "model.safetensors", "model.safetensors", "");
  CHECK(!FileExists(Prepared(kept, 80)));
  CHECK(!FileExists(Prepared(kept, 120)));

  Fixture f;
  f.store.policy.raw_cache = 0;
  f.Add(Bf16(40), "model.safetensors", "model.safetensors", "");
  CHECK(!FileExists(Prepared(f, 40)));  // the first of its series stays a base
  // Step 80 in chunks of another size than the next add's, so that what
  // that add takes shows.
  f.store.policy.chunk_size = 64u << 10;
  f.Add(Bf16(80), "model.safetensors", "model.safetensors", "");
  f.store.policy.chunk_size = kept.store.policy.chunk_size;
  // Step 80 is stored whole, and its delta of step 40 is ready.
  CHECK(!f.Info(IdOf(Bf16(80))).delta);
  REQUIRE(FileExists(Prepared(f, 80)));
  const std::vector<uint8_t> prepared = *ReadWholeFile(Prepared(f, 80));
  const CheckedIn third = f.Add(Bf16(120), "model.safetensors", "model.safetensors", "");
  // The next add took it, as it was (in the chunks of its own add), and
  // it is gone from the prepared deltas; step 120's is ready in its place.
  REQUIRE(third.demoted);
  CHECK(third.demoted->base == IdOf(Bf16(40)));
  CHECK(third.demoted->after == prepared.size());
  CHECK(f.Info(IdOf(Bf16(80))).base == IdOf(Bf16(40)));
  CHECK(*ReadWholeFile(f.store.objects.PathOf(IdOf(Bf16(80)))) == prepared);
  CHECK(prepared != *ReadWholeFile(kept.store.objects.PathOf(IdOf(Bf16(80)))));
  CHECK(!FileExists(Prepared(f, 80)));
  CHECK(FileExists(Prepared(f, 120)));
  for (int s : {40, 80, 120}) RestoresExactly(f, s);

  // Over a stretch, only its first half is prepared: in its second half
  // a version becomes a delta of the one after it, which no add before
  // that one has (the stretch of 7: a base, 3 forward, 3 reverse).
  Fixture h;
  h.store.policy.raw_cache = 0;
  REQUIRE(h.store.policy.base_interval == 7);
  for (int s : {40, 80, 120, 160}) h.Add(Bf16(s), "model.safetensors", "model.safetensors", "");
  CHECK(h.Info(IdOf(Bf16(120))).base == IdOf(Bf16(80)));
  CHECK(FileExists(Prepared(h, 160)));  // the last of the first half
  const CheckedIn fifth = h.Add(Bf16(200), "model.safetensors", "model.safetensors", "");
  REQUIRE(fifth.demoted);
  CHECK(fifth.demoted->base == IdOf(Bf16(120)));
  CHECK(!FileExists(Prepared(h, 160)));
  CHECK(!FileExists(Prepared(h, 200)));  // to be a delta of the next
  for (int s : {40, 80, 120, 160, 200}) RestoresExactly(h, s);

  // A damaged prepared delta is not taken: the next add encodes anew.
  Fixture d;
  d.store.policy.raw_cache = 0;
  for (int s : {40, 80}) d.Add(Bf16(s), "model.safetensors", "model.safetensors", "");
  {
    std::fstream file(Prepared(d, 80), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(std::filesystem::file_size(Prepared(d, 80)) / 2));
    file.put('\x5a');
  }
  const CheckedIn anew = d.Add(Bf16(120), "model.safetensors", "model.safetensors", "");
  REQUIRE(anew.demoted);
  CHECK(*ReadWholeFile(d.store.objects.PathOf(IdOf(Bf16(80)))) ==
        *ReadWholeFile(kept.store.objects.PathOf(IdOf(Bf16(80)))));
  CHECK(!FileExists(Prepared(d, 80)));
  for (int s : {40, 80, 120}) RestoresExactly(d, s);

  // Nor is one the folder only names (a symbolic link): the store would
  // hold a name for a file elsewhere, which may go.
  Fixture l;
  l.store.policy.raw_cache = 0;
  for (int s : {40, 80}) l.Add(Bf16(s), "model.safetensors", "model.safetensors", "");
  const std::string elsewhere = l.root + "/elsewhere";
  std::filesystem::rename(Prepared(l, 80), elsewhere);
  std::filesystem::create_symlink(elsewhere, Prepared(l, 80));
  l.Add(Bf16(120), "model.safetensors", "model.safetensors", "");
  CHECK(!std::filesystem::is_symlink(l.store.objects.PathOf(IdOf(Bf16(80)))));
  CHECK(l.Info(IdOf(Bf16(80))).base == IdOf(Bf16(40)));
  std::filesystem::remove(elsewhere);
  for (int s : {40, 80, 120}) RestoresExactly(l, s);

  // Nor is one of the right version against another base than placement
  // gives: step 80's delta of step 120, from a series that had them the
  // other way round.
  Fixture other;
  other.store.policy.raw_cache = 0;
  for (int s : {120, 80}) other.Add(Bf16(s), "model.safetensors", "model.safetensors", "");
  Fixture o;
  o.store.policy.raw_cache = 0;
  for (int s : {40, 80}) o.Add(Bf16(s), "model.safetensors", "model.safetensors", "");
  REQUIRE(std::system(("cp " + Prepared(other, 80) + " " + Prepared(o, 80)).c_str()) == 0);
  o.Add(Bf16(120), "model.safetensors", "model.safetensors", "");
  CHECK(o.Info(IdOf(Bf16(80))).base == IdOf(Bf16(40)));
  CHECK(*ReadWholeFile(o.store.objects.PathOf(IdOf(Bf16(80)))) ==
        *ReadWholeFile(kept.store.objects.PathOf(IdOf(Bf16(80)))));
  for (int s : {40, 80, 120}) RestoresExactly(o, s);

  // gc removes those of versions gone or re-stored since, and keeps the
  // newest's.
  std::filesystem::copy_file(Prepared(f, 120), Prepared(f, 80));
  Needed needed;
  NeedChain(f.store, IdOf(Bf16(120)), needed);
  NeedChain(f.store, IdOf(Bf16(80)), needed);
  SweepOptions options;
  options.started = options.keep_since = std::time(nullptr) + 60;
  const Result<Swept> swept = Sweep(f.store, *testing::Removal(f.store), needed, options);
  REQUIRE(swept.ok());
  CHECK(!FileExists(Prepared(f, 80)));  // step 80 is a delta now
  CHECK(FileExists(Prepared(f, 120)));
  CHECK(swept->prepared_freed > 0);
  // What is not a plain file goes too, even under the name of a version
  // stored whole, and only the link, not what it names.
  const std::string target = f.root + "/target";
  std::filesystem::rename(Prepared(f, 120), target);
  std::filesystem::create_symlink(target, Prepared(f, 120));
  std::filesystem::create_directory(f.root + "/prepared/stray");
  REQUIRE(Sweep(f.store, *testing::Removal(f.store), needed, options).ok());
  CHECK(!std::filesystem::exists(f.root + "/prepared/stray"));
  CHECK(!std::filesystem::is_symlink(Prepared(f, 120)));
  CHECK(FileExists(target));
  Needed nothing;
  REQUIRE(Sweep(f.store, *testing::Removal(f.store), nothing, options).ok());
  CHECK(!FileExists(Prepared(f, 120)));
}

// `path` opened and pinned to the bytes it holds now, as the clean filter
// pins a work-tree file to the stream git sent for it.
ReadFile PinnedNow(const std::string& path) {
  auto bytes = ReadWholeFile(path);
  REQUIRE(bytes.ok());
  std::vector<uint64_t> pins;
  for (size_t b = 0; b < bytes->size(); b += ReadFile::kPinBlock) {
    pins.push_back(Checksum64(bytes->data() + b, std::min(ReadFile::kPinBlock, bytes->size() - b)));
  }
  auto file = ReadFile::Open(path);
  REQUIRE(file.ok());
  REQUIRE(file->Pin(std::move(pins)).ok());
  return std::move(*file);
}

TEST_CASE("a held new version is read where it is, never linked into the raw cache; one changed meanwhile is refused") {
  Fixture f;
  f.store.policy.raw_cache = 1u << 30;  // room for it: only `held` keeps it out
  auto earlier = [&](bool) -> Result<std::vector<Version>> { return f.held; };
  const std::string work = f.store.work_dir + "/model.safetensors";
  for (int s : {40, 80, 120}) {
    CAPTURE(s);
    Copy(Bf16(s), work);
    const ReadFile held = PinnedNow(work);
    // `file` names nothing: the bytes can come from `held` alone.
    NewVersion v{f.root + "/no-such-spool", IdOf(Bf16(s)), "model.safetensors", "model.safetensors", ""};
    v.held = &held;
    auto checked = CheckIn(f.store, v, earlier);
    REQUIRE_MESSAGE(checked.ok(), checked.status().message());
    f.held.push_back(Version{v.id, "", "model.safetensors"});
    CHECK(checked->pointer.size == std::filesystem::file_size(Bf16(s)));
  }
  CHECK(RawCache(f.store.cache_dir, f.store.policy.raw_cache).List().empty());
  CHECK(f.Info(IdOf(Bf16(80))).delta);
  for (int s : {40, 80, 120}) RestoresExactly(f, s);

  // Rewritten in place after git streamed it (a trainer saving over it):
  // the add fails, naming the file, and stores nothing under its id.
  Copy(Bf16(160), work);
  const ReadFile held = PinnedNow(work);
  const int fd = ::open(work.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::pwrite(fd, "rewritten", 9, static_cast<off_t>(std::filesystem::file_size(work) / 2)) == 9);
  ::close(fd);
  NewVersion v{f.root + "/no-such-spool", IdOf(Bf16(160)), "model.safetensors", "model.safetensors", ""};
  v.held = &held;
  auto refused = CheckIn(f.store, v, earlier);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find(work + ": changed while it was read") != std::string::npos);
  CHECK_FALSE(f.store.objects.Has(IdOf(Bf16(160))));
  for (int s : {40, 80, 120}) RestoresExactly(f, s);
}

TEST_CASE("the raw cache keeps one copy per series, drops the oldest over budget, and checks hashes") {
  const std::string root = TempDir();
  const uint64_t size = ReadFile::Open(Bf16(40))->size();
  RawCache cache(root + "/cache", 2 * size + 10);
  // Kept copies are hard links to the spooled input: files of their own.
  auto spooled = [&](int step) {
    const std::string file = root + "/spool-" + std::to_string(step);
    Copy(Bf16(step), file);
    return file;
  };
  auto ids = [&] {
    std::vector<ContentId> left;
    for (const auto& e : cache.List()) left.push_back(e.id);
    return left;
  };
  cache.Keep("a", IdOf(Bf16(40)), spooled(40));
  cache.Keep("a", IdOf(Bf16(80)), spooled(80));  // a's older copy goes
  CHECK(ids() == std::vector<ContentId>{IdOf(Bf16(80))});
  CHECK(!cache.Find(IdOf(Bf16(40))));
  REQUIRE(cache.Find(IdOf(Bf16(80))));
  // Other series keep theirs.
  cache.Keep("b", IdOf(Bf16(120)), spooled(120));
  CHECK(ids() == (std::vector<ContentId>{IdOf(Bf16(80)), IdOf(Bf16(120))}));
  REQUIRE(std::system(("touch -d '1 hour ago' " + root + "/cache/*" + IdOf(Bf16(80)).Hex()).c_str()) == 0);
  cache.Keep("c", IdOf(Bf16(160)), spooled(160));  // over budget: a's copy, the oldest, goes
  CHECK(ids() == (std::vector<ContentId>{IdOf(Bf16(120)), IdOf(Bf16(160))}));
  CHECK(!cache.Find(IdOf(Bf16(80))));
  // A copy larger than the budget is not kept, and costs no other copy.
  RawCache small(root + "/cache", size - 1);
  small.Keep("d", IdOf(Bf16(200)), spooled(200));
  CHECK(ids() == (std::vector<ContentId>{IdOf(Bf16(120)), IdOf(Bf16(160))}));
  // A copy whose bytes changed is never used, and goes.
  // (List sorts by age, and the write makes this copy the newest.)
  const RawCache::Entry changed = cache.List()[0];
  REQUIRE(std::system(("printf x | dd of=" + changed.path + " bs=1 seek=100 conv=notrunc status=none").c_str()) == 0);
  CHECK(!cache.Find(changed.id));
  CHECK(cache.List().size() == 1);
  // gc's prune: what no pointer needs goes.
  CHECK(cache.Prune([](const ContentId&) { return false; }) > 0);
  CHECK(cache.List().empty());
  (void)std::system(("rm -rf " + root).c_str());
}

}  // namespace
}  // namespace zipnn::store
