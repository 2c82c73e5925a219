// The store protocol, both ends in this process over socket pairs: a
// served store moves chains like a folder does, each end refuses what the
// other gets wrong, and nothing partial is left under an object's name.
#include "lib/remote/served.h"

#include <doctest/doctest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <algorithm>

#include "lib/base/file.h"
#include "lib/remote/remote_store.h"
#include "lib/remote/remote_test_util.h"
#include "lib/store/base_note.h"
#include "lib/store/receive.h"
#include "lib/store/rebased.h"
#include "lib/store/restore.h"
#include "lib/store/test_objects.h"

namespace zipnn::remote {
namespace {

using store::ObjectStore;
using store::Store;
using store::testing::FilesIn;
using store::testing::ForgeObject;
using store::testing::StoreChain;
using store::testing::StoreVersion;
using store::testing::TempDir;

// One end of a socket pair, closed when it goes away.
class SocketEnd : public Channel {
 public:
  explicit SocketEnd(int fd) : fd_(fd), channel_(fd, fd, "socket") {}
  ~SocketEnd() override { ::close(fd_); }
  Result<size_t> Read(void* out, size_t n) override { return channel_.Read(out, n); }
  Status Write(const void* data, size_t n) override { return channel_.Write(data, n); }
  void SetTimeout(double seconds) override { channel_.SetTimeout(seconds); }
  void SetLowSpeed(const LowSpeed& limit) override { channel_.SetLowSpeed(limit); }
  // The other end reads to the end of what was sent, then sees the end.
  void CloseWrite() { ::shutdown(fd_, SHUT_WR); }

 private:
  int fd_;
  FdChannel channel_;
};

// Runs `server` on a thread for every connection a remote opens.
class Servers {
 public:
  explicit Servers(std::function<Status(SocketEnd&)> server) : server_(std::move(server)) {}
  ~Servers() {
    for (std::thread& t : threads_) t.join();
  }
  StoreConnector Connector() {
    return [this]() -> Result<std::unique_ptr<Channel>> {
      int fds[2];
      REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
      ++connections;
      std::lock_guard<std::mutex> lock(mu_);
      threads_.emplace_back([this, fd = fds[1]] {
        SocketEnd end(fd);
        Status st = server_(end);
        std::lock_guard<std::mutex> lock(mu_);
        results.push_back(st);
      });
      return std::unique_ptr<Channel>(new SocketEnd(fds[0]));
    };
  }
  std::atomic<int> connections{0};
  std::vector<Status> results;  // read once the remote is gone and threads joined

