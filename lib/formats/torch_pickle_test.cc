// Tests of the data.pkl reader: a real pickle read whole, random and
// mutated pickles never crashing it, and the limits that keep hostile
// pickles small (the inputs the fuzz targets found, tests/fuzz/regressions/,
// each reduced to the case it stands for).
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "lib/formats/formats_test_util.h"
#include "lib/formats/torch_pickle.h"
#include "lib/formats/zip.h"

namespace zipnn::formats {
namespace {

using codec::DType;

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

// A pickle of `levels` dicts nested under one key of `key_bytes` bytes,
// written once and fetched from the memo at every level; the innermost
// holds a float storage under "w".
std::vector<uint8_t> NestedUnderOneKey(size_t key_bytes, int levels) {
  std::vector<uint8_t> p = {0x80, 0x02, 'X', 0, 0, 0, 0};
  StoreLE<uint32_t>(p.data() + 3, static_cast<uint32_t>(key_bytes));
  p.insert(p.end(), key_bytes, 'k');
  static constexpr char kStorage[] =
      "q\x00"
      "0"  // memo 0: the key
      "}"
      "X\x01\x00\x00\x00"
      "w"  // {"w": ...
      "("
      "X\x07\x00\x00\x00"
      "storage"
      "ctorch\nFloatStorage\n"
      "X\x01\x00\x00\x00"
      "0"
      "X\x03\x00\x00\x00"
      "cpu"
      "K\x04"
      "t"
      "Q"
      "s";                                                      // ... persid(storage, 4 floats)}
  p.insert(p.end(), kStorage, kStorage + sizeof kStorage - 1);  // literals hold NULs: sized, not measured
  static constexpr char kWrap[] =
      "q\x01"
      "0"
      "}"
      "h\x00"
      "h\x01"
      "s";  // {key: the dict before}
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
  static constexpr char kTwice[] =
      "q\x00"
      "h\x00"
      "\x93"
      "N.";  // STACK_GLOBAL(m..., m...)
  p.insert(p.end(), kTwice, kTwice + sizeof kTwice - 1);
  auto r = ReadTorchPickle(p.data(), p.size());
  REQUIRE(!r.ok());
  CHECK(r.status().message() == "pickle names a global longer than 1024 bytes");

  static constexpr char kNumbers[] =
      "\x80\x04"
      "K\x01"
      "K\x02"
      "\x93"
      ".";
  r = ReadTorchPickle(reinterpret_cast<const uint8_t*>(kNumbers), sizeof kNumbers - 1);
  REQUIRE(!r.ok());
  CHECK(r.status().message() == "pickle STACK_GLOBAL takes two strings");

  std::string line =
      "\x80\x02"
      "c" +
      std::string(1100, 'm') + "\nx\n.";
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
  CHECK(l.warnings[0] ==
        "file: torch zip data.pkl is unreadable (pickle opens more than 1024 marks); stored as raw bytes");
  RoundTrip(file, ToRegions(l));
}

}  // namespace
}  // namespace zipnn::formats
