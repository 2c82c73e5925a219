// Tests of the series rules: each layout training frameworks write, the
// paths that must not join one series, explicit patterns and step order.
#include <doctest/doctest.h>

#include "lib/series/series.h"

namespace zipnn::series {
namespace {

Placed At(const std::string& path) { return Rules().Place(path); }

void Same(const std::string& a, const std::string& b) {
  INFO(a << " and " << b);
  CHECK(At(a).name == At(b).name);
  CHECK(At(a).step != At(b).step);
}

void Apart(const std::string& a, const std::string& b) {
  INFO(a << " and " << b);
  CHECK(At(a).name != At(b).name);
}

TEST_CASE("step-numbered files in one folder are one series, ordered by number") {
  CHECK(At("run/step_000100.safetensors").name == "run/step_#.safetensors");
  CHECK(At("run/step_000100.safetensors").step == "000100");
  Same("run/step_000100.safetensors", "run/step_000200.safetensors");
  Same("ckpt/model-100.pt", "ckpt/model-2000.pt");
  Same("model.100.pt", "model.20.pt");
  Same("00100.safetensors", "00200.safetensors");
}

TEST_CASE("the Lightning form keeps epoch and step, in that order") {
  const Placed p = At("lightning_logs/version_0/checkpoints/epoch=3-step=1000.ckpt");
  CHECK(p.name == "lightning_logs/version_0/checkpoints/epoch=#-step=#.ckpt");
  CHECK(p.step == "3.1000");
  Same("checkpoints/epoch=3-step=1000.ckpt", "checkpoints/epoch=4-step=1250.ckpt");
}

TEST_CASE("step-numbered folders hold files of the same name at any depth") {
  CHECK(At("out/checkpoint-100/model.safetensors").name == "out/checkpoint-#/model.safetensors");
  CHECK(At("out/checkpoint-100/model.safetensors").step == "100");
  Same("out/checkpoint-100/model.safetensors", "out/checkpoint-200/model.safetensors");
  Same("out/checkpoint-100/optimizer.pt", "out/checkpoint-200/optimizer.pt");
  Apart("out/checkpoint-100/model.safetensors", "out/checkpoint-100/optimizer.pt");
  Same("global_step100/mp_rank_00_model_states.pt", "global_step200/mp_rank_00_model_states.pt");
  Same("a/b/iter_0000100/mp_rank_00/model_optim_rng.pt", "a/b/iter_0000200/mp_rank_00/model_optim_rng.pt");
  CHECK(At("a/b/iter_0000100/mp_rank_00/model_optim_rng.pt").step == "0000100");
  Same("step_100/weights.bin", "step_200/weights.bin");
  Same("000100/model.pt", "000200/model.pt");
  Same("ckpts/epoch=1-step=50/model.pt", "ckpts/epoch=2-step=100/model.pt");
}

TEST_CASE("one path overwritten in place is its own series with no step") {
  CHECK(At("out/model.safetensors").name == "out/model.safetensors");
  CHECK(At("out/model.safetensors").step.empty());
  CHECK(At("last.ckpt").step.empty());
}

TEST_CASE("shards never join each other's series") {
  Apart("ckpt-100/model-00001-of-00002.safetensors", "ckpt-100/model-00002-of-00002.safetensors");
  Same("checkpoint-100/model-00001-of-00002.safetensors", "checkpoint-200/model-00001-of-00002.safetensors");
  CHECK(At("checkpoint-100/model-00002-of-00002.safetensors").name == "checkpoint-#/model-00002-of-00002.safetensors");
  Apart("global_step100/mp_rank_00_model_states.pt", "global_step100/mp_rank_01_model_states.pt");
  Apart("global_step100/zero_pp_rank_0_mp_rank_00_optim_states.pt",
        "global_step100/zero_pp_rank_1_mp_rank_00_optim_states.pt");
  Same("global_step100/zero_pp_rank_1_mp_rank_00_optim_states.pt",
       "global_step300/zero_pp_rank_1_mp_rank_00_optim_states.pt");
  Apart("iter_0000100/mp_rank_00/model_optim_rng.pt", "iter_0000100/mp_rank_01/model_optim_rng.pt");
  Apart("step-100-rank3.pt", "step-100-rank4.pt");
  Apart("shard_1/model-100.pt", "shard_2/model-100.pt");
  Apart("layer_01-model_states.pt", "layer_02-model_states.pt");
  Apart("checkpoint-100/rng_state_0.pth", "checkpoint-100/rng_state_1.pth");
  Apart("model.tp_0.pp_1.pt", "model.tp_1.pp_1.pt");
}

TEST_CASE("paths that must not join: other models, other formats, other runs") {
  Apart("encoder-step100.pt", "decoder-step100.pt");
  Same("encoder-step100.pt", "encoder-step200.pt");
  Apart("model-100.safetensors", "model-100.pt");
  Apart("model-fp16-100.safetensors", "model-bf16-100.safetensors");
  Apart("gpt2-100.pt", "gpt3-100.pt");
  Apart("run1/step-100.pt", "run2/step-100.pt");
  Apart("seed-42/checkpoint-100/model.pt", "seed-43/checkpoint-100/model.pt");
  Apart("a/model-100.pt", "b/model-100.pt");
  CHECK(At("resnet50/v2/model.pt").step.empty());
}

TEST_CASE("explicit patterns come first and name the step") {
  auto rules = Rules::WithPatterns({"runs/*/save{step}/weights.bin", "**/snap-{step}-final.pt"});
  REQUIRE(rules.ok());
  const Placed p = rules->Place("runs/alpha/save0300/weights.bin");
  CHECK(p.name == "runs/alpha/save#/weights.bin");
  CHECK(p.step == "0300");
  CHECK(rules->Place("runs/beta/save0300/weights.bin").name != p.name);
  CHECK(rules->Place("x/y/snap-7-final.pt").name == "x/y/snap-#-final.pt");
  CHECK(rules->Place("snap-7-final.pt").step == "7");
  // No pattern matches: the built-in rules.
  CHECK(rules->Place("out/checkpoint-100/model.safetensors").name == "out/checkpoint-#/model.safetensors");
  // A pattern can make a step of what the built-in rules call a name.
  auto run = Rules::WithPatterns({"run{step}/model.pt"});
  REQUIRE(run.ok());
  CHECK(run->Place("run7/model.pt").name == "run#/model.pt");
  CHECK(run->Place("run7/model.pt").step == "7");
}

TEST_CASE("a pattern of many stars cannot make matching take exponential time") {
  // Without remembering what failed, this is 2^40 tries.
  std::string pattern;
  for (int i = 0; i < 40; ++i) pattern += "*a";
  auto rules = Rules::WithPatterns({pattern + "{step}b", "**a**a**a**a**a**a**a**a**a**a**{step}c"});
  REQUIRE(rules.ok());
  const std::string path = std::string(300, 'a') + "/" + std::string(300, 'a') + "7c";
  CHECK(rules->Place(path).name == std::string(300, 'a') + "/" + std::string(300, 'a') + "#c");
  CHECK(rules->Place(path).step == "7");
  CHECK(rules->Place(std::string(3000, 'a')).step.empty());
}

TEST_CASE("a pattern of a million stars matches in constant stack, as '**' does") {
  // A .zipnn.yaml is committed by whoever wrote the repository: matching
  // recursed once per wildcard, and this pattern overflowed the stack.
  auto huge = Rules::WithPatterns({std::string(1000000, '*') + "{step}.pt"});
  auto plain = Rules::WithPatterns({"**{step}.pt"});
  REQUIRE(huge.ok());
  REQUIRE(plain.ok());
  for (const std::string path : {"runs/a/step-100.pt", "100.pt", "model.pt", "a/b/c"}) {
    INFO(path);
    CHECK(huge->Place(path).name == plain->Place(path).name);
    CHECK(huge->Place(path).step == plain->Place(path).step);
  }
  CHECK(huge->Place("runs/a/step-100.pt").name == "runs/a/step-10#.pt");
  // Wildcards that cannot be merged: a million elements, matched all the
  // same without recursion.
  std::string spread;
  for (int i = 0; i < 500000; ++i) spread += "*/";
  auto deep = Rules::WithPatterns({spread + "{step}.pt"});
  REQUIRE(deep.ok());
  CHECK(deep->Place("a/b/7.pt").name == At("a/b/7.pt").name);  // too few folders: the built-in rules
}

TEST_CASE("explicit patterns are checked") {
  CHECK(Rules::WithPatterns({"runs/*/weights.bin"}).status().message() ==
        "series pattern 'runs/*/weights.bin' has no {step}");
  CHECK(Rules::WithPatterns({"runs/{run}/{step}.bin"}).status().message() ==
        "series pattern 'runs/{run}/{step}.bin': only {step} may stand in braces");
  CHECK(!Rules::WithPatterns({"{step}{step}.pt"}).ok());
  CHECK(Rules::WithPatterns({}).ok());
}

TEST_CASE("files compared at different depths are labelled by their paths from the folders they share") {
  const Rules rules;
  CHECK(Labels(rules, {"d1/step-000010.safetensors", "adapter.safetensors"}) ==
        std::vector<std::string>{"d1/step-000010.safetensors", "adapter.safetensors"});
  CHECK(Labels(rules, {"/tmp/bench/gpt/step-000010.safetensors", "/tmp/adapter.safetensors"}) ==
        std::vector<std::string>{"bench/gpt/step-000010.safetensors", "adapter.safetensors"});
  // At one depth, as before: the folder that tells them apart.
  CHECK(Labels(rules, {"a/checkpoint-10/model.safetensors", "a/checkpoint-20/model.safetensors"}) ==
        std::vector<std::string>{"checkpoint-10", "checkpoint-20"});
}

TEST_CASE("steps order by number, part by part, never as strings") {
  CHECK(StepLess("20", "100"));
  CHECK(!StepLess("100", "20"));
  CHECK(StepLess("000020", "100"));
  CHECK(!StepLess("0100", "100"));
  CHECK(!StepLess("100", "0100"));
  CHECK(StepLess("3.1000", "3.1200"));
  CHECK(StepLess("3.1200", "4.20"));
  CHECK(StepLess("", "0"));
  CHECK(!StepLess("", ""));
  CHECK(StepLess("0", "00001"));
  CHECK(StepLess("5", "5.1"));
}

}  // namespace
}  // namespace zipnn::series