 private:
  std::function<Status(SocketEnd&)> server_;
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

Status Say(Channel& c, const std::string& text) { return c.Write(text.data(), text.size()); }

// Reads what a client sent until it closes its end.
std::string Drain(Channel& c) {
  std::string got;
  char buf[4096];
  for (;;) {
    Result<size_t> n = c.Read(buf, sizeof buf);
    if (!n.ok() || *n == 0) return got;
    got.append(buf, *n);
  }
}

Store RepoIn(const std::string& root, const std::string& name) {
  return Store{ObjectStore(root + "/" + name), root + "/" + name + "-tmp", root + "/" + name + "-cache", "",
               config::Policy{}};
}

TEST_CASE("a served store moves whole chains, skips what it holds, and answers has in order") {
  const std::string root = TempDir();
  const Store here = RepoIn(root, "here"), there = RepoIn(root, "there");
  const std::vector<ContentId> ids = StoreChain(here, 3);
  const ObjectStore served(root + "/served");
  Servers servers([&](SocketEnd& c) { return ServeStore(served, c); });
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://served", servers.Connector(), "");
    testing::CheckPushAndFetch(here, there, *remote, ids);
    auto has = remote->Has({ids[3], HashBytes("other", 5), ids[0], ids[2], ids[1]});
    REQUIRE(has.ok());
    CHECK(*has == std::vector<bool>{true, false, true, true, true});

    const ContentId nowhere = HashBytes("nowhere", 7);
    auto missing = FetchObjects(there, *remote, {nowhere}, {});
    CHECK(missing.status().message() == "object " + nowhere.Hex() + " is not on the remote store test://served");
  }
  CHECK(servers.connections <= 4);  // the parallel transfers, sessions reused
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a server refuses a damaged object, keeps nothing of it, and serves the next request") {
  const std::string root = TempDir();
  const Store here = RepoIn(root, "here");
  const std::vector<ContentId> ids = StoreChain(here, 1);
  REQUIRE(std::system(("cp " + here.objects.PathOf(ids[0]) + " " + root + "/bad && printf '\\377' | dd of=" + root +
                       "/bad bs=1 seek=70 conv=notrunc status=none")
                          .c_str()) == 0);
  const ObjectStore served(root + "/served");
  Servers servers([&](SocketEnd& c) { return ServeStore(served, c); });
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://served", servers.Connector(), "");
    auto bad = ReadFile::Open(root + "/bad");
    REQUIRE(bad.ok());
    Status refused = remote->Put(ids[0], *bad);
    CHECK(refused.code() == StatusCode::kIoError);
    CHECK(refused.message().find("the server refused it: ") == 0);
    CHECK(!served.Has(ids[0]));
    auto good = here.objects.Open(ids[0]);
    REQUIRE(good.ok());
    CHECK(remote->Put(ids[0], *good).ok());
    CHECK(served.Has(ids[0]));
    // Filed under another id: refused too.
    CHECK(remote->Put(ids[1], *good).message().find("holds " + ids[0].Hex() + ", not " + ids[1].Hex()) !=
          std::string::npos);
  }
  CHECK(servers.connections == 1);
  CHECK(FilesIn(root + "/served/" + ids[1].Hex().substr(0, 2) + "/" + ids[1].Hex().substr(2, 2)) == 0);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

// Runs one session of ServeStore against a client that says `request`
// and then closes; returns how the server ended.
Status ServeTo(const ObjectStore& store, const std::string& request) {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  Status served;
  std::thread server([&] {
    SocketEnd end(fds[1]);
    served = ServeStore(store, end);
  });
  {
    SocketEnd client(fds[0]);
    REQUIRE(Say(client, request).ok());
    client.CloseWrite();
    Drain(client);
  }
  server.join();
  return served;
}

TEST_CASE("a server ends a session that breaks the protocol, leaving no partial object") {
  const std::string root = TempDir();
  const ObjectStore store(root + "/served");
  const std::string id = HashBytes("x", 1).Hex();
  CHECK(ServeTo(store, "").ok());  // a client that says nothing
  CHECK(ServeTo(store, "put " + id + " 1000\n" + std::string(10, 'z')).message() ==
        "the connection ended in the middle of an object");
  CHECK(FilesIn(root + "/served/" + id.substr(0, 2) + "/" + id.substr(2, 2)) == 0);
  CHECK(ServeTo(store, "bogus\n").message() == "not a store request: \"bogus\"");
  CHECK(ServeTo(store, "has 5000\n").message() == "not a store request: \"has 5000\"");
  CHECK(ServeTo(store, "get 12345\n").message() == "not a store request: \"get 12345\"");
  CHECK(ServeTo(store, "put " + id + " 99999999999999999\n").message().find("not a store request") == 0);
  CHECK(ServeTo(store, "has 1\nnot-an-id\n").message() == "a has request with a line that is not an object id");
  CHECK(ServeTo(store, std::string(70000, 'a')).message() ==
        "a line longer than 64 KiB (out of step with the store protocol: bytes where a line belongs)");
  CHECK(ServeTo(store, "get " + id).message() == "the connection ended in the middle of a line");
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

// A remote whose every connection meets a server that says `script`.
Status FetchFrom(const std::string& script, const Store& local, const ContentId& id, int* connections) {
  Servers servers([&](SocketEnd& c) {
    Status said = Say(c, script);
    c.CloseWrite();
    Drain(c);
    return said;
  });
  Status st;
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://liar", servers.Connector(), "is it installed?");
    st = FetchObjects(local, *remote, {id}, {}).status();
  }
  if (connections != nullptr) *connections = servers.connections;
  return st;
}

TEST_CASE("a client refuses a server that is not one, speaks another version, or sends less than it said") {
  const std::string root = TempDir();
  const Store here = RepoIn(root, "here");
  const std::vector<ContentId> ids = StoreChain(here, 0);
  const Store empty = RepoIn(root, "empty");
  const std::string prefix = "cannot fetch object " + ids[0].Hex() + " from test://liar: ";
  int connections = 0;
  CHECK(FetchFrom("", empty, ids[0], &connections).message() ==
        prefix + "the store server did not answer (is it installed?)");
  CHECK(connections == 1);  // a server that cannot be reached is tried once
  CHECK(FetchFrom("Welcome to the shell!\n", empty, ids[0], nullptr).message() ==
        prefix + "the far side is not a git-zipnn store server (it said \"Welcome to the shell!\")");
  Status newer = FetchFrom("git-zipnn-store 2\n", empty, ids[0], nullptr);
  CHECK(newer.code() == StatusCode::kUnsupported);
  CHECK(newer.message() == prefix +
                               "the server speaks store protocol 2; this git-zipnn speaks 1 (use the same "
                               "version on both sides)");
  CHECK(FetchFrom("error /srv/m is not a git repository\n", empty, ids[0], &connections).message() ==
        prefix + "/srv/m is not a git repository");
  CHECK(connections == 1);

  // Fewer bytes than promised, or bytes that are not the object: nothing lands.
  auto object = ReadWholeFile(here.objects.PathOf(ids[0]));
  REQUIRE(object.ok());
  const std::string whole(object->begin(), object->end());
  const std::string greeting = std::string(kStoreProtocolGreeting) + "\n";
  CHECK(FetchFrom(greeting + "ok " + std::to_string(whole.size()) + "\n" + whole.substr(0, 20), empty, ids[0], nullptr)
            .message() == prefix + "the connection ended in the middle of an object");
  std::string flipped = whole;
  flipped[70] = static_cast<char>(flipped[70] ^ 1);
  CHECK(FetchFrom(greeting + "ok " + std::to_string(flipped.size()) + "\n" + flipped, empty, ids[0], nullptr).code() ==
        StatusCode::kCorruption);
  CHECK(FetchFrom(greeting + "ok many\n", empty, ids[0], nullptr).message() ==
        prefix + "the store server answered \"ok many\"");
  CHECK(!empty.objects.Has(ids[0]));
  CHECK(FilesIn(root + "/empty/" + ids[0].Hex().substr(0, 2) + "/" + ids[0].Hex().substr(2, 2)) == 0);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

std::string ObjectBytes(const Store& local, const ContentId& id) {
  auto bytes = ReadWholeFile(local.objects.PathOf(id));
  REQUIRE(bytes.ok());
  return std::string(bytes->begin(), bytes->end());
}

void WriteFile(const std::string& path, const std::string& bytes) {
  REQUIRE(MakeDirectories(path.substr(0, path.rfind('/'))).ok());
  auto out = AtomicFile::Create(path, /*overwrite=*/true);
  REQUIRE(out.ok());
  REQUIRE(out->Append(bytes.data(), bytes.size()).ok());
  REQUIRE(out->Commit().ok());
}

// No file of a refused object anywhere: not under its name, not in the
// fetch's temporary folder.
void CheckNothingLeft(const std::string& root, const Store& local, const ContentId& id) {
  CHECK(!local.objects.Has(id));
  CHECK(FilesIn(local.objects.PathOf(id).substr(0, local.objects.PathOf(id).rfind('/'))) == 0);
  CHECK(FilesIn(local.temp_dir) == 0);
  (void)root;
}

TEST_CASE("a forged object never takes its name: fetch and a served put decode it against its id") {
  const std::string root = TempDir();
  const Store here = RepoIn(root, "here"), there = RepoIn(root, "there");
  const std::vector<ContentId> ids = StoreChain(here, 3);
  const ObjectStore served(root + "/served");
  // A base that claims to be version 1, and delta 2 (on 1) that claims
  // to be version 3: checksums recomputed, so only a decode tells.
  auto forged_base_or = ForgeObject(ObjectBytes(here, ids[0]), ids[1]);
  auto forged_delta_or = ForgeObject(ObjectBytes(here, ids[2]), ids[3]);
  REQUIRE(forged_base_or.ok());
  REQUIRE(forged_delta_or.ok());
  const std::string forged_base = *forged_base_or, forged_delta = *forged_delta_or;
  MemorySource forged_source(reinterpret_cast<const uint8_t*>(forged_base.data()), forged_base.size(), "forged");
  CHECK(CheckObject(forged_source, ids[1]).ok());
  Servers servers([&](SocketEnd& c) { return ServeStore(served, c); });
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://served", servers.Connector(), "");
    // Sent to a server: refused, and the session goes on.
    Status refused = remote->Put(ids[1], forged_source);
    CHECK(refused.message().find("the server refused it: ") == 0);
    CHECK(!served.Has(ids[1]));
    CHECK(FilesIn(served.PathOf(ids[1]).substr(0, served.PathOf(ids[1]).rfind('/'))) == 0);

    // Held by the server: fetch refuses it and keeps nothing of it.
    WriteFile(served.PathOf(ids[1]), forged_base);
    auto fetched = FetchObjects(there, *remote, {ids[1]}, {});
    CHECK(fetched.status().code() == StatusCode::kCorruption);
    CHECK(fetched.status().message().find("object " + ids[1].Hex() + " from test://served was refused: ") == 0);
    CheckNothingLeft(root, there, ids[1]);

    // A forged delta: the real base and the real delta under it are
    // proven and kept, the forgery above them is not.
    REQUIRE(std::system(("rm -r " + root + "/served").c_str()) == 0);
    REQUIRE(PushObjects(here, *remote, {ids[1]}, {}).ok());
    WriteFile(served.PathOf(ids[3]), forged_delta);
    fetched = FetchObjects(there, *remote, {ids[3]}, {});
    CHECK(fetched.status().code() == StatusCode::kCorruption);
    CHECK(fetched.status().message().find("object " + ids[3].Hex() + " from test://served was refused: ") == 0);
    CHECK(there.objects.Has(ids[0]));
    CHECK(there.objects.Has(ids[1]));
    CheckNothingLeft(root, there, ids[3]);

    // The real object still goes where the forgery was refused.
    REQUIRE(std::system(("rm " + served.PathOf(ids[3])).c_str()) == 0);
    REQUIRE(PushObjects(here, *remote, {ids[3]}, {}).ok());
    REQUIRE(FetchObjects(there, *remote, {ids[3]}, {}).ok());
    CountingSink restored;
    CHECK(Restore(there, ids[3], restored).ok());
  }
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

// A RemoteStore that passes every call to `to`, except Demote, which fails
// as a store server too old to know the request would make it fail.
class NoDemote : public RemoteStore, public Demotion {
 public:
  explicit NoDemote(RemoteStore& to) : to_(to) {}
  const std::string& where() const override { return to_.where(); }
  Result<std::vector<bool>> Has(const std::vector<ContentId>& ids) override { return to_.Has(ids); }
  Status Put(const ContentId& id, const ByteSource& object) override { return to_.Put(id, object); }
  Status Get(const ContentId& id, uint64_t limit, ByteSink& out) override { return to_.Get(id, limit, out); }
  Capabilities capabilities() override {
    Capabilities c;
    c.demotion = this;
    return c;
  }
  Result<uint64_t> Demote(const ContentId&, const ReadFile&) override {
    ++asked;
    return IoError("the store server closed the connection");
  }
  int asked = 0;

 private:
  RemoteStore& to_;
};

TEST_CASE("a served demote puts a delta in place of a whole object only once it decodes to it; else nothing changes") {
  const std::string root = TempDir();
  const Store here = RepoIn(root, "here");
  const std::vector<ContentId> ids = StoreChain(here, 2);  // 1 a delta of 0, 2 of 1
  const Store served = RepoIn(root, "served");
  for (int i : {0, 1, 2}) StoreVersion(served, i);  // all three whole
  Servers servers([&](SocketEnd& c) { return ServeStore(served.objects, c); });
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://served", servers.Connector(), "");
    auto open = [&](const ContentId& id) {
      auto f = here.objects.Open(id);
      REQUIRE(f.ok());
      return std::move(*f);
    };
    const uint64_t whole = served.objects.Open(ids[1])->size();
    // The real delta of 1 (on 0): it replaces the whole object.
    auto replaced = remote->capabilities().demotion->Demote(ids[1], open(ids[1]));
    REQUIRE(replaced.ok());
    CHECK(*replaced == whole);
    CHECK(ObjectBytes(served, ids[1]) == ObjectBytes(here, ids[1]));
    // Asked again, 1 is a delta there already: nothing changes.
    replaced = remote->capabilities().demotion->Demote(ids[1], open(ids[1]));
    REQUIRE(replaced.ok());
    CHECK(*replaced == 0);
    // A whole object is not a delta: refused, and the session goes on.
    const std::string before = ObjectBytes(served, ids[0]);
    auto refused = remote->capabilities().demotion->Demote(ids[0], open(ids[0]));
    CHECK(refused.status().message().find("the server refused it: what was sent is not a delta of ") == 0);
    CHECK(ObjectBytes(served, ids[0]) == before);
    // A delta whose trailer claims 2 but that decodes to 1: only the
    // decode tells, and 2 stays whole.
    auto forged = ForgeObject(ObjectBytes(here, ids[1]), ids[2]);
    REQUIRE(forged.ok());
    WriteFile(root + "/forged", *forged);
    auto forged_file = ReadFile::Open(root + "/forged");
    REQUIRE(forged_file.ok());
    const std::string whole2 = ObjectBytes(served, ids[2]);
    refused = remote->capabilities().demotion->Demote(ids[2], *forged_file);
    CHECK(refused.status().message().find("the server refused it: ") == 0);
    CHECK(ObjectBytes(served, ids[2]) == whole2);
    CHECK(FilesIn(served.objects.PathOf(ids[2]).substr(0, served.objects.PathOf(ids[2]).rfind('/'))) == 1);
    // The real delta of 2 (on 1, itself a delta there now) replaces it, and
    // the chain of two decodes.
    replaced = remote->capabilities().demotion->Demote(ids[2], open(ids[2]));
    REQUIRE(replaced.ok());
    CHECK(*replaced > 0);
    CountingSink restored;
    CHECK(Restore(served, ids[2], restored).ok());
    CHECK(restored.bytes() == 64);
  }
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a push whose re-storing fails (a server too old for it) still succeeds, and says why once") {
  const std::string root = TempDir();
  Store here = RepoIn(root, "here");
  here.rebased_dir = root + "/rebased";
  const std::vector<ContentId> ids = StoreChain(here, 2);
  store::NoteRebased(here, ids[2], ids[1]);
  store::NoteRebased(here, ids[2], ids[0]);  // a stale note (0 is whole here): skipped
  std::unique_ptr<RemoteStore> folder = FolderRemote(root + "/there");
  NoDemote remote(*folder);
  auto pushed = PushObjects(here, remote, {ids[2]}, {});
  REQUIRE(pushed.ok());
  CHECK(pushed->moved == 3);
  CHECK(pushed->demoted == 0);
  CHECK(pushed->demote_error == "object " + ids[1].Hex() + ": the store server closed the connection");
  CHECK(remote.asked == 1);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

// The server end of an older git-zipnn, which knows none of `verbs`
// (base notes' put-note and get-note, say): the session ends at such a
// request, as such a server ends it at any request it does not know.
class WithoutVerbs : public Channel {
 public:
  WithoutVerbs(Channel& to, std::atomic<int>& asked, std::vector<std::string> verbs)
      : to_(to), asked_(asked), verbs_(std::move(verbs)) {}
  Result<size_t> Read(void* out, size_t n) override {
    ZIPNN_ASSIGN_OR_RETURN(size_t got, to_.Read(out, n));
    const std::string text(static_cast<const char*>(out), got);
    for (const std::string& verb : verbs_) {
      if (text.find(verb + " ") != std::string::npos) {
        ++asked_;
        return size_t{0};
      }
    }
    return got;
  }
  Status Write(const void* data, size_t n) override { return to_.Write(data, n); }
  void SetTimeout(double seconds) override { to_.SetTimeout(seconds); }
  void SetLowSpeed(const LowSpeed& limit) override { to_.SetLowSpeed(limit); }

 private:
  Channel& to_;
  std::atomic<int>& asked_;
  const std::vector<std::string> verbs_;
};

TEST_CASE("base notes go with their objects; a server that does not know them is asked once, and the move goes on") {
  const std::string root = TempDir();
  const Store here = RepoIn(root, "here"), there = RepoIn(root, "there");
  const std::vector<ContentId> ids = StoreChain(here, 3);
  const ObjectStore served(root + "/served");
  std::atomic<int> asked{0};
  Servers servers([&](SocketEnd& c) {
    WithoutVerbs old(c, asked, {"put-note", "get-note"});
    return ServeStore(served, old);
  });
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://served", servers.Connector(), "");
    testing::CheckPushAndFetch(here, there, *remote, ids, /*keeps_notes=*/false);
    CHECK(asked == 1);  // by the push; then neither the push nor the fetch asks again
    auto again = GetSide(*remote, SideKind::kBaseNote, ids[0]);
    REQUIRE(again.ok());
    CHECK(!*again);
    CHECK(asked == 1);
  }
  CHECK(!std::ifstream(store::BaseNotePath(served, ids[0])).good());
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

// A server that greets, answers the first get with `answer`, then sends
// `endless` bytes (zeros) until the client goes, or waits for it to go.
class Hostile {
 public:
  Hostile(std::string answer, bool endless) : answer_(std::move(answer)), endless_(endless) {}
  Status operator()(SocketEnd& c) {
    ZIPNN_RETURN_IF_ERROR(Say(c, std::string(kStoreProtocolGreeting) + "\n"));
    char request[200];
    if (!c.Read(request, sizeof request).ok()) return OkStatus();
    if (!answer_.empty()) ZIPNN_RETURN_IF_ERROR(Say(c, answer_));
    const std::string zeros(1 << 16, '\0');
    while (endless_) {
      Status sent = Say(c, zeros);
      if (!sent.ok()) return OkStatus();  // the client went
      sent_ += zeros.size();
    }
    Drain(c);  // silent until the client closes
    return OkStatus();
  }
  std::atomic<uint64_t> sent_{0};

 private:
  const std::string answer_;
  const bool endless_;
};

using Clock = std::chrono::steady_clock;
double SecondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

TEST_CASE("a client refuses an object larger than its checkpoint, and stops at its first write error") {
  const std::string root = TempDir();
  const Store empty = RepoIn(root, "empty");
  const ContentId id = HashBytes("x", 1);
  Hostile huge("ok 1125899906842623\n", /*endless=*/true);
  Servers servers([&](SocketEnd& c) { return huge(c); });
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://huge", servers.Connector(), "", 2);
    TransferOptions options;
    options.raw_sizes[id] = 64;  // what its pointer says
    const Clock::time_point start = Clock::now();
    Status st = FetchObjects(empty, *remote, {id}, options).status();
    CHECK(st.code() == StatusCode::kCorruption);
    CHECK(st.message().find("the store server offered 1125899906842623 bytes for object " + id.Hex() +
                            ", more than the " + std::to_string(ObjectSizeLimit(64))) != std::string::npos);
    CHECK(SecondsSince(start) < 2);
    CheckNothingLeft(root, empty, id);
    // Not even asked for how big: refused by the bound of any object.
    CHECK(FetchObjects(empty, *remote, {id}, {}).status().code() == StatusCode::kCorruption);
  }
  // A sink that fails (a full disk): the client stops reading at once.
  class Full : public ByteSink {
   public:
    Status Append(const void*, size_t n) override {
      taken += n;
      return IoError("No space left on device");
    }
    uint64_t taken = 0;
  };
  Hostile streaming("ok 1099511627776\n", /*endless=*/true);
  Servers stream_servers([&](SocketEnd& c) { return streaming(c); });
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://stream", stream_servers.Connector(), "", 2);
    Full full;
    const Clock::time_point start = Clock::now();
    CHECK(remote->Get(id, UINT64_MAX, full).message() == "No space left on device");
    CHECK(SecondsSince(start) < 1);
    CHECK(full.taken < (1 << 20));
  }
  CHECK(streaming.sent_ < (64 << 20));  // it went no further than the socket buffers
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a client gives up on a server that stops answering within its timeout, and asks it no more") {
  const std::string root = TempDir();
  const Store empty = RepoIn(root, "empty");
  const ContentId id = HashBytes("x", 1);
  struct Case {
    const char* what;
    std::string answer;
  };
  const std::string object_start = "ok 10\n0123456789";
  for (const Case& c :
       {Case{"no answer", ""}, Case{"half an object", "ok 1000\n" + std::string(500, 'z')},
        Case{"more bytes than said", object_start + std::string(100, 'q')}, Case{"half a line", "ok 1"}}) {
    CAPTURE(c.what);
    Hostile quiet(c.answer, /*endless=*/false);
    Servers servers([&](SocketEnd& s) { return quiet(s); });
    const Clock::time_point start = Clock::now();
    Status st;
    {
      std::unique_ptr<RemoteStore> remote = ServedRemote("test://quiet", servers.Connector(), "", 0.5);
      st = FetchObjects(empty, *remote, {id}, {}).status();
    }
    CHECK(!st.ok());
    CHECK(SecondsSince(start) < 2.5);
    CHECK(servers.connections <= 3);  // bytes that are not the object may be tried again
    CheckNothingLeft(root, empty, id);
    if (c.answer.rfind(object_start, 0) != 0) {
      CHECK(st.message() == "cannot fetch object " + id.Hex() +
                                " from test://quiet: the store server stopped answering: nothing moved for 0.5 s "
                                "(the timeout: GIT_ZIPNN_TIMEOUT, or git config zipnn.timeout)");
      CHECK(servers.connections == 1);
    }
  }
  // A server that never greets.
  Servers mute([&](SocketEnd& s) {
    Drain(s);
    return OkStatus();
  });
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://mute", mute.Connector(), "", 0.5);
    const Clock::time_point start = Clock::now();
    CHECK(FetchObjects(empty, *remote, {id}, {}).status().message().find("stopped answering") != std::string::npos);
    CHECK(SecondsSince(start) < 1.5);
  }
  CHECK(mute.connections == 1);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

// A server that greets and reads a request, then sends `fast` at once and
// `trickled` a byte every 20 ms (50 bytes a second), or with `reading`
// takes what the client sends a byte every 20 ms. It goes on for 4 s at
// most, then closes the connection.
class Trickler {
 public:
  Trickler(std::string fast, std::string trickled, bool reading = false)
      : fast_(std::move(fast)), trickled_(std::move(trickled)), reading_(reading) {}
  Status operator()(SocketEnd& c) {
    ZIPNN_RETURN_IF_ERROR(Say(c, std::string(kStoreProtocolGreeting) + "\n"));
    const Clock::time_point start = Clock::now();
    char byte;
    if (reading_) {
      while (SecondsSince(start) < 4 && c.Read(&byte, 1).ok())
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return OkStatus();
    }
    char request[200];
    if (!c.Read(request, sizeof request).ok()) return OkStatus();
    if (!Say(c, fast_).ok()) return OkStatus();
    for (size_t i = 0; i < trickled_.size() && SecondsSince(start) < 4; ++i) {
      if (!Say(c, trickled_.substr(i, 1)).ok()) return OkStatus();  // the client went
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return OkStatus();
  }

 private:
  const std::string fast_, trickled_;
  const bool reading_;
};

TEST_CASE("a client gives up on a server that trickles, under the low-speed limit, and asks it no more") {
  const std::string root = TempDir();
  const Store empty = RepoIn(root, "empty");
  const ContentId id = HashBytes("x", 1);
  const LowSpeed limit{1000, 0.5};  // 50 bytes a second is far below
  const std::string too_slow = "the store server is too slow: ";
  const std::string hint =
      " bytes a second it must keep up over 0.5 s (the limit: git config zipnn.lowSpeedLimit and "
      "zipnn.lowSpeedTime; 0 turns it off)";
  struct Case {
    const char* what;
    std::string fast, trickled;
  };
  for (const Case& c : {Case{"an object", "ok 100000\n", std::string(100000, 'z')},
                        Case{"an answer's line", "", "ok " + std::string(300, '0') + "\n"}}) {
    CAPTURE(c.what);
    Trickler trickler(c.fast, c.trickled);
    Servers servers([&](SocketEnd& s) { return trickler(s); });
    Status st;
    {
      std::unique_ptr<RemoteStore> remote = ServedRemote("test://trickle", servers.Connector(), "", 5, limit);
      st = FetchObjects(empty, *remote, {id}, {}).status();
    }
    CHECK(st.code() == StatusCode::kIoError);
    CHECK(st.message().rfind("cannot fetch object " + id.Hex() + " from test://trickle: " + too_slow, 0) == 0);
    CHECK(st.message().find(", less than the 1000" + hint) != std::string::npos);
    CHECK(servers.connections == 1);  // as good as stopped: not asked again
    CheckNothingLeft(root, empty, id);
  }
  // A server that takes what it is sent a byte at a time.
  Trickler reader("", "", /*reading=*/true);
  Servers servers([&](SocketEnd& s) { return reader(s); });
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://trickle", servers.Connector(), "", 5, limit);
    const std::string object(4 << 20, 'o');  // more than the sockets hold
    MemorySource source(reinterpret_cast<const uint8_t*>(object.data()), object.size(), "object");
    const Status put = remote->Put(id, source);
    CHECK(put.message().rfind(too_slow, 0) == 0);
    CHECK(put.message().find(hint) != std::string::npos);
  }
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("the low-speed limit does not count the time a server thinks before it answers") {
  const std::string root = TempDir();
  const Store here = RepoIn(root, "here"), there = RepoIn(root, "there");
  const std::vector<ContentId> ids = StoreChain(here, 2);
  // A server that takes a second over each request (a slow disk), then
  // answers at full speed.
  Servers servers([&](SocketEnd& c) {
    class Slow : public Channel {
     public:
      explicit Slow(Channel& c) : c_(c) {}
      Result<size_t> Read(void* out, size_t n) override {
        Result<size_t> got = c_.Read(out, n);
        std::this_thread::sleep_for(std::chrono::seconds(1));
        return got;
      }
      Status Write(const void* data, size_t n) override { return c_.Write(data, n); }

     private:
      Channel& c_;
    } slow(c);
    return ServeStore(here.objects, slow);
  });
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://thinking", servers.Connector(), "", 5, {1000, 0.3});
    auto fetched = FetchObjects(there, *remote, {ids[1]}, {});
    REQUIRE(fetched.ok());
    CHECK(fetched->moved == 2);
  }
  CountingSink restored;
  CHECK(Restore(there, ids[1], restored).ok());
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("retain on a served store keeps a version that a push made the base of a fine-tune after retain listed it") {
  const std::string root = TempDir();
  const ObjectStore served(root + "/served");
  Servers servers([&](SocketEnd& c) { return ServeStore(served, c); });
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://served", servers.Connector(), "");
    std::unique_ptr<RemoteStore> teammate = ServedRemote("test://served", servers.Connector(), "");
    testing::CheckRetainKeepsWhatAPushRestsOn(RepoIn(root, "here"), RepoIn(root, "mate"), RepoIn(root, "fresh"),
                                              *remote, *teammate);
  }
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

// Runs one session of ServeStore against a client that says `request`
// and then closes; what the server answered.
std::string AnswersTo(const ObjectStore& store, const std::string& request) {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  std::thread server([&] {
    SocketEnd end(fds[1]);
    (void)ServeStore(store, end);
  });
  std::string answer;
  {
    SocketEnd client(fds[0]);
    REQUIRE(Say(client, request).ok());
    client.CloseWrite();
    answer = Drain(client);
  }
  server.join();
  return answer;
}

TEST_CASE("a server keeps side files by put-side and get-side as by the older requests, and refuses a kind it lacks") {
  const std::string root = TempDir();
  const ObjectStore served(root + "/served");
  const ContentId id = HashBytes("a version", 9);
  store::Retained dropped;
  dropped.id = id;
  dropped.dropped = true;
  dropped.date = 1795000000;
  const std::string text = store::RecordText(dropped);
  const std::string size = std::to_string(text.size());
  const std::string greeting = std::string(kStoreProtocolGreeting) + "\n";
  CHECK(AnswersTo(served, "put-side record " + id.Hex() + " " + size + "\n" + text + "get-record " + id.Hex() +
                              "\n") == greeting + "ok\nok " + size + "\n" + text);
  CHECK(AnswersTo(served, "get-side record " + id.Hex() + "\n") == greeting + "ok " + size + "\n" + text);
  CHECK(AnswersTo(served, "get-side note " + id.Hex() + "\n") == greeting + "missing\n");
  // A kind it does not keep: its bytes are read through and the session
  // goes on.
  CHECK(AnswersTo(served, "put-side parts " + id.Hex() + " 3\nabcget-side parts " + id.Hex() + "\nlist\n") ==
        greeting + "error this store server keeps no side file of kind parts\n" +
            "error this store server keeps no side file of kind parts\nok 0\n");
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

// A link that drops: each connection carries at most `send` bytes from
// the client and `receive` bytes to it, then fails as a network that went
// away does (the server sees its end close). Counts what went each way.
// A connection counts from its start: a test that changes the budgets
// takes a new remote, so that no open connection has used them already.
struct Link {
  std::atomic<uint64_t> send{UINT64_MAX}, receive{UINT64_MAX};
  std::atomic<uint64_t> sent{0}, received{0};
};
class Dropping : public Channel {
 public:
  Dropping(std::unique_ptr<Channel> inner, Link& link) : inner_(std::move(inner)), link_(link) {}
  Result<size_t> Read(void* out, size_t n) override {
    if (!inner_ || received_ >= link_.receive) return Drop();
    ZIPNN_ASSIGN_OR_RETURN(size_t got, inner_->Read(out, std::min<uint64_t>(n, link_.receive - received_)));
    received_ += got;
    link_.received += got;
    return got;
  }
  Status Write(const void* data, size_t n) override {
    if (!inner_) return Drop().status();
    const size_t k = sent_ >= link_.send ? 0 : static_cast<size_t>(std::min<uint64_t>(n, link_.send - sent_));
    ZIPNN_RETURN_IF_ERROR(inner_->Write(data, k));
    sent_ += k;
    link_.sent += k;
    if (k < n) return Drop().status();
    return OkStatus();
  }
  void SetTimeout(double seconds) override {
    if (inner_) inner_->SetTimeout(seconds);
  }
  void SetLowSpeed(const LowSpeed& limit) override {
    if (inner_) inner_->SetLowSpeed(limit);
  }

 private:
  Result<size_t> Drop() {
    inner_.reset();
    return IoError("the link dropped");
  }
  std::unique_ptr<Channel> inner_;
  Link& link_;
  uint64_t sent_ = 0, received_ = 0;
};
StoreConnector Through(StoreConnector connect, Link& link) {
  return [connect, &link]() -> Result<std::unique_ptr<Channel>> {
    ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<Channel> c, connect());
    return std::unique_ptr<Channel>(new Dropping(std::move(c), link));
  };
}

// A version of `n` bytes that no coder shrinks: its object is about as big.
ContentId StoreNoise(const Store& store, size_t n, uint32_t seed) {
  std::vector<uint8_t> data(n);
  for (uint8_t& b : data) {
    seed = seed * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(seed >> 24);
  }
  return store::testing::StoreData(store, data);
}

constexpr uint64_t kMiB = 1 << 20;

TEST_CASE("a push whose link drops every 1.25 MiB lands a 3 MiB object by resuming, sending it about once") {
  const std::string root = TempDir();
  const Store here = RepoIn(root, "here");
  const ContentId id = StoreNoise(here, 3 * kMiB, 1);
  auto object = here.objects.Open(id);
  REQUIRE(object.ok());
  const uint64_t size = object->size();
  const ObjectStore served(root + "/served");
  Servers servers([&](SocketEnd& c) { return ServeStore(served, c); });
  Link link;
  link.send = kMiB + kMiB / 4;
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://served", Through(servers.Connector(), link), "");
    auto pushed = PushObjects(here, *remote, {id}, {});  // three tries: each goes on where the last stopped
    REQUIRE_MESSAGE(pushed.ok(), pushed.status().message());
    CHECK(pushed->moved == 1);
  }
  CHECK(store::HoldsIntact(served, id));
  CHECK(link.sent > size);
  CHECK(link.sent < size + 4096);  // requests and lines, not the object again
  CHECK(servers.connections == 3);
  const std::string folder = root + "/served/" + id.Hex().substr(0, 2) + "/" + id.Hex().substr(2, 2);
  CHECK(FilesIn(folder) == 1);  // the object; what was kept took its name
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a put cut short keeps what came for the same file only: another copy, or a forged rest, is sent whole") {
  const std::string root = TempDir();
  const Store here = RepoIn(root, "here");
  const ContentId id = StoreNoise(here, 2 * kMiB, 2);
  const ObjectStore served(root + "/served");
  Servers servers([&](SocketEnd& c) { return ServeStore(served, c); });
  const std::string folder = root + "/served/" + id.Hex().substr(0, 2) + "/" + id.Hex().substr(2, 2);
  Link link;
  auto through = [&](uint64_t send) {
    link.send = send;
    link.sent = 0;
    return ServedRemote("test://served", Through(servers.Connector(), link), "");
  };
  auto object = here.objects.Open(id);
  REQUIRE(object.ok());
  std::unique_ptr<RemoteStore> remote = through(kMiB);
  CHECK(remote->PutFile(id, *object).code() == StatusCode::kIoError);
  CHECK(!served.Has(id));
  CHECK(FilesIn(folder) == 1);  // what came, kept under a temporary name

