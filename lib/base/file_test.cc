// Tests of lib/base/file.h: files written whole or not at all, reads that
// stop at the end, scratch files that clean up after themselves, folders
// made on the way, and error messages that name the path. Every case runs
// in a fresh folder and holds when run as root (no case relies on a
// permission being refused).
#include "lib/base/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

namespace zipnn {
namespace {

// A fresh, empty folder under the test's scratch space.
std::string FreshFolder() {
  const char* root = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(root != nullptr ? root : "/tmp") + "/file_test-XXXXXX";
  REQUIRE(::mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

// The names in `dir`, without "." and "..".
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  REQUIRE(d != nullptr);
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  return names;
}

std::string Text(const std::string& path) {
  auto data = ReadWholeFile(path);
  REQUIRE(data.ok());
  return std::string(data->begin(), data->end());
}

// Everything that comes out of `fd` until its writer closes it.
std::string Drain(int fd) {
  std::string received;
  char block[4096];
  ssize_t got;
  while ((got = ::read(fd, block, sizeof block)) > 0) received.append(block, static_cast<size_t>(got));
  return received;
}

// Writes `text` to `path` through an AtomicFile and commits it.
void Write(const std::string& path, const std::string& text, bool overwrite = false) {
  auto file = AtomicFile::Create(path, overwrite);
  REQUIRE(file.ok());
  REQUIRE(file->Append(text.data(), text.size()).ok());
  REQUIRE(file->Commit().ok());
}

TEST_CASE("what an AtomicFile commits reads back whole and at any offset") {
  const std::string path = FreshFolder() + "/weights.bin";
  auto file = AtomicFile::Create(path, /*overwrite=*/false);
  REQUIRE(file.ok());
  REQUIRE(file->Append("0123", 4).ok());
  REQUIRE(file->Append("456789", 6).ok());
  CHECK(file->size() == 10);
  REQUIRE(file->Commit().ok());

  auto read = ReadFile::Open(path);
  REQUIRE(read.ok());
  CHECK(read->size() == 10);
  CHECK(read->name() == path);
  char middle[4] = {};
  REQUIRE(read->ReadAt(3, middle, 4).ok());
  CHECK(std::string(middle, 4) == "3456");
  CHECK(Text(path) == "0123456789");
}

TEST_CASE("nothing appears under an AtomicFile's name before Commit; its temporary lies beside it") {
  const std::string dir = FreshFolder();
  const std::string path = dir + "/model.safetensors";
  auto file = AtomicFile::Create(path, /*overwrite=*/false);
  REQUIRE(file.ok());
  REQUIRE(file->Append("abc", 3).ok());
  CHECK(!FileExists(path));
  // In the same folder, so the rename that commits it cannot cross file systems.
  CHECK(file->temp_path().rfind(path + ".tmp-", 0) == 0);
  CHECK(FileExists(file->temp_path()));
  REQUIRE(file->Commit().ok());
  CHECK(Text(path) == "abc");
  CHECK(Names(dir) == std::vector<std::string>{"model.safetensors"});
}

TEST_CASE("TemporaryTarget knows the names AtomicFile and TempLink give, and nothing that merely looks alike") {
  const std::string dir = FreshFolder();
  auto file = AtomicFile::Create(dir + "/model.safetensors", /*overwrite=*/false);
  REQUIRE(file.ok());
  const std::string temp = file->temp_path().substr(dir.size() + 1);
  CHECK(TemporaryTarget(temp) == std::optional<std::string>("model.safetensors"));
  CHECK(TemporaryTarget("a.tmp-0123abcd") == std::optional<std::string>("a"));
  for (const char* other : {"report.tmp-final", "a.tmp-0123abc", "a.tmp-0123abcde", "a.tmp-0123ABCD", ".tmp-0123abcd",
                            "a.tmp-0123abcd.txt", "dir/a.tmp-0123abcd", "README"}) {
    CAPTURE(other);
    CHECK(!TemporaryTarget(other));
  }
}

TEST_CASE("an AtomicFile dropped without Commit leaves neither the file nor its temporary") {
  const std::string dir = FreshFolder();
  {
    auto file = AtomicFile::Create(dir + "/half.bin", /*overwrite=*/false);
    REQUIRE(file.ok());
    REQUIRE(file->Append("partial", 7).ok());
    REQUIRE(Names(dir).size() == 1);  // the temporary
  }
  CHECK(Names(dir).empty());
}

TEST_CASE("a process stopped by SIGINT, SIGTERM or SIGHUP removes its AtomicFiles' temporaries, says its note, dies") {
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) {
    CAPTURE(signal);
    const std::string dir = FreshFolder();
    ::mkdir((dir + "/scratch").c_str(), 0755);
    int ready[2], said[2];
    REQUIRE(::pipe(ready) == 0);
    REQUIRE(::pipe(said) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // One committed, one beside its output and one in the scratch
      // folder being written: then it waits to be stopped, with a note
      // for the signal to print on its standard error.
      ::close(ready[0]);
      ::close(said[0]);
      if (::dup2(said[1], STDERR_FILENO) < 0) ::_exit(5);
      RemoveScratchOnSignals();
      SetSignalNote("an earlier note\n");
      SetSignalNote("stopped while storing tree.bin\n");
      auto done = AtomicFile::Create(dir + "/done.bin", false);
      if (!done.ok() || !done->Append("whole", 5).ok() || !done->Commit().ok()) ::_exit(2);
      auto beside = AtomicFile::Create(dir + "/out.bin", false);
      auto in_tree = AtomicFile::CreateInWorkTree(dir + "/tree.bin", dir + "/scratch");
      if (!beside.ok() || !in_tree.ok() || !beside->Append("half", 4).ok()) ::_exit(3);
      if (::write(ready[1], "r", 1) != 1) ::_exit(4);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    ::close(said[1]);
    char got = 0;
    REQUIRE(::read(ready[0], &got, 1) == 1);
    ::close(ready[0]);
    CHECK(Names(dir).size() == 3);               // done.bin, out.bin's temporary, scratch/
    CHECK(Names(dir + "/scratch").size() == 1);  // tree.bin's temporary
    REQUIRE(::kill(child, signal) == 0);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == signal);
    std::string stderr_text;
    char buf[256];
    for (ssize_t n; (n = ::read(said[0], buf, sizeof buf)) > 0;) stderr_text.append(buf, static_cast<size_t>(n));
    ::close(said[0]);
    CHECK(stderr_text == "stopped while storing tree.bin\n");
    std::vector<std::string> left = Names(dir);
    std::sort(left.begin(), left.end());
    CHECK(left == std::vector<std::string>{"done.bin", "scratch"});
    CHECK(Names(dir + "/scratch").empty());
    CHECK(Text(dir + "/done.bin") == "whole");
  }
}

TEST_CASE("a work-tree file's temporary lies in the scratch folder, never beside it, and goes on Commit or drop") {
  const std::string work = FreshFolder(), scratch = FreshFolder() + "/zipnn/tmp";
  const std::string path = work + "/model.safetensors";
  Write(path, "pointer", /*overwrite=*/true);
  {
    auto file = AtomicFile::CreateInWorkTree(path, scratch);
    REQUIRE(file.ok());
    REQUIRE(file->Append("weights", 7).ok());
    CHECK(Names(work) == std::vector<std::string>{"model.safetensors"});
    CHECK(file->temp_path().rfind(scratch + "/checkout-model.safetensors.tmp-", 0) == 0);
    CHECK(Names(scratch).size() == 1);
    CHECK(Text(path) == "pointer");
    REQUIRE(file->Commit().ok());
  }
  CHECK(Text(path) == "weights");
  CHECK(Names(work) == std::vector<std::string>{"model.safetensors"});
  CHECK(Names(scratch).empty());
  {
    auto dropped = AtomicFile::CreateInWorkTree(path, scratch);
    REQUIRE(dropped.ok());
    REQUIRE(dropped->Append("half", 4).ok());
  }
  CHECK(Names(scratch).empty());
  CHECK(Text(path) == "weights");
}

TEST_CASE("a work-tree file on another file system than the scratch folder has no name until Commit") {
  const std::string scratch = FreshFolder();
  std::string work = "/dev/shm/file_test-XXXXXX";
  struct stat shm, tmp;
  if (::mkdtemp(work.data()) == nullptr || ::stat(work.c_str(), &shm) != 0 || ::stat(scratch.c_str(), &tmp) != 0 ||
      shm.st_dev == tmp.st_dev) {
    MESSAGE("no second file system (/dev/shm) here; skipped");
    return;
  }
  const std::string path = work + "/model.safetensors";
  {
    auto file = AtomicFile::CreateInWorkTree(path, scratch);
    REQUIRE(file.ok());
    REQUIRE(file->Append("weights", 7).ok());
    CHECK(Names(work).empty());
    CHECK(Names(scratch).empty());
    REQUIRE(file->Commit().ok());
  }
  CHECK(Text(path) == "weights");
  CHECK(Names(work) == std::vector<std::string>{"model.safetensors"});
  {
    auto dropped = AtomicFile::CreateInWorkTree(path, scratch);
    REQUIRE(dropped.ok());
    REQUIRE(dropped->Append("half", 4).ok());
  }
  CHECK(Names(work) == std::vector<std::string>{"model.safetensors"});
  CHECK(Text(path) == "weights");
  (void)std::system(("rm -rf " + work).c_str());
}

TEST_CASE("RemoveAbandonedTemps takes only the work-tree temporaries no writer holds") {
  const std::string work = FreshFolder(), scratch = FreshFolder();
  auto live = AtomicFile::CreateInWorkTree(work + "/live.bin", scratch);
  REQUIRE(live.ok());  // locked from the moment it has its name, empty as yet
  // Abandoned: one with bytes, an empty one, and one whose writer died
  // before it locked it. Kept: the live one and files of other names.
  Write(scratch + "/checkout-dead.bin.tmp-0123abcd", "dead");
  Write(scratch + "/checkout-empty.bin.tmp-0000abcd", "");
  Write(scratch + "/checkout-early.bin.tmp-0a0b0c0d.new", "");
  Write(scratch + "/clean-Ab12Cd", "spool");
  Write(scratch + "/checkout-notes.txt", "mine");
  Write(scratch + "/checkout-notes.txt.new", "mine");
  CHECK(RemoveAbandonedTemps(scratch) == 3);
  CHECK(!FileExists(scratch + "/checkout-dead.bin.tmp-0123abcd"));
  CHECK(!FileExists(scratch + "/checkout-empty.bin.tmp-0000abcd"));
  CHECK(!FileExists(scratch + "/checkout-early.bin.tmp-0a0b0c0d.new"));
  CHECK(FileExists(live->temp_path()));
  CHECK(Names(scratch).size() == 4);
  REQUIRE(live->Append("x", 1).ok());
  REQUIRE(live->Commit().ok());
  CHECK(Text(work + "/live.bin") == "x");
}

TEST_CASE("a TempLink shares the file under a temporary name, takes the name on Commit, and is gone if dropped") {
  const std::string dir = FreshFolder();
  Write(dir + "/object", "bytes");
  {
    auto dropped = TempLink::Create(dir + "/object", dir + "/sub");
    REQUIRE(dropped.ok());
    REQUIRE(dropped->has_value());
    CHECK((*dropped)->temp_path().rfind(dir + "/sub.tmp-", 0) == 0);
    CHECK(Text((*dropped)->temp_path()) == "bytes");
  }
  CHECK(Names(dir) == std::vector<std::string>{"object"});
  Write(dir + "/other", "old");
  auto link = TempLink::Create(dir + "/object", dir + "/other");
  REQUIRE(link.ok());
  REQUIRE((*link)->Commit().ok());
  CHECK(Text(dir + "/other") == "bytes");
  struct stat a, b;
  REQUIRE(::stat((dir + "/object").c_str(), &a) == 0);
  REQUIRE(::stat((dir + "/other").c_str(), &b) == 0);
  CHECK(a.st_ino == b.st_ino);
  CHECK(a.st_nlink == 2);
  CHECK(Names(dir).size() == 2);
  // A file that is not there is an error that names it, not "cannot link".
  auto missing = TempLink::Create(dir + "/nowhere", dir + "/x");
  REQUIRE(!missing.ok());
  CHECK(missing.status().message().find(dir + "/nowhere") != std::string::npos);
}

TEST_CASE("a moved AtomicFile keeps its temporary until the new owner commits or drops it") {
  const std::string dir = FreshFolder();
  auto created = AtomicFile::Create(dir + "/moved.bin", /*overwrite=*/false);
  REQUIRE(created.ok());
  std::string temp;
  {
    AtomicFile owner(std::move(*created));
    temp = owner.temp_path();
    CHECK(created->temp_path().empty());
    REQUIRE(owner.Append("kept", 4).ok());
    CHECK(FileExists(temp));  // the moved-from object did not take it away
    REQUIRE(owner.Commit().ok());
  }
  CHECK(Text(dir + "/moved.bin") == "kept");
  CHECK(!FileExists(temp));
}

TEST_CASE("refuses to replace an existing file unless asked to, and names it") {
  const std::string path = FreshFolder() + "/step-100.pt";
  Write(path, "first");
  auto refused = AtomicFile::Create(path, /*overwrite=*/false);
  REQUIRE(!refused.ok());
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  CHECK(refused.status().message() == path + ": already exists (use --force to overwrite)");
  CHECK(Text(path) == "first");
  Write(path, "second", /*overwrite=*/true);
  CHECK(Text(path) == "second");
}

TEST_CASE("a file that appears while an AtomicFile is written is kept when overwriting was not allowed") {
  const std::string dir = FreshFolder();
  const std::string path = dir + "/raced.bin";
  auto file = AtomicFile::Create(path, /*overwrite=*/false);
  REQUIRE(file.ok());
  REQUIRE(file->Append("ours", 4).ok());
  Write(path, "theirs");  // another writer got there first
  const Status committed = file->Commit();
  REQUIRE(!committed.ok());
  CHECK(committed.code() == StatusCode::kIoError);
  CHECK(committed.message() == path + ": cannot create: File exists");
  CHECK(Text(path) == "theirs");
}

TEST_CASE("an overwrite puts a new file in place: a read-only one is replaced, a hard link keeps the old bytes") {
  const std::string dir = FreshFolder();
  const std::string path = dir + "/config.yaml";
  Write(path, "old");
  REQUIRE(::chmod(path.c_str(), 0444) == 0);
  REQUIRE(::link(path.c_str(), (dir + "/link").c_str()) == 0);
  Write(path, "new", /*overwrite=*/true);
  CHECK(Text(path) == "new");
  CHECK(Text(dir + "/link") == "old");  // replaced by rename, never written in place
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0200) != 0);  // the new file is not the read-only one
}

