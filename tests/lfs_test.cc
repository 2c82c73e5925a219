// The Git LFS server of the tests (tests/lfs_server.py), shown to be what
// Debian's own Git LFS client expects before git-zipnn is tested against
// it: git-lfs pushes to it and clones from it bit-exact, with credentials
// from git's helpers, and it refuses what a real host refuses.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "lib/base/io.h"
#include "lib/remote/lfs.h"
#include "lib/remote/remote_store.h"
#include "lib/remote/retention.h"
#include "lib/store/restore.h"
#include "lib/store/test_objects.h"
#include "tests/git_repo.h"
#include "tests/lfs_server.h"
#include "tests/lfs_testing.h"
#include "tests/sshd.h"

namespace zipnn::testing {
namespace {

TEST_CASE(
    "Debian's git-lfs pushes to the test LFS server and clones from it bit-exact, credentials from git's helper") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  UseGitLfs(repo, server.CredentialLine());
  REQUIRE(repo.Sh("git lfs track '*.bin' >/dev/null && head -c 3000000 /dev/urandom > big.bin && "
                  "printf 'small\\n' > small.bin && git add -A && git commit -qm lfs && "
                  "git remote add origin " +
                  server.Url("team.git") + " && git push -q origin HEAD:main")
              .code == 0);
  // Each file is an LFS object named by its SHA-256, uploaded once the
  // client had asked for credentials (a 401 first).
  for (const char* file : {"big.bin", "small.bin"}) {
    const std::string oid = Trimmed(repo.Sh(std::string("sha256sum ") + file + " | cut -c1-64").out);
    REQUIRE(oid.size() == 64);
    CHECK(repo.Sh(std::string("cmp ") + file + " '" + server.ObjectPath("team.git", oid) + "'").code == 0);
  }
  std::string requests = server.Requests();
  CHECK(Count(requests, "POST /team.git/info/lfs/objects/batch 200") == 1);
  CHECK(Count(requests, "PUT /team.git/info/lfs/objects/") == 2);
  CHECK(Count(requests, " 401\n") >= 1);
  // What the server holds is not sent again.
  REQUIRE(repo.Sh("cp big.bin again.bin && git add again.bin && git commit -qm again && git push -q origin HEAD:main")
              .code == 0);
  CHECK(Count(server.Requests(), "PUT /team.git/info/lfs/objects/") == 2);

  // A clone over the same URL gets every file back, and git-lfs's own
  // check of its objects passes there.
  const Run cloned = repo.Sh("cd .. && git clone -q " + server.Url("team.git") +
                             " clone && cmp clone/big.bin repo/big.bin && cmp clone/small.bin repo/small.bin && "
                             "cmp clone/again.bin repo/big.bin && cd clone && git lfs fsck");
  const std::string said = cloned.out + cloned.err;
  CHECK_MESSAGE(cloned.code == 0, said);
  CHECK(Count(server.Requests(), "GET /team.git/info/lfs/objects/") == 2);
}

TEST_CASE(
    "the test LFS server refuses wrong credentials, bytes that do not hash to their oid, and names what it lacks") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  UseGitLfs(repo, server.CredentialLine("wrong"));
  // With no way to ask anyone, git gives up on the refused credentials.
  const Run refused = repo.Sh(
      "git lfs track '*.bin' >/dev/null && printf 'x\\n' > a.bin && git add -A && "
      "git commit -qm a && git remote add origin " +
      server.Url("team.git") + " && GIT_TERMINAL_PROMPT=0 git push -q origin HEAD:main");
  CHECK(refused.code != 0);
  CHECK(server.Requests().find(" 200\n") == std::string::npos);
  CHECK(repo.Sh("find '" + server.root() + "/team.git' -path '*lfs-objects*' -type f | grep -q .").code != 0);

  // The API by hand, as a client of our own will speak it.
  const std::string api = server.Url("team.git") + "/info/lfs";
  const std::string prelude =
      "import base64, hashlib, json, urllib.request as u, urllib.error as e\n"
      "auth = \"Basic \" + base64.b64encode(b\"" +
      std::string(LfsServer::kUser) + ":" + LfsServer::kPassword +
      "\").decode()\n"
      "def call(method, url, body=None, **headers):\n"
      "    headers.setdefault(\"Authorization\", auth)\n"
      "    r = u.Request(url, data=body, method=method, headers=headers)\n"
      "    try:\n"
      "        with u.urlopen(r) as a: return a.status, a.read()\n"
      "    except e.HTTPError as a: return a.code, a.read()\n"
      "data = bytes(range(256)) * 40\n"
      "oid = hashlib.sha256(data).hexdigest()\n"
      "batch = lambda op: json.loads(call(\"POST\", \"" +
      api + "/objects/batch\", json.dumps(dict(operation=op, objects=[dict(oid=oid, size=len(data))])).encode(), " +
      "Accept=\"application/vnd.git-lfs+json\")[1])[\"objects\"][0]\n";
  // Bytes that do not hash to the oid they are put under: 422, not kept.
  Run run = Python(repo, prelude + "print(call(\"PUT\", \"" + api + "/objects/\" + oid, data[1:] + b\"!\")[0])");
  CHECK(Trimmed(run.out) == "422");
  // A download of what it lacks is an error of that object, 404.
  run = Python(repo, prelude + "print(batch(\"download\")[\"error\"][\"code\"])");
  CHECK(Trimmed(run.out) == "404");
  // Put right, it is served whole and by ranges.
  run = Python(repo, prelude +
                         "a = batch(\"upload\")[\"actions\"]\n"
                         "print(call(\"PUT\", a[\"upload\"][\"href\"], data, **a[\"upload\"][\"header\"])[0])\n"
                         "print(\"upload\" in batch(\"upload\").get(\"actions\", {}))\n"
                         "d = batch(\"download\")[\"actions\"][\"download\"]\n"
                         "print(call(\"GET\", d[\"href\"])[1] == data)\n"
                         "print(call(\"GET\", d[\"href\"], Range=\"bytes=1000-1999\") == (206, data[1000:2000]))\n"
                         "print(call(\"GET\", d[\"href\"], Range=\"bytes=10000-\") == (206, data[10000:]))");
  const std::string said = run.out + run.err;
  CHECK_MESSAGE(run.out == "200\nFalse\nTrue\nTrue\nTrue\n", said);
}

