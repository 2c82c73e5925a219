#include "cmd/util.h"

#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/access/versions.h"
#include "lib/git/discover.h"

namespace zipnn::cmd {

Status StdoutSink::Append(const void* data, size_t n) { return WriteAll(1, data, n, "standard output"); }

void AddThreadsOption(CLI::App& sub, int& threads) {
  sub.add_option("--threads,-T", threads, "Worker threads (default: all cores; output is identical for any count)")
      ->check(CLI::Range(0, 4096));
}

namespace {

store::Store Warned(git::OpenedRepository opened) {
  for (const std::string& warning : opened.warnings) {
    std::fprintf(stderr, "git-zipnn: warning: %s\n", warning.c_str());
  }
  return std::move(opened.repo);
}

}  // namespace

Result<store::Store> OpenRepository() {
  ZIPNN_ASSIGN_OR_RETURN(git::OpenedRepository opened, git::OpenStoreRepository());
  return Warned(std::move(opened));
}

Result<store::Store> OpenRepository(const git::Folders& folders, const git::ConfigSnapshot& config) {
  ZIPNN_ASSIGN_OR_RETURN(git::OpenedRepository opened, git::OpenStoreRepository(folders, config));
  return Warned(std::move(opened));
}

Result<formats::Checkpoint> CheckpointInFile(const std::string& file) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<store::Pointer> pointer, store::PointerInFile(file));
  if (!pointer) return formats::Checkpoint::Open(file);
  ZIPNN_ASSIGN_OR_RETURN(store::Store repo, OpenRepository());
  return access::Versions(repo, access::Copies::kAll).Open(*pointer, file);
}

Result<formats::Checkpoint> WithLayout(Result<formats::Checkpoint> checkpoint) {
  if (checkpoint.ok()) ZIPNN_RETURN_IF_ERROR(checkpoint->ReadLayout());
  return checkpoint;
}

std::vector<std::string> PatternList(const std::vector<std::string>& given) {
  std::vector<std::string> patterns;
  for (const std::string& g : given) {
    for (size_t at = 0; at <= g.size();) {
      size_t end = g.find(',', at);
      if (end == std::string::npos) end = g.size();
      // "*.pt, *.bin": the spaces around a comma are no part of a pattern.
      size_t from = at, to = end;
      while (from < to && g[from] == ' ') ++from;
      while (to > from && g[to - 1] == ' ') --to;
      if (to > from) patterns.push_back(g.substr(from, to - from));
      at = end + 1;
    }
  }
  return patterns;
}

void WarnDamaged(const FoundPointers& found) {
  for (const auto& [place, why] : found.damaged) {
    std::fprintf(stderr, "warning: %s:%s: %s\n", place.rev.c_str(), place.path.c_str(), why.c_str());
  }
}

void PrintTransfer(bool push, const remote::Transferred& done, bool quiet) {
  const remote::TransferReport& r = done.report;
  // A warning even when quiet: the remote holds more than it needs to.
  if (!r.demote_error.empty()) {
    std::fprintf(stderr,
                 "git-zipnn: warning: older versions stay whole on %s, not re-stored as deltas of newer ones (%s)\n",
                 done.where.c_str(), r.demote_error.c_str());
  }
  if (!done.listings.ok()) {
    std::fprintf(stderr, "git-zipnn: warning: the tensor listings did not %s %s (%s); `git log -p` %s\n",
                 push ? "go to" : "come from", done.where.c_str(), done.listings.message().c_str(),
                 push ? "in other clones restores each version it shows" : "here restores each version it shows");
  }
  if (quiet) return;
  std::fprintf(stderr, "git-zipnn: %s %zu object%s (%s) %s %s; %zu of %zu were %s already\n",
               push ? "pushed" : "fetched", r.moved, r.moved == 1 ? "" : "s", HumanBytes(r.bytes).c_str(),
               push ? "to" : "from", done.where.c_str(), r.present, r.needed, push ? "there" : "here");
  if (r.demoted > 0) {
    std::fprintf(stderr, "git-zipnn: re-stored %zu older version%s there as %s, saving %s\n", r.demoted,
                 r.demoted == 1 ? "" : "s", r.demoted == 1 ? "a delta of a newer one" : "deltas of newer ones",
                 HumanBytes(r.demoted_saved).c_str());
  }
}

