// Checks of a store's objects for tests that break things on purpose
// (kills, injected faults): every file named as an object must decode to
// exactly its content id.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "lib/base/io.h"
#include "lib/store/chain.h"
#include "lib/store/restore.h"
#include "tests/git_repo.h"

namespace zipnn::testing {

// Every file in the store `objects` named as an object decodes to exactly
// its content id; returns what does not (empty when all is well).
// `scratch` is a folder the restores may use.
inline std::vector<std::string> BrokenIn(const std::string& objects, const std::string& scratch) {
  const store::Store r{store::ObjectStore(objects), scratch + "/tmp", scratch + "/cache/raw", "", config::Policy{}};
  std::vector<std::string> broken;
  auto listed = r.objects.List();
  REQUIRE(listed.ok());
  for (const auto& e : *listed) {
    if (!e.id) continue;
    uint64_t raw_size = 0;
    Status s = store::VisitChain(r, *e.id, [&](const store::ChainLink& link) {
      if (link.depth == 0) raw_size = link.raw_size;
    });
    CountingSink restored;
    if (s.ok()) s = store::Restore(r, *e.id, restored);
    if (s.ok() && restored.bytes() != raw_size) s = Corruption("short");
    if (!s.ok()) broken.push_back(e.id->Hex() + ": " + s.message());
  }
  return broken;
}

// Shell lines that stage the five cnn-fp32 fixture steps as x.safetensors
// one after another and unstage them, then age every object past gc's
// grace period (a gc keeps what was used in the second it started): each
// gc then removes those five, unless cut short.
inline std::string GcLitter(const Repo& repo) {
  std::string litter;
  for (const char* s : kSteps) {
    litter += "cp '" + repo.Data(std::string("cnn-fp32/step-") + s + ".safetensors") +
              "' x.safetensors && git add x.safetensors && git rm -q --cached x.safetensors && ";
  }
  return litter + "rm x.safetensors && find .git/zipnn/objects -type f -exec touch -d '1 minute ago' {} +";
}

// The same for the store of `repo`.
inline std::vector<std::string> BrokenObjects(const Repo& repo) {
  const std::string git = repo.root() + "/repo/.git/zipnn";
  return BrokenIn(git + "/objects", git);
}

}  // namespace zipnn::testing
