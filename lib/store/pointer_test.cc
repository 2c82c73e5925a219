// Tests of pointers: one valid encoding in each version, every other
// rejected with a clear message, and no two alike to git's rename
// detection.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "lib/store/pointer.h"

namespace zipnn::store {
namespace {

Pointer Sample() {
  Pointer p;
  p.id = *ContentId::FromHex("0123456789abcdef0123456789abcdef");
  p.size = 117764;
  p.format = "safetensors";
  return p;
}

TEST_CASE("a pointer has exactly one encoding in each version, well under 200 bytes") {
  const std::string text = FormatPointer(Sample());
  CHECK(text == "git-zipnn pointer 2 117764 xxh3-128:0123456789abcdef0123456789abcdef safetensors\n");
  Pointer v1 = Sample();
  v1.version = 1;
  const std::string text1 = FormatPointer(v1);
  CHECK(text1 ==
        "git-zipnn pointer 1\n"
        "id xxh3-128:0123456789abcdef0123456789abcdef\n"
        "size 117764\n"
        "format safetensors\n");
  for (const std::string& t : {text, text1}) {
    CAPTURE(t);
    CHECK(t.size() < 120);
    auto back = ParsePointer(t);
    REQUIRE(back.ok());
    CHECK(*back == Sample());
    CHECK(FormatPointer(*back) == t);  // each version spelled back as it came
    CHECK(LooksLikePointer(t));
  }
  CHECK(ParsePointer(text)->version == 2);
  CHECK(ParsePointer(text1)->version == 1);
  CHECK(!LooksLikePointer("PK\x03\x04 a zip"));
  Pointer empty = Sample();
  empty.size = 0;
  CHECK(ParsePointer(FormatPointer(empty)).ok());
  // Every size round-trips, up to 2^64 - 1 (20 digits), with the longest
  // format name, within 200 bytes.
  for (int version : {1, 2}) {
    for (uint64_t size : {uint64_t{9999999999999999999u}, uint64_t{10000000000000000000u}, UINT64_MAX}) {
      Pointer big = Sample();
      big.size = size;
      big.format = "abcdefghijklmnop";
      big.version = version;
      CHECK(FormatPointer(big).size() <= kMaxPointerBytes);
      auto parsed = ParsePointer(FormatPointer(big));
      REQUIRE(parsed.ok());
      CHECK(parsed->size == size);
    }
  }
}

// git's rename detection (diffcore-delta.c) cuts a text into pieces that
// end at a newline or after 64 bytes, and calls two files alike by the
// bytes of the pieces they share. A merge pairs a deleted file with an
// added one at 50% alike; version 1 pointers of two checkpoints of one
// size and format share 51 of about 96 bytes.
double GitSimilarity(const std::string& a, const std::string& b) {
  auto pieces = [](const std::string& text) {
    std::map<std::string, size_t> bytes;
    std::string piece;
    for (char c : text) {
      piece += c;
      if (piece.size() == 64 || c == '\n') {
        bytes[piece] += piece.size();
        piece.clear();
      }
    }
    if (!piece.empty()) bytes[piece] += piece.size();
    return bytes;
  };
  const auto pa = pieces(a), pb = pieces(b);
  size_t shared = 0;
  for (const auto& [piece, n] : pa) {
    if (auto it = pb.find(piece); it != pb.end()) shared += std::min(n, it->second);
  }
  return static_cast<double>(shared) / static_cast<double>(std::max(a.size(), b.size()));
}

TEST_CASE("two pointers of version 2 share no piece git's rename detection compares, nor one of each version") {
  Pointer a = Sample(), b = Sample();
  b.id = *ContentId::FromHex("fedcba9876543210fedcba9876543210");
  a.version = b.version = 1;
  CHECK(GitSimilarity(FormatPointer(a), FormatPointer(b)) > 0.5);  // what made merges pair checkpoints
  for (uint64_t size : {uint64_t{100}, uint64_t{117764}, uint64_t{1} << 40, UINT64_MAX}) {
    for (const char* format : {"raw", "pytorch", "safetensors", "abcdefghijklmnop"}) {
      CAPTURE(size);
      CAPTURE(format);
      a.version = b.version = 2;
      a.size = b.size = size;
      a.format = b.format = format;
      CHECK(GitSimilarity(FormatPointer(a), FormatPointer(b)) == 0);
      a.version = 1;
      CHECK(GitSimilarity(FormatPointer(a), FormatPointer(b)) == 0);
    }
  }
  // Below 100 bytes the format may share the last piece: far below 50%.
  a.version = 2;
  a.size = b.size = 99;
  a.format = b.format = "abcdefghijklmnop";
  CHECK(GitSimilarity(FormatPointer(a), FormatPointer(b)) < 0.25);
}

TEST_CASE("every other spelling of a pointer is rejected, saying why") {
  Pointer v1 = Sample();
  v1.version = 1;
  const std::string good = FormatPointer(v1);
  auto reject = [](const std::string& text) { return ParsePointer(text).status().message(); };
  CHECK(reject(good.substr(0, good.size() - 1)) == "pointer does not end with a newline");
  CHECK(reject(good + "extra 1\n") == "pointer has 5 lines, not 4");
  // One edit of a good pointer each: {text found, its replacement, the error}.
  struct Edit {
    const char* find;
    const char* replace;
    const char* error;
  };
  const Edit kEdits1[] = {
      {"pointer 1\n", "pointer 1\r\n", "pointer does not start with 'git-zipnn pointer 1' or 'git-zipnn pointer 2 '"},
      {"0123456789abcdef\n", "0123456789abcdeF\n", "pointer id is not 32 lowercase hex digits"},
      {"xxh3-128:0123", "xxh3-128:123", "pointer id is not 32 lowercase hex digits"},
      {"size 117764", "size 0117764", "pointer size is not a plain decimal number"},
      {"size 117764", "size +117764", "pointer size is not a plain decimal number"},
      {"size 117764", "size 99999999999999999999", "pointer size is not a plain decimal number"},
      {"size 117764", "size 18446744073709551616", "pointer size is not a plain decimal number"},
      {"size 117764", "size 100000000000000000000", "pointer size is not a plain decimal number"},
      {"format ", "format  ", "pointer line 4 is not 'format <name>'"},
  };
  const std::string good2 = FormatPointer(Sample());
  const Edit kEdits2[] = {
      {"2 117764", "2  117764", "pointer size is not a plain decimal number"},
      {"117764", "0117764", "pointer size is not a plain decimal number"},
      {"117764 ", "117764", "pointer size is not a plain decimal number"},
      {" safetensors", " Safetensors", "pointer format is not a name of a-z, 0-9 and _"},
      {" safetensors", " safetensors ", "pointer format is not a name of a-z, 0-9 and _"},
      {" safetensors", "", "pointer has no format after its id"},
      {" xxh3-128:", " sha256:", "pointer id does not start with 'xxh3-128:'"},
      {"0123456789abcdef ", "0123456789abcdeF ", "pointer id is not 32 lowercase hex digits"},
      {"\n", "\r\n", "pointer format is not a name of a-z, 0-9 and _"},
      {"\n", "\nsize 1\n", "pointer version 2 has 2 lines, not 1"},
      {"pointer 2 ", "pointer 2\t", "pointer does not start with 'git-zipnn pointer 1' or 'git-zipnn pointer 2 '"},
  };
  for (const auto& [text0, edits] :
       {std::pair<std::string, std::vector<Edit>>{good, {std::begin(kEdits1), std::end(kEdits1)}},
        std::pair<std::string, std::vector<Edit>>{good2, {std::begin(kEdits2), std::end(kEdits2)}}}) {
    for (const Edit& edit : edits) {
      CAPTURE(edit.replace);
      std::string text = text0;
      const size_t at = text.find(edit.find);
      REQUIRE(at != std::string::npos);
      text.replace(at, std::string(edit.find).size(), edit.replace);
      CHECK(reject(text) == edit.error);
    }
  }
  std::string newer = good;
  newer.replace(0, 19, "git-zipnn pointer 3");
  CHECK(ParsePointer(newer).status().code() == StatusCode::kUnsupported);
  CHECK(reject(newer) == "pointer version '3' is newer than this git-zipnn reads (2); upgrade git-zipnn");
  CHECK(reject("git-zipnn pointer 12 1 raw xxh3-128:0123456789abcdef0123456789abcdef\n") ==
        "pointer version '12' is newer than this git-zipnn reads (2); upgrade git-zipnn");
  CHECK(reject(std::string(300, 'x')) == "pointer is longer than 200 bytes");
}

}  // namespace
}  // namespace zipnn::store
