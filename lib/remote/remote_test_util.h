// A check that push and fetch move whole chains, shared by the tests of
// the folder store and the served store (testonly).
#pragma once

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/io.h"
#include "lib/remote/remote_store.h"
#include "lib/store/base_note.h"
#include "lib/store/restore.h"

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

}  // namespace zipnn::remote::testing
