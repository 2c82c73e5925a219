// The main of a fuzz target built without libFuzzer (the default gcc
// build): runs the target once over each input file, or each file of each
// folder, named on the command line, and stops at nothing but a crash.
// Arguments starting with '-' are libFuzzer flags and are ignored, so the
// same command line replays a corpus under either build:
//   bazel-bin/tests/fuzz/container_fuzz tests/fuzz/corpus/container
#include <cstdint>
#include <cstdio>
#include <string>

#include "tests/fuzz/replay.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  size_t ran = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.empty() || arg[0] == '-') continue;
    for (const std::string& path : zipnn::fuzz::InputFiles(arg)) {
      const std::string input = zipnn::fuzz::ReadInput(path);
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
      ++ran;
    }
  }
  std::printf("replayed %zu inputs\n", ran);
  return 0;
}