TEST_CASE("a second Commit is refused and names the file") {
  const std::string path = FreshFolder() + "/twice.bin";
  auto file = AtomicFile::Create(path, /*overwrite=*/false);
  REQUIRE(file.ok());
  REQUIRE(file->CommitUnsynced().ok());
  CHECK(FileExists(path));
  const Status again = file->Commit();
  CHECK(again.code() == StatusCode::kInvalidArgument);
  CHECK(again.message() == path + ": already committed");
}

TEST_CASE("after Presize, threads fill disjoint ranges of an AtomicFile with WriteAt") {
  const std::string path = FreshFolder() + "/parallel.bin";
  auto file = AtomicFile::Create(path, /*overwrite=*/false);
  REQUIRE(file.ok());
  CHECK(file->CanWriteAt());
  constexpr size_t kPart = 100000;
  constexpr int kParts = 4;
  REQUIRE(file->Presize(kPart * kParts).ok());
  CHECK(file->size() == kPart * kParts);
  std::vector<Status> written(kParts);
  std::vector<std::thread> threads;
  for (int i = 0; i < kParts; ++i) {
    threads.emplace_back([&, i] {
      const std::vector<uint8_t> part(kPart, static_cast<uint8_t>('a' + i));
      written[i] = file->WriteAt(kPart * i, part.data(), part.size());
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Status& s : written) CHECK(s.ok());
  REQUIRE(file->Commit().ok());
  const std::string text = Text(path);
  REQUIRE(text.size() == kPart * kParts);
  for (int i = 0; i < kParts; ++i)
    CHECK(text.substr(kPart * i, kPart) == std::string(kPart, static_cast<char>('a' + i)));
}

TEST_CASE("a pipe given as the output is written through, not replaced by a file") {
  const std::string fifo = FreshFolder() + "/pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string received;
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY);
    received = Drain(fd);
    ::close(fd);
  });
  {
    auto file = AtomicFile::Create(fifo, /*overwrite=*/false);  // opening waits for the reader
    REQUIRE(file.ok());
    CHECK(file->temp_path().empty());
    CHECK(!file->CanWriteAt());
    const std::string big(200000, 'p');  // more than a pipe holds at once
    REQUIRE(file->Append(big.data(), big.size()).ok());
    REQUIRE(file->Commit().ok());
  }
  reader.join();
  CHECK(received == std::string(200000, 'p'));
  struct stat st;
  REQUIRE(::stat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));

  auto null = AtomicFile::Create("/dev/null", /*overwrite=*/false);
  REQUIRE(null.ok());
  REQUIRE(null->Append("gone", 4).ok());
  REQUIRE(null->Commit().ok());
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
}