  // The same bytes in another file (a copy, re-stored): sent whole.
  REQUIRE(std::system(("cp " + here.objects.PathOf(id) + " " + root + "/copy").c_str()) == 0);
  auto copy = ReadFile::Open(root + "/copy");
  REQUIRE(copy.ok());
  REQUIRE(copy->Identity() != object->Identity());
  remote = through(UINT64_MAX);
  REQUIRE(remote->PutFile(id, *copy).ok());
  CHECK(link.sent > copy->size());
  CHECK(store::HoldsIntact(served, id));

  // A server's kept bytes that are not the object's (here: damaged where
  // they lie): the whole fails its check, nothing takes the name, and
  // the next try sends it all again.
  REQUIRE(std::system(("rm -rf " + root + "/served").c_str()) == 0);
  remote = through(kMiB);
  CHECK(remote->PutFile(id, *object).code() == StatusCode::kIoError);
  REQUIRE(FilesIn(folder) == 1);
  REQUIRE(std::system(("f=$(ls " + folder + "/*.tmp-*) && printf 'XXXX' | dd of=\"$f\" bs=1 seek=100000 "
                       "conv=notrunc status=none").c_str()) == 0);
  remote = through(UINT64_MAX);
  const Status refused = remote->PutFile(id, *object);
  CHECK(refused.code() == StatusCode::kIoError);
  CHECK(refused.message().find("the server refused it: ") == 0);
  CHECK(link.sent < object->size());  // only the rest was sent
  CHECK(!served.Has(id));
  CHECK(FilesIn(folder) == 0);  // and what was kept is gone
  link.sent = 0;
  REQUIRE(remote->PutFile(id, *object).ok());
  CHECK(link.sent > object->size());
  CHECK(store::HoldsIntact(served, id));
  remote.reset();
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a fetch whose link drops every 1.25 MiB gets a 3 MiB object by resuming, receiving it about once") {
  const std::string root = TempDir();
  const Store served = RepoIn(root, "served"), there = RepoIn(root, "there");
  const ContentId id = StoreNoise(served, 3 * kMiB, 3);
  auto object = served.objects.Open(id);
  REQUIRE(object.ok());
  const uint64_t size = object->size();
  Servers servers([&](SocketEnd& c) { return ServeStore(served.objects, c); });
  Link link;
  link.receive = kMiB + kMiB / 4;
  const std::string kept = root + "/partial";
  {
    std::unique_ptr<RemoteStore> remote =
        ServedRemote("test://served", Through(servers.Connector(), link), "", kDefaultTimeout, kDefaultLowSpeed, kept);
    auto fetched = FetchObjects(there, *remote, {id}, {});
    REQUIRE_MESSAGE(fetched.ok(), fetched.status().message());
    CHECK(fetched->moved == 1);
  }
  CHECK(store::HoldsIntact(there.objects, id));
  CHECK(link.received > size);
  CHECK(link.received < size + 4096);
  CHECK(FilesIn(kept) == 0);  // nothing kept once it is in

