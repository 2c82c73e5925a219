// git zipnn env: what git-zipnn works with here, as `git lfs env` says it
// for Git LFS: versions, the repository and its store, whether the filter
// and hook are installed, the tracked patterns, the remotes and which one
// is the default, the policy in force (with any mistake in .zipnn.yaml)
// and the raw cache. Reads only: it never reaches a remote. Outside a
// repository it says what it can.
#include <cstdio>
#include <fstream>
#include <memory>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/file.h"
#include "lib/base/redact.h"
#include "lib/base/strings.h"
#include "lib/base/version.h"
#include "lib/config/policy.h"
#include "lib/container/format.h"
#include "lib/ops/context.h"
#include "lib/ops/setup.h"
#include "lib/ops/workspace.h"
#include "lib/remote/select.h"

namespace zipnn::cmd {

namespace {

// A value, or `fallback` when it could not be read.
template <typename T>
T Or(Result<T> read, T fallback) {
  return read.ok() ? std::move(*read) : std::move(fallback);
}

// A config value, or nothing when unset or unreadable.
std::optional<std::string> Config(const std::string& key) { return Or(ops::ConfigGet(key), std::optional<std::string>()); }

// Every line goes through RedactSecrets: a remote's URL or endpoint may
// carry a token, and env is what people paste into bug reports.
void Line(const char* what, const std::string& value) { std::printf("%-15s %s\n", what, RedactSecrets(value).c_str()); }

// "base every 7, deltas against the previous version, the newest whole,
// chains of at most 3, a delta kept when it saves 10%".
std::string PolicyText(const config::Policy& p) {
  std::string text = "base every " + std::to_string(p.base_interval) + ", deltas against the " +
                     (p.delta_against == config::DeltaAgainst::kBase ? "last base" : "previous version") + ", the newest " +
                     (p.newest == config::Newest::kWhole ? "whole" : "a delta") + ", chains of at most " +
                     std::to_string(p.max_chain) + ", a delta kept when it saves " +
                     std::to_string(static_cast<int>(p.min_gain * 100 + 0.5)) + "%";
  text += "; chunks of " + HumanBytes(p.chunk_size) + ", zstd level " + std::to_string(p.zstd_level) + ", " +
          (p.threads > 0 ? std::to_string(p.threads) + " threads" : "every core");
  return text;
}

// Where `key` is set, for the filter's line: "--local", "--global", ...
std::string ScopeOf(const std::string& key) {
  for (const char* scope : {"--local", "--global", "--system"}) {
    if (Or(ops::ConfigGetAt(scope, key), std::optional<std::string>())) return std::string(scope).substr(2);
  }
  return "";
}

Status RunEnv() {
  std::printf("git-zipnn %s (object format %u)\n", kVersion, static_cast<unsigned>(container::kFormatVersion));
  Line("git", Or(ops::GitVersion(), std::string("not found on PATH")));
  const bool lfs = Config("filter.lfs.process").has_value();
  Line("Git LFS", lfs ? "its filter is installed (filter.lfs.process)" : "its filter is not installed");
  const std::string scope = ScopeOf("filter.zipnn.process");
  Line("filter", scope.empty() ? "not installed: `git zipnn install` (or --local) sets it"
                               : "installed (" + scope + ": filter.zipnn.process = " +
                                     Config("filter.zipnn.process").value_or("") + ")");
  Result<ops::Folders> folders = ops::RepositoryFolders();
  if (!folders.ok()) {
    Line("repository", "none here (" + folders.status().message() + ")");
    return OkStatus();
  }
  Line("repository", (folders->top ? *folders->top : std::string("bare")) + " (git folder " + folders->git_dir + ")");
  // The hook `name`: whether it runs git-zipnn, and that in words.
  struct HookState {
    bool ours;
    std::string words;
  };
  auto hook_state = [&](const std::string& name) -> HookState {
    const std::string hook = folders->hooks + "/" + name;
    if (!FileExists(hook)) return {false, "none (install writes one)"};
    std::ifstream hook_file(hook);
    std::string hook_text((std::istreambuf_iterator<char>(hook_file)), std::istreambuf_iterator<char>());
    const bool ours = hook_text.find("git-zipnn") != std::string::npos;
    return {ours, hook + (ours ? " (runs git-zipnn)" : " (not git-zipnn's)")};
  };
  Line("pre-push hook", hook_state("pre-push").words);
  Line("pre-commit hook", hook_state("pre-commit").words);
  const HookState after_checkout = hook_state("post-checkout"), after_merge = hook_state("post-merge");
  const std::optional<std::string> set = Config("zipnn.checkoutoutsideabove");
  const std::string limit = set ? *set + " (zipnn.checkoutOutsideAbove)" : "1g (zipnn.checkoutOutsideAbove's default)";
  Line("large files", after_checkout.ours && after_merge.ours
                          ? "checkpoints over " + limit +
                                " are written after git's checkout (post-checkout and post-merge run git-zipnn)"
                          : "through git's filter, whatever their size (post-checkout: " + after_checkout.words +
                                "; post-merge: " + after_merge.words + ")");
  Result<std::vector<std::string>> tracked = ops::TrackedPatterns();
  if (tracked.ok()) {
    std::string list;
    for (const std::string& p : *tracked) list += (list.empty() ? "" : " ") + p;
    Line("tracked", list.empty() ? "nothing yet (`git zipnn track '*.safetensors'`)" : list + " (.gitattributes)");
  }
  // The store's warnings are lines of env's own, not said on stderr.
  ops::Context context(ops::Context::Options{0, /*print_warnings=*/false});
  ZIPNN_ASSIGN_OR_RETURN(store::Store * opened, context.Store());
  const store::Store& store = *opened;
  const auto storepath = Config("zipnn.storepath");
  Line("object store", store.objects.root() + (storepath ? " (zipnn.storepath)" : " (the default)"));
  Line("raw cache", store.cache_dir + ", budget " + HumanBytes(store.policy.raw_cache));
  Line("scratch", store.temp_dir);
  const bool has_yaml = folders->top && FileExists(*folders->top + "/.zipnn.yaml");
  Line("policy", PolicyText(store.policy) + (has_yaml ? " (.zipnn.yaml)" : " (the defaults: no .zipnn.yaml)"));
  for (const std::string& warning : context.warnings()) Line("", "warning: " + warning);
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> remotes, ops::Remotes());
  const Result<remote::RemoteSettings> settings = remote::RemoteSettings::Read();
  const std::string chosen = settings.ok() ? Or(remote::DefaultRemote(*settings), std::string()) : "";
  if (remotes.empty()) Line("remotes", "none (`git remote add origin <url>`)");
  for (size_t i = 0; i < remotes.size(); ++i) {
    const Result<std::string> described =
        settings.ok() ? remote::DescribeStore(*settings, remotes[i]) : Result<std::string>(settings.status());
    Line(i == 0 ? "remotes" : "",
         remotes[i] + (remotes[i] == chosen ? " (the default)" : "") + ": " +
             (described.ok() ? *described : "cannot tell (" + described.status().message() + ")"));
  }
  return OkStatus();
}

}  // namespace

Action SetupEnv(CLI::App&) {
  return [] { return RunEnv(); };
}

}  // namespace zipnn::cmd