namespace {

std::string ShapeText(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

void PrintTensorTable(const std::vector<formats::Tensor>& tensors) {
  size_t name_width = 4, shape_width = 5;
  for (const formats::Tensor& t : tensors) {
    name_width = std::max(name_width, t.name.size());
    shape_width = std::max(shape_width, ShapeText(t.shape).size());
  }
  std::printf("%-*s  %-7s  %-*s  %12s\n", static_cast<int>(name_width), "name", "dtype", static_cast<int>(shape_width),
              "shape", "bytes");
  uint64_t bytes = 0;
  size_t strided = 0;
  for (const formats::Tensor& t : tensors) {
    std::printf("%-*s  %-7s  %-*s  %12llu%s\n", static_cast<int>(name_width), t.name.c_str(),
                std::string(codec::DTypeName(t.dtype)).c_str(), static_cast<int>(shape_width),
                ShapeText(t.shape).c_str(), static_cast<unsigned long long>(formats::DataBytes(t)),
                t.strided ? "  strided" : "");
    bytes += formats::DataBytes(t);
    strided += t.strided ? 1 : 0;
  }
  std::printf("%s, %s", Counted(tensors.size(), "tensor").c_str(), HumanBytes(bytes).c_str());
  if (strided > 0) {
    std::printf(" (%s: elements out of order in a shared storage, gathered in order when written)",
                Counted(strided, "strided view").c_str());
  }
  std::printf("\n");
}

std::string GitSpec(const std::string& spec) { return spec.find(':') == std::string::npos ? "HEAD:./" + spec : spec; }

const std::vector<formats::Tensor>& TensorsOf(const formats::FileLayout& layout) {
  return layout.views.empty() ? layout.tensors : layout.views;
}

Status SayIfApproximate(const access::Versions& versions, const store::Pointer& pointer, const std::string& name) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<store::Retained> retained, versions.Retention(pointer.id));
  if (!retained || retained->dropped) return OkStatus();  // reading it says what became of it
  std::fprintf(stderr, "git-zipnn: %s: approximate bytes: version %s was %s\n", name.c_str(),
               pointer.id.Hex().substr(0, 12).c_str(), retained->Describe().c_str());
  return OkStatus();
}

HeldVersion DescribeHeld(const store::Store& repo, const ContentId& id) {
  HeldVersion held{store::Describe(repo, id), "", std::nullopt};
  if (!held.info.ok() && held.info.status().code() == StatusCode::kNotFound) {
    auto record = store::ReadRecord(repo.objects, id);
    if (record.ok() && *record) {
      held.retained = **record;
      if (!held.retained->dropped) held.info = store::Describe(repo, held.retained->approximate);
    }
  }
  held.kind = held.retained                                              ? (held.retained->dropped ? "drop" : "thin")
              : held.info.ok()                                           ? (held.info->delta ? "delta" : "base")
              : held.info.status().code() == StatusCode::kNotFound ? "missing"
                                                                         : "unreadable";
  return held;
}

Status RefuseTrackedOutput(const std::string& output) {
  if (output.empty() || output == "-") return OkStatus();
  // Spelled as git would not: "../repo/x", through a link to the folder.
  const size_t slash = output.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : output.substr(0, slash);
  char resolved[PATH_MAX];
  const std::string canonical = ::realpath(folder.c_str(), resolved) != nullptr
                                    ? std::string(resolved) + "/" + output.substr(slash + 1)
                                    : output;
  if (!git::TrackedPath(canonical).ok() && !git::TrackedPath(output).ok()) return OkStatus();
  return InvalidArgument(output + " is a file git tracks here: approximate bytes never take a committed file's place "
                                  "(a commit would store them as a new version); name a file git does not track");
}

}  // namespace zipnn::cmd