TEST_CASE("a folder is neither read nor written as a file") {
  const std::string dir = FreshFolder();
  auto read = ReadFile::Open(dir);
  REQUIRE(!read.ok());
  CHECK(read.status().code() == StatusCode::kInvalidArgument);
  CHECK(read.status().message() == dir + ": is a directory");
  auto write = AtomicFile::Create(dir, /*overwrite=*/true);
  REQUIRE(!write.ok());
  CHECK(write.status().message() == dir + ": is a directory");
}

TEST_CASE("a missing file is NotFound and named") {
  const std::string path = FreshFolder() + "/absent.bin";
  CHECK(!FileExists(path));
  auto read = ReadFile::Open(path);
  REQUIRE(!read.ok());
  CHECK(read.status().code() == StatusCode::kNotFound);
  CHECK(read.status().message() == path + ": no such file");
  auto whole = ReadWholeFile(path);
  REQUIRE(!whole.ok());
  CHECK(whole.status().message() == path + ": no such file");
}

TEST_CASE("an AtomicFile in a missing folder fails at Create and names the path") {
  const std::string path = FreshFolder() + "/no/such/folder/out.bin";
  auto file = AtomicFile::Create(path, /*overwrite=*/false);
  REQUIRE(!file.ok());
  CHECK(file.status().code() == StatusCode::kIoError);
  CHECK(file.status().message() == path + ": cannot create: No such file or directory");
}