  // Without a place to keep it, each try starts again, and three do not do.
  REQUIRE(std::system(("rm -rf " + root + "/there").c_str()) == 0);
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://served", Through(servers.Connector(), link), "");
    CHECK(FetchObjects(there, *remote, {id}, {}).status().code() == StatusCode::kIoError);
  }
  CHECK(!there.objects.Has(id));
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a fetch keeps what came of one copy only: when the server's copy changed, it starts again") {
  const std::string root = TempDir();
  const Store served = RepoIn(root, "served");
  const ContentId id = StoreNoise(served, 2 * kMiB, 4);
  auto object = ReadWholeFile(served.objects.PathOf(id));
  REQUIRE(object.ok());
  Servers servers([&](SocketEnd& c) { return ServeStore(served.objects, c); });
  Link link;
  const std::string kept = root + "/partial";
  auto through = [&](uint64_t receive) {
    link.receive = receive;
    link.received = 0;
    return ServedRemote("test://served", Through(servers.Connector(), link), "", kDefaultTimeout, kDefaultLowSpeed,
                        kept);
  };
  std::unique_ptr<RemoteStore> remote = through(kMiB);
  MemorySink first;
  CHECK(remote->Get(id, UINT64_MAX, first).code() == StatusCode::kIoError);
  CHECK(FilesIn(kept) == 1);

