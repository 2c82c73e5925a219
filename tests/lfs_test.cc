// The Git LFS server of the tests (tests/lfs_server.py), shown to be what
// Debian's own Git LFS client expects before git-zipnn is tested against
// it: git-lfs pushes to it and clones from it bit-exact, with credentials
// from git's helpers, and it refuses what a real host refuses.
#include <doctest/doctest.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "lib/base/io.h"
#include "lib/remote/lfs.h"
#include "lib/remote/remote_store.h"
#include "lib/store/restore.h"
#include "lib/store/test_objects.h"
#include "tests/git_repo.h"
#include "tests/lfs_server.h"

namespace zipnn::testing {
namespace {

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// git-lfs installed in the test's HOME, and git's "store" helper holding
// `line` for the server.
void UseGitLfs(Repo& repo, const std::string& line) {
  REQUIRE_MESSAGE(repo.Sh("command -v git-lfs").code == 0, "git-lfs is not installed: run bash .ci/deps");
  REQUIRE(repo.Sh("git lfs install >/dev/null && printf '%s\\n' '" + line + "' > ../creds && " +
                  "git config --global credential.helper 'store --file=" + repo.root() + "/creds'")
              .code == 0);
}

// Runs a few lines of Python against the server (urllib), printing what
// they print.
Run Python(Repo& repo, const std::string& code) { return repo.Sh("python3 -c '" + code + "'"); }

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

// A map kept in memory, for the store's tests (git keeps the real one).
class MemoryMap : public lfs::ObjectMap {
 public:
  Result<std::vector<Entry>> Find(const ContentId& id) override {
    std::lock_guard<std::mutex> lock(mu_);
    const auto e = entries_.find(id);
    if (e == entries_.end()) return std::vector<Entry>{};
    return std::vector<Entry>{e->second};
  }
  Status Add(const Entry& entry) override {
    std::lock_guard<std::mutex> lock(mu_);
    entries_[entry.id] = entry;
    return OkStatus();
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.size();
  }

 private:
  std::mutex mu_;
  std::map<ContentId, Entry> entries_;
};

// Counts what the store asked of git's credential helpers.
struct Helper {
  std::string password = LfsServer::kPassword;
  int filled = 0;
  std::vector<bool> reported;
  lfs::CredentialSource Source() {
    return {[this](const std::string&) -> Result<lfs::Credential> {
              ++filled;
              return lfs::Credential{LfsServer::kUser, password};
            },
            [this](const std::string&, const lfs::Credential&, bool taken) { reported.push_back(taken); }};
  }
};

lfs::Options OptionsFor(const LfsServer& server, Helper& helper) {
  lfs::Options o;
  o.endpoint = server.Url("team.git") + "/info/lfs";
  o.credentials = helper.Source();
  o.timeout = 5;
  return o;
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
}

TEST_CASE("the LFS store refuses a server that lies or fails, and credentials it refused, naming no secret") {
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
  for (const std::string mode : {"forge", "short", "error500"}) {
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
    if (mode == "error500") CHECK(said.find("HTTP 500 (the server is having a bad day)") != std::string::npos);
  }
}

}  // namespace
}  // namespace zipnn::testing