TEST_CASE("reading past the end is an error that names the file; reading up to it is not") {
  const std::string path = FreshFolder() + "/short.bin";
  Write(path, "0123456789");
  auto file = ReadFile::Open(path);
  REQUIRE(file.ok());
  char out[8];
  const std::string early = path + ": file ended early (was it changed while being read?)";
  CHECK(file->ReadAt(6, out, 4).ok());
  CHECK(file->ReadAt(10, out, 0).ok());
  Status past = file->ReadAt(8, out, 4);
  CHECK(past.code() == StatusCode::kIoError);
  CHECK(past.message() == early);
  CHECK(file->ReadAt(10, out, 1).message() == early);
  // A file cut short after it was opened still claims its old size.
  REQUIRE(::truncate(path.c_str(), 5) == 0);
  CHECK(file->size() == 10);
  CHECK(file->ReadAt(4, out, 2).message() == early);
}

TEST_CASE("a moved ReadFile reads with the new owner") {
  const std::string path = FreshFolder() + "/moved.bin";
  Write(path, "abcdef");
  auto opened = ReadFile::Open(path);
  REQUIRE(opened.ok());
  ReadFile file(std::move(*opened));
  char out[3];
  REQUIRE(file.ReadAt(3, out, 3).ok());
  CHECK(std::string(out, 3) == "def");
  auto other = ReadFile::Open(path);
  REQUIRE(other.ok());
  file = std::move(*other);
  REQUIRE(file.ReadAt(0, out, 3).ok());
  CHECK(std::string(out, 3) == "abc");
}

