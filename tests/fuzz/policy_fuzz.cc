// libFuzzer target: the .zipnn.yaml reader (lib/config/policy.h). No
// yaml-cpp exception may escape ParsePolicy (libFuzzer reports one as a
// crash), and a policy it accepts must hold values in the documented
// ranges (docs/policy.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "lib/config/policy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  zipnn::Result<zipnn::config::Policy> p = zipnn::config::ParsePolicy(yaml, "fuzz.zipnn.yaml");
  if (!p.ok()) return 0;
  const bool in_range = p->base_interval >= 1 && p->base_interval <= 1000000 && p->max_chain <= 1000000 &&
                        p->min_gain >= 0 && p->min_gain < 1 && p->chunk_size >= 4096 &&
                        p->chunk_size <= (64u << 20) && p->chunk_size % 8 == 0 && p->threads >= 0 &&
                        p->threads <= 4096 && p->zstd_level >= 1 && p->zstd_level <= 22;
  if (!in_range) {
    std::fprintf(stderr, "ParsePolicy accepted a value out of range\n");
    std::abort();
  }
  return 0;
}
