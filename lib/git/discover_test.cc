// What discover.h says of a version from its place among the series git
// holds (ParentNote, PreviousInSeries), on a repository held in memory
// (fake_git.h).
#include "lib/git/discover.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "lib/base/content_id.h"
#include "lib/git/fake_git.h"
#include "lib/store/parents.h"
#include "lib/store/pointer.h"

namespace zipnn::git {
namespace {

std::string Text(const std::string& content) {
  return store::FormatPointer(store::Pointer{HashBytes(content.data(), content.size()), content.size(), "raw"});
}
ContentId Id(const std::string& content) { return HashBytes(content.data(), content.size()); }

std::unique_ptr<SeriesVersions> SeriesOf(std::unique_ptr<FakeGit> git) {
  return std::make_unique<SeriesVersions>(std::move(git), series::Rules());
}

TEST_CASE("a delta of another series names the path where git holds its parent, else the parent's id") {
  auto git = std::make_unique<FakeGit>();
  git->CommitOnHead({{"base/model.bin", Text("parent")}});
  git->CommitOnHead({{"tuned/model.bin", Text("child")}});  // the parent's path is in history only
  auto series = SeriesOf(std::move(git));
  CHECK(ParentNote(*series, container::BaseChoice::kSeries, Id("parent")) == "");
  CHECK(ParentNote(*series, container::BaseChoice::kNamed, Id("parent")) ==
        "a delta of base/model.bin (" + store::BaseChoiceText(container::BaseChoice::kNamed) + ")");
  CHECK(ParentNote(*series, container::BaseChoice::kTwin, Id("elsewhere")) ==
        "a delta of " + Id("elsewhere").Hex() + " (" + store::BaseChoiceText(container::BaseChoice::kTwin) + ")");
}

TEST_CASE("the version before a step file: the greatest step below its own, from history, HEAD or the index") {
  auto git = std::make_unique<FakeGit>();
  git->CommitOnHead({{"run/step-50.bin", Text("s50")}});
  git->CommitOnHead({{"run/step-100.bin", Text("s100")}, {"run/step-900.bin", Text("s900")}});
  git->SetIndex(
      {{"run/step-100.bin", Text("s100")}, {"run/step-900.bin", Text("s900")}, {"run/step-300.bin", Text("s300")}});
  auto series = SeriesOf(std::move(git));
  auto before_500 = PreviousInSeries(*series, "run/step-500.bin");
  REQUIRE(before_500.ok());
  REQUIRE(before_500->has_value());
  CHECK((*before_500)->id == Id("s300"));
  auto before_100 = PreviousInSeries(*series, "run/step-100.bin");
  REQUIRE(before_100.ok());
  CHECK((*before_100)->path == "run/step-50.bin");  // from history, and not itself
  auto first = PreviousInSeries(*series, "run/step-10.bin");
  REQUIRE(first.ok());
  CHECK(!first->has_value());
  auto no_step = PreviousInSeries(*series, "model.bin");
  REQUIRE(no_step.ok());
  CHECK(!no_step->has_value());
}

}  // namespace
}  // namespace zipnn::git