TEST_CASE("MakeDirectories makes every missing level and accepts the ones that exist") {
  const std::string dir = FreshFolder();
  REQUIRE(MakeDirectories(dir + "/a/b/c").ok());
  CHECK(FileExists(dir + "/a/b/c"));
  CHECK(MakeDirectories(dir + "/a/b/c").ok());
  CHECK(MakeDirectories(dir + "/a/d/").ok());
  CHECK(FileExists(dir + "/a/d"));
  struct stat st;
  REQUIRE(::stat((dir + "/a/b").c_str(), &st) == 0);
  CHECK(S_ISDIR(st.st_mode));
}

TEST_CASE("MakeDirectories under a regular file fails and names the level it could not make") {
  const std::string dir = FreshFolder();
  Write(dir + "/file", "x");
  const Status made = MakeDirectories(dir + "/file/sub/deeper");
  CHECK(made.code() == StatusCode::kIoError);
  CHECK(made.message() == dir + "/file/sub: cannot create folder: Not a directory");
}

TEST_CASE("a TempFile makes its folder and is gone when it goes away") {
  const std::string dir = FreshFolder() + "/scratch/level";
  std::string path;
  {
    auto temp = TempFile::Create(dir, "spool");
    REQUIRE(temp.ok());
    path = temp->path();
    CHECK(path.rfind(dir + "/spool-", 0) == 0);
    CHECK(path.size() == dir.size() + 1 + 6 + 8);  // "spool-" and eight hex digits
    CHECK(Text(path).empty());
    // The mode of any new file: an object linked from it into a shared
    // store is as readable as the others.
    const mode_t mask = ::umask(022);
    ::umask(mask);
    struct stat st;
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == (0644 & ~mask));
  }
  CHECK(!FileExists(path));
  CHECK(Names(dir).empty());
}