TEST_CASE("objects go up to the LFS server under the SHA-256 of their bytes and come back proven, through the map") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  const std::string root = repo.root();
  const store::Store here{store::ObjectStore(root + "/here"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const store::Store there{store::ObjectStore(root + "/there"), root + "/tmp2", root + "/cache2", "", config::Policy{}};
  const std::vector<ContentId> ids = store::testing::StoreChain(here, 2);  // a base and 2 deltas
  auto shared = std::make_shared<MemoryMap>();
  MemoryMap& map = *shared;
  Helper helper;
  std::unique_ptr<remote::RemoteStore> lfs = lfs::Remote("the LFS server", OptionsFor(server, helper), shared);

  // Its API has no delete: retention says so rather than skip it.
  CHECK(lfs->capabilities().retention == nullptr);
  auto retain = remote::RetainOnRemote(here, *lfs, ids, /*dry_run=*/true, {}, nullptr);
  CHECK(retain.status().code() == StatusCode::kUnsupported);
  CHECK(retain.status().message() ==
        "the LFS server cannot remove objects (a Git LFS server's API has no delete): nothing was removed there");

  auto pushed = remote::PushObjects(here, *lfs, {ids[2]}, {});
  REQUIRE_MESSAGE(pushed.ok(), pushed.status().message());
  CHECK(pushed->moved == 3);
  CHECK(map.size() == 3);
  // Asked once, when the server first said 401; the helper told they worked.
  CHECK(helper.filled == 1);
  CHECK(helper.reported == std::vector<bool>{true});
  for (const ContentId& id : ids) {
    const auto found = *map.Find(id);
    REQUIRE(found.size() == 1);
    const lfs::ObjectMap::Entry* entry = &found.front();
    CHECK(repo.Sh("cmp '" + here.objects.PathOf(id) + "' '" + server.ObjectPath("team.git", entry->oid.sha256) + "'")
              .code == 0);
    CHECK(entry->delta == (id != ids[0]));
  }
  CHECK(map.Find(ids[1])->front().base == ids[0]);
  auto has = lfs->Has({ids[0], ids[2], HashBytes("nowhere", 7)});
  REQUIRE(has.ok());
  CHECK(*has == std::vector<bool>{true, true, false});
  // Sent again: the server holds them all, nothing moves.
  pushed = remote::PushObjects(here, *lfs, {ids[2]}, {});
  REQUIRE(pushed.ok());
  CHECK(pushed->moved == 0);

  // A store that has nothing fetches the chain, each object decoded to its
  // id before it takes its name, and restores the top.
  auto fetched = remote::FetchObjects(there, *lfs, {ids[2]}, {});
  REQUIRE_MESSAGE(fetched.ok(), fetched.status().message());
  CHECK(fetched->moved == 3);
  CountingSink restored;
  CHECK(store::Restore(there, ids[2], restored).ok());
  // A version the map does not know is not there, and says so.
  auto missing = remote::FetchObjects(there, *lfs, {HashBytes("nowhere", 7)}, {});
  CHECK(missing.status().code() == StatusCode::kNotFound);

  // Opened where it lies, an object reads as the file pushed, its header
  // and index vouched for by the frame the push recorded.
  const std::string object = here.objects.PathOf(ids[1]);
  REQUIRE(lfs->capabilities().ranged_reads != nullptr);
  auto ranged = lfs->capabilities().ranged_reads->OpenRanges(ids[1], remote::kUnknownObjectLimit);
  REQUIRE_MESSAGE(ranged.ok(), ranged.status().message());
  CHECK(ranged->info.content_id == ids[1]);
  CHECK(ranged->info.header.base_id == ids[0]);
  const std::string file = Slurp(object);
  std::string read(file.size(), '\0');
  REQUIRE(ranged->bytes->ReadAt(0, read.data(), read.size()).ok());
  CHECK(read == file);
  lfs::ObjectMap::Entry entry = map.Find(ids[1])->front();
  CHECK(entry.frame.size() == 64);
  // A frame the object does not have: not read by parts (it is then
  // fetched whole and proven), naming what is wrong.
  entry.frame = std::string(64, '0');
  REQUIRE(map.Add(entry).ok());
  ranged = lfs->capabilities().ranged_reads->OpenRanges(ids[1], remote::kUnknownObjectLimit);
  CHECK(ranged.status().code() == StatusCode::kUnsupported);
  CHECK(ranged.status().message().find("not those of the object that was pushed") != std::string::npos);
  // None recorded: parts cannot be vouched for, so the object is fetched
  // whole instead (Unsupported).
  entry.frame.clear();
  REQUIRE(map.Add(entry).ok());
  CHECK(lfs->capabilities().ranged_reads->OpenRanges(ids[1], remote::kUnknownObjectLimit).status().code() == StatusCode::kUnsupported);
  // Nor more than its checkpoint can take.
  CHECK(lfs->capabilities().ranged_reads->OpenRanges(ids[0], 100).status().code() == StatusCode::kCorruption);
}

TEST_CASE("the LFS store refuses a server that lies, fails or stalls, and credentials it refused, naming no secret") {
  Repo repo;
  const std::string root = repo.root();
  const store::Store here{store::ObjectStore(root + "/here"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const std::vector<ContentId> ids = store::testing::StoreChain(here, 1);
  auto shared = std::make_shared<MemoryMap>();
  MemoryMap& map = *shared;
  {
    LfsServer honest(repo);
    honest.AddRepository("team.git");
    Helper wrong;
    wrong.password = "not-the-password";
    std::unique_ptr<remote::RemoteStore> refused = lfs::Remote("the LFS server", OptionsFor(honest, wrong), shared);
    auto pushed = remote::PushObjects(here, *refused, {ids[1]}, {});
    REQUIRE(!pushed.ok());
    CHECK(pushed.status().message().find("refused the credentials git's credential helper gave for " +
                                         honest.Url("team.git") + "/info/lfs") != std::string::npos);
    CHECK(pushed.status().message().find("not-the-password") == std::string::npos);
    CHECK(wrong.reported == std::vector<bool>{false});
    CHECK(map.size() == 0);
    Helper right;
    std::unique_ptr<remote::RemoteStore> lfs = lfs::Remote("the LFS server", OptionsFor(honest, right), shared);
    REQUIRE(remote::PushObjects(here, *lfs, {ids[1]}, {}).ok());
    // The lying servers below serve what this one received.
    REQUIRE(repo.Sh("cp -r '" + honest.root() + "/team.git' ../team.git").code == 0);
  }
  for (const std::string mode : {"forge", "short", "error500", "stall"}) {
    CAPTURE(mode);
    LfsServer liar(repo, mode, "liar-" + mode);
    REQUIRE(repo.Sh("rm -rf '" + liar.root() + "' && mkdir -p '" + liar.root() + "' && cp -r ../team.git '" +
                    liar.root() + "/'")
                .code == 0);
    const store::Store fresh{store::ObjectStore(root + "/fresh-" + mode), root + "/t-" + mode, root + "/c-" + mode, "",
                             config::Policy{}};
    Helper helper;
    std::unique_ptr<remote::RemoteStore> lfs = lfs::Remote("the LFS server", OptionsFor(liar, helper), shared);
    remote::TransferOptions once;
    once.attempts = 1;
    auto fetched = remote::FetchObjects(fresh, *lfs, {ids[1]}, once);
    REQUIRE(!fetched.ok());
    CHECK(!fresh.objects.Has(ids[0]));
    CHECK(!fresh.objects.Has(ids[1]));
    const std::string said = fetched.status().message();
    CHECK_MESSAGE(said.find("cannot fetch object " + ids[1].Hex() + " from the LFS server: ") == 0, said);
    if (mode == "forge") CHECK(said.find("not a git-zipnn object") != std::string::npos);
    if (mode == "short") CHECK(said.find("transfer closed") != std::string::npos);
    if (mode == "error500") {
      CHECK(said.find("asking for objects on the LFS server: HTTP 500 (the server is having a bad day)") !=
            std::string::npos);
    }
    if (mode == "stall")
      CHECK(said.find("the timeout: GIT_ZIPNN_TIMEOUT, or git config zipnn.timeout") != std::string::npos);
  }
}

TEST_CASE(
    "through an http remote, checkpoints go to its LFS server and the map to git; a clone restores every version") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  UseBoth(repo, server);
  CommitTrajectory(repo);  // five saves of one path: base, deltas, the newest whole
  REQUIRE(repo.Sh("git remote add origin " + server.Url("team.git")).code == 0);
  const Run too_many = repo.Sh("git -c zipnn.concurrentTransfers=65 zipnn push origin");
  CHECK(too_many.err.find("zipnn.concurrentTransfers must be between 1 and 64") != std::string::npos);
  const std::string replaced =
      repo.Sh("git fsck --unreachable --no-reflogs 2>/dev/null | grep -c 'unreachable commit'").out;
  const Run pushed = repo.Sh("git -c lfs.concurrenttransfers=2 push -q origin HEAD:main");
  REQUIRE_MESSAGE(pushed.code == 0, pushed.err);
  CHECK(pushed.err.find("git-zipnn: pushed 5 objects") != std::string::npos);
  // Every object is an LFS object under its SHA-256; the map went with
  // the branch and names each version.
  CHECK(ServerObjects(repo, server, "team.git") == 5);
  CHECK(repo.Sh("git ls-remote origin refs/zipnn/objects | grep -q objects").code == 0);
  CHECK(
      repo.Sh("git --git-dir='" + server.root() + "/team.git' ls-tree -r --name-only refs/zipnn/objects | wc -l").out ==
      "5\n");
  // The five records and their base notes went into the map in one
  // commit, not one each (each replacing the one before).
  CHECK(repo.Sh("git rev-list --count refs/zipnn/objects").out == "1\n");
  CHECK(repo.Sh("git fsck --unreachable --no-reflogs 2>/dev/null | grep -c 'unreachable commit'").out == replaced);

  // A teammate's clone checks out the newest and restores every version
  // bit-exact; each object comes down once.
  const Run cloned = repo.Sh("cd .. && git clone -q " + server.Url("team.git") + " clone");
  REQUIRE_MESSAGE(cloned.code == 0, cloned.err);
  CHECK(repo.Sh("cmp ../clone/model.safetensors '" + repo.Data("cnn-bf16/step-000200.safetensors") + "'").code == 0);
  // The tensor listings came with the checkout: git log -p shows every
  // version with no object fetched or restored.
  const Run log = repo.Sh("cd ../clone && GIT_TRACE=1 git log -p --format=%s -- model.safetensors");
  REQUIRE(log.code == 0);
  CHECK(log.err.find("git-zipnn") == std::string::npos);
  CHECK(log.out == repo.Sh("git log -p --format=%s -- model.safetensors").out);
  CHECK(Count(server.Requests(), "GET /team.git/info/lfs/objects/") == 1);
  // The base notes went in the map: the clone says why each base is one
  // as the author's store decided.
  const std::string author = repo.Sh("git zipnn log model.safetensors").out;
  CHECK(author.find("step 000200  [newest of its series when stored]") != std::string::npos);
  CHECK(author.find("step 000040  [first of its series]") != std::string::npos);
  for (int back = 0; back < 5; ++back) {
    const std::string step = kSteps[4 - back];
    const Run restored = repo.Sh("cd ../clone && git zipnn restore --rev HEAD~" + std::to_string(back) +
                                 " -o ../out.st -f model.safetensors && cmp ../out.st '" +
                                 repo.Data("cnn-bf16/step-" + step + ".safetensors") + "'");
    CHECK_MESSAGE(restored.code == 0, restored.err);
  }
  const Run twice =
      repo.Sh("grep -o 'GET /team.git/info/lfs/objects/[0-9a-f]* 200' '" + repo.root() + "/lfs/log' | sort | uniq -d");
  CHECK(twice.out.empty());
  CHECK(Count(server.Requests(), "GET /team.git/info/lfs/objects/") == 5);
  CHECK(repo.Sh("cd ../clone && git zipnn log model.safetensors").out == author);
  CHECK(repo.Sh("cd ../clone && find .git/zipnn/objects -name '*.base' | wc -l").out == "2\n");

  // fsck --remote downloads every version's objects and decodes them; a
  // byte the server changed is found and named.
  const Run clean = repo.Sh("cd ../clone && git zipnn fsck --remote origin --all");
  CHECK_MESSAGE(clean.code == 0, clean.err);
  CHECK(clean.out.find("5 checkpoints, 5 objects decode to their ids\n") != std::string::npos);
  const std::string object =
      Trimmed(repo.Sh("find '" + server.root() + "/team.git/lfs-objects' -type f | head -1").out);
  REQUIRE(repo.Sh("cp '" + object + "' ../kept && printf 'X' | dd of='" + object +
                  "' bs=1 seek=200 conv=notrunc status=none")
              .code == 0);
  const Run damaged = repo.Sh("cd ../clone && git zipnn fsck --remote origin --all");
  CHECK(damaged.code == 1);
  CHECK(damaged.out.find("with problems") != std::string::npos);
  CHECK(damaged.err.find("cannot be fetched whole from origin") != std::string::npos);
  REQUIRE(repo.Sh("cp ../kept '" + object + "'").code == 0);

  // The Python module reads an old version in a fresh clone, fetching what
  // it needs through the server: the same tensor as where it was added.
  REQUIRE(repo.Sh("cd .. && git clone -q " + server.Url("team.git") + " reader").code == 0);
  const std::string read = "/usr/bin/python3 -c 'import sys, hashlib; sys.path.insert(0, \"" + repo.Runfile("python") +
                           "\"); import git_zipnn as g; t = g.load_tensor(\"model.safetensors\", \"c2.weight\", "
                           "rev=\"HEAD~3\"); print(t.dtype, t.shape, hashlib.sha256(t.tobytes()).hexdigest())'";
  const Run there = repo.Sh("cd ../reader && GIT_ZIPNN=\"$(command -v git-zipnn)\" " + read);
  CHECK_MESSAGE(there.code == 0, there.err);
  CHECK(there.out == repo.Sh(read).out);
  CHECK(there.out.find("(32, 16, 3, 3)") != std::string::npos);
}

// The bytes of every file the store in `git_dir` holds.
uint64_t StoreBytes(Repo& repo, const std::string& git_dir) {
  return std::stoull("0" + Trimmed(repo.Sh("find '" + git_dir +
                                           "/zipnn/objects' -type f -path '*/??/??/*' -printf '%s\\n' | "
                                           "awk '{ n += $1 } END { printf \"%d\", n }'")
                                       .out));
}

// model.safetensors tracked, then committed once for each of `steps` of
// the fixture run `run`, its weights `copies` times over.
void CommitTiled(Repo& repo, const std::string& run, const std::vector<std::string>& steps, int copies) {
  REQUIRE(
      repo.Sh("git zipnn track model.safetensors >/dev/null && git add .gitattributes && git commit -qm track").code ==
      0);
  for (const std::string& step : steps) {
    REQUIRE(repo.Sh("python3 '" + repo.Runfile("tests/bench/tile_checkpoint.py") + "' '" +
                    repo.Data(run + "/step-" + step + ".safetensors") + "' " + std::to_string(copies) +
                    " model.safetensors >/dev/null && git add model.safetensors && git commit -qm " + step)
                .code == 0);
  }
}

TEST_CASE("cat of a tensor of a version the clone lacks reads parts of its objects where they lie, checked") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  UseBoth(repo, server);
  // Five saves of one path, each the real CNN's weights 64 times over
  // (7.5 MB), so that a tensor is a small part of every object.
  CommitTiled(repo, "cnn-bf16", {std::begin(kSteps), std::end(kSteps)}, 64);
  REQUIRE(repo.Sh("git remote add origin " + server.Url("team.git") + " && git push -q origin HEAD:main").code == 0);
  const std::string tensor = "copy33.fc1.weight";
  const Run here = repo.Sh("git zipnn cat HEAD~3:model.safetensors -t " + tensor + " -o ../here.safetensors");
  REQUIRE_MESSAGE(here.code == 0, here.err);

  // A clone has the newest version only; HEAD~3's chain is on the server.
  REQUIRE(repo.Sh("cd .. && git clone -q " + server.Url("team.git") + " clone").code == 0);
  const uint64_t stored = StoreBytes(repo, "../clone/.git");
  const uint64_t sent = server.BytesSent();
  const Run parts = repo.Sh("cd ../clone && git zipnn cat HEAD~3:model.safetensors -t " + tensor +
                            " -o ../there.safetensors && cmp ../here.safetensors ../there.safetensors");
  CHECK_MESSAGE(parts.code == 0, parts.err);
  // Parts of its objects came down, not the objects (a delta on the first
  // save, a base: 7.9 MiB): less than a twentieth of them; nothing was
  // stored.
  const uint64_t read = server.BytesSent() - sent;
  const uint64_t chain =
      std::stoull("0" + Trimmed(repo.Sh("git zipnn log --json model.safetensors | python3 -c 'import json, sys; "
                                        "print(sum(v[\"stored_bytes\"] for v in json.load(sys.stdin) "
                                        "if v[\"subject\"] in (\"000040\", \"000080\")))'")
                                    .out));
  MESSAGE("read by parts: " << read << " bytes of a chain of " << chain);
  CHECK(chain > 7000000);
  CHECK(read > 0);
  CHECK(read * 20 < chain);
  CHECK(StoreBytes(repo, "../clone/.git") == stored);
  CHECK(Count(server.Requests(), " 206\n") >= 3);

  // A server that stops serving parts midway (a node behind a balancer
  // that ignores Range, from the fifth request on: once both objects are
  // opened): those come whole, checked against their oids, into scratch
  // files that go with the command. The bytes are the same.
  LfsServer late(repo, "lateranges", "late");
  REQUIRE(repo.Sh("cp -a '" + server.root() + "/team.git' '" + late.root() + "/' && printf '%s\\n' '" +
                  late.CredentialLine() + "' >> ../creds && cd ../clone && git remote set-url origin " +
                  late.Url("team.git"))
              .code == 0);
  const Run midway = repo.Sh("cd ../clone && git zipnn cat HEAD~3:model.safetensors -t " + tensor +
                             " -o ../late.safetensors && cmp ../here.safetensors ../late.safetensors");
  CHECK_MESSAGE(midway.code == 0, midway.err);
  INFO(late.Requests());
  CHECK(Count(late.Requests(), " 206\n") == 4);
  CHECK(Count(late.Requests(), "/info/lfs/objects/") > 4);
  CHECK(StoreBytes(repo, "../clone/.git") == stored);
  CHECK(repo.Sh("find ../clone/.git/zipnn/tmp -type f | grep -q .").code != 0);
  REQUIRE(repo.Sh("cd ../clone && git remote set-url origin " + server.Url("team.git")).code == 0);

  // A whole restore of that version fetches its objects and proves them.
  const Run whole = repo.Sh("cd ../clone && git zipnn restore --rev HEAD~3 -o ../whole.st -f model.safetensors");
  CHECK_MESSAGE(whole.code == 0, whole.err);
  CHECK(StoreBytes(repo, "../clone/.git") > stored);
  // show describes the stored chain of a version: fetched where missing.
  const Run shown = repo.Sh("cd ../clone && git zipnn show HEAD~2:model.safetensors");
  CHECK_MESSAGE(shown.code == 0, shown.err);
  CHECK(shown.out.find("base ") != std::string::npos);
  CHECK(shown.out.find("kind         ") != std::string::npos);
}

TEST_CASE("a read by parts asks the server for no byte twice: a chunk that begins with the header comes once") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  UseBoth(repo, server);
  // fp32 saves (the CNN's weights 8 times over): the first chunk's first
  // bytes come in the window that brings the header, the rest after it.
  CommitTiled(repo, "cnn-fp32", {"000040", "000080"}, 8);
  REQUIRE(repo.Sh("git remote add origin " + server.Url("team.git") + " && git push -q origin HEAD:main").code == 0);
  // The first copy's tensors: the chunks from the first on, read one
  // after another.
  const std::string tensors = "-t 'copy0.*' -o ../";
  REQUIRE(repo.Sh("git zipnn cat HEAD~1:model.safetensors " + tensors + "here.safetensors").code == 0);
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q " + server.Url("team.git") + " clone").code == 0);
  const std::string log = "'" + repo.root() + "/lfs/log'";
  const std::string before = Trimmed(repo.Sh("wc -l < " + log).out);
  const Run read = repo.Sh("cd ../clone && git zipnn cat HEAD~1:model.safetensors " + tensors +
                           "there.safetensors && cmp ../here.safetensors ../there.safetensors");
  CHECK_MESSAGE(read.code == 0, read.err);
  const std::string ranges = "tail -n +$((" + before + " + 1)) " + log + " | grep '^range '";
  INFO(repo.Sh(ranges).out);
  CHECK(repo.Sh(ranges + " | wc -l").out != "0\n");
  const Run overlaps = repo.Sh(ranges +
                               " | sort -k2,2 -k3,3n | awk '{ if ($2 == oid && $3 < end) print; "
                               "if ($2 != oid) { oid = $2; end = $4 } else if ($4 > end) end = $4 }'");
  CHECK_MESSAGE(overlaps.out.empty(), overlaps.out);
  // An -o file there already is refused before the server is asked.
  const std::string asked = Trimmed(repo.Sh("wc -l < " + log).out);
  const Run exists = repo.Sh("cd ../clone && git zipnn cat HEAD~1:model.safetensors " + tensors + "there.safetensors");
  CHECK(exists.code != 0);
  CHECK(exists.err.find("there.safetensors exists; cat does not write over it") != std::string::npos);
  CHECK(Trimmed(repo.Sh("wc -l < " + log).out) == asked);
}

