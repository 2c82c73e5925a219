#include "cmd/command.h"

namespace zipnn::cmd {

const std::vector<CommandSpec>& Commands() {
  static const std::vector<CommandSpec> kCommands = {
      {"compress", "Compress a checkpoint file into an object (standalone or a delta)", &SetupCompress},
      {"decompress", "Restore the exact original bytes of an object", &SetupDecompress},
      {"inspect", "Show an object's header, layout and the coders chosen per byte group", &SetupInspect},
      {"version", "Print the git-zipnn version and object format version", &SetupVersion},
  };
  return kCommands;
}

}  // namespace zipnn::cmd