TEST_CASE("a TempFile is written where it is: no other name appears, and it is written once") {
  const std::string dir = FreshFolder();
  auto temp = TempFile::Create(dir, "spool");
  REQUIRE(temp.ok());
  struct stat before;
  REQUIRE(::stat(temp->path().c_str(), &before) == 0);
  {
    auto out = AtomicFile::InTemp(*temp);
    REQUIRE(out.ok());
    REQUIRE(out->Append("abc", 3).ok());
    CHECK(Names(dir).size() == 1);  // no temporary beside it
    CHECK(Text(temp->path()) == "abc");
    REQUIRE(out->Commit().ok());
    CHECK(!out->Commit().ok());
  }
  struct stat after;
  REQUIRE(::stat(temp->path().c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);  // the same file, not one renamed over it
  CHECK(Text(temp->path()) == "abc");
  // A second writer would leave the first one's tail behind: refused.
  auto again = AtomicFile::InTemp(*temp);
  REQUIRE(!again.ok());
  CHECK(again.status().message() == temp->path() + ": a scratch file is written once");
  // Dropped unfinished, the writer leaves the file to its TempFile.
  auto other = TempFile::Create(dir, "other");
  REQUIRE(other.ok());
  {
    auto out = AtomicFile::InTemp(*other);
    REQUIRE(out.ok());
    REQUIRE(out->Append("x", 1).ok());
  }
  CHECK(FileExists(other->path()));
  const std::string gone = other->path();
  *other = std::move(*temp);
  CHECK(!FileExists(gone));
}

TEST_CASE("a TempFile given another's file removes the one it held, and the moved-from removes nothing") {
  const std::string dir = FreshFolder();
  auto a = TempFile::Create(dir, "a");
  auto b = TempFile::Create(dir, "b");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const std::string a_path = a->path(), b_path = b->path();
  {
    TempFile holder(std::move(*a));
    CHECK(a->path().empty());
    holder = std::move(*b);
    CHECK(!FileExists(a_path));
    CHECK(FileExists(b_path));
    CHECK(holder.path() == b_path);
  }
  CHECK(!FileExists(b_path));
  CHECK(Names(dir).empty());
}

TEST_CASE("a TempFile whose folder cannot be made fails and names the folder") {
  const std::string dir = FreshFolder();
  Write(dir + "/file", "x");
  auto temp = TempFile::Create(dir + "/file/sub", "spool");
  REQUIRE(!temp.ok());
  CHECK(temp.status().message() == dir + "/file/sub: cannot create folder: Not a directory");
}

TEST_CASE("FileExists sees files and folders but not missing paths or dangling links") {
  const std::string dir = FreshFolder();
  Write(dir + "/here", "x");
  CHECK(FileExists(dir));
  CHECK(FileExists(dir + "/here"));
  CHECK(!FileExists(dir + "/there"));
  REQUIRE(::symlink("there", (dir + "/dangling").c_str()) == 0);
  CHECK(!FileExists(dir + "/dangling"));
}

TEST_CASE("WriteAll puts every byte through a pipe that takes them in parts") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const std::string sent(1 << 20, 'w');
  std::string received;
  std::thread reader([&] { received = Drain(fds[0]); });
  const Status written = WriteAll(fds[1], sent.data(), sent.size(), "the pipe");
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  CHECK(written.ok());
  CHECK(received == sent);
}