TEST_CASE("a version that takes tensors from others besides its base is read by parts too, each version once") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  UseBoth(repo, server);
  // Five steps of the real CNN's fp32 run, each its weights 8 times over
  // (1.9 MB), saved as five shards, and all five in one consolidated file
  // under other names: its parent is one shard, and it takes most of the
  // rest from others (object format 8).
  const std::string steps[] = {"040", "080", "120", "160", "200"};
  std::string save = "mkdir -p hf/original && ";
  std::string consolidated = "python3 '" + repo.Runfile("tests/rename_tensors.py") + "' ../t1 " +
                             "hf/original/consolidated.safetensors s1. --upper";
  for (int k = 1; k <= 5; ++k) {
    const std::string tiled = "../t" + std::to_string(k);
    save += "python3 '" + repo.Runfile("tests/bench/tile_checkpoint.py") + "' '" +
            repo.Data("cnn-fp32/step-000" + steps[k - 1] + ".safetensors") + "' 8 " + tiled + " >/dev/null && cp " +
            tiled + " hf/model-0000" + std::to_string(k) + "-of-00005.safetensors && ";
    if (k > 1) consolidated += " --append " + tiled + ":s" + std::to_string(k) + ".";
  }
  save += consolidated + " && git add hf && git commit -qm save";
  const Run saved = repo.Sh(
      "git zipnn track 'hf/**/*.safetensors' >/dev/null && git add .gitattributes && git commit -qm track && " + save);
  REQUIRE_MESSAGE(saved.code == 0, saved.err);
  const Run show = repo.Sh("git zipnn show HEAD:hf/original/consolidated.safetensors");
  // S4_* among them, from a shard stored as a delta of another.
  REQUIRE_MESSAGE(show.out.find(" more versions, marked ref)") != std::string::npos, show.out);
  REQUIRE_MESSAGE(show.out.find("taken from hf/model-00004-of-00005.safetensors") != std::string::npos, show.out);
  REQUIRE(repo.Sh("git remote add origin " + server.Url("team.git") + " && git push -q origin HEAD:main").code == 0);
  // Tensors of each shard, under the consolidated file's names.
  const std::string tensors = "-t S1_COPY0_FC1_WEIGHT -t S4_COPY7_FC2_BIAS -o ../";
  REQUIRE(repo.Sh("git zipnn cat HEAD:hf/original/consolidated.safetensors " + tensors + "here.safetensors").code == 0);

  // A clone with pointers only: every object is on the server.
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q " + server.Url("team.git") + " clone").code == 0);
  const uint64_t stored = StoreBytes(repo, "../clone/.git");
  const uint64_t sent = server.BytesSent();
  const std::string log = "'" + repo.root() + "/lfs/log'";
  const std::string before = Trimmed(repo.Sh("wc -l < " + log).out);
  const Run read = repo.Sh("cd ../clone && git zipnn cat HEAD:hf/original/consolidated.safetensors " + tensors +
                           "there.safetensors && cmp ../here.safetensors ../there.safetensors");
  CHECK_MESSAGE(read.code == 0, read.err);
  // Parts came, not the objects (what the store here holds of them), no
  // byte twice, and nothing was stored.
  const uint64_t came = server.BytesSent() - sent;
  const uint64_t objects = StoreBytes(repo, ".git");
  MESSAGE("read by parts: " << came << " bytes of " << objects);
  CHECK(objects > 5000000);
  CHECK(came > 0);
  CHECK(came * 4 < objects);
  CHECK(StoreBytes(repo, "../clone/.git") == stored);
  const std::string ranges = "tail -n +$((" + before + " + 1)) " + log + " | grep '^range '";
  INFO(repo.Sh(ranges).out);
  // The consolidated file's object and the shards' it takes the two
  // tensors from were read.
  CHECK(std::stoi(Trimmed(repo.Sh(ranges + " | cut -d' ' -f2 | sort -u | wc -l").out)) >= 3);
  const Run overlaps = repo.Sh(ranges +
                               " | sort -k2,2 -k3,3n | awk '{ if ($2 == oid && $3 < end) print; "
                               "if ($2 != oid) { oid = $2; end = $4 } else if ($4 > end) end = $4 }'");
  CHECK_MESSAGE(overlaps.out.empty(), overlaps.out);
}

