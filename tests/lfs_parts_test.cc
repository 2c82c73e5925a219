// Objects in parts on a Git LFS server (lib/remote/lfs.h): the test
// server's size limit and upload in chunks, shown first to be what
// Debian's git-lfs and the published protocols expect; then the store
// sending an object larger than a server takes as parts, learning the
// limit from the server's refusal, resuming by part, and reading parts
// back whole and by ranges; and the same through git.
#include <doctest/doctest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lib/base/io.h"
#include "lib/remote/lfs.h"
#include "lib/remote/remote_store.h"
#include "lib/remote/sync.h"
#include "lib/store/restore.h"
#include "lib/store/test_objects.h"
#include "tests/git_repo.h"
#include "tests/lfs_server.h"
#include "tests/lfs_testing.h"

namespace zipnn::testing {
namespace {

using store::testing::StoreData;

// `n` bytes that do not compress, the same for the same seed.
std::vector<uint8_t> Noise(size_t n, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<uint8_t> data(n);
  for (uint8_t& b : data) b = static_cast<uint8_t>(random());
  return data;
}

// A version of 300,000 bytes stored whole, and the next one (a byte in a
// thousand changed) as a delta of it: their ids.
std::pair<ContentId, ContentId> StoreBaseAndDelta(const store::Store& store) {
  const std::vector<uint8_t> base = Noise(300000, 1);
  std::vector<uint8_t> next = base;
  for (size_t i = 0; i < next.size(); i += 1000) next[i] ^= 0x55;
  const ContentId base_id = StoreData(store, base);
  return {base_id, StoreData(store, next, &base, base_id)};
}

// Commits save `step` of the real CNN as model.safetensors, its weights
// 16 times over (1.9 MB), and keeps a copy in ../<step>.
void CommitTiledSave(Repo& repo, const char* step) {
  REQUIRE(repo.Sh("python3 '" + repo.Runfile("tests/bench/tile_checkpoint.py") + "' '" +
                  repo.Data(std::string("cnn-bf16/step-") + step + ".safetensors") +
                  "' 16 model.safetensors >/dev/null && cp model.safetensors ../" + step +
                  " && git add model.safetensors && git commit -qm " + step)
              .code == 0);
}

std::string Sha256Of(Repo& repo, const std::string& path) {
  return Trimmed(repo.Sh("sha256sum '" + path + "' | cut -c1-64").out);
}

TEST_CASE("the test LFS server refuses objects over its limit as GitHub does, and takes chunks as the Hugging Face Hub") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  UseGitLfs(repo, server.CredentialLine());
  // git-lfs is told the limit in the batch answer and passes it on.
  server.Set("max_size", 100000);
  const Run refused = repo.Sh(
      "git lfs track '*.bin' >/dev/null && head -c 150000 /dev/urandom > big.bin && git add -A && "
      "git commit -qm big && git remote add origin " +
      server.Url("team.git") + " && git push -q origin HEAD:main 2>&1");
  CHECK(refused.code != 0);
  CHECK_MESSAGE(refused.out.find("Size must be less than or equal to 100000") != std::string::npos, refused.out);
  CHECK(Count(server.Requests(), "PUT /team.git/info/lfs/objects/") == 0);
  // Chunks are only for a client that offers them: git-lfs, which offers
  // "basic" alone, uploads in one request as before.
  server.Set("max_size", 1000000);
  server.Set("multipart_chunk", 50000);
  const Run pushed = repo.Sh("git push -q origin HEAD:main");
  REQUIRE_MESSAGE(pushed.code == 0, pushed.err);
  CHECK(repo.Sh("cmp big.bin '" + server.ObjectPath("team.git", Sha256Of(repo, "big.bin")) + "'").code == 0);
  CHECK(server.Requests().find("/chunk/") == std::string::npos);