TEST_CASE("WriteAll to a descriptor open only for reading fails and names the target") {
  const std::string path = FreshFolder() + "/readonly";
  Write(path, "x");
  const int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  const Status written = WriteAll(fd, "y", 1, "the target");
  ::close(fd);
  CHECK(written.code() == StatusCode::kIoError);
  CHECK(written.message() == "the target: write failed: Bad file descriptor");
  CHECK(Text(path) == "x");
}

TEST_CASE("an FdChannel with a timeout fails a read or write that does not move, and names itself") {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  FdChannel channel(fds[0], fds[0], "the peer");
  channel.SetTimeout(0.05);
  char byte;
  auto read = channel.Read(&byte, 1);
  REQUIRE(!read.ok());
  CHECK(read.status().code() == StatusCode::kIoError);
  CHECK(read.status().message() == "the peer: timed out: nothing came for 0.05 s");
  // Nobody reads the other end: the socket's buffer fills, then the wait runs out.
  const std::string block(1 << 16, 'z');
  Status written;
  for (int i = 0; i < 1000 && written.ok(); ++i) written = channel.Write(block.data(), block.size());
  CHECK(written.message() == "the peer: timed out: nothing went for 0.05 s");
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("an FdChannel whose peer has gone fails the write instead of raising SIGPIPE") {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  ::close(fds[1]);
  FdChannel channel(fds[0], fds[0], "the child");
  const Status written = channel.Write("hello", 5);
  CHECK(written.code() == StatusCode::kIoError);
  CHECK(written.message() == "the child: write failed: Broken pipe");
  char byte;
  auto read = channel.Read(&byte, 1);
  REQUIRE(read.ok());
  CHECK(*read == 0);  // the end of the stream
  ::close(fds[0]);
}

TEST_CASE("a file opened as holding an id gives its bytes at any offset, and refuses bytes changed since") {
  const std::string dir = FreshFolder();
  const std::string path = dir + "/base";
  // Three and a half blocks of varied bytes, so that reads cross every
  // kind of block edge.
  std::string bytes(ReadFile::kPinBlock * 7 / 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  Write(path, bytes);
  const ContentId id = HashBytes(bytes.data(), bytes.size());
  CHECK_FALSE(ReadFile::OpenHolding(path, HashBytes("other", 5)).has_value());
  CHECK_FALSE(ReadFile::OpenHolding(dir + "/absent", id).has_value());
  std::optional<ReadFile> held = ReadFile::OpenHolding(path, id);
  REQUIRE(held.has_value());
  const size_t block = ReadFile::kPinBlock;
  for (const auto& range : std::vector<std::pair<size_t, size_t>>{{0, bytes.size()},
                                                                  {0, 1},
                                                                  {block - 1, 2},
                                                                  {block, block},
                                                                  {block + 5, 2 * block},
                                                                  {3 * block + 7, block / 2 - 7},
                                                                  {bytes.size() - 1, 1},
                                                                  {17, 0}}) {
    const size_t offset = range.first, n = range.second;
    CAPTURE(offset);
    CAPTURE(n);
    std::string got(n, '\0');
    REQUIRE(held->ReadAt(offset, got.data(), n).ok());
    CHECK(got == bytes.substr(offset, n));
  }
  // Rewritten in place (the same file, as a trainer saving over it does):
  // what changed is refused, what did not still reads.
  const int fd = ::open(path.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::pwrite(fd, "XY", 2, static_cast<off_t>(2 * block + 100)) == 2);
  ::close(fd);
  std::string got(block, '\0');
  const Status changed = held->ReadAt(2 * block + 90, got.data(), 20);
  CHECK(changed.code() == StatusCode::kCorruption);
  CHECK(changed.message() == path + ": changed while it was read (bytes " + std::to_string(2 * block) + " to " +
                                 std::to_string(3 * block) + " are not those that hashed to its content id)");
  CHECK(held->ReadAt(2 * block - 10, got.data(), block).code() == StatusCode::kCorruption);
  REQUIRE(held->ReadAt(0, got.data(), block).ok());
  CHECK(got == bytes.substr(0, block));
  // Cut short: an error too, never a short read.
  REQUIRE(::truncate(path.c_str(), static_cast<off_t>(block)) == 0);
  CHECK_FALSE(held->ReadAt(3 * block, got.data(), 10).ok());
}

TEST_CASE("a file pinned to bytes seen elsewhere reads them, through a second handle too, even once replaced") {
  const std::string dir = FreshFolder();
  const std::string path = dir + "/model";
  const size_t block = ReadFile::kPinBlock;
  std::string bytes(block * 5 / 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 40503u) >> 7);
  Write(path, bytes);
  auto file = ReadFile::Open(path);
  REQUIRE(file.ok());
  // The pins of the bytes as a stream brought them: one per block, the
  // last one shorter.
  std::vector<uint64_t> pins;
  for (size_t b = 0; b < bytes.size(); b += block)
    pins.push_back(Checksum64(bytes.data() + b, std::min(block, bytes.size() - b)));
  std::vector<uint64_t> short_of_one(pins.begin(), pins.end() - 1);
  const Status wrong = file->Pin(short_of_one);
  CHECK(wrong.code() == StatusCode::kInvalidArgument);
  CHECK(wrong.message() == path + ": 2 pins for " + std::to_string(bytes.size()) + " bytes");
  REQUIRE(file->Pin(pins).ok());
  auto again = file->Dup();
  REQUIRE(again.ok());
  // Replaced under its name (an atomic save): both handles still read the
  // bytes they were pinned to.
  Write(dir + "/next", std::string(bytes.size(), 'n'));
  REQUIRE(::rename((dir + "/next").c_str(), path.c_str()) == 0);
  for (const ReadFile* f : {&*file, &*again}) {
    std::string got(bytes.size(), '\0');
    REQUIRE(f->ReadAt(0, got.data(), got.size()).ok());
    CHECK(got == bytes);
  }
  // Pinned to bytes it does not hold (the file now at the path): the
  // second handle refuses them, as the first would.
  file = ReadFile::Open(path);
  REQUIRE(file.ok());
  REQUIRE(file->Pin(pins).ok());
  auto second = file->Dup();
  REQUIRE(second.ok());
  std::string got(10, '\0');
  CHECK(second->ReadAt(block + 3, got.data(), got.size()).code() == StatusCode::kCorruption);
}

TEST_CASE("a regular file opens as one; a FIFO or a folder is refused at once, never waited on") {
  const std::string dir = FreshFolder();
  Write(dir + "/model", "bytes");
  auto file = ReadFile::OpenRegular(dir + "/model");
  REQUIRE(file.ok());
  std::string got(5, '\0');
  REQUIRE(file->ReadAt(0, got.data(), got.size()).ok());
  CHECK(got == "bytes");
  // No writer ever opens the FIFO: a blocking open would wait for ever.
  REQUIRE(::mkfifo((dir + "/fifo").c_str(), 0600) == 0);
  const auto fifo = ReadFile::OpenRegular(dir + "/fifo");
  CHECK(fifo.status().message() == dir + "/fifo: is not a regular file");
  CHECK(ReadFile::OpenRegular(dir).status().code() == StatusCode::kInvalidArgument);
  CHECK(ReadFile::OpenRegular(dir + "/absent").status().code() == StatusCode::kNotFound);
}

TEST_CASE("a scratch file is in use while its TempFile lives, and not once it is gone or for a file never locked") {
  const char* t = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(t != nullptr ? t : "/tmp") + "/inuse";
  std::string path;
  {
    auto temp = TempFile::Create(dir, "scratch");
    REQUIRE(temp.ok());
    path = temp->path();
    CHECK(InUse(path));
    TempFile moved = std::move(*temp);  // the lock moves with it
    CHECK(InUse(path));
  }
  CHECK(!FileExists(path));
  const std::string plain = dir + "/plain";
  REQUIRE(std::system(("touch '" + plain + "'").c_str()) == 0);
  CHECK(!InUse(plain));
  CHECK(!InUse(dir + "/none"));
}

}  // namespace
}  // namespace zipnn