TEST_CASE("cat by parts from a server without ranges fetches whole objects; from one that lies, nothing") {
  for (const std::string mode : {"noranges", "forge"}) {
    CAPTURE(mode);
    Repo repo;
    LfsServer honest(repo, "honest", "honest");
    honest.AddRepository("team.git");
    UseBoth(repo, honest);
    CommitTrajectory(repo);
    REQUIRE(repo.Sh("git remote add origin " + honest.Url("team.git") +
                    " && git push -q origin HEAD:main && "
                    "git zipnn cat HEAD~3:model.safetensors -t fc1.weight -o ../here.safetensors")
                .code == 0);
    REQUIRE(repo.Sh("cd .. && git clone -q " + honest.Url("team.git") + " clone").code == 0);
    // The same repository, served by a server of `mode`.
    LfsServer server(repo, mode, "other");
    REQUIRE(repo.Sh("cp -a '" + honest.root() + "/team.git' '" + server.root() +
                    "/' && cd ../clone && "
                    "git remote set-url origin " +
                    server.Url("team.git") +
                    " && "
                    "git config --global credential.helper 'store --file=" +
                    repo.root() +
                    "/other-credentials' && "
                    "printf '%s\\n' '" +
                    server.CredentialLine() + "' > '" + repo.root() + "/other-credentials'")
                .code == 0);
    const uint64_t stored = StoreBytes(repo, "../clone/.git");
    const Run cat =
        repo.Sh("cd ../clone && git zipnn cat HEAD~3:model.safetensors -t fc1.weight -o ../there.safetensors");
    if (mode == "noranges") {
      CHECK_MESSAGE(cat.code == 0, cat.err);
      CHECK(repo.Sh("cmp ../here.safetensors ../there.safetensors").code == 0);
      CHECK(Count(server.Requests(), " 206\n") == 0);
      CHECK(StoreBytes(repo, "../clone/.git") > stored);  // what came was proven and stored
    } else {
      CHECK(cat.code != 0);
      // Bytes that are no object, named with the server.
      CHECK_MESSAGE(
          cat.err.find("on " + server.Url("team.git") + "/info/lfs: not a git-zipnn object") != std::string::npos,
          cat.err);
      CHECK(StoreBytes(repo, "../clone/.git") == stored);
      CHECK(repo.Sh("test -e ../there.safetensors").code != 0);
    }
  }
}

TEST_CASE("a download cut short resumes where it stopped, in the same fetch or the next; kept bytes are proven too; a whole one is not fetched again") {
  Repo repo;
  LfsServer server(repo, "cut");  // every download from byte 0 ends at half
  server.AddRepository("team.git");
  UseBoth(repo, server);
  REQUIRE(repo.Sh("git zipnn track '*.bin' >/dev/null && head -c 3000000 /dev/urandom > big.bin && git add -A && "
                  "git commit -qm big && git remote add origin " +
                  server.Url("team.git") + " && git push -q origin HEAD:main")
              .code == 0);
  const std::string oid = Trimmed(repo.Sh("cd '" + server.root() + "/team.git/lfs-objects' && ls */*/*").out).substr(6);
  REQUIRE(oid.size() == 64);
  const std::string get = "GET /team.git/info/lfs/objects/" + oid;
  const std::string partial = "../clone/.git/zipnn/tmp/lfs-partial/" + oid;
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q " + server.Url("team.git") + " clone").code == 0);

  // Cut at half, the fetch asks again for the rest only (206) and the
  // object is whole; nothing is left behind.
  const Run fetched = repo.Sh("cd ../clone && git zipnn fetch");
  CHECK_MESSAGE(fetched.code == 0, fetched.err);
  CHECK(Count(server.Requests(), get + " cut\n") == 1);
  CHECK(Count(server.Requests(), get + " 206\n") == 1);
  CHECK(repo.Sh("test -e " + partial).code != 0);
  REQUIRE(repo.Sh("cd ../clone && git zipnn pull -q && cmp big.bin ../repo/big.bin").code == 0);

  // What a killed fetch left is used by the next process: only the rest
  // comes down.
  const std::string kept = "head -c 2000000 '" + server.ObjectPath("team.git", oid) + "' > ";
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q " + server.Url("team.git") + " again && mkdir -p " +
                  "again/.git/zipnn/tmp/lfs-partial && " + kept + "again/.git/zipnn/tmp/lfs-partial/" + oid)
              .code == 0);
  REQUIRE(repo.Sh("cd ../again && git zipnn pull -q && cmp big.bin ../repo/big.bin").code == 0);
  CHECK(Count(server.Requests(), get + " cut\n") == 1);  // no new download from byte 0
  CHECK(Count(server.Requests(), get + " 206\n") == 2);

  // Kept bytes that are not the object's are caught as any received bytes
  // are (here its header, before the rest is asked for; else once it fails
  // to decode to its id) and thrown away; the fetch tries again from the
  // first byte (cut, then resumed).
  REQUIRE(
      repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q " + server.Url("team.git") + " third && mkdir -p " +
              "third/.git/zipnn/tmp/lfs-partial && head -c 2000000 /dev/urandom > third/.git/zipnn/tmp/lfs-partial/" +
              oid)
          .code == 0);
  const Run again = repo.Sh("cd ../third && git zipnn fetch");
  CHECK_MESSAGE(again.code == 0, again.err);
  CHECK(Count(server.Requests(), get + " cut\n") == 2);
  CHECK(Count(server.Requests(), get + " 206\n") == 3);
  CHECK(repo.Sh("test -e ../third/.git/zipnn/tmp/lfs-partial/" + oid).code != 0);
  CHECK(repo.Sh("cd ../third && git zipnn pull -q && cmp big.bin ../repo/big.bin").code == 0);

  // An object whole where it came in (a fetch stopped after it came, before
  // it took its name; served_test shows the stop keeps it): the next fetch
  // downloads nothing, and the object takes its name from that file.
  const std::string whole = "cp '" + server.ObjectPath("team.git", oid) + "' ";
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q " + server.Url("team.git") + " fourth && mkdir -p " +
                  "fourth/.git/zipnn/tmp/lfs-partial && " + whole + "fourth/.git/zipnn/tmp/lfs-partial/" + oid)
              .code == 0);
  const size_t gets = Count(server.Requests(), get);
  const Run fourth = repo.Sh("cd ../fourth && git zipnn fetch");
  CHECK_MESSAGE(fourth.code == 0, fourth.err);
  CHECK(Count(server.Requests(), get) == gets);
  CHECK(repo.Sh("ls ../fourth/.git/zipnn/tmp/lfs-partial").out.empty());
  CHECK(repo.Sh("cd ../fourth && git zipnn pull -q && cmp big.bin ../repo/big.bin && git zipnn fsck").code == 0);
}

