// Notes of checkpoints stored ahead of git add (added.h), in a scratch
// folder: a note is taken only for the file and stat it was made for.
#include "lib/ops/added.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "lib/base/content_id.h"
#include "lib/ops/in_folder.h"

namespace zipnn::ops {
namespace {

void Write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// The pointer the notes name: of "bytes", as clean would write it.
const std::string kPointer = store::FormatPointer(store::Pointer{HashBytes("bytes", 5), 5, "safetensors"});

TEST_CASE("a note is taken for its file while the file's stat is the one noted") {
  InFolder scratch(/*repository=*/false);
  Write("model.safetensors", "bytes");
  const std::optional<std::string> stamp = FileStamp("model.safetensors");
  REQUIRE(stamp);
  REQUIRE(NoteAdded("notes", "model.safetensors", *stamp, kPointer).ok());
  const std::optional<store::Pointer> noted = NotedPointer("notes", "model.safetensors");
  REQUIRE(noted);
  CHECK(store::FormatPointer(*noted) == kPointer);
  // Another path has no note, and no folder means no notes.
  CHECK(!NotedPointer("notes", "other.safetensors"));
  CHECK(!NotedPointer("", "model.safetensors"));
  // Rewritten (a new size and times): the note no longer holds.
  Write("model.safetensors", "other bytes");
  CHECK(!NotedPointer("notes", "model.safetensors"));
  // Forgotten: gone even for the stat it was made for.
  Write("b.safetensors", "bytes");
  REQUIRE(NoteAdded("notes", "b.safetensors", *FileStamp("b.safetensors"), kPointer).ok());
  REQUIRE(NotedPointer("notes", "b.safetensors"));
  ForgetAdded("notes", "b.safetensors");
  CHECK(!NotedPointer("notes", "b.safetensors"));
}

TEST_CASE("a file that changed while it was stored is not noted") {
  InFolder scratch(/*repository=*/false);
  Write("model.safetensors", "bytes");
  const std::string before = *FileStamp("model.safetensors");
  Write("model.safetensors", "more bytes");
  REQUIRE(NoteAdded("notes", "model.safetensors", before, kPointer).ok());
  CHECK(!NotedPointer("notes", "model.safetensors"));
  CHECK(!FileStamp("nothing-here"));
  REQUIRE(mkdir("folder", 0755) == 0);
  CHECK(!FileStamp("folder"));
}

TEST_CASE("a damaged or hostile note is no note, and nothing waits on it") {
  InFolder scratch(/*repository=*/false);
  Write("model.safetensors", "bytes");
  REQUIRE(NoteAdded("notes", "model.safetensors", *FileStamp("model.safetensors"), kPointer).ok());
  // The one file in notes/ is the note; each case replaces it.
  std::string note;
  for (const auto& entry : std::filesystem::directory_iterator("notes")) note = entry.path().string();
  REQUIRE(!note.empty());
  const std::string stamp = *FileStamp("model.safetensors");
  SUBCASE("a pointer that does not parse") { Write(note, "model.safetensors\n" + stamp + "\nnot a pointer\n"); }
  SUBCASE("another path's note under this name") { Write(note, "other\n" + stamp + "\n" + kPointer); }
  SUBCASE("cut short") { Write(note, "model.safetensors\n"); }
  SUBCASE("larger than a note can be") {
    Write(note, "model.safetensors\n" + stamp + "\n" + kPointer + std::string(8000, ' '));
  }
  SUBCASE("a pipe") {
    REQUIRE(unlink(note.c_str()) == 0);
    REQUIRE(mkfifo(note.c_str(), 0644) == 0);
  }
  SUBCASE("a link to the real note") {
    Write("real", "model.safetensors\n" + stamp + "\n" + kPointer);
    REQUIRE(unlink(note.c_str()) == 0);
    REQUIRE(symlink("../real", note.c_str()) == 0);
  }
  CHECK(!NotedPointer("notes", "model.safetensors"));
}

}  // namespace
}  // namespace zipnn::ops
