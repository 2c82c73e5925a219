// libFuzzer target: the .zipnn.yaml reader (lib/config/policy.h). No
// yaml-cpp exception may escape ParsePolicy (libFuzzer reports one as a
// crash), and a policy it accepts must hold values in the documented
// ranges (docs/policy.md). Its series patterns must be accepted by the
// series rules and place paths (the input's own lines among them) in
// bounded time, each step's digits taken from the path.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lib/config/policy.h"
#include "lib/series/series.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  zipnn::Result<zipnn::config::Policy> p = zipnn::config::ParsePolicy(yaml, "fuzz.zipnn.yaml");
  if (!p.ok()) return 0;
  const bool in_range = p->base_interval >= 1 && p->base_interval <= 1000000 && p->max_chain <= 1000000 &&
                        p->min_gain >= 0 && p->min_gain < 1 && p->chunk_size >= 4096 && p->chunk_size <= (64u << 20) &&
                        p->chunk_size % 8 == 0 && p->threads >= 0 && p->threads <= 4096 && p->zstd_level >= 1 &&
                        p->zstd_level <= 22;
  if (!in_range) {
    std::fprintf(stderr, "ParsePolicy accepted a value out of range\n");
    std::abort();
  }
  auto rules = zipnn::series::Rules::WithPatterns(p->series);
  if (!rules.ok()) {
    std::fprintf(stderr, "ParsePolicy accepted a series pattern the rules refuse\n");
    std::abort();
  }
  std::vector<std::string> paths = {"out/checkpoint-100/model.safetensors", "a/b/snap-7-final.pt"};
  for (size_t at = 0; at < yaml.size();) {
    size_t nl = yaml.find('\n', at);
    if (nl == std::string::npos) nl = yaml.size();
    paths.push_back(yaml.substr(at, nl - at));
    at = nl + 1;
  }
  for (const std::string& path : paths) {
    const zipnn::series::Placed placed = rules->Place(path);
    for (char c : placed.step) {
      if (c != '.' && (c < '0' || c > '9')) std::abort();
    }
  }
  return 0;
}