// team.git on `server`, which `repo` tracks *.safetensors in and pushed
// to, and a clone of it beside `repo` for each of `clones`.
void StartTeam(Repo& repo, LfsServer& server, const std::vector<std::string>& clones) {
  server.AddRepository("team.git");
  UseBoth(repo, server);
  REQUIRE(repo.Sh("git zipnn track '*.safetensors' >/dev/null && git add .gitattributes && git commit -qm setup && "
                  "git remote add origin " +
                  server.Url("team.git") + " && git push -q origin HEAD:main")
              .code == 0);
  for (const std::string& c : clones) {
    REQUIRE(repo.Sh("cd .. && git clone -q " + server.Url("team.git") + " " + c).code == 0);
  }
}

TEST_CASE("two clones that push the map one after the other, or at once, lose no version of it") {
  Repo repo;
  LfsServer server(repo);
  StartTeam(repo, server, {"a", "b", "c", "d"});
  auto save = [&](const std::string& clone, const std::string& step) {
    REQUIRE(repo.Sh("cd ../" + clone + " && git checkout -q -b " + clone + " && cp '" +
                    repo.Data("cnn-bf16/step-" + step + ".safetensors") + "' " + clone +
                    ".safetensors && git add . && git commit -qm " + clone)
                .code == 0);
  };
  save("a", "000040");
  save("b", "000080");
  save("c", "000120");
  save("d", "000160");
  // b pushes after a, from a map that has not seen a's: its push of the
  // map is refused, so it merges a's and pushes again.
  REQUIRE(repo.Sh("cd ../a && git push -q origin a").code == 0);
  const Run b = repo.Sh("cd ../b && git push -q origin b");
  REQUIRE_MESSAGE(b.code == 0, b.err);
  const std::string on_server = "git --git-dir='" + server.root() + "/team.git' ";
  CHECK(repo.Sh(on_server + "ls-tree -r --name-only refs/zipnn/objects | wc -l").out == "2\n");  // both
  CHECK(repo.Sh(on_server + "rev-list --count refs/zipnn/objects").out == "1\n");                // one commit holds all
  // c and d at the same time.
  // (In braces: Sh's line begins with "cd ... &&", which a bare "&" would
  // send to the background with the first push.)
  const Run both = repo.Sh(
      "{ (cd ../c && git push -q origin c > ../c.log 2>&1; echo c $? >> ../c.log) & c=$!; "
      "(cd ../d && git push -q origin d > ../d.log 2>&1; echo d $? >> ../d.log) & d=$!; wait $c $d; } && "
      "grep -qx 'c 0' ../c.log && grep -qx 'd 0' ../d.log");
  CHECK_MESSAGE(both.code == 0, repo.Sh("cat ../c.log ../d.log").out);
  CHECK(
      repo.Sh("git --git-dir='" + server.root() + "/team.git' ls-tree -r --name-only refs/zipnn/objects | wc -l").out ==
      "4\n");
  // A fresh clone finds every one through the map it fetches.
  const Run fresh = repo.Sh("cd .. && git clone -q " + server.Url("team.git") +
                            " fresh && cd fresh && for c in a b c d; do git checkout -q origin/$c -- $c.safetensors "
                            "|| exit 1; done");
  REQUIRE_MESSAGE(fresh.code == 0, fresh.err);
  const char* steps[] = {"000040", "000080", "000120", "000160"};
  const char* names[] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; ++i) {
    CHECK(repo.Sh(std::string("cmp ../fresh/") + names[i] + ".safetensors '" +
                  repo.Data(std::string("cnn-bf16/step-") + steps[i] + ".safetensors") + "'")
              .code == 0);
  }
}

TEST_CASE(
    "a server that refuses git-zipnn's refs, or a lock left on the map, stops the push in words that say so; no branch "
    "lands") {
  Repo repo;
  LfsServer server(repo);
  StartTeam(repo, server, {});
  const std::string hook = server.root() + "/team.git/hooks/pre-receive";
  REQUIRE(repo.Sh("printf '#!/bin/sh\\nwhile read old new ref; do case $ref in refs/zipnn/*) "
                  "echo \"refs/zipnn is closed here\" >&2; exit 1;; esac; done\\n' > '" +
                  hook + "' && chmod +x '" + hook + "'")
              .code == 0);
  REQUIRE(repo.Sh("cp '" + repo.Data("cnn-bf16/step-000040.safetensors") + "' model.safetensors && git add . && " +
                  "git commit -qm save")
              .code == 0);
  const std::string before = repo.Sh("git ls-remote origin refs/heads/main").out;
  const Run refused = repo.Sh("git push -q origin HEAD:main");
  CHECK(refused.code != 0);
  CHECK(refused.err.find("refs/zipnn is closed here") != std::string::npos);
  CHECK(refused.err.find("[remote rejected]") != std::string::npos);
  CHECK(refused.err.find("kept landing first") == std::string::npos);
  CHECK(repo.Sh("git ls-remote origin refs/heads/main").out == before);
  // A lock left on the local map by a killed command is named (a new
  // version, so that the push has a record to write).
  REQUIRE(repo.Sh("rm '" + hook + "' && : > .git/refs/zipnn/objects.lock && cp '" +
                  repo.Data("cnn-bf16/step-000080.safetensors") + "' model.safetensors && git commit -qam more")
              .code == 0);
  const Run locked = repo.Sh("git push -q origin HEAD:main");
  CHECK(locked.code != 0);
  CHECK(locked.err.find("/.git/refs/zipnn/objects.lock is there: ") != std::string::npos);
  CHECK(repo.Sh("git ls-remote origin refs/heads/main").out == before);
  // Once the lock is gone and the server takes the refs, the same push
  // goes through.
  REQUIRE(repo.Sh("rm .git/refs/zipnn/objects.lock").code == 0);
  const Run again = repo.Sh("git push -q origin HEAD:main");
  CHECK_MESSAGE(again.code == 0, again.err);
  CHECK(repo.Sh("git ls-remote origin refs/zipnn/objects | grep -c objects").out == "1\n");
}

TEST_CASE("a push sends what the map here does not name without fetching the map first; Git LFS's hook runs only where it holds files") {
  Repo repo;
  LfsServer server(repo);
  // Clones with no hook of Git LFS's own (its filter is configured, as
  // after `git lfs install`, but it tracks nothing there).
  StartTeam(repo, server, {"a", "other"});
  const size_t locks = Count(server.Requests(), "/locks");
  auto save = [&](const std::string& clone, const std::string& step) {
    const Run saved = repo.Sh("cd ../" + clone + " && cp '" + repo.Data("cnn-bf16/step-" + step + ".safetensors") +
                              "' model.safetensors && git add model.safetensors && git commit -qm " + step);
    REQUIRE_MESSAGE(saved.code == 0, saved.err);
  };
  const std::string fetches = "POST /team.git/git-upload-pack";
  save("a", "000040");
  REQUIRE(repo.Sh("cd ../a && git push -q origin main").code == 0);
  save("a", "000080");
  const size_t before = Count(server.Requests(), fetches);
  const Run pushed = repo.Sh("cd ../a && git push -q origin main");
  REQUIRE_MESSAGE(pushed.code == 0, pushed.err);
  CHECK(Count(server.Requests(), fetches) == before);  // the map as this clone last pushed it was enough
  CHECK(ServerObjects(repo, server, "team.git") == 2);

  // A clone that never fetched the map (it cloned before those saves and
  // checked out none of them) pulls the commits alone, then pushes what
  // every commit needs: the store here lacks those versions, so the
  // remote itself is asked, and nothing is sent again.
  const Run pulled = repo.Sh("cd ../other && GIT_ZIPNN_SKIP_SMUDGE=1 git pull -q origin main && "
                             "git zipnn push -q origin --all");
  REQUIRE_MESSAGE(pulled.code == 0, pulled.err);
  CHECK(ServerObjects(repo, server, "team.git") == 2);
  CHECK(Count(server.Requests(), "PUT /team.git/info/lfs/objects/") == 2);

  // A save made there while the map there is stale goes up, and the map
  // the server keeps holds every version of both clones.
  REQUIRE(repo.Sh("cd ../other && git checkout -q main").code == 0);
  save("other", "000120");
  const Run other_push = repo.Sh("cd ../other && git push -q origin main");
  REQUIRE_MESSAGE(other_push.code == 0, other_push.err);
  CHECK(repo.Sh("git --git-dir='" + server.root() + "/team.git' ls-tree -r --name-only refs/zipnn/objects | wc -l")
            .out == "3\n");

  // Git LFS's hook was not run (it would have asked the server about
  // locks); once Git LFS holds a file here, its files go with the push.
  CHECK(Count(server.Requests(), "/locks") == locks);
  const Run lfs_file = repo.Sh(
      "cd ../other && git lfs track '*.bin' >/dev/null && head -c 100000 /dev/urandom > data.bin && "
      "git add .gitattributes data.bin && git commit -qm data && git push -q origin main");
  REQUIRE_MESSAGE(lfs_file.code == 0, lfs_file.err);
  CHECK(ServerObjects(repo, server, "team.git") == 4);
  CHECK(Count(server.Requests(), "/locks") > locks);
  const Run fresh = repo.Sh("cd .. && GIT_TRACE=\"$PWD/fresh.trace\" git clone -q " + server.Url("team.git") +
                            " fresh && cmp fresh/data.bin other/data.bin && cmp fresh/model.safetensors '" +
                            repo.Data("cnn-bf16/step-000120.safetensors") + "'");
  CHECK_MESSAGE(fresh.code == 0, fresh.err);
  // The checkout took the map and the listings in one git fetch: the
  // listings' fetch beside the object brings the map the object is found
  // through, and the lookup waiting for it does not fetch again.
  const Run ref_fetches = repo.Sh("grep -c 'built-in: git fetch .*refs/zipnn/' ../fresh.trace");
  CHECK(ref_fetches.out == "1\n");
}

