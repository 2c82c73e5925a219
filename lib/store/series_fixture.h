// A scratch repository for the store's tests of storing and placing
// versions (checkin_test, placement_test, restore_test): real
// checkpoints from tests/data checked in as git's filter would, with the
// versions git holds kept beside them.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "lib/base/io.h"
#include "lib/store/chain.h"
#include "lib/store/gc.h"
#include "lib/store/checkin.h"
#include "lib/store/restore.h"
#include "lib/store/test_objects.h"

namespace zipnn::store::testing {

inline std::string Data(const std::string& name) { return "tests/data/" + name; }
inline std::string Bf16(int step) {
  char name[64];
  std::snprintf(name, sizeof name, "cnn-bf16/step-%06d.safetensors", step);
  return Data(name);
}

inline ContentId IdOf(const std::string& file) { return IdOfFile(file); }
// The store's lock taken alone, as gc takes it (read it with `*`).
inline Result<Removing> Removal(const Store& store) { return store.BeginRemoving("test"); }

inline void Copy(const std::string& from, const std::string& to) {
  REQUIRE(std::system(("mkdir -p \"$(dirname '" + to + "')\" && cp '" + from + "' '" + to + "'").c_str()) == 0);
}

// A repository in a scratch folder, with `series` standing for what git
// holds: every version checked in is added to it, as the filter does.
struct Fixture {
  std::string root = TempDir();
  Store store{ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", root + "/work", config::Policy{}};
  std::vector<Version> held;
  std::vector<bool> asked;  // the `deep` of each lookup

  // `newest: delta`: every version a delta of the one before it, as
  // git-zipnn 0.6 stored them (the tests of forward chains).
  void StoreForward() {
    store.policy.newest = config::Newest::kDelta;
    store.policy.max_chain = config::DefaultMaxChain(store.policy.base_interval, config::Newest::kDelta);
  }

  // Stores `file` as `path` (series name and step given).
  CheckedIn Add(const std::string& file, const std::string& path, const std::string& series, const std::string& step) {
    // A new file each time, as the filter spools each input: the raw
    // cache keeps hard links to it.
    std::remove((root + "/spool").c_str());
    Copy(file, root + "/spool");
    return AddSpooled(path, series, step);
  }
  // Stores small `bytes` as version `step` of series "s".
  CheckedIn AddBytes(const std::vector<uint8_t>& bytes, const std::string& step) {
    std::remove((root + "/spool").c_str());
    std::ofstream(root + "/spool", std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return AddSpooled("", "s", step);
  }
  // Stores what is in root/spool.
  CheckedIn AddSpooled(const std::string& path, const std::string& series, const std::string& step) {
    const std::string spool = root + "/spool";
    const NewVersion v{spool, IdOf(spool), path, series, step};
    auto checked = CheckIn(store, v, [&](bool deep) -> Result<std::vector<Version>> {
      asked.push_back(deep);
      std::vector<Version> sorted = held;
      SortSeries(sorted);
      return sorted;
    });
    REQUIRE_MESSAGE(checked.ok(), checked.status().message());
    held.push_back(Version{v.id, step, path});
    CountingSink restored;
    REQUIRE(Restore(store, v.id, restored).ok());
    CHECK(restored.bytes() == checked->pointer.size);
    return *checked;
  }
  // Adds tests/data/cnn-bf16 step `s` as run/step-<s>.safetensors.
  CheckedIn AddStep(int s) {
    const std::string path = "run/step-" + std::to_string(s) + ".safetensors";
    Copy(Bf16(s), store.work_dir + "/" + path);
    return Add(Bf16(s), path, "run/step-#.safetensors", std::to_string(s));
  }
  // The chain depth of every version held, in the order they were added.
  std::vector<int> Depths() {
    std::vector<int> depths;
    for (const Version& v : held) depths.push_back(Info(v.id).depth);
    return depths;
  }
  StoredInfo Info(const ContentId& id) {
    auto info = Describe(store, id);
    REQUIRE(info.ok());
    return *info;
  }
  ~Fixture() { (void)std::system(("rm -rf " + root).c_str()); }
};

// 64 bytes that differ from the `i`-th next to them in their first two.
inline std::vector<uint8_t> Small(size_t i) {
  std::vector<uint8_t> bytes(64, 7);
  bytes[0] = static_cast<uint8_t>(i & 0xff);
  bytes[1] = static_cast<uint8_t>(i >> 8);
  return bytes;
}

}  // namespace zipnn::store::testing
