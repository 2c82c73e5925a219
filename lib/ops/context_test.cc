// ops::Context against scratch folders: a git repository the git binary
// makes, and a folder that is none.
#include "lib/ops/context.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "lib/ops/in_folder.h"

namespace zipnn::ops {
namespace {

TEST_CASE("the store opens once, and .zipnn.yaml's mistakes are said once") {
  InFolder here(/*repository=*/true);
  std::ofstream(here.root() + "/.zipnn.yaml") << "base_interval: banana\n";
  Context context(Context::Options{3, /*print_warnings=*/false});
  Result<store::Store*> first = context.Store();
  REQUIRE(first.ok());
  const size_t warnings = context.warnings().size();
  CHECK(warnings >= 1);
  Result<store::Store*> second = context.Store();
  REQUIRE(second.ok());
  CHECK(*first == *second);
  CHECK(context.warnings().size() == warnings);
  CHECK((*first)->policy.threads == 3);  // the command's --threads
}

TEST_CASE("outside a repository every ask fails, and fails again the same way") {
  InFolder here(/*repository=*/false);
  Context context;
  Result<store::Store*> first = context.Store();
  REQUIRE(!first.ok());
  Result<store::Store*> second = context.Store();
  REQUIRE(!second.ok());
  CHECK(first.status().message() == second.status().message());
  CHECK(!context.Git().ok());
  CHECK(!context.Series().ok());
}

}  // namespace
}  // namespace zipnn::ops