TEST_CASE(
    "a push the host cuts short records no object above one that did not go up; the next sends only what is missing") {
  Repo repo;
  LfsServer server(repo);
  StartTeam(repo, server, {});
  const std::vector<std::string> steps = {"000040", "000080", "000120"};
  for (const std::string& step : steps) {
    const Run saved = repo.Sh("cp '" + repo.Data("cnn-bf16/step-" + step + ".safetensors") +
                              "' model.safetensors && git add model.safetensors && git commit -qm " + step);
    REQUIRE_MESSAGE(saved.code == 0, saved.err);
  }
  // The first save is a base, the second a delta of it, the third whole.
  auto id_of = [&](const std::string& rev) {
    return repo.Sh("git show " + rev + ":model.safetensors | grep -o '[0-9a-f]\\{32\\}' | head -1").out.substr(0, 32);
  };
  const std::string first = id_of("HEAD~2"), second = id_of("HEAD~1");
  const std::string object = ".git/zipnn/objects/" + first.substr(0, 2) + "/" + first.substr(2, 2) + "/" + first;
  REQUIRE(repo.Sh("sha256sum " + object + " | cut -c1-64 > '" + server.root() + "/../refuse'").code == 0);

  // Every level goes up at once: the delta's bytes reach the server while
  // its base is refused, but nothing is recorded above the base, so no
  // push or teammate takes the delta for a version the host can serve.
  const Run cut = repo.Sh("git push -q origin HEAD:main");
  CHECK_MESSAGE(cut.code != 0, cut.err);
  CHECK_MESSAGE(cut.err.find("the disk is full") != std::string::npos, cut.err);
  CHECK(ServerObjects(repo, server, "team.git") == 2);
  const std::string recorded = repo.Sh("git ls-tree -r --name-only refs/zipnn/objects").out;
  CHECK(recorded.find(first) == std::string::npos);
  CHECK(recorded.find(second) == std::string::npos);

  // The host takes it again: the next push sends the base alone (the
  // server holds the rest), records all three, and a clone restores each.
  REQUIRE(repo.Sh("rm '" + server.root() + "/../refuse'").code == 0);
  const size_t puts = Count(server.Requests(), "PUT /team.git/info/lfs/objects/");
  const Run pushed = repo.Sh("git push -q origin HEAD:main");
  REQUIRE_MESSAGE(pushed.code == 0, pushed.err);
  CHECK(Count(server.Requests(), "PUT /team.git/info/lfs/objects/") == puts + 1);
  CHECK(ServerObjects(repo, server, "team.git") == 3);
  REQUIRE(repo.Sh("cd .. && git clone -q " + server.Url("team.git") + " fresh").code == 0);
  for (size_t back = 0; back < steps.size(); ++back) {
    const Run restored = repo.Sh(
        "cd ../fresh && git checkout -q HEAD~" + std::to_string(back) + " && cmp model.safetensors '" +
        repo.Data("cnn-bf16/step-" + steps[steps.size() - 1 - back] + ".safetensors") + "' && git checkout -q -");
    CHECK_MESSAGE(restored.code == 0, restored.err);
  }
}

TEST_CASE("a repository with Git LFS files and checkpoints on one server: both go up with one push and come back") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  UseBoth(repo, server);
  const Run added = repo.Sh(
      "git lfs track '*.bin' >/dev/null && git zipnn track '*.safetensors' >/dev/null && "
      "head -c 200000 /dev/urandom > data.bin && cp '" +
      repo.Data("cnn-bf16/step-000040.safetensors") + "' model.safetensors && git add -A && git commit -qm both");
  REQUIRE(added.code == 0);
  const Run pushed = repo.Sh("git remote add origin " + server.Url("team.git") + " && git push -q origin HEAD:main");
  REQUIRE_MESSAGE(pushed.code == 0, pushed.err);
  CHECK(ServerObjects(repo, server, "team.git") == 2);
  const Run cloned = repo.Sh("cd .. && git clone -q " + server.Url("team.git") +
                             " clone && cmp clone/data.bin repo/data.bin && cmp clone/model.safetensors "
                             "repo/model.safetensors && cd clone && git lfs fsck && git lfs prune && git zipnn fsck");
  const std::string said = cloned.out + cloned.err;
  CHECK_MESSAGE(cloned.code == 0, said);
  // Whichever filter set up the clone's hooks first, git-zipnn's hook is
  // there and sends Git LFS's files too: no warning.
  CHECK(cloned.err.find("another program's pre-push hook") == std::string::npos);
  // From the clone, a new save of each kind goes up with one push.
  const Run again = repo.Sh("cd ../clone && head -c 1000 /dev/urandom > more.bin && cp '" +
                            repo.Data("cnn-bf16/step-000080.safetensors") +
                            "' model.safetensors && git add -A && git commit -qm more && git push -q");
  REQUIRE_MESSAGE(again.code == 0, again.err);
  CHECK(ServerObjects(repo, server, "team.git") == 4);
}

// A clone of `server`'s team.git with one checkpoint pushed to it and
// none of its objects (fetch brings them): for the tests of what a
// client does with what the server answers next.
void PushedAndCloned(Repo& repo, LfsServer& server) {
  server.AddRepository("team.git");
  UseBoth(repo, server);
  REQUIRE(repo.Sh("git zipnn track '*.safetensors' >/dev/null && cp '" + repo.Data("cnn-bf16/step-000040.safetensors") +
                  "' model.safetensors && git add -A && git commit -qm one && git remote add origin " +
                  server.Url("team.git") + " && git push -q origin HEAD:main")
              .code == 0);
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q " + server.Url("team.git") + " clone").code == 0);
}

TEST_CASE("a push where the host answers no Git LFS API stops, and says how to keep checkpoints elsewhere") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  UseBoth(repo, server);
  // The git remote's host serves git, and answers 404 where its Git LFS
  // API would be (as a host without Git LFS does).
  REQUIRE(repo.Sh("git zipnn track '*.safetensors' >/dev/null && cp '" + repo.Data("cnn-bf16/step-000040.safetensors") +
                  "' model.safetensors && git add -A && git commit -qm one && git remote add origin " +
                  server.Url("team.git") + " && git config remote.origin.lfsurl " + server.Url("nosuch.git") +
                  "/info/lfs")
              .code == 0);
  const Run push = repo.Sh("git push -q origin HEAD:main");
  CHECK(push.code != 0);
  CHECK_MESSAGE(push.err.find("HTTP 404") != std::string::npos, push.err);
  CHECK_MESSAGE(push.err.find("(origin answers no Git LFS API there: if its host serves none, keep the checkpoints "
                              "elsewhere with `git config remote.origin.zipnnurl <folder, ssh:// or s3:// URL>`)") !=
                    std::string::npos,
                push.err);
  CHECK(push.err.find("git push stopped so that no pointer reaches origin") != std::string::npos);
  CHECK(repo.Sh("git ls-remote origin refs/heads/main").out.empty());
  // So kept, the push goes through.
  REQUIRE(repo.Sh("mkdir ../objects && git config remote.origin.zipnnurl ../objects && git push -q origin HEAD:main")
              .code == 0);
}

TEST_CASE("a checkout while the Git LFS server fails leaves pointers and a clean index, and pull finishes it later") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  UseBoth(repo, server);
  CommitTrajectory(repo);
  REQUIRE(repo.Sh("cp '" + repo.Data("cnn-fp32/step-000040.safetensors") +
                  "' other.safetensors && git add other.safetensors && git commit -qm other && git remote add origin " +
                  server.Url("team.git") + " && git push -q origin HEAD:main")
              .code == 0);
  // git's own smart HTTP still answers; the LFS API answers 500.
  server.SetMode("error500");
  const Run cloned = repo.Sh("cd .. && git clone -q " + server.Url("team.git") + " down");
  CHECK_MESSAGE(cloned.code == 0, cloned.err);
  CHECK(cloned.err.find("fatal") == std::string::npos);
  CHECK(cloned.err.find("model.safetensors: cannot fetch object " + IdAt(repo, "HEAD:model.safetensors")) !=
        std::string::npos);
  CHECK(cloned.err.find("HTTP 500") != std::string::npos);
  CHECK(cloned.err.find("; it is left as its pointer, and so is every other checkpoint of this checkout that the "
                        "store here lacks (the remote is not asked again)") != std::string::npos);
  // The other was not asked for: the remote had failed already.
  CHECK(cloned.err.find("git-zipnn: warning: other.safetensors is left as its pointer (the store here lacks its "
                        "objects)") != std::string::npos);
  CHECK(cloned.err.find("git-zipnn: 2 checkpoints are left as their pointers because the remote could not give "
                        "their objects (see above); once it can, `git zipnn pull` writes them (`git zipnn status` "
                        "lists them)") != std::string::npos);
  // A usable work tree: every file there, the index that of HEAD, the
  // checkpoints as their pointers, which status names.
  CHECK(repo.Sh("cd ../down && git status --porcelain").out.empty());
  CHECK(repo.Sh("cmp ../down/.zipnn.yaml .zipnn.yaml").code == 0);
  for (const char* file : {"model.safetensors", "other.safetensors"}) {
    CHECK(repo.Sh("cd ../down && git show HEAD:" + std::string(file) + " | cmp - " + file).code == 0);
  }
  const Run status = repo.Sh("cd ../down && git zipnn status");
  CHECK(status.out.find("Checkpoints the work tree holds as their pointers (git zipnn pull writes them):\n"
                        "        model.safetensors\n        other.safetensors\n") != std::string::npos);
  // Other commits check out as well while it is down, and back.
  const Run back = repo.Sh("cd ../down && git checkout -q HEAD~2 && git checkout -q main && git status --porcelain");
  CHECK_MESSAGE(back.code == 0, back.err);
  CHECK(back.out.empty());
  CHECK(back.err.find("git-zipnn: 1 checkpoint is left as its pointer") != std::string::npos);

  // Once the server answers, pull writes them, exact.
  server.SetMode("honest");
  const Run pulled = repo.Sh("cd ../down && git zipnn pull -q && git status --porcelain");
  CHECK_MESSAGE(pulled.code == 0, pulled.err);
  CHECK(pulled.out.empty());
  CHECK(repo.Sh("cmp ../down/model.safetensors model.safetensors && cmp ../down/other.safetensors other.safetensors")
            .code == 0);
}