  // The server's file replaced by a copy (as a demotion or a repack
  // replaces it): what was kept is not of it.
  const std::string path = served.objects.PathOf(id);
  REQUIRE(std::system(("cp " + path + " " + path + ".new && mv " + path + ".new " + path).c_str()) == 0);
  remote = through(UINT64_MAX);
  MemorySink whole;
  REQUIRE(remote->Get(id, UINT64_MAX, whole).ok());
  CHECK(whole.ToVector() == *object);
  CHECK(link.received > object->size());
  CHECK(FilesIn(kept) == 0);

  // The same copy: only the rest comes, and the bytes kept come first.
  remote = through(kMiB);
  MemorySink cut;
  CHECK(remote->Get(id, UINT64_MAX, cut).code() == StatusCode::kIoError);
  remote = through(UINT64_MAX);
  MemorySink rest;
  REQUIRE(remote->Get(id, UINT64_MAX, rest).ok());
  CHECK(rest.ToVector() == *object);
  CHECK(link.received < object->size() - kMiB / 2);
  CHECK(FilesIn(kept) == 0);
  remote.reset();
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("resuming transfers: a server of an older release is asked twice, then sent and asked whole") {
  const std::string root = TempDir();
  const Store here = RepoIn(root, "here"), there = RepoIn(root, "there");
  const ContentId id = StoreNoise(here, 2 * kMiB, 5);
  const ObjectStore served(root + "/served");
  std::atomic<int> asked{0};
  Servers servers([&](SocketEnd& c) {
    WithoutVerbs old(c, asked, {"put-from", "get-from"});
    return ServeStore(served, old);
  });
  {
    std::unique_ptr<RemoteStore> remote =
        ServedRemote("test://served", servers.Connector(), "", kDefaultTimeout, kDefaultLowSpeed, root + "/partial");
    auto pushed = PushObjects(here, *remote, {id}, {});
    REQUIRE_MESSAGE(pushed.ok(), pushed.status().message());
    auto fetched = FetchObjects(there, *remote, {id}, {});
    REQUIRE_MESSAGE(fetched.ok(), fetched.status().message());
  }
  CHECK(asked == 2);  // on two connections (one may have dropped just then), then never again
  CHECK(store::HoldsIntact(there.objects, id));
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

// A store holding one object of noise, and what a server says of it in
// the store protocol: its bytes, the word naming its file, its size.
struct OneServed {
  explicit OneServed(uint32_t seed) : root(TempDir()), served(RepoIn(root, "served")) {
    id = StoreNoise(served, 100, seed);
    auto file = served.objects.Open(id);
    REQUIRE(file.ok());
    copy = file->Identity();
    auto bytes = ReadWholeFile(served.objects.PathOf(id));
    REQUIRE(bytes.ok());
    object.assign(bytes->begin(), bytes->end());
    size = std::to_string(object.size());
  }
  ~OneServed() { (void)std::system(("rm -rf " + root).c_str()); }
  const std::string root;
  const Store served;
  ContentId id;
  std::string object, copy, size;
  const std::string greeting = std::string(kStoreProtocolGreeting) + "\n";
};

TEST_CASE("a server answers get-from and put-from as the protocol says, and refuses a copy word it cannot take") {
  OneServed one(6);
  const Store& served = one.served;
  const ContentId& id = one.id;
  const std::string &object = one.object, &copy = one.copy, &size = one.size, &greeting = one.greeting;
  CHECK(AnswersTo(served.objects, "get-from " + id.Hex() + " 10 " + copy + "\n") ==
        greeting + "ok " + size + " " + copy + " 10\n" + object.substr(10));
  CHECK(AnswersTo(served.objects, "get-from " + id.Hex() + " 10 -\n") ==
        greeting + "ok " + size + " " + copy + " 0\n" + object);
  CHECK(AnswersTo(served.objects, "get-from " + id.Hex() + " 99999 " + copy + "\n") ==
        greeting + "ok " + size + " " + copy + " 0\n" + object);
  const std::string other = HashBytes("o", 1).Hex();
  CHECK(AnswersTo(served.objects, "get-from " + other + " 0 -\n") == greeting + "missing\n");
  CHECK(ServeTo(served.objects, "get-from " + id.Hex() + " 0 ../x\n").message().find("not a store request") == 0);
  CHECK(ServeTo(served.objects, "put-from " + id.Hex() + " 10 A\n").message().find("not a store request") == 0);
  // A put-from of what the store holds: the bytes are read, and it stays.
  CHECK(AnswersTo(served.objects, "put-from " + id.Hex() + " " + size + " 1-2-3\n" + object) ==
        greeting + "ok 0\nok\n");
}

TEST_CASE("a client refuses a get-from answer that starts where it kept nothing or names no file it may keep") {
  const std::string root = TempDir();
  const Store empty = RepoIn(root, "empty");
  const ContentId id = HashBytes("x", 1);
  const std::string kept = root + "/partial/kept";
  struct Case {
    const char* what;
    std::string answer;
    const char* said;
  };
  for (const Case& c : {Case{"a start where nothing was kept", "ok 2000000 abc 5\n", "ok 2000000 abc 5"},
                        Case{"a copy word that is a path", "ok 2000000 ../../x 0\n", "ok 2000000 ../../x 0"},
                        Case{"a copy word with a slash", "ok 2000000 a/b 0\n", "ok 2000000 a/b 0"},
                        Case{"too few words", "ok 2000000 abc\n", "ok 2000000 abc"}}) {
    CAPTURE(std::string(c.what));
    Hostile liar(c.answer, /*endless=*/true);
    Servers servers([&](SocketEnd& s) { return liar(s); });
    Status st;
    {
      std::unique_ptr<RemoteStore> remote =
          ServedRemote("test://liar", servers.Connector(), "", 2, kDefaultLowSpeed, kept);
      MemorySink out;
      st = remote->Get(id, UINT64_MAX, out);
      CHECK(out.ToVector().empty());
    }
    CHECK(st.code() == StatusCode::kIoError);
    CHECK(st.message() == std::string("the store server answered \"") + c.said + "\"");
    CHECK(FilesIn(kept) == 0);
    CHECK(FilesIn(root) == 0);  // nothing named by the server, nor kept
  }
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a connection that closes once after get-from or put-from is a dropped link, not an older server") {
  const std::string root = TempDir();
  const Store here = RepoIn(root, "here"), there = RepoIn(root, "there");
  const ContentId id = StoreNoise(here, 2 * kMiB, 7);
  const ObjectStore served(root + "/served");
  std::atomic<int> sessions{0}, asked{0};
  Servers servers([&](SocketEnd& c) {
    if (sessions++ == 0) {  // the first session ends at its first resuming request
      WithoutVerbs dropped(c, asked, {"put-from", "get-from"});
      return ServeStore(served, dropped);
    }
    return ServeStore(served, c);
  });
  Link link;
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://served", Through(servers.Connector(), link), "",
                                                       kDefaultTimeout, kDefaultLowSpeed, root + "/partial");
    REQUIRE(PushObjects(here, *remote, {id}, {}).ok());
  }
  CHECK(asked == 1);
  // Still resuming: a fetch cut short keeps what came.
  link.receive = kMiB;
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://served", Through(servers.Connector(), link), "",
                                                       kDefaultTimeout, kDefaultLowSpeed, root + "/partial");
    MemorySink cut;
    CHECK(remote->Get(id, UINT64_MAX, cut).code() == StatusCode::kIoError);
  }
  CHECK(FilesIn(root + "/partial") == 1);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a server writes nothing through a link planted where it keeps an interrupted put") {
  const std::string root = TempDir();
  const Store here = RepoIn(root, "here");
  const ContentId id = StoreNoise(here, 2 * kMiB, 8);
  auto object = here.objects.Open(id);
  REQUIRE(object.ok());
  const ObjectStore served(root + "/served");
  Servers servers([&](SocketEnd& c) { return ServeStore(served, c); });
  Link link;
  link.send = kMiB;
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://served", Through(servers.Connector(), link), "");
    CHECK(remote->PutFile(id, *object).code() == StatusCode::kIoError);
  }
  const std::string folder = root + "/served/" + id.Hex().substr(0, 2) + "/" + id.Hex().substr(2, 2);
  // Someone who may write in the store's folder puts a hard link to a file
  // of theirs where the kept bytes were.
  REQUIRE(std::system(("f=$(ls " + folder + "/*.tmp-*) && rm \"$f\" && printf victim > " + root +
                       "/victim && ln " + root + "/victim \"$f\"").c_str()) == 0);
  link.send = UINT64_MAX;
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://served", Through(servers.Connector(), link), "");
    REQUIRE(remote->PutFile(id, *object).ok());
  }
  CHECK(store::HoldsIntact(served, id));
  auto victim = ReadWholeFile(root + "/victim");
  REQUIRE(victim.ok());
  CHECK(std::string(victim->begin(), victim->end()) == "victim");
  struct stat st;
  REQUIRE(::stat(served.PathOf(id).c_str(), &st) == 0);
  CHECK(st.st_nlink == 1);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a fetch stopped after an object came whole, before it took its name, does not get it again") {
  const std::string root = TempDir();
  const Store here = RepoIn(root, "here"), there = RepoIn(root, "there");
  const ContentId big = StoreNoise(here, 2 * kMiB, 9);
  const ContentId small = StoreNoise(here, 1000, 10);
  const ObjectStore served(root + "/served");
  Servers servers([&](SocketEnd& c) { return ServeStore(served, c); });
  Link link;
  const std::string kept = root + "/partial";
  auto remote = [&] {
    return ServedRemote("test://served", Through(servers.Connector(), link), "", kDefaultTimeout, kDefaultLowSpeed,
                        kept);
  };
  REQUIRE(PushObjects(here, *remote(), {big}, {}).ok());
  TransferOptions one_at_a_time;
  one_at_a_time.parallel = 1;
  // The second is not on the remote: the fetch ends before either takes
  // its name, the first whole in the file it came into.
  CHECK(FetchObjects(there, *remote(), {big, small}, one_at_a_time).status().code() == StatusCode::kNotFound);
  CHECK(!there.objects.Has(big));
  CHECK(FilesIn(kept) == 1);
  REQUIRE(PushObjects(here, *remote(), {small}, {}).ok());
  link.received = 0;
  auto fetched = FetchObjects(there, *remote(), {big, small}, one_at_a_time);
  REQUIRE_MESSAGE(fetched.ok(), fetched.status().message());
  CHECK(store::HoldsIntact(there.objects, big));
  CHECK(store::HoldsIntact(there.objects, small));
  CHECK(link.received < 10000);  // the small one and the lines: the big one was here
  CHECK(FilesIn(kept) == 0);      // each kept file took its object's name

  // A kept file damaged where it lies fails its check, is dropped, and
  // the object is fetched again.
  REQUIRE(std::system(("rm -rf " + root + "/there").c_str()) == 0);
  CHECK(FetchObjects(there, *remote(), {small, HashBytes("none", 4)}, one_at_a_time).status().code() ==
        StatusCode::kNotFound);
  REQUIRE(FilesIn(kept) == 1);
  REQUIRE(std::system(("printf 'XX' | dd of=$(ls -d " + kept + "/*) bs=1 seek=500 conv=notrunc status=none").c_str()) ==
          0);
  link.received = 0;
  REQUIRE(FetchObjects(there, *remote(), {small}, one_at_a_time).ok());
  CHECK(store::HoldsIntact(there.objects, small));
  CHECK(link.received > 1000);  // fetched again
  CHECK(FilesIn(kept) == 0);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a link planted where a fetch keeps its download is replaced by a file; what it points to is untouched") {
  const std::string root = TempDir();
  const Store served = RepoIn(root, "served");
  const ContentId id = StoreNoise(served, 2 * kMiB, 11);
  auto file = ReadFile::Open(served.objects.PathOf(id));
  REQUIRE(file.ok());
  const std::string kept = root + "/partial";
  REQUIRE(std::system(("mkdir -p " + kept + " && printf victim > " + root + "/victim && ln -s " + root + "/victim " +
                       kept + "/" + id.Hex() + "-" + file->Identity()).c_str()) == 0);
  Servers servers([&](SocketEnd& c) { return ServeStore(served.objects, c); });
  Link link;
  link.receive = kMiB;
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://served", Through(servers.Connector(), link), "",
                                                       kDefaultTimeout, kDefaultLowSpeed, kept);
    MemorySink cut;
    CHECK(remote->Get(id, UINT64_MAX, cut).code() == StatusCode::kIoError);
  }
  auto victim = ReadWholeFile(root + "/victim");
  REQUIRE(victim.ok());
  CHECK(std::string(victim->begin(), victim->end()) == "victim");
  struct stat st;
  REQUIRE(::lstat((kept + "/" + id.Hex() + "-" + file->Identity()).c_str(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));  // what came is kept in a file of its own
  CHECK(st.st_size > 0);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

// The server end of a store that holds each request `verb` for a range
// (past the first, unless `first`) until `expected` of them are in (or
// 10 s pass): ranges that arrive at once, on connections of their own,
// all get through; ranges sent one after another would each wait the
// whole 10 s.
class RangeGate : public Channel {
 public:
  struct Shared {
    std::string verb = "get-range";
    bool first = false;  // the range from 0 waits too
    std::mutex mu;
    std::condition_variable all_in;
    int expected = 0;
    int arrived = 0;
    int requests = 0;        // every request `verb`, the first included
    bool timed_out = false;  // one waited 10 s for the others
  };
  RangeGate(Channel& to, Shared& shared) : to_(to), shared_(shared) {}
  Result<size_t> Read(void* out, size_t n) override {
    ZIPNN_ASSIGN_OR_RETURN(size_t got, to_.Read(out, n));
    const std::string text(static_cast<const char*>(out), got);
    const size_t at = text.find(shared_.verb + " ");
    if (at != std::string::npos) {
      std::istringstream words(text.substr(at));
      std::string verb, id, from;
      words >> verb >> id >> from;
      std::unique_lock<std::mutex> lock(shared_.mu);
      ++shared_.requests;
      if (from != "0" || shared_.first) {  // waits for the others
        ++shared_.arrived;
        shared_.all_in.notify_all();
        if (!shared_.all_in.wait_for(lock, std::chrono::seconds(10),
                                     [&] { return shared_.arrived >= shared_.expected; })) {
          shared_.timed_out = true;
        }
      }
    }
    return got;
  }
  Status Write(const void* data, size_t n) override { return to_.Write(data, n); }
  void SetTimeout(double seconds) override { to_.SetTimeout(seconds); }
  void SetLowSpeed(const LowSpeed& limit) override { to_.SetLowSpeed(limit); }

 private:
  Channel& to_;
  Shared& shared_;
};

// A store served in this process holding one object of `n` bytes of
// noise, a store to fetch it into, and remotes on four connections that
// reach it through `link`; `serve` runs each session (default: the
// store, plainly).
struct ServedNoise {
  using Serve = std::function<Status(SocketEnd&, const ObjectStore&)>;
  ServedNoise(size_t n, uint32_t seed, Serve serve = nullptr)
      : served(RepoIn(root.path, "served")),
        there(RepoIn(root.path, "there")),
        id(StoreNoise(served, n, seed)),
        kept(root.path + "/partial"),
        servers(
            [this, serve](SocketEnd& c) { return serve ? serve(c, served.objects) : ServeStore(served.objects, c); }) {
    auto read = ReadWholeFile(served.objects.PathOf(id));
    REQUIRE(read.ok());
    bytes = *read;
  }
  // A remote whose connections each drop after `receive` bytes; the
  // link's counts start again.
  std::unique_ptr<RemoteStore> Remote(uint64_t receive = UINT64_MAX) {
    link.receive = receive;
    link.received = 0;
    return ServedRemote("test://served", Through(servers.Connector(), link), "", kDefaultTimeout, kDefaultLowSpeed,
                        kept, /*connections=*/4);
  }
  struct Root {  // removed last, once every server has ended
    ~Root() { (void)std::system(("rm -rf " + path).c_str()); }
    const std::string path = TempDir();
  } root;
  const Store served, there;
  const ContentId id;
  std::vector<uint8_t> bytes;
  const std::string kept;
  Link link;
  Servers servers;
};

TEST_CASE("a fetch on four connections moves one 20 MiB object in ranges on all of them at once, each byte once") {
  RangeGate::Shared gate;
  gate.expected = 4;  // after the first 4 MiB, four ranges of at most 5 MiB
  ServedNoise one(20 * kMiB, 21, [&](SocketEnd& c, const ObjectStore& served) {
    RangeGate gated(c, gate);
    return ServeStore(served, gated);
  });
  auto fetched = FetchObjects(one.there, *one.Remote(), {one.id}, {});
  REQUIRE_MESSAGE(fetched.ok(), fetched.status().message());
  CHECK(store::HoldsIntact(one.there.objects, one.id));
  CHECK(gate.requests == 5);
  CHECK(!gate.timed_out);  // the four ranges were in flight together
  CHECK(one.servers.connections == 4);
  CHECK(one.link.received > one.bytes.size());
  CHECK(one.link.received < one.bytes.size() + 4096);
  CHECK(FilesIn(one.kept) == 0);  // nothing kept once it is in
}

TEST_CASE("a fetch in ranges cut short on every connection keeps every byte that came; the next gets only the rest") {
  ServedNoise one(20 * kMiB, 22);
  const uint64_t size = one.bytes.size();
  // Each connection drops after 4.5 MiB: the first 4 MiB come, every
  // range of 5 MiB is cut, and the last range of 1 MiB may come.
  MemorySink cut;
  CHECK(one.Remote(4 * kMiB + kMiB / 2)->capabilities().kept_gets->GetKept(one.id, UINT64_MAX, cut).status().code() ==
        StatusCode::kIoError);
  const uint64_t first_try = one.link.received;
  CHECK(first_try >= 4 * kMiB);
  CHECK(FilesIn(one.kept) == 2);  // the spread file and its record
  {
    std::unique_ptr<RemoteStore> remote = one.Remote();
    MemorySink check;
    auto whole = remote->capabilities().kept_gets->GetKept(one.id, UINT64_MAX, check);
    REQUIRE_MESSAGE(whole.ok(), whole.status().message());
    CHECK(check.ToVector() == one.bytes);  // every byte handed on, in order
    auto in = ReadWholeFile((*whole)->path());
    REQUIRE(in.ok());
    CHECK(*in == one.bytes);
    (*whole)->Done(OkStatus());
  }
  CHECK(one.link.received < size - 4 * kMiB);   // the first 4 MiB were not asked for again
  CHECK(first_try + one.link.received > size);  // no byte came twice: the cut ranges went on where they stopped
  CHECK(first_try + one.link.received < size + 4096);
  CHECK(FilesIn(one.kept) == 0);
}

TEST_CASE("a fetch in ranges drops what it kept of another copy, and a server without get-range is asked twice") {
  ServedNoise one(12 * kMiB, 23);
  MemorySink cut;
  CHECK(one.Remote(4 * kMiB + kMiB / 2)->capabilities().kept_gets->GetKept(one.id, UINT64_MAX, cut).status().code() ==
        StatusCode::kIoError);
  REQUIRE(FilesIn(one.kept) == 2);
  // The server's file replaced by a copy (as a demotion or a repack
  // replaces it): what was kept is not of it, and goes.
  const std::string path = one.served.objects.PathOf(one.id);
  REQUIRE(std::system(("cp " + path + " " + path + ".new && mv " + path + ".new " + path).c_str()) == 0);
  auto fetched = FetchObjects(one.there, *one.Remote(), {one.id}, {});
  REQUIRE_MESSAGE(fetched.ok(), fetched.status().message());
  CHECK(store::HoldsIntact(one.there.objects, one.id));
  CHECK(one.link.received > one.bytes.size());
  CHECK(FilesIn(one.kept) == 0);

  // A server of an older release ends the session at get-range: asked on
  // two connections, then by get-from.
  const Store again = RepoIn(one.root.path, "again");
  std::atomic<int> asked{0};
  Servers old_servers([&](SocketEnd& c) {
    WithoutVerbs old(c, asked, {"get-range"});
    return ServeStore(one.served.objects, old);
  });
  {
    std::unique_ptr<RemoteStore> remote =
        ServedRemote("test://old", old_servers.Connector(), "", kDefaultTimeout, kDefaultLowSpeed, one.kept, 4);
    auto again_fetched = FetchObjects(again, *remote, {one.id}, {});
    REQUIRE_MESSAGE(again_fetched.ok(), again_fetched.status().message());
  }
  CHECK(asked == 2);
  CHECK(store::HoldsIntact(again.objects, one.id));
}

TEST_CASE(
    "a fetch in ranges takes no empty or planted file it finds for its object; what a link points to is untouched") {
  const std::string root = TempDir();
  const Store served = RepoIn(root, "served"), there = RepoIn(root, "there");
  const ContentId id = StoreNoise(served, 12 * kMiB, 25);
  auto file = served.objects.Open(id);
  REQUIRE(file.ok());
  const std::string kept = root + "/partial", stem = kept + "/" + id.Hex() + "-" + file->Identity();
  REQUIRE(std::system(("mkdir -p " + kept + " && echo outside > " + root + "/outside && ln -s " + root + "/outside " +
                       stem + ".spread && ln -s " + root + "/outside " + stem + ".spread-done")
                          .c_str()) == 0);
  Servers servers([&](SocketEnd& c) { return ServeStore(served.objects, c); });
  for (int round = 0; round < 2; ++round) {  // a planted link, then an empty file
    CAPTURE(round);
    {
      std::unique_ptr<RemoteStore> remote =
          ServedRemote("test://served", servers.Connector(), "", kDefaultTimeout, kDefaultLowSpeed, kept, 4);
      auto fetched = FetchObjects(there, *remote, {id}, {});
      REQUIRE_MESSAGE(fetched.ok(), fetched.status().message());
    }
    CHECK(store::HoldsIntact(there.objects, id));
    CHECK(FilesIn(kept) == 0);
    auto outside = ReadWholeFile(root + "/outside");
    REQUIRE(outside.ok());
    CHECK(std::string(outside->begin(), outside->end()) == "outside\n");
    REQUIRE(std::system(("rm -rf " + root + "/there && touch " + stem + ".spread").c_str()) == 0);
  }
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a spread download notes what came every 8 MiB as it comes, so a kill loses at most that much of a range") {
  const std::string root = TempDir();
  SpreadPartial spread(root, "x-abc", 30 * kMiB);
  REQUIRE(spread.ok());
  std::string noted_meanwhile;
  const Status st = spread.Take(kMiB, [&](ByteSink& into) -> Status {
    const std::vector<uint8_t> block(kMiB, 7);
    for (int i = 0; i < 20; ++i) ZIPNN_RETURN_IF_ERROR(into.Append(block.data(), block.size()));
    auto record = ReadWholeFile(root + "/x-abc.spread-done");  // what a kill now would leave
    REQUIRE(record.ok());
    noted_meanwhile.assign(record->begin(), record->end());
    return IoError("the link dropped");
  });
  CHECK(st.message() == "the link dropped");
  CHECK(noted_meanwhile == "1048576 9437184\n9437184 17825792\n");
  // The end noted the rest of what came; a try now needs the start and what never came.
  CHECK(spread.Missing() == std::vector<Range>{{0, kMiB}, {21 * kMiB, 30 * kMiB}});
  spread.Drop();
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a server answers get-range as the protocol says; a client refuses an answer that does not fit") {
  OneServed one(24);
  const Store& served = one.served;
  const ContentId& id = one.id;
  const std::string &object = one.object, &copy = one.copy, &size = one.size, &greeting = one.greeting;
  const std::string& root = one.root;
  CHECK(AnswersTo(served.objects, "get-range " + id.Hex() + " 10 30 " + copy + "\n") ==
        greeting + "ok " + size + " " + copy + " 10 20\n" + object.substr(10, 20));
  CHECK(AnswersTo(served.objects, "get-range " + id.Hex() + " 0 4194304 -\n") ==
        greeting + "ok " + size + " " + copy + " 0 " + size + "\n" + object);
  CHECK(AnswersTo(served.objects, "get-range " + id.Hex() + " 0 10 1-2-3\n") ==
        greeting + "ok " + size + " " + copy + " 0 0\n");  // another copy: no bytes
  CHECK(AnswersTo(served.objects, "get-range " + id.Hex() + " 99999 100000 -\n") ==
        greeting + "ok " + size + " " + copy + " " + size + " 0\n");
  CHECK(AnswersTo(served.objects, "get-range " + HashBytes("o", 1).Hex() + " 0 1 -\n") == greeting + "missing\n");
  CHECK(ServeTo(served.objects, "get-range " + id.Hex() + " 10 5 -\n").message().find("not a store request") == 0);
  CHECK(ServeTo(served.objects, "get-range " + id.Hex() + " 0 5\n").message().find("not a store request") == 0);

  const std::string kept = root + "/partial/kept";
  for (const std::string& answer : {std::string("ok 2000000 ../../x 0 2000000\n"), std::string("ok 2000000 abc 5 0\n"),
                                    std::string("ok 2000000 abc 0 7\n"), std::string("ok 2000000 abc 0\n")}) {
    CAPTURE(answer);
    Hostile liar(answer, /*endless=*/true);
    Servers servers([&](SocketEnd& s) { return liar(s); });
    Status st;
    {
      std::unique_ptr<RemoteStore> remote =
          ServedRemote("test://liar", servers.Connector(), "", 2, kDefaultLowSpeed, kept, 4);
      MemorySink out;
      st = remote->capabilities().kept_gets->GetKept(HashBytes("x", 1), UINT64_MAX, out).status();
      CHECK(out.ToVector().empty());
    }
    CHECK(st.code() == StatusCode::kIoError);
    CHECK(st.message() == "the store server answered \"" + answer.substr(0, answer.size() - 1) + "\"");
    CHECK(FilesIn(kept) == 0);  // nothing named by the server, nor kept
  }
}

// The files under `dir`, in every folder.
size_t FilesUnder(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    n += it->is_regular_file() ? 1 : 0;
  }
  return n;
}

