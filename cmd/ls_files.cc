// git zipnn ls-files: the checkpoints git-zipnn stores at a revision.
#include <cstdio>
#include <memory>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/git/git.h"

namespace zipnn::cmd {

namespace {

Status RunLsFiles(const std::string& rev) {
  ASSIGN_OR_RETURN(store::Repository repo, OpenRepository());
  ASSIGN_OR_RETURN(std::string top, git::TopLevel());
  // "<mode> <type> <object> <size>\t<path>", NUL-terminated; pointers are
  // small blobs, so only those are read.
  ASSIGN_OR_RETURN(std::string tree, git::GitOutput({"ls-tree", "-r", "-z", "--long", rev}, top));
  uint64_t raw_total = 0, stored_total = 0;
  int count = 0;
  for (size_t at = 0; at < tree.size();) {
    size_t end = tree.find('\0', at);
    if (end == std::string::npos) end = tree.size();
    const std::string entry = tree.substr(at, end - at);
    at = end + 1;
    const size_t tab = entry.find('\t');
    unsigned long long size = 0;
    char type[16] = {};
    if (tab == std::string::npos || std::sscanf(entry.c_str(), "%*s %15s %*s %llu", type, &size) != 2 ||
        std::string(type) != "blob" || size > store::kMaxPointerBytes) {
      continue;
    }
    const std::string path = entry.substr(tab + 1);
    auto pointer = PointerAt(rev + ":" + path);
    if (!pointer.ok()) continue;
    auto info = store::Describe(repo, pointer->id);
    const std::string kind = !info.ok() ? "missing" : info->delta ? "delta" : "base";
    const uint64_t stored = info.ok() ? info->object_size : 0;
    std::printf("%.12s %-7s %-11s %10s -> %10s %8s  %s\n", pointer->id.Hex().c_str(), kind.c_str(),
                pointer->format.c_str(), HumanBytes(pointer->size).c_str(), HumanBytes(stored).c_str(),
                Percent(stored, pointer->size).c_str(), path.c_str());
    raw_total += pointer->size;
    stored_total += stored;
    ++count;
  }
  std::printf("%d checkpoints at %s: %s raw, %s stored (%s)\n", count, rev.c_str(), HumanBytes(raw_total).c_str(),
              HumanBytes(stored_total).c_str(), Percent(stored_total, raw_total).c_str());
  return OkStatus();
}

}  // namespace

Action SetupLsFiles(CLI::App& sub) {
  auto rev = std::make_shared<std::string>("HEAD");
  sub.add_option("rev", *rev, "Revision (default HEAD)");
  return [rev] { return RunLsFiles(*rev); };
}

}  // namespace zipnn::cmd