TEST_CASE("retain where the remote is a Git LFS host says at once it frees space here only; reads do not undo it") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  UseBoth(repo, server);
  CommitTrajectory(repo);  // five saves of model.safetensors
  REQUIRE(repo.Sh("printf 'base_interval: 5\\nretention:\\n  - checkpoints: model.safetensors\\n    keep_newest: 1\\n"
                  "    rest: drop\\n' > .zipnn.yaml && git commit -qam rules && git remote add origin " +
                  server.Url("team.git") + " && git push -q -u origin HEAD:main")
              .code == 0);
  const std::string oldest = repo.Sh("git rev-list HEAD | sed -n 6p").out.substr(0, 40);
  auto objects = [&] { return repo.Sh("find .git/zipnn/objects -type f -path '*/??/??/*' ! -name '*.*' | wc -l").out; };

  // Said before the plan, in the dry run as in the real one.
  const Run planned = repo.Sh("git zipnn retain --dry-run");
  REQUIRE_MESSAGE(planned.code == 0, planned.err);
  const std::string note = "note: origin (the Git LFS storage of " + server.Url("team.git") +
                           ") cannot remove objects (a Git LFS server's API has no delete): this retain frees space "
                           "here only, and origin keeps the exact bytes of every version it holds. A read of a "
                           "version retained here fetches them without keeping them (`git config zipnn.keepRefetched "
                           "true` keeps them).\n";
  CHECK(planned.out.rfind(note, 0) == 0);
  const Run retained = repo.Sh("git zipnn retain --yes");
  REQUIRE_MESSAGE(retained.code == 0, retained.err);
  CHECK(retained.out.rfind(note, 0) == 0);
  CHECK(objects() == "1\n");

  // A read of a dropped version comes from the server, exact, and leaves
  // the store as retain left it; so does a checkout of it.
  const std::string first = repo.Data("cnn-bf16/step-000040.safetensors");
  const Run read = repo.Sh("git zipnn restore --rev " + oldest +
                           " -o ../read.st model.safetensors && cmp ../read.st '" + first + "'");
  CHECK_MESSAGE(read.code == 0, read.err);
  CHECK(objects() == "1\n");
  const Run checkout =
      repo.Sh("git checkout -q " + oldest + " && cmp model.safetensors '" + first + "' && git checkout -q main");
  CHECK_MESSAGE(checkout.code == 0, checkout.err);
  CHECK(objects() == "1\n");
  CHECK(repo.Sh("find .git/zipnn/tmp -name 'refetch-*' | wc -l").out == "0\n");
  // A server that fails then is said to fail: the bytes are not gone.
  server.SetMode("error500");
  const Run failing = repo.Sh("git zipnn restore --rev " + oldest + " -o ../failing.st model.safetensors");
  CHECK(failing.code != 0);
  CHECK_MESSAGE(failing.err.find("here, and the remote that keeps its exact bytes could not give them: ") !=
                    std::string::npos,
                failing.err);
  CHECK(failing.err.find("no longer kept") == std::string::npos);
  CHECK(repo.Sh("test -e ../failing.st").code != 0);
  server.SetMode("honest");
  // Asked to, a read keeps what it fetched.
  REQUIRE(repo.Sh("git config zipnn.keepRefetched true").code == 0);
  CHECK(repo.Sh("git zipnn retain --dry-run").out.find("fetches them and keeps them here again") != std::string::npos);
  REQUIRE(repo.Sh("git zipnn restore --rev " + oldest + " -o ../again.st model.safetensors && cmp ../again.st '" +
                  first + "'")
              .code == 0);
  CHECK(objects() == "2\n");
}

TEST_CASE("a Git LFS server's links are followed over http(s) only: a file link is refused, nothing written or read") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  UseBoth(repo, server);
  REQUIRE(repo.Sh("printf 'precious\\n' > '" + server.Victim() + "'").code == 0);
  REQUIRE(repo.Sh("git zipnn track '*.safetensors' >/dev/null && cp '" + repo.Data("cnn-bf16/step-000040.safetensors") +
                  "' model.safetensors && git add -A && git commit -qm one && git remote add origin " +
                  server.Url("team.git"))
              .code == 0);
  // An upload link of file://<victim>: the object is not written over
  // it; the push fails, naming the remote, the object and the link.
  server.SetMode("filelinks");
  const Run pushed = repo.Sh("timeout 60 git zipnn push origin");
  CHECK(pushed.code == 1);
  CHECK(repo.Sh("cat '" + server.Victim() + "'").out == "precious\n");
  const std::string api = server.Url("team.git") + "/info/lfs";
  CHECK_MESSAGE(pushed.err.find("cannot send object ") != std::string::npos, pushed.err);
  CHECK_MESSAGE(
      pushed.err.find(" to " + api + ": " + api + " gave an upload link for LFS object ") != std::string::npos,
      pushed.err);
  CHECK(pushed.err.find("that is not http or https (file://" + server.Victim() +
                        "): refused, nothing was sent to it or read from it") != std::string::npos);
  // A download link of file:///dev/zero: refused at once, not read for ever.
  server.SetMode("honest");
  REQUIRE(repo.Sh("git push -q origin HEAD:main").code == 0);
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q " + server.Url("team.git") + " clone").code == 0);
  server.SetMode("filelinks");
  const Run fetched = repo.Sh("cd ../clone && GIT_ZIPNN_TIMEOUT=3 timeout 60 git zipnn fetch");
  CHECK(fetched.code == 1);
  CHECK_MESSAGE(fetched.err.find("gave a download link for LFS object ") != std::string::npos, fetched.err);
  CHECK(fetched.err.find("(file:///dev/zero): refused") != std::string::npos);
  CHECK(repo.Sh("find ../clone/.git/zipnn/objects -type f -path '*/?\?/?\?/*' ! -name '*.base' | grep -q .").code != 0);
  // The server honest again, the same clone restores bit-exact.
  server.SetMode("honest");
  const Run pulled = repo.Sh("cd ../clone && git zipnn pull -q && cmp model.safetensors ../repo/model.safetensors");
  CHECK_MESSAGE(pulled.code == 0, pulled.err);
  // An endpoint set to another scheme is refused, naming the remote.
  const Run endpoint = repo.Sh("git -c remote.origin.lfsurl=file://" + server.Victim() + " zipnn push origin");
  CHECK(endpoint.code == 1);
  CHECK_MESSAGE(endpoint.err.find("the Git LFS endpoint of remote origin is file://" + server.Victim() +
                                  ", not an http or https URL: set remote.origin.lfsurl (or lfs.url) to the https "
                                  "URL of its LFS API") != std::string::npos,
                endpoint.err);
  CHECK(repo.Sh("cat '" + server.Victim() + "'").out == "precious\n");
}

TEST_CASE("a Git LFS server that drips, floods or redirects is left within the timeout and low-speed limit") {
  Repo repo;
  LfsServer server(repo);
  PushedAndCloned(repo, server);
  const std::string limits = "GIT_ZIPNN_TIMEOUT=3 GIT_ZIPNN_LOW_SPEED_LIMIT=100 GIT_ZIPNN_LOW_SPEED_TIME=3 ";
  // drip: the batch answer a byte each half second, for ever (above
  // curl's own floor of a byte a second); dripobject: the object so;
  // flood: the batch answer without end, fast; redirect: a download sent
  // on to file:///dev/zero.
  const std::map<std::string, std::string> says = {
      {"drip", "too slow: "},
      {"dripobject", "too slow: "},
      {"flood", "the server's answer is longer than the 4 MiB an answer may be"},
      {"redirect", ": HTTP 302 (a redirect to file:///dev/zero; git-zipnn follows no redirect from a Git LFS server"}};
  for (const auto& [mode, said] : says) {
    CAPTURE(mode);
    server.SetMode(mode);
    const Run fetched =
        repo.Sh("cd ../clone && start=$(date +%s) && " + limits +
                "timeout 60 git zipnn fetch; code=$?; echo \"took $(( $(date +%s) - start ))\" >&2; exit $code");
    CHECK(fetched.code == 1);  // not 124: timeout(1) did not have to end it
    CHECK_MESSAGE(fetched.err.find(said) != std::string::npos, fetched.err);
    CHECK(fetched.err.find("cannot fetch object ") != std::string::npos);
    const size_t took = fetched.err.find("took ");
    REQUIRE(took != std::string::npos);
    CHECK(std::stoi(fetched.err.substr(took + 5)) <= 20);
    CHECK(repo.Sh("find ../clone/.git/zipnn/objects -type f -path '*/?\?/?\?/*' ! -name '*.base' | grep -q .").code !=
          0);
  }
  // A batch request answered 503, then served: the fetch tries again and
  // restores bit-exact.
  server.SetMode("flaky");
  const Run flaky = repo.Sh("cd ../clone && " + limits +
                            "timeout 60 git zipnn pull -q && cmp model.safetensors ../repo/model.safetensors");
  CHECK_MESSAGE(flaky.code == 0, flaky.err);
  CHECK(Count(server.Requests(), "/info/lfs/objects/batch 503\n") >= 1);
}