TEST_CASE("a push on four connections sends one 20 MiB object in ranges on all of them at once, each byte once") {
  const std::string root = TempDir();
  const Store here = RepoIn(root, "here");
  const ContentId id = StoreNoise(here, 20 * kMiB, 31);
  auto object = here.objects.Open(id);
  REQUIRE(object.ok());
  const uint64_t size = object->size();
  const ObjectStore served(root + "/served");
  RangeGate::Shared gate;
  gate.verb = "put-range";
  gate.first = true;
  gate.expected = 4;  // four ranges of 5 MiB
  Servers servers([&](SocketEnd& c) {
    RangeGate gated(c, gate);
    return ServeStore(served, gated);
  });
  Link link;
  {
    std::unique_ptr<RemoteStore> remote = ServedRemote("test://served", Through(servers.Connector(), link), "",
                                                       kDefaultTimeout, kDefaultLowSpeed, root + "/partial", 4);
    auto pushed = PushObjects(here, *remote, {id}, {});
    REQUIRE_MESSAGE(pushed.ok(), pushed.status().message());
  }
  CHECK(store::HoldsIntact(served, id));
  CHECK(gate.requests == 4);
  CHECK(!gate.timed_out);  // the four ranges were in flight together
  CHECK(link.sent > size);
  CHECK(link.sent < size + 4096);
  CHECK(FilesUnder(root + "/served") == 1);  // the object, no temporary file beside it
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a push in ranges cut short on every connection keeps every byte that came; the next sends only the rest") {
  const std::string root = TempDir();
  const Store here = RepoIn(root, "here");
  const ContentId id = StoreNoise(here, 20 * kMiB, 32);
  auto object = ReadFile::Open(here.objects.PathOf(id));
  REQUIRE(object.ok());
  const uint64_t size = object->size();
  const ObjectStore served(root + "/served");
  Servers servers([&](SocketEnd& c) { return ServeStore(served, c); });
  Link link;
  auto through = [&](uint64_t send) {
    link.send = send;
    link.sent = 0;
    return ServedRemote("test://served", Through(servers.Connector(), link), "", kDefaultTimeout, kDefaultLowSpeed,
                        root + "/partial", 4);
  };
  uint64_t first_try = 0;
  {
    std::unique_ptr<RemoteStore> remote = through(4 * kMiB + kMiB / 2);  // every range of 5 MiB is cut
    CHECK(remote->PutFile(id, *object).code() == StatusCode::kIoError);
    first_try = link.sent;
  }
  CHECK(first_try > 4 * kMiB);
  CHECK(!served.Has(id));
  CHECK(FilesUnder(root + "/served") == 2);  // the bytes that came, and the record of them
  {
    std::unique_ptr<RemoteStore> remote = through(UINT64_MAX);
    REQUIRE(remote->PutFile(id, *object).ok());
  }
  CHECK(store::HoldsIntact(served, id));
  CHECK(link.sent < size - 8 * kMiB);   // only what did not come before
  CHECK(first_try + link.sent > size);  // no byte went twice
  CHECK(first_try + link.sent < size + 8192);
  CHECK(FilesUnder(root + "/served") == 1);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE(
    "a push in ranges: a server without put-ranges is asked twice; bytes that do not decode never take the name") {
  const std::string root = TempDir();
  const Store here = RepoIn(root, "here");
  const ContentId id = StoreNoise(here, 12 * kMiB, 33);
  const ObjectStore served(root + "/served");
  std::atomic<int> asked{0};
  Servers old_servers([&](SocketEnd& c) {
    WithoutVerbs old(c, asked, {"put-ranges"});
    return ServeStore(served, old);
  });
  {
    std::unique_ptr<RemoteStore> remote =
        ServedRemote("test://old", old_servers.Connector(), "", kDefaultTimeout, kDefaultLowSpeed, root + "/p", 4);
    auto pushed = PushObjects(here, *remote, {id}, {});
    REQUIRE_MESSAGE(pushed.ok(), pushed.status().message());
  }
  CHECK(asked == 2);
  CHECK(store::HoldsIntact(served, id));

  // The protocol by hand: every range, then the end; a byte changed on
  // the way, and the object is refused and nothing kept.
  auto bytes = ReadWholeFile(here.objects.PathOf(id));
  REQUIRE(bytes.ok());
  const std::string object(bytes->begin(), bytes->end());
  const std::string size = std::to_string(object.size()), half = std::to_string(object.size() / 2);
  const std::string words = id.Hex() + " " + size + " 1-2-3";
  const std::string greeting = std::string(kStoreProtocolGreeting) + "\n";
  for (const bool damaged : {true, false}) {
    CAPTURE(damaged);
    const ObjectStore fresh(root + (damaged ? "/damaged" : "/fresh"));
    std::string second = object.substr(object.size() / 2);
    if (damaged) second[1000] ^= 1;
    const std::string answers = AnswersTo(
        fresh, "put-ranges " + words + "\n" + "put-range " + id.Hex() + " " + half + " " + size + " 1-2-3 " + size +
                   "\n" + second + "put-range " + id.Hex() + " 0 " + half + " 1-2-3 " + size + "\n" +
                   object.substr(0, object.size() / 2) + "put-ranges " + words + "\n" + "put-end " + words + "\n");
    const std::string held = "ok 1\n0 " + size + "\n";
    if (damaged) {
      CHECK(answers.rfind(greeting + "ok 0\nok\nok\n" + held + "error ", 0) == 0);
      CHECK(!fresh.Has(id));
      CHECK(FilesUnder(fresh.root()) == 0);  // both temporary files gone
    } else {
      CHECK(answers == greeting + "ok 0\nok\nok\n" + held + "ok\n");
      CHECK(store::HoldsIntact(fresh, id));
      CHECK(FilesUnder(fresh.root()) == 1);
    }
  }
  // A range past the object's end, or an end before every range is in.
  const ObjectStore other(root + "/other");
  CHECK(AnswersTo(other, "put-ranges " + words + "\nput-range " + id.Hex() + " 0 10 1-2-3 5\n0123456789put-end " +
                             words + "\n")
            .rfind(greeting + "ok 0\nerror ", 0) == 0);
  CHECK(!other.Has(id));
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

}  // namespace
}  // namespace zipnn::remote
