// git zipnn log: how each version of tracked checkpoints is stored.
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/git/git.h"

namespace zipnn::cmd {

namespace {

struct LogArgs {
  std::vector<std::string> paths;
  bool json = false;
};

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(part);
  return parts;
}

std::string JsonString(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char u[8];
      std::snprintf(u, sizeof u, "\\u%04x", c);
      r += u;
      continue;
    }
    r += c;
  }
  return r + "\"";
}

Status RunLog(const LogArgs& a) {
  ASSIGN_OR_RETURN(store::Repository repo, OpenRepository());
  std::vector<std::string> paths;
  if (a.paths.empty()) {
    ASSIGN_OR_RETURN(paths, TrackedPaths());
  } else {
    for (const std::string& p : a.paths) {
      ASSIGN_OR_RETURN(std::string full, git::GitOutput({"ls-files", "--full-name", "--error-unmatch", "--", p}));
      paths.push_back(Split(full, '\n').at(0));
    }
  }
  ASSIGN_OR_RETURN(std::string top, git::TopLevel());
  bool first_json = true;
  if (a.json) std::printf("[");
  for (const std::string& path : paths) {
    ASSIGN_OR_RETURN(std::string history,
                     git::GitOutput({"log", "--format=%H%x1f%aI%x1f%s", "--", path}, top));
    uint64_t raw_total = 0, stored_total = 0;
    std::set<std::string> counted;
    if (!a.json) std::printf("%s\n", path.c_str());
    for (const std::string& line : Split(history, '\n')) {
      const std::vector<std::string> f = Split(line, '\x1f');
      if (f.size() < 3) continue;
      // Skipped: deleted in this commit, or not stored by git-zipnn here.
      auto pointer = PointerAt(f[0] + ":" + path);
      if (!pointer.ok()) continue;
      auto info = store::Describe(repo, pointer->id);
      const std::string kind = !info.ok() ? "missing" : info->delta ? "delta" : "base";
      const uint64_t stored = info.ok() ? info->object_size : 0;
      if (counted.insert(pointer->id.Hex()).second) {
        raw_total += pointer->size;
        stored_total += stored;
      }
      if (a.json) {
        std::printf("%s{\"path\":%s,\"commit\":\"%s\",\"date\":%s,\"subject\":%s,\"id\":\"%s\",\"kind\":\"%s\","
                    "\"base\":%s,\"depth\":%d,\"raw_bytes\":%llu,\"stored_bytes\":%llu}",
                    first_json ? "" : ",", JsonString(path).c_str(), f[0].c_str(), JsonString(f[1]).c_str(),
                    JsonString(f[2]).c_str(), pointer->id.Hex().c_str(), kind.c_str(),
                    info.ok() && info->delta ? ("\"" + info->base.Hex() + "\"").c_str() : "null",
                    info.ok() ? info->depth : -1, static_cast<unsigned long long>(pointer->size),
                    static_cast<unsigned long long>(stored));
        first_json = false;
      } else {
        std::printf("  %.10s %.10s  %-5s depth %-3d %10s -> %10s %8s  %s\n", f[0].c_str(), f[1].c_str(),
                    kind.c_str(), info.ok() ? info->depth : -1, HumanBytes(pointer->size).c_str(),
                    HumanBytes(stored).c_str(), Percent(stored, pointer->size).c_str(), f[2].c_str());
      }
    }
    if (!a.json) {
      std::printf("  total: %s raw in %zu version%s -> %s stored (%s)\n", HumanBytes(raw_total).c_str(),
                  counted.size(), counted.size() == 1 ? "" : "s", HumanBytes(stored_total).c_str(),
                  Percent(stored_total, raw_total).c_str());
    }
  }
  if (a.json) std::printf("]\n");
  return OkStatus();
}

}  // namespace

Action SetupLog(CLI::App& sub) {
  auto a = std::make_shared<LogArgs>();
  sub.add_option("paths", a->paths, "Tracked checkpoints (default: every one in the index)");
  sub.add_flag("--json", a->json, "One JSON array of versions instead of the table");
  return [a] { return RunLog(*a); };
}

}  // namespace zipnn::cmd
