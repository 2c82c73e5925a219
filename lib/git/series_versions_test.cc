// The versions of series as git holds them (series_versions.h), on a
// repository held in memory (fake_git.h).
#include "lib/git/series_versions.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/git/fake_git.h"
#include "lib/store/pointer.h"

namespace zipnn::git {
namespace {

std::string Text(const std::string& content) {
  return store::FormatPointer(store::Pointer{HashBytes(content.data(), content.size()), content.size(), "raw"});
}
ContentId Id(const std::string& content) { return HashBytes(content.data(), content.size()); }

// A SeriesVersions reading `git`, which the test keeps building.
struct Fixture {
  FakeGit* git;
  SeriesVersions series;
};
Fixture Make() {
  auto owned = std::make_unique<FakeGit>();
  FakeGit* git = owned.get();
  return Fixture{git, SeriesVersions(std::move(owned), series::Rules())};
}

std::vector<std::string> Paths(const std::vector<store::Version>& versions) {
  std::vector<std::string> paths;
  for (const store::Version& v : versions) paths.push_back(v.path);
  return paths;
}

const char kSeriesFile[] = "run/step-100.bin";

TEST_CASE("a series in step order: HEAD's tree and the index, and its whole history only when deep") {
  auto f = Make();
  f.git->CommitOnHead({{"run/step-100.bin", Text("s100")}});
  // A run that keeps its last saves only: step 100 is gone from the tip.
  f.git->CommitOnHead({{"run/step-200.bin", Text("s200")}, {"run/step-1000.bin", Text("s1000")}});
  f.git->SetIndex(
      {{"run/step-200.bin", Text("s200")}, {"run/step-1000.bin", Text("s1000")}, {"run/step-300.bin", Text("s300")}});
  const std::string name = f.series.rules().Place(kSeriesFile).name;

  auto shallow = f.series.Of(name, /*deep=*/false);
  REQUIRE(shallow.ok());
  CHECK(Paths(*shallow) == std::vector<std::string>{"run/step-200.bin", "run/step-300.bin", "run/step-1000.bin"});
  CHECK((*shallow)[0].step == "200");
  CHECK((*shallow)[0].id == Id("s200"));

  auto deep = f.series.Of(name, /*deep=*/true);
  REQUIRE(deep.ok());
  CHECK(Paths(*deep) ==
        std::vector<std::string>{"run/step-100.bin", "run/step-200.bin", "run/step-300.bin", "run/step-1000.bin"});
}

TEST_CASE("one path saved over and over: its versions oldest first, as history holds them, each once") {
  auto f = Make();
  f.git->CommitOnHead({{"model.bin", Text("v1")}});
  f.git->CommitOnHead({{"model.bin", Text("v2")}});
  f.git->CommitOnHead({{"model.bin", Text("v1")}});  // back to the first
  f.git->CommitOnHead({{"model.bin", Text("v3")}});
  auto versions = f.series.Of(f.series.rules().Place("model.bin").name, /*deep=*/true);
  REQUIRE(versions.ok());
  REQUIRE(versions->size() == 3);
  CHECK((*versions)[0].id == Id("v2"));  // v1 is held last at its newest commit
  CHECK((*versions)[1].id == Id("v1"));
  CHECK((*versions)[2].id == Id("v3"));
}

TEST_CASE("a version this process stored counts before git's index holds it") {
  auto f = Make();
  f.git->CommitOnHead({{"run/step-100.bin", Text("s100")}});
  f.series.Add("run/step-200.bin", Id("s200"));
  auto versions = f.series.Of(f.series.rules().Place(kSeriesFile).name, /*deep=*/false);
  REQUIRE(versions.ok());
  CHECK(Paths(*versions) == std::vector<std::string>{"run/step-100.bin", "run/step-200.bin"});
  auto at = f.series.At("run/step-200.bin");
  REQUIRE(at.ok());
  REQUIRE(at->has_value());
  CHECK((*at)->id == Id("s200"));
}

TEST_CASE("the version at a path: this process's, else the index's, else HEAD's") {
  auto f = Make();
  f.git->CommitOnHead({{"model.bin", Text("committed")}, {"other.bin", Text("o")}});
  auto committed = f.series.At("model.bin");
  REQUIRE(committed.ok());
  REQUIRE(committed->has_value());
  CHECK((*committed)->id == Id("committed"));

  auto g = Make();
  g.git->CommitOnHead({{"model.bin", Text("committed")}});
  g.git->SetIndex({{"model.bin", Text("staged")}});
  auto staged = g.series.At("model.bin");
  REQUIRE(staged.ok());
  CHECK((*staged)->id == Id("staged"));
  g.series.Add("model.bin", Id("mine"));
  CHECK((*g.series.At("model.bin"))->id == Id("mine"));
  auto none = g.series.At("absent.bin");
  REQUIRE(none.ok());
  CHECK(!none->has_value());
}

TEST_CASE("a damaged pointer or a file git holds whole is no version") {
  auto f = Make();
  f.git->CommitOnHead({{"run/step-100.bin", "git-zipnn pointer 2 nonsense\n"},
                       {"run/step-200.bin", "the checkpoint itself"},
                       {"run/step-300.bin", Text("s300")}});
  auto versions = f.series.Of(f.series.rules().Place(kSeriesFile).name, /*deep=*/true);
  REQUIRE(versions.ok());
  CHECK(Paths(*versions) == std::vector<std::string>{"run/step-300.bin"});
}

TEST_CASE("recent versions of other series: this process's own first, latest first, then each series' newest") {
  auto f = Make();
  f.git->CommitOnHead(
      {{"a/step-1.bin", Text("a1")}, {"a/step-2.bin", Text("a2")}, {"b.bin", Text("b")}, {"mine.bin", Text("m0")}});
  f.series.Add("x.bin", Id("x"));
  f.series.Add("y.bin", Id("y"));
  f.series.Add("mine.bin", Id("m1"));
  auto recent = f.series.Recent(f.series.rules().Place("mine.bin").name);
  REQUIRE(recent.ok());
  CHECK(Paths(*recent) == std::vector<std::string>{"y.bin", "x.bin", "a/step-2.bin", "b.bin", "x.bin", "y.bin"});
}

TEST_CASE("where git holds a version, in HEAD's history too") {
  auto f = Make();
  f.git->CommitOnHead({{"old/model.bin", Text("old")}});
  f.git->CommitOnHead({{"new/model.bin", Text("new")}});
  auto old_path = f.series.PathOf(Id("old"));
  REQUIRE(old_path.ok());
  CHECK(*old_path == std::optional<std::string>("old/model.bin"));
  auto unknown = f.series.PathOf(Id("never stored"));
  REQUIRE(unknown.ok());
  CHECK(!unknown->has_value());
}

TEST_CASE("every series git holds, by name, and a partial clone's pointers fetched a series at a time") {
  auto f = Make();
  f.git->CommitOnHead({{"run/step-1.bin", Text("r1")}, {"solo.bin", Text("s")}});
  f.git->CommitOnHead({{"run/step-2.bin", Text("r2")}, {"solo.bin", Text("s")}});
  f.git->MakeMissing(f.git->Blob(Text("r1")));
  f.git->MakeMissing(f.git->Blob(Text("r2")));
  auto all = f.series.All();
  REQUIRE(all.ok());
  CHECK(all->size() == 2);
  CHECK(Paths(all->at(f.series.rules().Place("run/step-1.bin").name)) ==
        std::vector<std::string>{"run/step-1.bin", "run/step-2.bin"});
  CHECK(Paths(all->at(f.series.rules().Place("solo.bin").name)) == std::vector<std::string>{"solo.bin"});
  bool both_at_once = false;
  for (const auto& fetch : f.git->fetches()) both_at_once |= fetch.size() == 2;
  CHECK(both_at_once);
}

}  // namespace
}  // namespace zipnn::git
