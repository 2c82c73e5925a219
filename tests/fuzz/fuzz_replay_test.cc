// Every fuzz target over its committed seed corpus (corpus/<target>/) and
// the inputs that once crashed it (regressions/<target>/), in the ordinary
// build, so that `bazel test //...` keeps fixed bugs fixed. Each target's
// entry point is linked here under its own name (fuzz.bzl). A crash names
// the input in the test log.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "lib/codec/coders.h"
#include "tests/fuzz/replay.h"

extern "C" {
int coder_fuzz_entry(const uint8_t* data, size_t size);
int container_fuzz_entry(const uint8_t* data, size_t size);
int pointer_fuzz_entry(const uint8_t* data, size_t size);
int safetensors_fuzz_entry(const uint8_t* data, size_t size);
int pytorch_fuzz_entry(const uint8_t* data, size_t size);
int pkt_line_fuzz_entry(const uint8_t* data, size_t size);
int policy_fuzz_entry(const uint8_t* data, size_t size);
}

namespace zipnn::fuzz {
namespace {

using Entry = int (*)(const uint8_t*, size_t);

// Runs `entry` over corpus/<target>/ and regressions/<target>/; returns
// how many corpus files there were.
size_t Replay(const std::string& target, Entry entry) {
  const std::vector<std::string> corpus = InputFiles("tests/fuzz/corpus/" + target);
  std::vector<std::string> inputs = corpus;
  for (const std::string& path : InputFiles("tests/fuzz/regressions/" + target)) inputs.push_back(path);
  for (const std::string& path : inputs) {
    INFO("input: ", path);
    const std::string bytes = ReadInput(path);
    CHECK(entry(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()) == 0);
  }
  return corpus.size();
}

TEST_CASE("container_fuzz replays its corpus and regressions") { CHECK(Replay("container", container_fuzz_entry) > 0); }

TEST_CASE("pointer_fuzz replays its corpus and regressions") { CHECK(Replay("pointer", pointer_fuzz_entry) > 0); }

TEST_CASE("safetensors_fuzz replays its corpus and regressions") {
  CHECK(Replay("safetensors", safetensors_fuzz_entry) > 0);
}

TEST_CASE("pytorch_fuzz replays its corpus and regressions") { CHECK(Replay("pytorch", pytorch_fuzz_entry) > 0); }

TEST_CASE("pkt_line_fuzz replays its corpus and regressions") { CHECK(Replay("pkt_line", pkt_line_fuzz_entry) > 0); }

TEST_CASE("policy_fuzz replays its corpus and regressions") { CHECK(Replay("policy", policy_fuzz_entry) > 0); }

TEST_CASE("coder_fuzz replays its corpus and regressions") { CHECK(Replay("coder", coder_fuzz_entry) > 0); }

// coder_fuzz picks the coder by an input's first byte (coder_fuzz.cc): a
// coder added to kCoders needs seeds of its own (make_corpus.py).
TEST_CASE("coder_fuzz's corpus round-trips every coder and decodes garbage for each") {
  const size_t choices = std::size(codec::kCoders) + 1;  // the auto rule last
  std::vector<int> round_trips(choices), garbage(choices);
  for (const std::string& path : InputFiles("tests/fuzz/corpus/coder")) {
    const std::string bytes = ReadInput(path);
    if (bytes.size() < 5) continue;
    const size_t which = static_cast<uint8_t>(bytes[0]) % choices;
    ++((bytes[1] & 3) == 1 ? garbage : round_trips)[which];
  }
  for (size_t i = 0; i < choices; ++i) {
    CAPTURE(i);
    CHECK(round_trips[i] > 0);
    if (i + 1 < choices) CHECK(garbage[i] > 0);
  }
}

}  // namespace
}  // namespace zipnn::fuzz
