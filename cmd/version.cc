// git zipnn version
#include <cstdio>

#include "cmd/command.h"
#include "lib/base/version.h"
#include "lib/container/format.h"

namespace zipnn::cmd {

Action SetupVersion(CLI::App&) {
  return [] {
    std::printf("git-zipnn %s\nobject format %u\n", kVersion, static_cast<unsigned>(container::kFormatVersion));
    return OkStatus();
  };
}

}  // namespace zipnn::cmd
