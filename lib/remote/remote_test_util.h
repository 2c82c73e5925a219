// A check that push and fetch move whole chains, shared by the tests of
// the folder store and the served store (testonly).
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/io.h"
#include "lib/remote/remote_store.h"
#include "lib/remote/retention.h"
#include "lib/store/base_note.h"
#include "lib/store/restore.h"
#include "lib/store/retention.h"
#include "lib/store/test_objects.h"

namespace zipnn::remote::testing {

// With `ids` from StoreChain(here, 3) and nothing on `remote`: pushing
// ids[2] sends it, the delta below and the base; pushing ids[3] then sends
// only it; fetching ids[3] into `there` brings all four, one chain level a
// round, and the top restores. The base's note (store/base_note.h) goes
// with it both ways, when the remote keeps notes.
inline void CheckPushAndFetch(const store::Store& here, const store::Store& there, RemoteStore& remote,
                              const std::vector<ContentId>& ids, bool keeps_notes = true) {
  store::WriteBaseNote(here.objects, ids[0], store::BaseReason::kDue, here.policy);
  REQUIRE(store::ReadBaseNote(here.objects, ids[0]));
  auto pushed = PushObjects(here, remote, {ids[2]}, {});
  REQUIRE(pushed.ok());
  CHECK(pushed->needed == 3);
  CHECK(pushed->moved == 3);
  auto again = PushObjects(here, remote, {ids[3]}, {});
  REQUIRE(again.ok());
  CHECK(again->moved == 1);
  CHECK(again->present == 3);
  auto fetched = FetchObjects(there, remote, {ids[3]}, {});
  REQUIRE(fetched.ok());
  CHECK(fetched->moved == 4);
  CountingSink restored;
  CHECK(store::Restore(there, ids[3], restored).ok());
  CHECK(restored.bytes() == 64);
  const std::optional<store::BaseNote> note = store::ReadBaseNote(there.objects, ids[0]);
  CHECK(note.has_value() == keeps_notes);
  if (note) CHECK(store::DescribeNote(*note) == "due every " + std::to_string(here.policy.base_interval));
  CHECK(!store::ReadBaseNote(there.objects, ids[1]));  // a delta has none
}

// What a retain here leaves of a version it dropped: its record, and no
// object.
inline void DropHere(const store::Store& here, const ContentId& id) {
  store::Retained dropped;
  dropped.id = id;
  dropped.size = 64;
  dropped.dropped = true;
  dropped.date = 1795000000;
  REQUIRE(store::WriteRecord(here.objects, dropped).ok());
  REQUIRE(std::remove(here.objects.PathOf(id).c_str()) == 0);
}

// A retain on `remote` that lists it, and then, before it removes
// anything (as it sends its records), a teammate's push through `mate`
// (the same store, another client) of a fine-tune stored as a delta of
// the version that goes: the version stays there, and the fine-tune
// fetched from the remote into `fresh` restores. `here`, `mate` and
// `fresh` are empty stores.
inline void CheckRetainKeepsWhatAPushRestsOn(const store::Store& here, const store::Store& mate,
                                             const store::Store& fresh, RemoteStore& remote, RemoteStore& teammate) {
  const ContentId step10 = store::testing::StoreVersion(here, 0);
  const ContentId step20 = store::testing::StoreVersion(here, 1);
  REQUIRE(PushObjects(here, remote, {step10, step20}, {}).ok());
  DropHere(here, step10);  // this clone's retain dropped step 10
  // The teammate holds step 10 and a fine-tune of it, stored as a delta.
  REQUIRE(store::testing::StoreVersion(mate, 0) == step10);
  const std::vector<uint8_t> parent = store::testing::ChainVersion(0);
  const ContentId tuned = store::testing::StoreVersion(mate, 2, &parent, step10);
  bool pushed = false;
  auto retained = RetainOnRemote(here, remote, {step10, step20}, /*dry_run=*/false, {}, [&](const std::string& what) {
    if (pushed || what.find("retention records") == std::string::npos) return;
    pushed = true;
    auto sent = PushObjects(mate, teammate, {tuned}, {});
    REQUIRE(sent.ok());
    CHECK(sent->moved == 1);  // step 10 is there: only the delta goes
  });
  REQUIRE(pushed);
  REQUIRE_MESSAGE(retained.ok(), retained.status().message());
  auto fetched = FetchObjects(fresh, remote, {tuned}, {});
  REQUIRE_MESSAGE(fetched.ok(), fetched.status().message());
  CountingSink restored;
  CHECK(store::Restore(fresh, tuned, restored).ok());
  CHECK(restored.bytes() == 64);
}

}  // namespace zipnn::remote::testing