TEST_CASE("no message or env line carries a password, token or presigned query, whatever the remote and source") {
  Repo repo;
  LfsServer server(repo);
  PushedAndCloned(repo, server);
  const std::string port = server.Url("").substr(std::string("http://127.0.0.1:").size(), 5);
  // Each remote kind with a secret where people put one: the URL's user
  // and password (or a token alone), a query, an lfsurl.
  REQUIRE(repo.Sh("cd ../clone && git remote set-url origin http://alice:" + std::string(LfsServer::kPassword) +
                  "@127.0.0.1:" + port + "/team.git" +
                  " && git remote add hub https://ghp_T0KENSECRET@hub.example/team.git"
                  " && git remote add api /srv/none"
                  " && git config remote.api.zipnnurl 'https://bob:PWSECRET@lfs.example/api?token=QUERYSECRET'"
                  " && git remote add box ssh://carol:SSHSECRET@box.invalid/srv/hub.git"
                  " && git remote add other git@other.invalid:team.git"
                  " && git config remote.other.lfsurl https://x:LFSURLSECRET@lfs.example/team.git/info/lfs"
                  " && git remote add bucket /srv/none && git config remote.bucket.zipnnurl s3://bucket/runs"
                  " && git remote add shared file:///srv/shared")
              .code == 0);
  const Run env = repo.Sh("cd ../clone && git zipnn env");
  REQUIRE(env.code == 0);
  for (const std::string secret :
       {std::string(LfsServer::kPassword), std::string("T0KENSECRET"), std::string("PWSECRET"),
        std::string("QUERYSECRET"), std::string("SSHSECRET"), std::string("LFSURLSECRET")}) {
    CAPTURE(secret);
    CHECK_MESSAGE(env.out.find(secret) == std::string::npos, env.out);
  }
  CHECK(env.out.find("origin (the default): the Git LFS storage of http://127.0.0.1:" + port + "/team.git\n") !=
        std::string::npos);
  CHECK(env.out.find("hub: the Git LFS storage of https://hub.example/team.git\n") != std::string::npos);
  CHECK(env.out.find("api: the Git LFS storage of https://lfs.example/api?token=REDACTED (remote.api.zipnnurl)\n") !=
        std::string::npos);
  CHECK(env.out.find("box: a store served over ssh by git zipnn serve-store at ssh://box.invalid/srv/hub.git\n") !=
        std::string::npos);
  CHECK(env.out.find("other: the Git LFS storage at https://lfs.example/team.git/info/lfs\n") != std::string::npos);
  CHECK(env.out.find("bucket: the S3 bucket s3://bucket/runs (remote.bucket.zipnnurl)\n") != std::string::npos);
  CHECK(env.out.find("shared: the object store of the repository at file:///srv/shared\n") != std::string::npos);

  // A download link that is presigned, cut short: curl's error names the
  // link without its query's values, nor the password in origin's URL.
  server.SetMode("signed");
  const Run cut = repo.Sh("cd ../clone && git zipnn fetch origin");
  CHECK(cut.code == 1);
  CHECK_MESSAGE(cut.err.find("?X-Amz-Algorithm=REDACTED&X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED: ") !=
                    std::string::npos,
                cut.err);
  // Refused credentials from git's helper: named by the URL only.
  server.SetMode("honest");
  const Run refused =
      repo.Sh("cd ../clone && git remote set-url origin " + server.Url("team.git") + " && printf '%s\\n' '" +
              server.CredentialLine("HELPERSECRET") + "' > ../creds && GIT_TERMINAL_PROMPT=0 git zipnn fetch origin");
  CHECK(refused.code == 1);
  CHECK_MESSAGE(refused.err.find("refused the credentials git's credential helper gave") != std::string::npos,
                refused.err);
  // None at all: a login to mend, never said as objects the remote lacks.
  const Run none = repo.Sh("cd ../clone && : > ../creds && GIT_TERMINAL_PROMPT=0 git zipnn fetch origin");
  CHECK(none.code == 1);
  CHECK_MESSAGE(none.err.find(" asks for credentials and git's credential helper has none for http://127.0.0.1:" +
                              port + "/team.git/info/lfs (") != std::string::npos,
                none.err);
  CHECK_MESSAGE(none.err.find("`git credential approve`") != std::string::npos, none.err);
  CHECK(none.err.find("is not on the remote store") == std::string::npos);
  // An ssh remote that cannot be reached: named without its password.
  const Run box = repo.Sh("cd ../clone && GIT_SSH_COMMAND=false git zipnn fetch box");
  CHECK(box.code == 1);
  CHECK_MESSAGE(box.err.find("ssh://box.invalid/srv/hub.git") != std::string::npos, box.err);
  const std::string said = cut.err + refused.err + box.err;
  for (const std::string secret : {std::string(LfsServer::kPassword), std::string("SECRETSIG"),
                                   std::string("SECRETCRED"), std::string("HELPERSECRET"), std::string("SSHSECRET")}) {
    CAPTURE(secret);
    CHECK_MESSAGE(said.find(secret) == std::string::npos, said);
  }
}

TEST_CASE("an ssh remote whose host serves Git LFS: git-lfs-authenticate says where the API is and what admits us") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  // The host's git-lfs-authenticate: the API's place and a header that
  // admits the caller, as a hosting site answers; each call is logged.
  const std::string bin = repo.root() + "/hostbin", log = repo.root() + "/authenticate.log";
  const std::string token =
      Trimmed(repo.Sh(std::string("printf '%s' '") + LfsServer::kUser + ":" + LfsServer::kPassword + "' | base64").out);
  REQUIRE(repo.Sh("mkdir -p '" + bin + "'").code == 0);
  {
    std::ofstream script(bin + "/git-lfs-authenticate");
    script << "#!/bin/sh\necho \"$@\" >> '" << log << "'\n"
           << "echo '{\"href\": \"" << server.Url("team.git") << "/info/lfs\", "
           << "\"header\": {\"Authorization\": \"Basic " << token << "\"}, \"expires_in\": 3600}'\n";
  }
  REQUIRE(repo.Sh("chmod +x '" + bin + "/git-lfs-authenticate'").code == 0);
  Sshd sshd(repo, bin);
  REQUIRE(repo.Sh("git zipnn install >/dev/null && git config --global user.email t@example.com && "
                  "git config --global user.name T")
              .code == 0);
  const std::string url = "zipnn-test:" + server.root() + "/team.git";
  REQUIRE(repo.Sh("git zipnn track '*.safetensors' >/dev/null && cp '" + repo.Data("cnn-bf16/step-000040.safetensors") +
                  "' model.safetensors && git add -A && "
                  "git commit -qm one && cp '" +
                  repo.Data("cnn-bf16/step-000080.safetensors") +
                  "' model.safetensors && git commit -qam two && git remote add origin " + url)
              .code == 0);
  // Not a known hosting site: the kind is said. A wrong one is named.
  REQUIRE(repo.Sh("git config remote.origin.zipnnkind lsf").code == 0);
  const Run wrong = repo.Sh("git zipnn push origin");
  CHECK(wrong.code != 0);
  CHECK(wrong.err.find("remote.origin.zipnnkind is \"lsf\"; it may be lfs or store") != std::string::npos);
  REQUIRE(repo.Sh("git config remote.origin.zipnnkind lfs").code == 0);
  const Run pushed = repo.Sh("git push -q origin HEAD:main");
  REQUIRE_MESSAGE(pushed.code == 0, pushed.err);
  CHECK(ServerObjects(repo, server, "team.git") == 2);
  CHECK(repo.Sh("cat '" + log + "'").out.find(server.root().substr(1) + "/team.git upload\n") != std::string::npos);
  // No credential helper was asked: the grant's header admitted us.
  CHECK(Count(server.Requests(), " 401\n") == 0);

  const Run cloned =
      repo.Sh("cd .. && git clone -q -c remote.origin.zipnnkind=lfs " + url +
              " clone && cmp clone/model.safetensors '" + repo.Data("cnn-bf16/step-000080.safetensors") + "'");
  CHECK_MESSAGE(cloned.code == 0, cloned.err);
  CHECK(repo.Sh("cat '" + log + "'").out.find(" download\n") != std::string::npos);

  // The grant's header (a token) and a presigned link are in no message
  // when a download is cut short.
  REQUIRE(
      repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q -c remote.origin.zipnnkind=lfs " + url + " bare").code ==
      0);
  server.SetMode("signed");
  const Run cut = repo.Sh("cd ../bare && git zipnn fetch");
  CHECK(cut.code == 1);
  CHECK_MESSAGE(cut.err.find("X-Amz-Signature=REDACTED") != std::string::npos, cut.err);
  CHECK(cut.err.find(token) == std::string::npos);
  CHECK(cut.err.find("SECRETSIG") == std::string::npos);
  // A git-lfs-authenticate that never answers is ended by the timeout.
  server.SetMode("honest");
  {
    std::ofstream script(bin + "/git-lfs-authenticate");
    script << "#!/bin/sh\nsleep 30\n";
  }
  const Run hung = repo.Sh(
      "cd ../bare && start=$(date +%s) && GIT_ZIPNN_TIMEOUT=2 timeout 60 git zipnn fetch; "
      "code=$?; echo \"took $(( $(date +%s) - start ))\" >&2; exit $code");
  CHECK(hung.code == 1);
  CHECK_MESSAGE(hung.err.find("git-lfs-authenticate over ssh for zipnn-test:") != std::string::npos, hung.err);
  const size_t took = hung.err.find("took ");
  REQUIRE(took != std::string::npos);
  CHECK(std::stoi(hung.err.substr(took + 5)) <= 15);
}

}  // namespace
}  // namespace zipnn::testing
