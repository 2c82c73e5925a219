// The folder store (a shared folder, or another repository's store on
// this machine): push and fetch move whole chains, skip what is there,
// refuse damaged objects and replace damaged or misfiled copies.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/io.h"
#include "lib/container/format.h"
#include "lib/remote/remote_store.h"
#include "lib/remote/remote_test_util.h"
#include "lib/remote/retention.h"
#include "lib/store/retention.h"
#include "lib/store/placement.h"
#include "lib/store/restore.h"
#include "lib/store/object_store.h"
#include "lib/store/test_objects.h"

namespace zipnn::remote {
namespace {

using store::ObjectStore;
using store::Store;
using store::testing::FilesIn;
using store::testing::StoreChain;
using store::testing::TempDir;

TEST_CASE("push and fetch move whole chains, skip what is there, and refuse a damaged object on arrival") {
  const std::string root = TempDir();
  const Store here{ObjectStore(root + "/here"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const Store there{ObjectStore(root + "/there"), root + "/tmp2", root + "/cache2", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(here, 3);  // a base and 3 deltas
  std::unique_ptr<RemoteStore> remote = FolderRemote(root + "/remote");

  testing::CheckPushAndFetch(here, there, *remote, ids);

  // A flipped byte in the remote's copy: the fetch fails, naming the
  // object, and nothing lands under its name or as a temporary.
  const Store fresh{ObjectStore(root + "/fresh"), root + "/tmp3", root + "/cache3", "", config::Policy{}};
  const std::string damaged = ObjectStore(root + "/remote").PathOf(ids[0]);
  REQUIRE(std::system(("printf '\\377' | dd of=" + damaged + " bs=1 seek=70 conv=notrunc status=none").c_str()) == 0);
  TransferOptions once;
  once.attempts = 2;
  auto broken = FetchObjects(fresh, *remote, {ids[1]}, once);
  REQUIRE(!broken.ok());
  CHECK(broken.status().message().find("cannot fetch object " + ids[0].Hex()) == 0);
  CHECK(!fresh.objects.Has(ids[0]));
  CHECK(!fresh.objects.Has(ids[1]));  // whole, but not decoded without its base: not kept
  CHECK(FilesIn(root + "/tmp3") == 0);
  CHECK(FilesIn(ObjectStore(root + "/fresh").PathOf(ids[0]).substr(0, root.size() + 12)) == 0);

  // Asking for an object the remote does not hold names it and the remote.
  const ContentId nowhere = HashBytes("nowhere", 7);
  auto missing = FetchObjects(fresh, *remote, {nowhere}, {});
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message() == "object " + nowhere.Hex() + " is not on the remote store " + root + "/remote");
  // A missing base says whose base it is.
  REQUIRE(std::remove(ObjectStore(root + "/remote").PathOf(ids[0]).c_str()) == 0);
  auto no_base = FetchObjects(fresh, *remote, {ids[2]}, {});
  CHECK(no_base.status().message() ==
        "object " + ids[0].Hex() + " (a base of " + ids[2].Hex() + ") is not on the remote store " + root + "/remote");
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("fetch replaces a damaged local copy; push replaces a misfiled remote one and clears old temporaries") {
  const std::string root = TempDir();
  const Store here{ObjectStore(root + "/here"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const Store there{ObjectStore(root + "/there"), root + "/tmp2", root + "/cache2", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(here, 2);
  const ObjectStore remote_store(root + "/remote");
  std::unique_ptr<RemoteStore> remote = FolderRemote(remote_store.root());
  REQUIRE(PushObjects(here, *remote, {ids[2]}, {}).ok());

  // Here: a flipped byte in the middle delta, which a fetch of the top
  // must not count as present.
  REQUIRE(FetchObjects(there, *remote, {ids[2]}, {}).ok());
  const std::string local = there.objects.PathOf(ids[1]);
  REQUIRE(std::system(("printf '\\377' | dd of=" + local + " bs=1 seek=70 conv=notrunc status=none").c_str()) == 0);
  REQUIRE(!CheckObjectFile(local, ids[1]).ok());
  auto fetched = FetchObjects(there, *remote, {ids[2]}, {});
  REQUIRE(fetched.ok());
  CHECK(fetched->moved == 1);
  CHECK(CheckObjectFile(local, ids[1]).ok());
  CountingSink restored;
  CHECK(Restore(there, ids[2], restored).ok());

  // There: version 1 filed under version 2's name (misfiled), and a
  // temporary a killed push left two days ago beside a fresh one, named
  // as writers name them; and a file of someone's that only looks like
  // one, which stays whatever its age.
  const std::string misfiled = remote_store.PathOf(ids[2]);
  const std::string folder = misfiled.substr(0, misfiled.rfind('/'));
  const std::string old_temp = misfiled + ".tmp-0000dead", new_temp = misfiled + ".tmp-0000beef";
  const std::string look_alike = folder + "/x.tmp-0000dead";
  // (A new file: the push linked the object there, so writing into it
  // would change this store's copy too.)
  REQUIRE(std::system(("cp --remove-destination " + remote_store.PathOf(ids[1]) + " " + misfiled +
                       " && touch -d '2 days ago' " + old_temp + " " + look_alike + " && touch " + new_temp)
                          .c_str()) == 0);
  auto has = remote->Has({ids[1], ids[2]});
  REQUIRE(has.ok());
  CHECK(*has == std::vector<bool>{true, false});
  auto pushed = PushObjects(here, *remote, {ids[2]}, {});
  REQUIRE(pushed.ok());
  CHECK(pushed->moved == 1);
  CHECK(CheckObjectFile(misfiled, ids[2]).ok());
  CHECK(!FileExists(old_temp));
  CHECK(FileExists(new_temp));  // maybe a push under way
  REQUIRE(std::system(("touch -d '3 days ago' " + new_temp).c_str()) == 0);
  auto removed = RemoveOldTemporaries(remote_store);
  REQUIRE(removed.ok());
  CHECK(*removed == 1);
  CHECK(!FileExists(new_temp));
  CHECK(FileExists(look_alike));
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a clone that lacks what the remote holds pushes what it made, and a chain missing everywhere is named") {
  const std::string root = TempDir();
  const Store here{ObjectStore(root + "/here"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(here, 2);
  std::unique_ptr<RemoteStore> remote = FolderRemote(root + "/remote");
  REQUIRE(PushObjects(here, *remote, {ids[2]}, {}).ok());
  // A teammate's clone that fetched nothing: it holds only the version it
  // saved since, a delta of the newest it never fetched.
  const Store clone{ObjectStore(root + "/clone"), root + "/tmp2", root + "/cache2", "", config::Policy{}};
  const std::vector<uint8_t> newest = store::testing::ChainVersion(2);
  const ContentId made = store::testing::StoreVersion(clone, 3, &newest, ids[2]);
  // Its pointers name both versions (HEAD~1's and HEAD's).
  auto pushed = PushObjects(clone, *remote, {ids[2], made}, {});
  REQUIRE_MESSAGE(pushed.ok(), pushed.status().ToString());
  CHECK(pushed->moved == 1);
  CHECK(pushed->present == 1);  // the base, the newest pushed before
  CHECK(pushed->needed == 2);
  const Store fresh{ObjectStore(root + "/fresh"), root + "/tmp3", root + "/cache3", "", config::Policy{}};
  REQUIRE(FetchObjects(fresh, *remote, {made}, {}).ok());
  CountingSink restored;
  CHECK(Restore(fresh, made, restored).ok());
  CHECK(restored.bytes() == 64);
  // What neither side holds whole still fails before anything is sent,
  // naming the missing object.
  const ContentId lost = HashBytes("lost", 4);
  const std::vector<uint8_t> lost_bytes(64, 7);
  const ContentId orphan = store::testing::StoreVersion(clone, 9, &lost_bytes, lost);
  auto refused = PushObjects(clone, *remote, {orphan}, {});
  REQUIRE(!refused.ok());
  CHECK(refused.status().code() == StatusCode::kNotFound);
  CHECK(refused.status().message().find(lost.Hex()) != std::string::npos);
  CHECK(!remote->Has({orphan})->front());
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

// The inode number and link count of `path`.
std::pair<ino_t, nlink_t> InodeOf(const std::string& path) {
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return {st.st_ino, st.st_nlink};
}

// Every file under a store's root, objects and temporaries.
size_t ObjectFiles(const ObjectStore& store) {
  auto entries = store.List();
  REQUIRE(entries.ok());
  return entries->size();
}

off_t InodeSize(const std::string& path) {
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_size;
}

TEST_CASE("push links objects into a folder on the same file system, checked on arrival, and copies when told to") {
  const std::string root = TempDir();
  const Store here{ObjectStore(root + "/here"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(here, 2);
  const ObjectStore linked_store(root + "/linked");
  std::unique_ptr<RemoteStore> linked = FolderRemote(linked_store.root());
  auto pushed = PushObjects(here, *linked, {ids[2]}, {});
  REQUIRE(pushed.ok());
  CHECK(pushed->moved == 3);
  for (const ContentId& id : ids) {
    CHECK(InodeOf(linked_store.PathOf(id)).first == InodeOf(here.objects.PathOf(id)).first);
    CHECK(InodeOf(here.objects.PathOf(id)).second == 2);
  }
  // A copy of the remote restores; nothing is left under a temporary name.
  const Store there{ObjectStore(root + "/there"), root + "/tmp2", root + "/cache2", "", config::Policy{}};
  REQUIRE(FetchObjects(there, *linked, {ids[2]}, {}).ok());
  CountingSink restored;
  CHECK(store::Restore(there, ids[2], restored).ok());
  CHECK(ObjectFiles(linked_store) == 3);

  // Told not to link, or given a file not everyone may read: copies.
  const ObjectStore copied_store(root + "/copied");
  REQUIRE(std::system(("chmod 600 " + here.objects.PathOf(ids[1])).c_str()) == 0);
  std::unique_ptr<RemoteStore> by_mode = FolderRemote(copied_store.root());
  REQUIRE(PushObjects(here, *by_mode, {ids[1]}, {}).ok());
  CHECK(InodeOf(copied_store.PathOf(ids[1])).second == 1);
  CHECK(InodeOf(copied_store.PathOf(ids[0])).second == 3);  // here, linked, copied
  std::unique_ptr<RemoteStore> copying = FolderRemote(copied_store.root(), /*links=*/false);
  REQUIRE(PushObjects(here, *copying, {ids[2]}, {}).ok());
  CHECK(InodeOf(copied_store.PathOf(ids[2])).second == 1);

  // A local object damaged at rest is refused on arrival like a bad copy:
  // the error names it, and nothing takes its name or stays behind.
  const ContentId top = StoreChain(here, 3).back();
  const std::string local = here.objects.PathOf(top);
  // The last byte of its one chunk record, before the chunk index and the
  // trailer (docs/format.md): the chain reads as whole, the record does not.
  const size_t record_end =
      static_cast<size_t>(InodeSize(local)) - container::kTrailerBytes - container::kIndexEntryBytes;
  REQUIRE(std::system(("printf '\\377' | dd of=" + local + " bs=1 seek=" + std::to_string(record_end - 1) +
                       " conv=notrunc status=none")
                          .c_str()) == 0);
  TransferOptions once;
  once.attempts = 1;
  auto refused = PushObjects(here, *linked, {top}, once);
  REQUIRE(!refused.ok());
  CHECK(refused.status().code() == StatusCode::kCorruption);
  CHECK(refused.status().message().find("cannot send object " + top.Hex()) == 0);
  CHECK(refused.status().message().find(local) != std::string::npos);
  CHECK(!linked_store.Has(top));
  CHECK(ObjectFiles(linked_store) == 3);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

}  // namespace
}  // namespace zipnn::remote

namespace zipnn::remote {
namespace {

// Writes the 64 bytes of version i of StoreChain to `path`.
void WriteVersion(int i, const std::string& path) {
  std::vector<uint8_t> data(64, 0);
  for (int b = 0; b < 4; ++b) data[b] = static_cast<uint8_t>(i >> (8 * b));
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(std::fwrite(data.data(), 1, data.size(), f) == data.size());
  std::fclose(f);
}

TEST_CASE("a fetched delta is proved against a copy of its stored base when one is given, and a wrong copy fails it") {
  const std::string root = TempDir();
  const Store here{ObjectStore(root + "/here"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const Store there{ObjectStore(root + "/there"), root + "/tmp2", root + "/cache2", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(here, 3);
  std::unique_ptr<RemoteStore> remote = FolderRemote(root + "/remote");
  REQUIRE(PushObjects(here, *remote, {ids[3]}, {}).ok());
  REQUIRE(FetchObjects(there, *remote, {ids[2]}, {}).ok());

  // Version 3 is a delta on version 2, which the store holds as a chain:
  // a copy of version 2 stands in for decoding that chain.
  std::vector<ContentId> asked;
  std::string copy_path;
  TransferOptions options;
  options.find_copy = [&](const ContentId& id) -> std::optional<ReadFile> {
    asked.push_back(id);
    if (id != ids[2]) return std::nullopt;
    auto file = ReadFile::Open(copy_path);
    REQUIRE(file.ok());
    return std::move(*file);
  };
  // A copy that holds other bytes: version 3 decodes to something else
  // and is refused, not kept.
  copy_path = root + "/wrong";
  WriteVersion(1, copy_path);
  auto refused = FetchObjects(there, *remote, {ids[3]}, options);
  REQUIRE(!refused.ok());
  CHECK(refused.status().message().find("object " + ids[3].Hex()) != std::string::npos);
  CHECK(!there.objects.Has(ids[3]));
  CHECK(asked == std::vector<ContentId>{ids[2]});
  // The right bytes: it is proved and takes its name, and the proof's
  // bytes are delivered where asked: version 3's, nothing else.
  copy_path = root + "/right";
  WriteVersion(2, copy_path);
  MemorySink delivered;
  options.deliver = &delivered;
  auto fetched = FetchObjects(there, *remote, {ids[3]}, options);
  REQUIRE(fetched.ok());
  CHECK(fetched->delivered);
  CHECK(HashBytes(delivered.buffer().data(), delivered.buffer().size()) == ids[3]);
  CHECK(there.objects.Has(ids[3]));
  CountingSink restored;
  CHECK(store::Restore(there, ids[3], restored).ok());
  // An object already here is not received, so nothing is delivered.
  MemorySink again;
  options.deliver = &again;
  auto present = FetchObjects(there, *remote, {ids[3]}, options);
  REQUIRE(present.ok());
  CHECK(!present->delivered);
  CHECK(again.buffer().size() == 0);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

// Flips the first byte of the first chunk record of the object file at
// `path`, after making it a file of its own (a push may have linked it).
void DamageRecord(const std::string& path, const ContentId& id) {
  REQUIRE(std::system(("cp " + path + " " + path + ".copy && mv " + path + ".copy " + path).c_str()) == 0);
  auto file = ReadFile::Open(path);
  REQUIRE(file.ok());
  auto info = container::ReadObjectInfo(*file);
  REQUIRE(info.ok());
  REQUIRE(!info->chunks.empty());
  const std::string seek = std::to_string(info->chunks[0].record_offset);
  REQUIRE(std::system(
              ("printf '\\377' | dd of=" + path + " bs=1 seek=" + seek + " conv=notrunc status=none").c_str()) == 0);
  REQUIRE(!CheckObjectFile(path, id).ok());
}

TEST_CASE("a demote reads the header to see what is there: a whole copy damaged further on gives way to the delta") {
  const std::string root = TempDir();
  const Store here{ObjectStore(root + "/here"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const Store whole{ObjectStore(root + "/whole"), root + "/tmp2", root + "/cache2", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(here, 1);  // 1 a delta of 0
  for (int i : {0, 1}) store::testing::StoreVersion(whole, i);
  const ObjectStore remote_store(root + "/remote");
  std::unique_ptr<RemoteStore> remote = FolderRemote(remote_store.root());
  REQUIRE(PushObjects(whole, *remote, ids, {}).ok());
  DamageRecord(remote_store.PathOf(ids[1]), ids[1]);

  auto delta = here.objects.Open(ids[1]);
  REQUIRE(delta.ok());
  REQUIRE(remote->capabilities().demotion != nullptr);
  auto replaced = remote->capabilities().demotion->Demote(ids[1], *delta);
  REQUIRE(replaced.ok());
  CHECK(*replaced > 0);
  CHECK(CheckObjectFile(remote_store.PathOf(ids[1]), ids[1]).ok());
  const Store there{remote_store, root + "/tmp3", root + "/cache3", "", config::Policy{}};
  CountingSink restored;
  CHECK(store::Restore(there, ids[1], restored).ok());

  // A delta there is left as it is, unread: the push that sent it checked
  // it whole. Damaged since, it is not counted as held, and the next push
  // sends it again.
  DamageRecord(remote_store.PathOf(ids[1]), ids[1]);
  replaced = remote->capabilities().demotion->Demote(ids[1], *delta);
  REQUIRE(replaced.ok());
  CHECK(*replaced == 0);
  auto has = remote->Has({ids[1]});
  REQUIRE(has.ok());
  CHECK(has->front() == false);
  auto pushed = PushObjects(here, *remote, {ids[1]}, {});
  REQUIRE(pushed.ok());
  CHECK(pushed->moved == 1);
  CHECK(CheckObjectFile(remote_store.PathOf(ids[1]), ids[1]).ok());
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("retention on a folder: stat, replace, remove and records, refusing what would break a chain or lie") {
  const std::string root = TempDir();
  const Store here{ObjectStore(root + "/here"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(here, 2);  // a base and 2 deltas
  std::unique_ptr<RemoteStore> remote = FolderRemote(root + "/remote", /*links=*/false);
  REQUIRE(PushObjects(here, *remote, {ids[2]}, {}).ok());
  REQUIRE(remote->capabilities().retention != nullptr);
  Retention& retention = *remote->capabilities().retention;

  auto listed = retention.List();
  REQUIRE(listed.ok());
  CHECK(listed->size() == 3);
  auto top = retention.Stat(ids[2]);
  REQUIRE(top.ok());
  REQUIRE(top->has_value());
  CHECK((*top)->base == ids[1]);
  CHECK((*top)->size > 0);
  CHECK_FALSE(retention.Stat(HashBytes("nowhere", 7))->has_value());

  // A delta of a version the remote lacks, or of itself through its
  // base, is refused; the object there stays as it was.
  auto base = here.objects.Open(ids[0]);
  REQUIRE(base.ok());
  const Status wrong = retention.Replace(ids[1], *base);  // ids[0]'s object, sent as ids[1]'s
  CHECK(wrong.code() == StatusCode::kInvalidArgument);
  CHECK(wrong.message() == "what was sent is not an object of " + ids[1].Hex());
  CHECK((*retention.Stat(ids[1]))->base == ids[0]);

  // Records: only one that parses as the record of its id is kept.
  store::Retained dropped;
  dropped.id = ids[0];
  dropped.dropped = true;
  dropped.date = 1795000000;
  CHECK(PutSide(*remote, SideKind::kRecord, ids[0], "git-zipnn retained 1\nnot a record\n").code() ==
        StatusCode::kCorruption);
  CHECK(PutSide(*remote, SideKind::kRecord, ids[1], store::RecordText(dropped)).code() ==
        StatusCode::kCorruption);  // another's
  REQUIRE(PutSide(*remote, SideKind::kRecord, ids[0], store::RecordText(dropped)).ok());
  auto text = GetSide(*remote, SideKind::kRecord, ids[0]);
  REQUIRE(text.ok());
  REQUIRE(text->has_value());
  CHECK(**text == store::RecordText(dropped));
  CHECK_FALSE(GetSide(*remote, SideKind::kRecord, ids[1])->has_value());

  // Removing: the object goes, a second time is no error, the record stays.
  REQUIRE(retention.Remove(ids[2]).ok());
  CHECK_FALSE(retention.Stat(ids[2])->has_value());
  CHECK(retention.Remove(ids[2]).ok());
  CHECK(retention.List()->size() == 2);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("retain on a folder keeps a version that a push made the base of a fine-tune after retain listed it") {
  const std::string root = TempDir();
  auto in = [&](const std::string& name) {
    return Store{ObjectStore(root + "/" + name), root + "/" + name + "-tmp", root + "/" + name + "-cache", "",
                 config::Policy{}};
  };
  std::unique_ptr<RemoteStore> remote = FolderRemote(root + "/remote", /*links=*/false);
  std::unique_ptr<RemoteStore> teammate = FolderRemote(root + "/remote", /*links=*/false);
  testing::CheckRetainKeepsWhatAPushRestsOn(in("here"), in("mate"), in("fresh"), *remote, *teammate);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a folder refuses a delta whose base it does not hold, so a push after a retain leaves nothing broken") {
  const std::string root = TempDir();
  const Store here{ObjectStore(root + "/here"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(here, 1);  // a base and a delta on it
  std::unique_ptr<RemoteStore> remote = FolderRemote(root + "/remote", /*links=*/false);
  auto delta = here.objects.Open(ids[1]);
  REQUIRE(delta.ok());
  const Status refused = remote->Put(ids[1], *delta);
  CHECK(refused.code() == StatusCode::kNotFound);
  CHECK(refused.message() == "object " + ids[1].Hex() + " is a delta of " + ids[0].Hex() + ", which " + root +
                                 "/remote does not hold (a retain removed it meanwhile?): push again, and the base "
                                 "goes with it");
  CHECK_FALSE(ObjectStore(root + "/remote").Has(ids[1]));
  // The same through a hard link (a store on the same file system).
  std::unique_ptr<RemoteStore> linking = FolderRemote(root + "/remote", /*links=*/true);
  CHECK(linking->PutFile(ids[1], *delta).code() == StatusCode::kNotFound);
  CHECK_FALSE(ObjectStore(root + "/remote").Has(ids[1]));
  // With its base there first, as a push sends them, it is taken.
  REQUIRE(PushObjects(here, *remote, {ids[1]}, {}).ok());
  CHECK(ObjectStore(root + "/remote").Has(ids[1]));
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a retain on a folder removes nothing when the last look before removing fails") {
  const std::string root = TempDir();
  const Store here{ObjectStore(root + "/here"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const ContentId old = store::testing::StoreVersion(here, 0);
  const ContentId kept = store::testing::StoreVersion(here, 1);
  std::unique_ptr<RemoteStore> remote = FolderRemote(root + "/remote", /*links=*/false);
  REQUIRE(PushObjects(here, *remote, {old, kept}, {}).ok());
  testing::DropHere(here, old);
  auto stopped = RetainOnRemote(here, *remote, {old, kept}, /*dry_run=*/false, {}, nullptr, /*pushes_stopped=*/false,
                                [] { return InvalidArgument("the refs of remote origin changed while retain ran"); });
  CHECK(stopped.status().message() == "the refs of remote origin changed while retain ran");
  CHECK(ObjectStore(root + "/remote").Has(old));
  auto done = RetainOnRemote(here, *remote, {old, kept}, /*dry_run=*/false, {}, nullptr);
  REQUIRE(done.ok());
  CHECK(done->removed == 1);
  CHECK_FALSE(ObjectStore(root + "/remote").Has(old));
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

}  // namespace
}  // namespace zipnn::remote
