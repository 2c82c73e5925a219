// Tests of .zipnn.yaml: defaults, every key, and each mistake named.
#include <doctest/doctest.h>

#include "lib/config/policy.h"

namespace zipnn::config {
namespace {

std::string Error(const std::string& yaml) {
  auto p = ParsePolicy(yaml, ".zipnn.yaml");
  return p.ok() ? "" : p.status().message();
}

TEST_CASE("an absent or empty policy gives the defaults") {
  auto missing = LoadPolicy("/nonexistent/.zipnn.yaml");
  REQUIRE(missing.ok());
  CHECK(missing->base_interval == 7);
  CHECK(missing->newest == Newest::kWhole);
  CHECK(missing->max_chain == 3);  // half a stretch between bases
  CHECK(missing->delta_against == DeltaAgainst::kPrevious);
  CHECK(missing->min_gain == doctest::Approx(0.10));
  CHECK(missing->chunk_size == 262144);
  CHECK(missing->threads == 0);
  CHECK(missing->zstd_level == 3);
  auto empty = ParsePolicy("", "x");
  REQUIRE(empty.ok());
  CHECK(empty->base_interval == 7);
  CHECK(empty->delta_transform == codec::kAutoTransform);
  auto comments = ParsePolicy("# nothing set\n", "x");
  REQUIRE(comments.ok());
}

TEST_CASE("every key is read, and max_chain follows base_interval unless set") {
  auto p = ParsePolicy(
      "base_interval: 5\ndelta_against: base\nmin_gain: 0.2\nchunk_size: 1048576\nthreads: 2\nzstd_level: 9\n"
      "delta_transform: xor\n",
      "x");
  REQUIRE(p.ok());
  CHECK(p->delta_transform == codec::Transform::kXor);
  CHECK(p->base_interval == 5);
  CHECK(p->max_chain == 2);
  CHECK(p->delta_against == DeltaAgainst::kBase);
  CHECK(p->min_gain == doctest::Approx(0.2));
  CHECK(p->chunk_size == 1048576);
  CHECK(p->threads == 2);
  CHECK(p->zstd_level == 9);
  auto chain = ParsePolicy("base_interval: 20\nmax_chain: 3\n", "x");
  REQUIRE(chain.ok());
  CHECK(chain->max_chain == 3);
  // With the newest a delta, every version between two bases chains to
  // the older one.
  auto forward = ParsePolicy("base_interval: 5\nnewest: delta\n", "x");
  REQUIRE(forward.ok());
  CHECK(forward->newest == Newest::kDelta);
  CHECK(forward->max_chain == 4);
  CHECK(ParsePolicy("newest: whole\n", "x")->newest == Newest::kWhole);
  CHECK(Error("newest: latest\n") == ".zipnn.yaml: 'newest' must be 'whole' or 'delta', not 'latest'");
}

TEST_CASE("a new base_interval takes max_chain along, unless .zipnn.yaml set it apart") {
  Policy p;  // 7, the newest whole: chains of 3
  const Policy wider = WithBaseInterval(p, 10);
  CHECK(wider.base_interval == 10);
  CHECK(wider.max_chain == 5);
  p.newest = Newest::kDelta;
  p.max_chain = DefaultMaxChain(7, Newest::kDelta);
  CHECK(WithBaseInterval(p, 3).max_chain == 2);
  p.max_chain = 4;  // set apart
  CHECK(WithBaseInterval(p, 10).max_chain == 4);
  CHECK(WithBaseInterval(p, 10).base_interval == 10);
}

TEST_CASE("max_chain never exceeds the chain a restore follows") {
  // A long interval leaves chains at the limit; a longer max_chain is
  // refused (or, leniently, keeps its default) instead of storing
  // versions that no restore would decode.
  auto sparse = ParsePolicy("base_interval: 1000000\n", "x");
  REQUIRE(sparse.ok());
  CHECK(sparse->max_chain == kMaxChainLimit);
  auto at_limit = ParsePolicy("max_chain: 1000\n", "x");
  REQUIRE(at_limit.ok());
  CHECK(at_limit->max_chain == 1000);
  auto over = ParsePolicy("max_chain: 1001\n", "x");
  REQUIRE(!over.ok());
  CHECK(over.status().message() == "x: 'max_chain' must be from 0 to 1000, not 1001");
  const LoadedPolicy lenient = ParsePolicyLenient("base_interval: 2000\nmax_chain: 1000000\n", "x");
  CHECK(lenient.policy.max_chain == kMaxChainLimit);
  REQUIRE(lenient.warnings.size() == 1);
}

TEST_CASE("series patterns and the raw cache budget are read") {
  auto p = ParsePolicy("series:\n  - 'runs/*/save{step}/weights.bin'\n  - '**/snap-{step}.pt'\nraw_cache: 500m\n", "x");
  REQUIRE(p.ok());
  CHECK(p->series == std::vector<std::string>{"runs/*/save{step}/weights.bin", "**/snap-{step}.pt"});
  CHECK(p->raw_cache == 500ull << 20);
  CHECK(ParsePolicy("", "x")->raw_cache == 512ull << 20);
  CHECK(ParsePolicy("raw_cache: 0", "x")->raw_cache == 0);
  CHECK(ParsePolicy("raw_cache: 2G", "x")->raw_cache == 2ull << 30);
  CHECK(ParsePolicy("raw_cache: 4096", "x")->raw_cache == 4096);
  CHECK(Error("raw_cache: lots\n") == ".zipnn.yaml: 'raw_cache' must be a size such as 0, 500m or 2g");
  CHECK(Error("raw_cache: 5x\n") == ".zipnn.yaml: 'raw_cache' must be a size such as 0, 500m or 2g");
  CHECK(Error("raw_cache: -1\n") == ".zipnn.yaml: 'raw_cache' must be a size such as 0, 500m or 2g");
  CHECK(Error("raw_cache: 99999999999999999999\n") == ".zipnn.yaml: 'raw_cache' must be a size such as 0, 500m or 2g");
  CHECK(Error("series: 'a/{step}.pt'\n") ==
        ".zipnn.yaml: 'series' must be a list of patterns such as 'runs/*/ckpt-{step}/model.pt'");
  CHECK(Error("series: ['a/b.pt']\n") == ".zipnn.yaml: series pattern 'a/b.pt' has no {step}");
}

TEST_CASE("parents map globs to a file or folder, in the file's order") {
  auto p = ParsePolicy("parents:\n  'ft/**': out/checkpoint-250/\n  lora/adapter.safetensors: base/model.safetensors\n",
                       ".zipnn.yaml");
  REQUIRE(p.ok());
  REQUIRE(p->parents.size() == 2);
  CHECK(p->parents[0].checkpoints == "ft/**");
  CHECK(p->parents[0].parent == "out/checkpoint-250");  // a folder's trailing '/' is dropped
  CHECK(p->parents[1].checkpoints == "lora/adapter.safetensors");
  CHECK(p->parents[1].parent == "base/model.safetensors");
  CHECK(Error("parents: [a, b]\n") ==
        ".zipnn.yaml: 'parents' must map globs of checkpoints to the file or folder they were trained from, such as "
        "'ft/**': out/checkpoint-250");
  CHECK(Error("parents:\n  a: [b]\n").find("'parents' must map globs") != std::string::npos);
  CHECK(Error("parents:\n  a: ''\n").find("'parents' must map globs") != std::string::npos);
  CHECK(Error("parent:\n  a: b\n").find("(did you mean 'parents'?)") != std::string::npos);
}

TEST_CASE("retention rules are read in the file's order, with what each keeps and what becomes of the rest") {
  auto p = ParsePolicy(
      "retention:\n"
      "  - checkpoints: 'out/**'\n"
      "    keep_newest: 3\n"
      "    keep_every: 10\n"
      "    keep_since: 2026-11-01\n"
      "    keep: ['v1:out/model.pt']\n"
      "    rest: thin\n"
      "    precision: relative 5\n"
      "  - checkpoints: 'scratch/**'\n"
      "    keep_tagged: false\n"
      "    keep_since: 30 days\n"
      "    rest: drop\n",
      ".zipnn.yaml");
  REQUIRE(p.ok());
  REQUIRE(p->retention.size() == 2);
  const Policy::RetentionRule& a = p->retention[0];
  CHECK(a.checkpoints == "out/**");
  CHECK(a.keep_newest == 3);
  CHECK(a.keep_every == 10);
  CHECK(a.keep_tagged);  // by default a tag keeps what it names
  CHECK(a.keep_since_date == 1793491200);  // 2026-11-01T00:00:00Z
  CHECK(a.keep_since_age == 0);
  CHECK(a.keep == std::vector<std::string>{"v1:out/model.pt"});
  CHECK_FALSE(a.drop);
  CHECK(a.precision.kind == codec::Precision::Kind::kRelative);
  CHECK(a.precision.bits == 5);
  const Policy::RetentionRule& b = p->retention[1];
  CHECK_FALSE(b.keep_tagged);
  CHECK(b.keep_since_date == 0);
  CHECK(b.keep_since_age == 30 * 86400);
  CHECK(b.drop);
}

TEST_CASE("a retention rule that could remove what was not meant is refused, naming what is wrong") {
  CHECK(Error("retention: {checkpoints: a}\n").find("'retention' must be a list of rules") != std::string::npos);
  CHECK(Error("retention:\n  - keep_newest: 3\n    rest: drop\n") ==
        ".zipnn.yaml: 'retention' rule names no 'checkpoints' glob");
  CHECK(Error("retention:\n  - checkpoints: a\n    keep_newest: 3\n") ==
        ".zipnn.yaml: 'retention' rule for 'a' does not say 'rest: thin' or 'rest: drop'");
  CHECK(Error("retention:\n  - checkpoints: a\n    rest: thin\n") ==
        ".zipnn.yaml: 'retention' rule for 'a' thins the rest but names no precision (such as 'absolute 23' or "
        "'relative 5')");
  CHECK(Error("retention:\n  - checkpoints: a\n    rest: thin\n    precision: fuzzy 3\n")
            .find("'retention: precision'") != std::string::npos);
  CHECK(Error("retention:\n  - checkpoints: a\n    rest: keep\n") ==
        ".zipnn.yaml: 'retention: rest' must be 'thin' or 'drop', not 'keep'");
  CHECK(Error("retention:\n  - checkpoints: a\n    keep_since: 2026-02-30\n    rest: drop\n") ==
        ".zipnn.yaml: 'retention: keep_since' must be a date such as 2026-11-01 or an age such as '30 days', not "
        "'2026-02-30'");
  CHECK(Error("retention:\n  - checkpoints: a\n    keep_newset: 3\n    rest: drop\n")
            .find("'retention: keep_newset' is not a retention key (did you mean 'keep_newest'?); the keys are "
                  "checkpoints, keep_newest") != std::string::npos);
  CHECK(Error("retention:\n  - checkpoints: a\n    colour: red\n    rest: drop\n")
            .find("'retention: colour' is not a retention key; the keys are checkpoints") != std::string::npos);
  CHECK(Error("retention:\n  - checkpoints: a\n    keep: [out/model.pt]\n    rest: drop\n")
            .find("must be a list of versions such as 'v1.0:out/model.pt', not 'out/model.pt'") != std::string::npos);
}

TEST_CASE("a series pattern too long, or too many patterns, is a warning naming the file; the rest holds") {
  // A committed .zipnn.yaml comes from whoever wrote the repository; its
  // patterns are matched against every tracked path on every git command.
  const LoadedPolicy huge =
      ParsePolicyLenient("series: ['" + std::string(1000000, '*') + "{step}']\nbase_interval: 4\n", "r/.zipnn.yaml");
  CHECK(huge.policy.series.empty());
  CHECK(huge.policy.base_interval == 4);
  REQUIRE(huge.warnings.size() == 1);
  CHECK(huge.warnings[0] == "r/.zipnn.yaml: series pattern '" + std::string(40, '*') +
                                "...' is 1000006 characters long; at most 1000 are allowed");
  const std::string longest = std::string(kMaxSeriesPatternLength - 6, 'a') + "{step}";
  CHECK(ParsePolicy("series: ['" + longest + "']\n", "x")->series == std::vector<std::string>{longest});
  CHECK(Error("series: ['a" + longest + "']\n").find("is 1001 characters long; at most 1000 are allowed") !=
        std::string::npos);
  std::string many = "series:\n";
  for (size_t i = 0; i <= kMaxSeriesPatterns; ++i) many += "  - 'run" + std::to_string(i) + "/{step}.pt'\n";
  CHECK(Error(many) == ".zipnn.yaml: 'series' lists 101 patterns; at most 100 are allowed");
}

TEST_CASE("a policy's threads never exceed the machine's cores") {
  const LoadedPolicy committed = ParsePolicyLenient("threads: 4096\n", "x");
  REQUIRE(committed.warnings.empty());
  CHECK(committed.policy.threads == 4096);  // the file may say so
  CHECK(EffectiveThreads(committed.policy, 2) == 2);
  CHECK(EffectiveThreads(committed.policy, 64) == 64);
  Policy p;
  CHECK(EffectiveThreads(p, 8) == 8);  // 0: all cores
  p.threads = 3;
  CHECK(EffectiveThreads(p, 8) == 3);
  p.threads = 1;
  CHECK(EffectiveThreads(p, 8) == 1);
  CHECK(EffectiveThreads(Policy{}, 0) == 1);  // a machine that cannot say
}

TEST_CASE("read leniently, a wrong key keeps its default and the right ones hold") {
  const LoadedPolicy loaded =
      ParsePolicyLenient("base_interval: 4\nbase_intervl: 5\nmin_gain: lots\nseries: ['x.pt']\nzstd_level: 9\n", "y");
  CHECK(loaded.policy.base_interval == 4);
  CHECK(loaded.policy.max_chain == 2);
  CHECK(loaded.policy.zstd_level == 9);
  CHECK(loaded.policy.min_gain == doctest::Approx(0.10));
  CHECK(loaded.policy.series.empty());
  REQUIRE(loaded.warnings.size() == 3);
  CHECK(loaded.warnings[0].find("y: 'base_intervl' is not a policy key (did you mean 'base_interval'?)") == 0);
  CHECK(loaded.warnings[1] == "y: 'min_gain' must be a number");
  CHECK(loaded.warnings[2] == "y: series pattern 'x.pt' has no {step}");
  const LoadedPolicy broken = ParsePolicyLenient("base_interval: [\n", "y");
  CHECK(broken.policy.base_interval == 7);
  REQUIRE(broken.warnings.size() == 1);
  CHECK(broken.warnings[0].find("y: not valid YAML") == 0);
  CHECK(LoadPolicyLenient("/nonexistent/.zipnn.yaml").warnings.empty());
}

TEST_CASE("mistakes name the file and the key") {
  CHECK(Error("base_intervl: 5\n") ==
        ".zipnn.yaml: 'base_intervl' is not a policy key (did you mean 'base_interval'?); the keys are base_interval, "
        "newest, delta_against, max_chain, min_gain, delta_transform, chunk_size, threads, zstd_level, series, "
        "raw_cache, parents, retention");
  CHECK(Error("serise: ['a{step}']\n").find("(did you mean 'series'?)") != std::string::npos);
  CHECK(Error("colour: red\n") ==
        ".zipnn.yaml: 'colour' is not a policy key; the keys are base_interval, newest, delta_against, max_chain, "
        "min_gain, delta_transform, chunk_size, threads, zstd_level, series, raw_cache, parents, retention");
  CHECK(Error("delta_transform: sub\n") ==
        ".zipnn.yaml: 'delta_transform' must be 'auto', 'xor' or 'difference', not 'sub'");
  CHECK(Error("delta_transfrom: xor\n").find("(did you mean 'delta_transform'?)") != std::string::npos);
  CHECK(Error("base_interval: ten\n") == ".zipnn.yaml: 'base_interval' must be a whole number");
  CHECK(Error("base_interval: 2.5\n") == ".zipnn.yaml: 'base_interval' must be a whole number");
  CHECK(Error("base_interval: 0\n") == ".zipnn.yaml: 'base_interval' must be from 1 to 1000000, not 0");
  CHECK(Error("base_interval: [1, 2]\n") == ".zipnn.yaml: 'base_interval' must be a whole number");
  CHECK(Error("delta_against: latest\n") == ".zipnn.yaml: 'delta_against' must be 'previous' or 'base', not 'latest'");
  CHECK(Error("delta_against: [base]\n") == ".zipnn.yaml: 'delta_against' must be 'previous' or 'base'");
  CHECK(Error("min_gain: 1.5\n") == ".zipnn.yaml: 'min_gain' must be from 0 up to (not including) 1");
  CHECK(Error("min_gain: lots\n") == ".zipnn.yaml: 'min_gain' must be a number");
  CHECK(Error("chunk_size: 5001\n") == ".zipnn.yaml: 'chunk_size' must be a multiple of 8");
  CHECK(Error("zstd_level: 30\n") == ".zipnn.yaml: 'zstd_level' must be from 1 to 22, not 30");
  CHECK(Error("- base_interval\n") == ".zipnn.yaml: must be a mapping of keys to values");
  CHECK(Error("base_interval: [1,\n").rfind(".zipnn.yaml: not valid YAML (line ", 0) == 0);
}

}  // namespace
}  // namespace zipnn::config
