// Tensors shared by content (docs/policy.md, "Parents"), through the real
// git binary: a checkpoint that holds the tensors of a stored one under
// other names is a delta of it, at next to nothing, and every version
// stays bit-exact through push, clone, a teammate's clone and gc.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "tests/git_repo.h"
#include "tests/s3rver.h"

namespace zipnn {
namespace {

using testing::Repo;
using testing::Run;

// The one version `git zipnn log --json <path>` lists in `dir` (a folder
// beside the repository, or "" for it).
nlohmann::json Logged(Repo& repo, const std::string& path, const std::string& dir = "") {
  Run log = repo.Sh((dir.empty() ? "" : "cd ../" + dir + " && ") + "git zipnn log --json " + path);
  REQUIRE_MESSAGE(log.code == 0, log.err);
  CAPTURE(log.out);
  const nlohmann::json versions = nlohmann::json::parse(log.out);
  REQUIRE(versions.size() == 1);
  return versions.at(0);
}

double StoredShare(const nlohmann::json& version) {
  return static_cast<double>(version.at("stored_bytes").get<uint64_t>()) /
         static_cast<double>(version.at("raw_bytes").get<uint64_t>());
}

constexpr const char* kShared = "(tensors of the same bytes: ";

// Whether `version`'s parent, as log gives it, is `path` holding `tensors`
// of its `of` tensors under other names.
bool SharedFrom(const nlohmann::json& version, const std::string& path, size_t tensors, size_t of) {
  const std::string said = version.at("parent").get<std::string>();
  CAPTURE(said);
  const std::string want = "a delta of " + path + " " + kShared + std::to_string(tensors) + " of its " +
                           std::to_string(of) + " tensors under other names, ";
  return said.rfind(want, 0) == 0 && said.back() == ')' && version.at("shared").size() == tensors;
}

TEST_CASE(
    "tensors of the same bytes under other names cost next to nothing, and stay exact through push, clone "
    "and gc") {
  Repo repo;
  const std::string rename = "python3 '" + repo.Runfile("tests/rename_tensors.py") + "' ";
  const std::string step160 = repo.Data("cnn-fp32/step-000160.safetensors");
  const std::string step200 = repo.Data("cnn-fp32/step-000200.safetensors");
  REQUIRE(repo.Sh("git zipnn install >/dev/null && git zipnn track '*.safetensors' >/dev/null && "
                  "git add .gitattributes && git commit -qm setup && git init -q --bare ../hub.git && "
                  "git remote add origin ../hub.git && mkdir base ft && cp '" +
                  step200 + "' base/model.safetensors && git add base && git commit -qm base")
              .code == 0);

  // An adapter file: the base model under a prefix, in another order, and
  // a tensor of its own (from another save, real values).
  REQUIRE(repo.Sh(rename + "'" + step200 + "' ft/adapter_model.safetensors base_model.model. --reverse --add '" +
                  repo.Data("cnn-fp32/step-000040.safetensors") +
                  ":fc2.weight:lora_A.weight' && cp ft/adapter_model.safetensors ../adapter && git add ft && "
                  "git commit -qm adapter")
              .code == 0);
  const nlohmann::json adapter = Logged(repo, "ft/adapter_model.safetensors");
  CHECK(SharedFrom(adapter, "base/model.safetensors", 25, 26));
  // log --json names each one and its name in the parent.
  CHECK(adapter.at("shared").at(0).at("name").get<std::string>().rfind("base_model.model.", 0) == 0);
  uint64_t shared_bytes = 0;
  for (const nlohmann::json& t : adapter.at("shared")) {
    const std::string name = t.at("name").get<std::string>(), parent_name = t.at("parent_name").get<std::string>();
    CAPTURE(name);
    CAPTURE(parent_name);
    // Each its own weight in the parent; the batch counters (one i64, the
    // same count in every layer) may be any layer's.
    if (name.find("num_batches_tracked") == std::string::npos) CHECK(name == "base_model.model." + parent_name);
    shared_bytes += t.at("bytes").get<uint64_t>();
  }
  CHECK(shared_bytes > adapter.at("raw_bytes").get<uint64_t>() * 9 / 10);
  CHECK(StoredShare(adapter) < 0.05);
  // show says which tensors are the base's, and under which names there.
  Run show = repo.Sh("git zipnn show --tensors HEAD:ft/adapter_model.safetensors");
  REQUIRE(show.code == 0);
  CHECK(show.out.find("25 tensors (") != std::string::npos);
  CHECK(show.out.find(") of the same bytes as its base's under other names (of tensors of equal bytes, any one may "
                      "be named):\n") != std::string::npos);
  CHECK(show.out.find("\n  base_model.model.fc1.weight = fc1.weight\n") != std::string::npos);
  CHECK(show.out.find("lora_A.weight =") == std::string::npos);

  // The same weights under a second naming scheme, in one commit with the
  // first (a new save, so neither is stored yet).
  REQUIRE(repo.Sh("mkdir -p hf/original && cp '" + step160 + "' hf/model.safetensors && " + rename + "'" + step160 +
                  "' hf/original/consolidated.safetensors '' --upper && cp hf/original/consolidated.safetensors ../"
                  "consolidated && git add hf && git commit -qm hf")
              .code == 0);
  const nlohmann::json consolidated = Logged(repo, "hf/original/consolidated.safetensors");
  CHECK(SharedFrom(consolidated, "hf/model.safetensors", 25, 25));
  CHECK(StoredShare(consolidated) < 0.02);

  // An older save exported under new names, once its own path holds a
  // newer one: found among the versions of history, by their listings.
  REQUIRE(repo.Sh("cp '" + step160 + "' base/model.safetensors && git commit -qam newer && mkdir export && " + rename +
                  "'" + step200 +
                  "' export/model.safetensors model. && cp export/model.safetensors ../export && "
                  "git add export && git commit -qm export")
              .code == 0);
  const nlohmann::json exported = Logged(repo, "export/model.safetensors");
  CHECK(exported.at("parent").get<std::string>().find(kShared) != std::string::npos);
  CHECK(StoredShare(exported) < 0.02);

  // A save that history holds and HEAD no longer does.
  const std::string step120 = repo.Data("cnn-fp32/step-000120.safetensors");
  REQUIRE(repo.Sh("mkdir old && cp '" + step120 +
                  "' old/model.safetensors && git add old && git commit -qm old && "
                  "git rm -q -r old && git commit -qm 'no old'")
              .code == 0);

  // Push, then a clone restores every one bit-exact.
  REQUIRE(repo.Sh("git push -q origin HEAD:main && cd .. && git clone -q -b main hub.git clone").code == 0);
  CHECK(repo.Sh("cmp ../clone/ft/adapter_model.safetensors ../adapter").code == 0);
  CHECK(repo.Sh("cmp ../clone/hf/original/consolidated.safetensors ../consolidated").code == 0);
  CHECK(repo.Sh("cmp ../clone/export/model.safetensors ../export").code == 0);
  CHECK(repo.Sh("cmp ../clone/hf/model.safetensors '" + step160 + "'").code == 0);
  CHECK(repo.Sh("cd ../clone && git status --porcelain").out.empty());
  CHECK(repo.Sh("cd ../clone && git zipnn fetch --all -q && git zipnn fsck --all").code == 0);
  CHECK(SharedFrom(Logged(repo, "ft/adapter_model.safetensors", "clone"), "base/model.safetensors", 25, 26));

  // A teammate's clone, which stored none of them, finds the holder of a
  // new file's tensors by the listings that came with the branch.
  REQUIRE(repo.Sh("cd ../clone && git config user.email b@example.com && git config user.name B && mkdir mine && " +
                  rename + "'" + step160 +
                  "' mine/model.safetensors net. && cp mine/model.safetensors ../mine && "
                  "git add mine && git commit -qm mine")
              .code == 0);
  const nlohmann::json mine = Logged(repo, "mine/model.safetensors", "clone");
  // (Step 160 is at hf/model.safetensors and, since "newer", at base/.)
  CHECK(mine.at("parent").get<std::string>().find(kShared) != std::string::npos);
  CHECK(StoredShare(mine) < 0.02);
  CHECK(repo.Sh("cd ../clone && git push -q origin HEAD:main").code == 0);

  // A clone that fetched only HEAD's versions lacks the object of the
  // save HEAD no longer holds: a file holding its tensors is stored whole,
  // and the add says what to fetch for the next one.
  REQUIRE(repo.Sh("cd .. && git clone -q -b main hub.git fresh").code == 0);
  Run whole = repo.Sh("cd ../fresh && git config user.email c@example.com && git config user.name C && mkdir x && " +
                      rename + "'" + step120 + "' x/model.safetensors x. && git add x && git commit -qm x");
  REQUIRE(whole.code == 0);
  CHECK(whole.err.find("x/model.safetensors holds tensors of old/model.safetensors (a version in history) under "
                       "other names, but that version's object is not in this clone, so this file is stored as its "
                       "own series places it, and stays so") != std::string::npos);
  CHECK(whole.err.find("`git zipnn fetch --all -I 'old/model.safetensors'`") != std::string::npos);
  CHECK(StoredShare(Logged(repo, "x/model.safetensors", "fresh")) > 0.5);
  // The versions stored on versions of other series came with the branch
  // (refs/zipnn/children): this clone, which stored none of them, counts
  // the adapter on its parent, whose object it has not even fetched.
  CHECK(repo.Sh("git ls-remote ../hub.git refs/zipnn/children").out.find("refs/zipnn/children") != std::string::npos);
  const std::string noted = repo.Sh("cat ../fresh/.git/zipnn/cache/children").out;
  CHECK(noted.find(" " + adapter.at("id").get<std::string>() + "\n") != std::string::npos);
  CHECK(noted.find(" " + consolidated.at("id").get<std::string>() + "\n") != std::string::npos);
  REQUIRE(repo.Sh("cd ../fresh && git zipnn fetch --all -q -I 'old/model.safetensors' && mkdir y && " + rename + "'" +
                  step120 + "' y/model.safetensors y. && git add y && git commit -qm y")
              .code == 0);
  CHECK(StoredShare(Logged(repo, "y/model.safetensors", "fresh")) < 0.02);

  // Retention drops the old versions of base/, step 200 among them: what
  // rested on it under other names is stored whole first, and stays exact.
  Run retain = repo.Sh(
      "printf 'retention:\\n  - checkpoints: \\x27base/**\\x27\\n    keep_newest: 1\\n    rest: drop\\n' "
      "> .zipnn.yaml && git zipnn retain --yes");
  CAPTURE(retain.err);
  REQUIRE(retain.code == 0);
  CHECK(retain.out.find("drop base/model.safetensors") != std::string::npos);
  CHECK(retain.out.find("stored whole (they were deltas of versions that went)") != std::string::npos);
  CHECK(repo.Sh("rm -f ../v && git zipnn restore ft/adapter_model.safetensors -o ../v && cmp ../v ../adapter").code ==
        0);
  CHECK(repo.Sh("rm -f ../v && git zipnn restore export/model.safetensors -o ../v && cmp ../v ../export").code == 0);

  // The parent leaves HEAD and gc runs: the versions resting on it keep it.
  REQUIRE(repo.Sh("git rm -q -r base && git commit -qm 'no base' && git zipnn gc --now >/dev/null").code == 0);
  CHECK(repo.Sh("rm -f ../v && git zipnn restore ft/adapter_model.safetensors -o ../v && cmp ../v ../adapter").code ==
        0);
  CHECK(repo.Sh("rm -f ../v && git zipnn restore export/model.safetensors -o ../v && cmp ../v ../export").code == 0);
  CHECK(repo.Sh("git zipnn fsck --all").code == 0);
  REQUIRE(repo.Sh("cd .. && git clone -q -b main hub.git third").code == 0);
  CHECK(repo.Sh("cmp ../third/mine/model.safetensors ../mine").code == 0);
  CHECK(repo.Sh("cmp ../third/ft/adapter_model.safetensors ../adapter").code == 0);
}

// Commits a retention rule keeping only the newest of the checkpoints
// `glob` matches, pushes it, and applies it here and on origin.
Run RetainOnRemote(Repo& repo, const std::string& glob, const std::string& flags) {
  return repo.Sh("printf 'retention:\\n  - checkpoints: \\x27" + glob +
                 "\\x27\\n    keep_newest: 1\\n    rest: drop\\n' > .zipnn.yaml && git add .zipnn.yaml && "
                 "git commit -qm rule && git push -q origin HEAD:main && git zipnn retain --remote origin --yes" +
                 flags);
}

// Commits step `step` of the fp32 CNN cut into three shards
// (hf/model-0000k-of-00003.safetensors, by tensor count: the third holds
// most bytes), and the same weights under a second naming scheme in one
// file (hf/original/consolidated.safetensors), in one commit; copies of
// them go to ../<kept>-<k> and ../<kept>.
Run SaveSharded(Repo& repo, const std::string& step, const std::string& kept) {
  const std::string rename = "python3 '" + repo.Runfile("tests/rename_tensors.py") + "' ";
  const std::string file = repo.Data("cnn-fp32/step-000" + step + ".safetensors");
  std::string line = "mkdir -p hf/original && ";
  for (int k = 1; k <= 3; ++k) {
    const std::string shard = "hf/model-0000" + std::to_string(k) + "-of-00003.safetensors";
    line += rename + "'" + file + "' " + shard + " '' --shard " + std::to_string(k) + "/3 && cp " + shard + " ../" +
            kept + "-" + std::to_string(k) + " && ";
  }
  line += rename + "'" + file +
          "' hf/original/consolidated.safetensors '' --upper --reverse && "
          "cp hf/original/consolidated.safetensors ../" +
          kept + " && git add hf && git commit -qm " + kept;
  return repo.Sh(line);
}

TEST_CASE(
    "a consolidated copy of a sharded save takes its tensors from every shard, and stays exact through push, a "
    "clone that fetches it alone, retention here and on the remote, and gc") {
  Repo repo;
  const std::string rename = "python3 '" + repo.Runfile("tests/rename_tensors.py") + "' ";
  auto save = [&](const std::string& step, const std::string& kept) { return SaveSharded(repo, step, kept); };
  REQUIRE(repo.Sh("git zipnn install >/dev/null && git zipnn track '*.safetensors' >/dev/null && "
                  "git add .gitattributes && git commit -qm setup && git init -q --bare ../hub.git && "
                  "git remote add origin ../hub.git")
              .code == 0);
  REQUIRE(save("160", "first").code == 0);
  const nlohmann::json first = Logged(repo, "hf/original/consolidated.safetensors");
  CAPTURE(first.dump());
  // Its parent is one shard; the other two give the rest.
  const std::string parent = first.at("parent").get<std::string>();
  CHECK(parent.rfind("a delta of hf/model-00003-of-00003.safetensors (", 0) == 0);
  const size_t from = parent.find(", from hf/model-0000");
  REQUIRE(from != std::string::npos);
  // Both other shards, in the order of its reference table.
  CHECK(parent.find("hf/model-00001-of-00003.safetensors", from) != std::string::npos);
  CHECK(parent.find("hf/model-00002-of-00003.safetensors", from) != std::string::npos);
  CHECK(parent.find(".safetensors and hf/model-0000", from) != std::string::npos);
  CHECK(StoredShare(first) < 0.02);
  Run show = repo.Sh("git zipnn show HEAD:hf/original/consolidated.safetensors");
  REQUIRE(show.code == 0);
  CHECK(show.out.find("(takes tensors from 2 more versions, marked ref)") != std::string::npos);
  CHECK(show.out.find("(ref of " + first.at("id").get<std::string>().substr(0, 12) + ")") != std::string::npos);
  CHECK(show.out.find(" taken from hf/model-00001-of-00003.safetensors (") != std::string::npos);
  CHECK(show.out.find("), a version it references\n") != std::string::npos);

  // The next save: the newest of its series, which only a twin may be a
  // delta of, is one with its shards together.
  REQUIRE(save("200", "second").code == 0);
  const Run log = repo.Sh("git zipnn log --json hf/original/consolidated.safetensors");
  REQUIRE(log.code == 0);
  const nlohmann::json both = nlohmann::json::parse(log.out);
  REQUIRE(both.size() == 2);
  CHECK(StoredShare(both.at(0)) < 0.02);
  CHECK(StoredShare(both.at(1)) < 0.02);
  for (const nlohmann::json& v : both) {
    size_t referenced = 0;
    for (const nlohmann::json& t : v.at("shared")) referenced += t.at("from").is_null() ? 0 : 1;
    CHECK(referenced > 0);
  }
  CHECK(repo.Sh("git zipnn fsck --all").code == 0);
  // A repack keeps what it takes from its parent and references.
  REQUIRE(repo.Sh("git zipnn repack >/dev/null").code == 0);
  const nlohmann::json repacked =
      nlohmann::json::parse(repo.Sh("git zipnn log --json hf/original/consolidated.safetensors").out);
  REQUIRE(repacked.size() == 2);
  CHECK(StoredShare(repacked.at(0)) < 0.02);
  CHECK(StoredShare(repacked.at(1)) < 0.02);

  // Pushed, then a teammate fetches the consolidated file alone: what it
  // references comes with it, and it restores exactly.
  REQUIRE(repo.Sh("git push -q origin HEAD:main && cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q -b main hub.git "
                  "mate && cd mate && git zipnn restore hf/original/consolidated.safetensors -o ../v && "
                  "cmp ../v ../second")
              .code == 0);
  CHECK(repo.Sh("cd ../mate && git zipnn pull -q && cmp hf/model-00002-of-00003.safetensors ../second-2 && "
                "git checkout -q HEAD~1 -- hf && cmp hf/original/consolidated.safetensors ../first && "
                "cmp hf/model-00003-of-00003.safetensors ../first-3 && git status --porcelain")
            .code == 0);

  // Retention drops the first save's shards, here and on the remote: the
  // first consolidated file, which took tensors from them, is stored whole
  // first, and stays exact in a fresh clone.
  Run retain = RetainOnRemote(repo, "hf/model-*", "");
  CAPTURE(retain.out);
  CAPTURE(retain.err);
  REQUIRE(retain.code == 0);
  CHECK(retain.out.find("1 other version stored whole (they were deltas of versions that went)") != std::string::npos);
  CHECK(repo.Sh("git zipnn gc --now >/dev/null && git zipnn fsck --all").code == 0);
  CHECK(repo.Sh("rm -f ../v && git zipnn restore hf/original/consolidated.safetensors --rev HEAD~2 -o ../v && "
                "cmp ../v ../first")
            .code == 0);
  REQUIRE(repo.Sh("cd .. && git clone -q -b main hub.git fresh && cd fresh && cmp hf/original/consolidated.safetensors "
                  "../second && git checkout -q HEAD~2 -- hf/original && "
                  "cmp hf/original/consolidated.safetensors ../first")
              .code == 0);
}

TEST_CASE(
    "the newest that shares part of its tensors takes only those of the same bytes, and stays exact through push "
    "and clone") {
  Repo repo;
  const std::string rename = "python3 '" + repo.Runfile("tests/rename_tensors.py") + "' ";
  const auto step = [&](int n) {
    return "'" + repo.Data("cnn-fp32/step-000" + std::string(n < 100 ? "0" : "") + std::to_string(n) + ".safetensors") +
           "'";
  };
  REQUIRE(repo.Sh("git zipnn install >/dev/null && git zipnn track '*.safetensors' >/dev/null && "
                  "git add .gitattributes && git commit -qm setup && git init -q --bare ../hub.git && "
                  "git remote add origin ../hub.git && mkdir base ft out && cp " +
                  step(200) + " base/model.safetensors")
              .code == 0);
  // A fine-tune of the model in base/ whose convolutions are frozen (40%
  // of its bytes) and whose classifier trains on: three saves over one
  // path, the first in the commit of the base. Beside it, out/ holds a
  // model and its training state (the same weights under other names,
  // with moments of its own), one commit a save.
  const auto save = [&](int n, int trained, const std::string& kept) {
    return repo.Sh(rename + step(200) + " ft/model.safetensors '' --from " + step(trained) + ":fc1.weight --from " +
                   step(trained) + ":fc2.weight && cp ft/model.safetensors ../" + kept + " && cp " + step(n) +
                   " out/model.safetensors && " + rename + step(n) + " out/state.safetensors model. --add " +
                   step(trained) + ":fc1.weight:exp_avg.fc1 --add " + step(trained) +
                   ":c3.weight:exp_avg.c3 && cp out/state.safetensors ../" + kept +
                   "-state && git add -A && git commit -qm " + kept);
  };
  REQUIRE(save(160, 40, "first").code == 0);
  REQUIRE(save(120, 80, "second").code == 0);
  // The newest of each series, which would be whole for want of a twin, is
  // a delta of the version stored whole that holds part of it.
  const auto newest = [&](const std::string& path) {
    const Run log = repo.Sh("git zipnn log --json " + path);
    REQUIRE(log.code == 0);
    return nlohmann::json::parse(log.out).at(0);
  };
  const nlohmann::json tuned = newest("ft/model.safetensors");
  CAPTURE(tuned.dump());
  CHECK(tuned.at("parent").get<std::string>().rfind(
            "a delta of base/model.safetensors (tensors of the same bytes: 23 of its 25 tensors, ", 0) == 0);
  CHECK(tuned.at("depth").get<int>() == 1);
  CHECK(StoredShare(tuned) > 0.3);  // its classifier, coded alone
  CHECK(StoredShare(tuned) < 0.6);  // without its convolutions
  REQUIRE(tuned.at("shared").size() == 23);
  for (const nlohmann::json& t : tuned.at("shared")) {
    CHECK(t.at("name") == t.at("parent_name"));
    CHECK(t.at("name") != "fc1.weight");  // the trained ones are its own
    CHECK(t.at("name") != "fc2.weight");
  }
  const nlohmann::json state = newest("out/state.safetensors");
  CAPTURE(state.dump());
  // (Its weights are those of the model stored just before it, in the
  // same add.)
  CHECK(state.at("parent").get<std::string>().rfind(
            "a delta of out/model.safetensors (tensors of the same bytes: 25 of its 27 tensors under other names, ",
            0) == 0);
  CHECK(StoredShare(state) < 0.6);
  Run show = repo.Sh("git zipnn show HEAD:ft/model.safetensors");
  REQUIRE(show.code == 0);
  CHECK(show.out.find("\n23 tensors (") != std::string::npos);
  CHECK(show.out.find(") of the same bytes as its base's\n") != std::string::npos);

  // A third save: each version before is re-stored in its series when
  // that pays, and every one restores exactly in a clone.
  REQUIRE(save(80, 120, "third").code == 0);
  CHECK(repo.Sh("git zipnn fsck --all").code == 0);
  REQUIRE(repo.Sh("git push -q origin HEAD:main && cd .. && git clone -q -b main hub.git clone").code == 0);
  for (const std::string& kept : {"third", "second", "first"}) {
    CAPTURE(kept);
    CHECK(repo.Sh("cd ../clone && cmp ft/model.safetensors ../" + kept + " && cmp out/state.safetensors ../" + kept +
                  "-state")
              .code == 0);
    REQUIRE(repo.Sh("cd ../clone && git checkout -q HEAD~1").code == 0);
  }
  CHECK(repo.Sh("cd ../clone && git status --porcelain").out.empty());
}

TEST_CASE("S3: retain --remote stores whole first what takes tensors from a version it drops there") {
  Repo repo;
  testing::S3rver s3(repo);
  REQUIRE(repo.Sh("git zipnn install >/dev/null && git zipnn track '*.safetensors' >/dev/null && "
                  "git add .gitattributes && git commit -qm setup && git init -q --bare ../hub.git && "
                  "git remote add origin ../hub.git && mkdir -p ../home/.aws && printf '[default]\\n"
                  "aws_access_key_id = S3RVER\\naws_secret_access_key = S3RVER\\n' > ../home/.aws/credentials && "
                  "git config remote.origin.zipnnurl s3://zipnn/team && git config remote.origin.zipnnendpoint " +
                  s3.endpoint())
              .code == 0);
  REQUIRE(SaveSharded(repo, "160", "first").code == 0);
  // The parent is the third shard; the first is one of its references.
  const nlohmann::json first = Logged(repo, "hf/original/consolidated.safetensors");
  CHECK(first.at("base").get<std::string>() == Logged(repo, "hf/model-00003-of-00003.safetensors").at("id"));
  const std::string reference = Logged(repo, "hf/model-00001-of-00003.safetensors").at("id");
  CHECK(first.at("shared").dump().find(reference) != std::string::npos);
  REQUIRE(SaveSharded(repo, "200", "second").code == 0);
  // Dropped here and there: the first shard's older version only, which
  // the older consolidated file references (the bucket must say so, as
  // only its base would keep it otherwise).
  const Run retain = RetainOnRemote(repo, "hf/model-00001*", " --pushes-stopped");
  CAPTURE(retain.out);
  CAPTURE(retain.err);
  REQUIRE(retain.code == 0);
  CHECK(retain.out.find("1 object re-sent") != std::string::npos);
  CHECK(repo.Sh("test ! -e '" + s3.data() + "/team/" + reference.substr(0, 2) + "/" + reference.substr(2, 2) + "/" +
                reference + "._S3rver_object'")
            .code == 0);
  REQUIRE(repo.Sh("cd .. && git clone -q -c remote.origin.zipnnurl=s3://zipnn/team -c remote.origin.zipnnendpoint=" +
                  s3.endpoint() +
                  " -b main hub.git fresh && cd fresh && git checkout -q HEAD~2 -- hf/original && "
                  "cmp hf/original/consolidated.safetensors ../first")
              .code == 0);
}

}  // namespace
}  // namespace zipnn