  // By hand, as the Hub's protocol has it: a client that offers
  // "multipart" gets chunk_size and a link a chunk; a chunk needs its
  // link's token; the completion names every chunk by its ETag, and the
  // object is the chunks once they hash to its oid.
  const std::string api = server.Url("team.git") + "/info/lfs";
  const Run run = repo.Sh(
      "python3 - <<'EOF'\n"
      "import base64, hashlib, json, os, urllib.request as u, urllib.error as e\n"
      "auth = 'Basic ' + base64.b64encode(b'" +
      std::string(LfsServer::kUser) + ":" + LfsServer::kPassword +
      "').decode()\n"
      "def call(method, url, body=None, headers=None, signed=True):\n"
      "    headers = dict(headers or {})\n"
      "    if signed: headers['Authorization'] = auth\n"
      "    try:\n"
      "        with u.urlopen(u.Request(url, data=body, method=method, headers=headers)) as a:\n"
      "            return a.status, a.read(), a.headers\n"
      "    except e.HTTPError as a: return a.code, a.read(), a.headers\n"
      "data = os.urandom(120000)\n"
      "oid = hashlib.sha256(data).hexdigest()\n"
      "request = dict(operation='upload', transfers=['basic', 'multipart'], objects=[dict(oid=oid, size=len(data))])\n"
      "reply = json.loads(call('POST', '" +
      api +
      "/objects/batch', json.dumps(request).encode())[1])\n"
      "print(reply['transfer'])\n"
      "up = reply['objects'][0]['actions']['upload']\n"
      "links = [up['header'][k] for k in sorted(k for k in up['header'] if k.isdigit())]\n"
      "print(up['header']['chunk_size'], len(links))\n"
      "print(call('PUT', links[0].split('?')[0], data[:50000], signed=False)[0])\n"
      "etags = [call('PUT', link, data[i * 50000:(i + 1) * 50000], signed=False)[2]['ETag'] for i, link in "
      "enumerate(links)]\n"
      "parts = [dict(partNumber=i + 1, etag=t) for i, t in enumerate(etags)]\n"
      "wrong = [dict(p, etag='\"0\"') if p['partNumber'] == 2 else p for p in parts]\n"
      "print(call('POST', up['href'], json.dumps(dict(oid=oid, parts=wrong)).encode())[0])\n"
      "print(call('POST', up['href'], json.dumps(dict(oid=oid, parts=parts)).encode())[0])\n"
      "request['operation'] = 'download'\n"
      "down = json.loads(call('POST', '" +
      api +
      "/objects/batch', json.dumps(request).encode())[1])['objects'][0]['actions']['download']\n"
      "print(call('GET', down['href'])[1] == data)\n"
      "EOF");
  const std::string said = run.out + run.err;
  CHECK_MESSAGE(run.out == "multipart\n50000 3\n403\n422\n200\nTrue\n", said);
}

TEST_CASE("an object over the server's limit goes up in parts of at most it, resumes by part, and reads back whole") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  const std::string root = repo.root();
  const store::Store here{store::ObjectStore(root + "/here"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const store::Store there{store::ObjectStore(root + "/there"), root + "/tmp2", root + "/cache2", "", config::Policy{}};
  const auto [base, top] = StoreBaseAndDelta(here);
  auto map = std::make_shared<MemoryMap>();
  Helper helper;
  lfs::Options options = OptionsFor(server, helper);
  options.max_object_size = 65536;
  std::unique_ptr<remote::RemoteStore> lfs = lfs::Remote("the LFS server", options, map);

  auto pushed = remote::PushObjects(here, *lfs, {top}, {});
  REQUIRE_MESSAGE(pushed.ok(), pushed.status().message());
  CHECK(pushed->moved == 2);
  // The base's object is named by its SHA-256 and size, and held as
  // parts: each at most the limit, together the object, none of them it.
  const std::string object = here.objects.PathOf(base);
  const uint64_t size = Slurp(object).size();
  const lfs::ObjectMap::Entry entry = map->Find(base)->front();
  CHECK(entry.oid.sha256 == Sha256Of(repo, object));
  CHECK(entry.oid.size == size);
  REQUIRE(entry.parts.size() == (size + 65535) / 65536);
  std::string parts;
  for (const lfs::Oid& part : entry.parts) {
    CHECK(part.size <= 65536);
    parts += " '" + server.ObjectPath("team.git", part.sha256) + "'";
  }
  CHECK(repo.Sh("cat" + parts + " | cmp - '" + object + "'").code == 0);
  CHECK(!FileExists(server.ObjectPath("team.git", entry.oid.sha256)));
  // The delta is smaller than the limit: one LFS object.
  CHECK(map->Find(top)->front().parts.empty());
  CHECK(*lfs->Has({base, top}) == std::vector<bool>{true, true});

  // Fetched, the parts make the object again, proven by its decode.
  auto fetched = remote::FetchObjects(there, *lfs, {top}, {});
  REQUIRE_MESSAGE(fetched.ok(), fetched.status().message());
  CHECK(fetched->moved == 2);
  CHECK(Slurp(there.objects.PathOf(base)) == Slurp(object));
  // Read where it lies, a range over the end of a part comes from two.
  auto ranged = lfs->capabilities().ranged_reads->OpenRanges(base, remote::kUnknownObjectLimit);
  REQUIRE_MESSAGE(ranged.ok(), ranged.status().message());
  const std::string file = Slurp(object);
  std::string read(2000, '\0');
  REQUIRE(ranged->bytes->ReadAt(65000, read.data(), read.size()).ok());
  CHECK(read == file.substr(65000, 2000));
  read.assign(file.size(), '\0');
  REQUIRE(ranged->bytes->ReadAt(0, read.data(), read.size()).ok());
  CHECK(read == file);

  // A part gone (a push cut short): the object is not held, and a push
  // sends that part alone.
  REQUIRE(repo.Sh("rm '" + server.ObjectPath("team.git", entry.parts[2].sha256) + "'").code == 0);
  CHECK(*lfs->Has({base}) == std::vector<bool>{false});
  const size_t puts = Count(server.Requests(), "PUT /team.git/info/lfs/objects/");
  pushed = remote::PushObjects(here, *lfs, {base}, {});
  REQUIRE_MESSAGE(pushed.ok(), pushed.status().message());
  CHECK(Count(server.Requests(), "PUT /team.git/info/lfs/objects/") == puts + 1);
  // It says so: all but that part was there.
  CHECK(pushed->bytes == size);
  CHECK(pushed->carried == size - entry.parts[2].size);
  CHECK(*lfs->Has({base}) == std::vector<bool>{true});
}

TEST_CASE("parts move several at once; a fetch cut short keeps what came and fetches only the rest, part by part") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  const std::string root = repo.root();
  const store::Store here{store::ObjectStore(root + "/here"), root + "/tmp", root + "/cache", "", config::Policy{}};
  // Parts of 1.5 MiB, each large enough to be kept as it comes in.
  const ContentId id = StoreData(here, Noise(4200000, 4));
  const std::string object = here.objects.PathOf(id);
  const uint64_t size = Slurp(object).size();
  Helper helper;
  lfs::Options options = OptionsFor(server, helper);
  options.part_size = 1572864;
  options.connections = 4;
  options.partial_dir = root + "/partial";
  auto map = std::make_shared<MemoryMap>();
  std::unique_ptr<remote::RemoteStore> lfs = lfs::Remote("the LFS server", options, map);
  auto pushed = remote::PushObjects(here, *lfs, {id}, {});
  REQUIRE_MESSAGE(pushed.ok(), pushed.status().message());
  const std::vector<lfs::Oid> parts = map->Find(id)->front().parts;
  REQUIRE(parts.size() == 3);
  CHECK(parts.back().size >= (uint64_t{1} << 20));

  // Every download from the first byte is cut at half: the fetch fails,
  // and half of each part stays.
  server.SetMode("cut");
  const store::Store there{store::ObjectStore(root + "/there"), root + "/tmp2", root + "/cache2", "", config::Policy{}};
  remote::TransferOptions once;
  once.attempts = 1;
  CHECK(remote::FetchObjects(there, *lfs, {id}, once).status().code() == StatusCode::kIoError);
  CHECK(repo.Sh("ls '" + root + "/partial' | wc -l").out == "3\n");
  // The next fetch asks each part for its other half only (a range the
  // server serves), and the object comes whole; nothing is left behind.
  // It reports the half it did not fetch again.
  const uint64_t sent = server.BytesSent();
  auto fetched = remote::FetchObjects(there, *lfs, {id}, once);
  REQUIRE_MESSAGE(fetched.ok(), fetched.status().message());
  CHECK(Slurp(there.objects.PathOf(id)) == Slurp(object));
  CHECK(server.BytesSent() - sent <= size / 2 + 3);
  CHECK(fetched->bytes == size);
  CHECK(fetched->carried + (server.BytesSent() - sent) == size);
  CHECK(repo.Sh("ls '" + root + "/partial' | wc -l").out == "0\n");

  // A part that is in already is not asked for again.
  server.SetMode("honest");
  REQUIRE(repo.Sh("cp '" + server.ObjectPath("team.git", parts[1].sha256) + "' '" + root + "/partial/" +
                  parts[1].sha256 + "'")
              .code == 0);
  const store::Store third{store::ObjectStore(root + "/third"), root + "/tmp3", root + "/cache3", "", config::Policy{}};
  const size_t gets = Count(server.Requests(), "GET /team.git/info/lfs/objects/" + parts[1].sha256);
  fetched = remote::FetchObjects(third, *lfs, {id}, {});
  REQUIRE_MESSAGE(fetched.ok(), fetched.status().message());
  CHECK(Count(server.Requests(), "GET /team.git/info/lfs/objects/" + parts[1].sha256) == gets);
  CHECK(Slurp(third.objects.PathOf(id)) == Slurp(object));
  CHECK(fetched->carried == parts[1].size);
}

TEST_CASE("a limit the server states in refusing an upload is learnt and kept to; chunks go where the server says") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  server.AddRepository("hub.git");
  const std::string root = repo.root();
  const store::Store here{store::ObjectStore(root + "/here"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const auto [base, top] = StoreBaseAndDelta(here);
  const ContentId other = StoreData(here, Noise(250000, 2));
  Helper helper;
  std::vector<uint64_t> learnt;
  lfs::Options options = OptionsFor(server, helper);
  options.learnt_limit = [&learnt](uint64_t limit) { learnt.push_back(limit); };

  // Refused for its size, the object goes up in parts of the limit the
  // server stated, and so does the next without being refused first.
  server.Set("max_size", 100000);
  auto map = std::make_shared<MemoryMap>();
  std::unique_ptr<remote::RemoteStore> lfs = lfs::Remote("the LFS server", options, map);
  remote::TransferOptions one_at_a_time;
  one_at_a_time.parallel = 1;
  auto pushed = remote::PushObjects(here, *lfs, {top, other}, one_at_a_time);
  REQUIRE_MESSAGE(pushed.ok(), pushed.status().message());
  CHECK(learnt == std::vector<uint64_t>{100000});
  for (const ContentId& id : {base, other}) {
    const lfs::ObjectMap::Entry entry = map->Find(id)->front();
    CHECK(entry.parts.size() == (Slurp(here.objects.PathOf(id)).size() + 99999) / 100000);
    CHECK(entry.parts.size() >= 3);
    for (const lfs::Oid& part : entry.parts) CHECK(part.size <= 100000);
  }
  CHECK(repo.Sh("find '" + server.root() + "/team.git/lfs-objects' -type f -size +100000c | grep -q .").code != 0);

  // A limit too small for parts is the server's refusal, said so.
  server.Set("max_size", 1000);
  const store::Store small{store::ObjectStore(root + "/small"), root + "/tmp3", root + "/cache3", "", config::Policy{}};
  const ContentId alone = StoreData(small, Noise(5000, 3));
  std::unique_ptr<remote::RemoteStore> fresh = lfs::Remote("the LFS server", OptionsFor(server, helper), map);
  auto tiny = remote::PushObjects(small, *fresh, {alone}, {});
  REQUIRE(!tiny.ok());
  CHECK_MESSAGE(tiny.status().message().find("Size must be less than or equal to 1000") != std::string::npos,
                tiny.status().message());
  CHECK(tiny.status().message().find("too small to send in parts") != std::string::npos);

  // A server that offers uploads in chunks gets each chunk at its link;
  // it holds the object whole, as one LFS object.
  server.Set("max_size", uint64_t{1} << 40);
  server.Set("multipart_chunk", 100000);
  lfs::Options hub = OptionsFor(server, helper);
  hub.endpoint = server.Url("hub.git") + "/info/lfs";
  auto hub_map = std::make_shared<MemoryMap>();
  std::unique_ptr<remote::RemoteStore> chunked = lfs::Remote("the hub", hub, hub_map);
  pushed = remote::PushObjects(here, *chunked, {base}, {});
  REQUIRE_MESSAGE(pushed.ok(), pushed.status().message());
  const std::string object = here.objects.PathOf(base);
  CHECK(hub_map->Find(base)->front().parts.empty());
  CHECK(repo.Sh("cmp '" + object + "' '" + server.ObjectPath("hub.git", Sha256Of(repo, object)) + "'").code == 0);
  const std::string requests = server.Requests();
  CHECK(Count(requests, "PUT /hub.git/info/lfs/chunk/") == (Slurp(object).size() + 99999) / 100000);
  CHECK(Count(requests, "POST /hub.git/info/lfs/complete/") == 1);
  const store::Store there{store::ObjectStore(root + "/there"), root + "/tmp4", root + "/cache4", "", config::Policy{}};
  auto fetched = remote::FetchObjects(there, *chunked, {base}, {});
  REQUIRE_MESSAGE(fetched.ok(), fetched.status().message());
}

TEST_CASE("the map names a form in parts so that a reader without parts skips it, and takes it only whole") {
  const ContentId id = HashBytes("version", 7);
  lfs::ObjectMap::Entry entry;
  entry.id = id;
  entry.oid = {std::string(64, 'a'), 300};
  entry.parts = {{std::string(64, 'b'), 100}, {std::string(64, 'c'), 200}};
  entry.frame = std::string(64, 'd');
  const std::string a(64, 'a'), b(64, 'b'), c(64, 'c'), d(64, 'd');
  const std::vector<std::string> lines = lfs::MapLines(entry);
  CHECK(lines == std::vector<std::string>{a + " 300 whole parts 2", "part " + a + " 0 " + b + " 100",
                                          "part " + a + " 1 " + c + " 200", "frame " + a + " " + d});
  const std::vector<lfs::ObjectMap::Entry> parsed = lfs::ParseMapLines(id, lines);
  REQUIRE(parsed.size() == 1);
  CHECK(parsed[0].oid.sha256 == a);
  REQUIRE(parsed[0].parts.size() == 2);
  CHECK(parsed[0].parts[1].sha256 == c);
  CHECK(parsed[0].parts[1].size == 200);
  CHECK(parsed[0].frame == d);
  // A part missing, parts that do not add up to the form, a part named
  // twice with other bytes: no form.
  CHECK(lfs::ParseMapLines(id, {lines[0], lines[1]}).empty());
  CHECK(lfs::ParseMapLines(id, {lines[0], lines[1], "part " + a + " 1 " + c + " 199"}).empty());
  CHECK(lfs::ParseMapLines(id, {lines[0], lines[1], lines[2], "part " + a + " 1 " + b + " 200"}).empty());
  CHECK(lfs::ParseMapLines(id, {a + " 300 whole parts 0"}).empty());
  // The same object cut otherwise too (pushed to a second server with
  // another limit: two parts of 150), in a map holding both: each cut is
  // a form of its own, never parts of both mixed.
  const std::string p(64, 'e'), q(64, 'f'), r(64, '1'), s(64, '2'), t(64, '3');
  const std::vector<std::string> two_cuts = {a + " 300 whole parts 3",         "part " + a + " 0 " + p + " 100",
                                             "part " + a + " 1 " + q + " 100", "part " + a + " 2 " + r + " 100",
                                             a + " 300 whole parts 2",         "part " + a + " 0 " + s + " 150",
                                             "part " + a + " 1 " + t + " 150", "frame " + a + " " + d};
  const std::vector<lfs::ObjectMap::Entry> cuts = lfs::ParseMapLines(id, two_cuts);
  REQUIRE(cuts.size() == 2);
  REQUIRE(cuts[0].parts.size() == 3);
  CHECK(cuts[0].parts[0].sha256 == p);
  CHECK(cuts[0].parts[2].sha256 == r);
  REQUIRE(cuts[1].parts.size() == 2);
  CHECK(cuts[1].parts[0].sha256 == s);
  CHECK(cuts[1].parts[1].sha256 == t);
  CHECK(cuts[1].frame == d);
  // Given again (a second clone's copy of the map), still two forms.
  std::vector<std::string> doubled = two_cuts;
  doubled.insert(doubled.end(), two_cuts.begin(), two_cuts.end());
  CHECK(lfs::ParseMapLines(id, doubled).size() == 2);
  // A part of a cut named again with other bytes (a lie, or the last
  // part of another cut of that size): the cut is a form for each choice,
  // the true one among them, and the other cut is still one.
  std::vector<std::string> lying = two_cuts;
  lying.push_back("part " + a + " 1 " + c + " 100");
  const std::vector<lfs::ObjectMap::Entry> left = lfs::ParseMapLines(id, lying);
  REQUIRE(left.size() == 3);
  CHECK(left[0].parts.size() == 3);
  CHECK(left[1].parts.size() == 3);
  CHECK(left[0].parts[1].sha256 != left[1].parts[1].sha256);
  CHECK((left[0].parts[1].sha256 == q || left[1].parts[1].sha256 == q));
  CHECK(left[2].parts.size() == 2);
  // Many cuts named (a hostile map: forms of 1 to 3000 parts of one size,
  // each valid): a bounded number of forms and parts, quickly.
  std::vector<std::string> many;
  for (int k = 1; k <= 3000; ++k) {
    many.push_back(a + " " + std::to_string(k * 70000) + " whole parts " + std::to_string(k));
    many.push_back("part " + a + " " + std::to_string(k - 1) + " " + b + " 70000");
  }
  const std::vector<lfs::ObjectMap::Entry> bounded = lfs::ParseMapLines(id, many);
  size_t named = 0;
  for (const lfs::ObjectMap::Entry& e : bounded) named += e.parts.size();
  CHECK(bounded.size() <= 64);
  CHECK(named <= 4 * lfs::kMaxParts);
  // Beside a form of one LFS object, that one is found alone.
  const std::vector<lfs::ObjectMap::Entry> both = lfs::ParseMapLines(id, {lines[0], b + " 300 whole"});
  REQUIRE(both.size() == 1);
  CHECK(both[0].parts.empty());

  CHECK(lfs::SizeLimitIn("Size must be less than or equal to 2147483648") == uint64_t{2147483648});
  CHECK(lfs::SizeLimitIn("Size must be less than 2147483648") == uint64_t{2147483647});
  CHECK(!lfs::SizeLimitIn("object too large"));
  CHECK(!lfs::SizeLimitIn("Size must be less than or equal to x"));
}

TEST_CASE("through git, a push to a host with a limit learns it and sends parts; clones restore and read by parts") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("team.git");
  UseBoth(repo, server);
  REQUIRE(repo.Sh("git config --global zipnn.concurrentTransfers 4").code == 0);
  server.Set("max_size", 400000);
  REQUIRE(repo.Sh("git zipnn track model.safetensors >/dev/null && printf 'base_interval: 5\\n' > .zipnn.yaml && "
                  "git add .gitattributes .zipnn.yaml && git commit -qm track && git remote add origin " +
                  server.Url("team.git"))
              .code == 0);
  auto save = [&](const char* step) { CommitTiledSave(repo, step); };
  for (int i = 0; i < 4; ++i) save(kSteps[i]);
  const Run pushed = repo.Sh("git push -q origin HEAD:main");
  REQUIRE_MESSAGE(pushed.code == 0, pushed.err);
  CHECK_MESSAGE(pushed.err.find(" takes objects of at most 400000 bytes: larger ones go up in parts (kept in git "
                                "config remote.origin.zipnnMaxObjectSize)") != std::string::npos,
                pushed.err);
  CHECK(repo.Sh("git config remote.origin.zipnnMaxObjectSize").out == "400000\n");
  CHECK(repo.Sh("find '" + server.root() + "/team.git/lfs-objects' -type f -size +400000c | grep -q .").code != 0);
  CHECK(repo.Sh("git --git-dir='" + server.root() + "/team.git' grep -c ' parts ' refs/zipnn/objects | grep -q .")
            .code == 0);
  // The next push keeps to the limit from the start.
  save(kSteps[4]);
  const Run again = repo.Sh("git push -q origin HEAD:main");
  REQUIRE_MESSAGE(again.code == 0, again.err);
  CHECK(again.err.find("takes objects of at most") == std::string::npos);

  // A teammate's clone checks out the newest and restores every version
  // bit-exact; fsck --remote decodes every object from its parts.
  const Run cloned = repo.Sh("cd .. && git clone -q " + server.Url("team.git") + " clone");
  REQUIRE_MESSAGE(cloned.code == 0, cloned.err);
  CHECK(repo.Sh("cmp ../clone/model.safetensors ../000200").code == 0);
  for (int back = 1; back < 5; ++back) {
    const Run restored = repo.Sh("cd ../clone && git zipnn restore --rev HEAD~" + std::to_string(back) +
                                 " -o ../out.st -f model.safetensors && cmp ../out.st ../" + kSteps[4 - back]);
    CHECK_MESSAGE(restored.code == 0, restored.err);
  }
  const Run checked = repo.Sh("cd ../clone && git zipnn fsck --remote origin --all");
  CHECK_MESSAGE(checked.code == 0, checked.err);
  // A tensor of an old version, read in a fresh clone where its objects
  // lie, parts and all: the one of the author's repository.
  REQUIRE(repo.Sh("cd .. && git clone -q " + server.Url("team.git") + " reader").code == 0);
  const std::string tensor = "copy9.fc1.weight";
  const Run here = repo.Sh("git zipnn cat HEAD~3:model.safetensors -t " + tensor + " -o ../here.safetensors");
  REQUIRE_MESSAGE(here.code == 0, here.err);
  const Run there = repo.Sh("cd ../reader && git zipnn cat HEAD~3:model.safetensors -t " + tensor +
                            " -o ../there.safetensors && cmp ../here.safetensors ../there.safetensors");
  CHECK_MESSAGE(there.code == 0, there.err);
}

TEST_CASE(
    "through git, one repository pushed to two servers that take objects of other sizes: both serve every version") {
  Repo repo;
  LfsServer server(repo);
  server.AddRepository("a.git");
  server.AddRepository("b.git");
  UseBoth(repo, server);
  // Each remote cuts objects its own way: the map this clone keeps, and
  // pushes to both, then names two cuts of the same objects.
  REQUIRE(repo.Sh("git zipnn track model.safetensors >/dev/null && git add .gitattributes && git commit -qm track && "
                  "git remote add a " +
                  server.Url("a.git") + " && git remote add b " + server.Url("b.git") +
                  " && git config remote.a.zipnnMaxObjectSize 300000")
              .code == 0);
  auto save = [&](const char* step) { CommitTiledSave(repo, step); };
  for (int i = 0; i < 3; ++i) save(kSteps[i]);
  // The second remote's limit cuts the newest object (T bytes, stored
  // whole) into two equal parts and the same last part as the first's,
  // T mod 300000 at the same place: the two cuts share an LFS object,
  // asked for twice in one batch request.
  const Run sized = repo.Sh(
      "id=$(git cat-file -p HEAD:model.safetensors | sed -n 's/.*xxh3-128:\\([0-9a-f]*\\).*/\\1/p') && "
      "stat -c %s .git/zipnn/objects/$(echo $id | cut -c1-2)/$(echo $id | cut -c3-4)/$id");
  REQUIRE_MESSAGE(sized.code == 0, sized.err);
  const uint64_t object = std::stoull(sized.out), rest = object % 300000;
  REQUIRE(object > 900000);
  REQUIRE(repo.Sh("git config remote.b.zipnnMaxObjectSize " + std::to_string((object - rest) / 2)).code == 0);
  for (const char* remote : {"a", "b"}) {
    const Run pushed = repo.Sh(std::string("git push -q ") + remote + " HEAD:main");
    REQUIRE_MESSAGE(pushed.code == 0, pushed.err);
  }
  const Run cuts =
      repo.Sh("git grep -h ' whole parts ' refs/zipnn/objects | cut -d' ' -f1 | sort | uniq -d | grep -c .");
  CHECK_MESSAGE(std::stoi("0" + Trimmed(cuts.out)) >= 1, cuts.out);
  // A clone of each restores every version; then the first remote takes
  // one more save (its map now merged with the other's), and still does.
  auto clone_restores = [&](const std::string& which, int saves) {
    const std::string dir = "../clone-" + which;
    REQUIRE(
        repo.Sh("rm -rf " + dir + " && cd .. && git clone -q " + server.Url(which + ".git") + " clone-" + which).code ==
        0);
    // A tensor of the oldest version, read where its objects lie (the cut
    // this server holds), before anything else is fetched.
    const std::string tensor =
        "cat -f HEAD~" + std::to_string(saves - 1) + ":model.safetensors -t copy9.fc1.weight -o ";
    const Run read = repo.Sh("git zipnn " + tensor + "../here.st && cd " + dir + " && git zipnn " + tensor +
                             "../there.st && cmp ../here.st ../there.st");
    CHECK_MESSAGE(read.code == 0, (which + ": " + read.err));
    for (int back = 0; back < saves; ++back) {
      const Run restored =
          repo.Sh("cd " + dir + " && git zipnn restore --rev HEAD~" + std::to_string(back) +
                  " -o ../out.st -f model.safetensors && cmp ../out.st ../" + kSteps[saves - 1 - back]);
      CHECK_MESSAGE(restored.code == 0, (which + " HEAD~" + std::to_string(back) + ": " + restored.err));
    }
    const Run checked = repo.Sh("cd " + dir + " && git zipnn fsck --remote origin --all");
    CHECK_MESSAGE(checked.code == 0, (which + ": " + checked.out + checked.err));
  };
  clone_restores("b", 3);
  clone_restores("a", 3);
  save(kSteps[3]);
  const Run again = repo.Sh("git push -q a HEAD:main");
  REQUIRE_MESSAGE(again.code == 0, again.err);
  clone_restores("a", 4);

  // The first remote given a new, empty repository's URL: what this
  // clone last saw there is not there. `git zipnn push --all` sends every
  // object and the map too, and a clone of it restores every version.
  server.AddRepository("c.git");
  const Run moved = repo.Sh("git remote set-url a " + server.Url("c.git") + " && git push -q a HEAD:main && " +
                            "git zipnn push -q a --all");
  REQUIRE_MESSAGE(moved.code == 0, moved.err);
  CHECK(repo.Sh("git ls-remote " + server.Url("c.git") + " refs/zipnn/objects | grep -q .").code == 0);
  clone_restores("c", 4);
}

}  // namespace
}  // namespace zipnn::testing
