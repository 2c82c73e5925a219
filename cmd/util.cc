#include "cmd/util.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "lib/base/file.h"
#include "lib/base/strings.h"

namespace zipnn::cmd {

Status StdoutSink::Append(const void* data, size_t n) { return WriteAll(1, data, n, "standard output"); }

void AddThreadsOption(CLI::App& sub, int& threads) {
  sub.add_option("--threads,-T", threads, "Worker threads (default: all cores; output is identical for any count)")
      ->check(CLI::Range(0, 4096));
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
  // Of a transfer that an earlier, stopped one had begun: what moved now.
  std::string carried;
  if (r.carried > 0) {
    const std::string now = HumanBytes(r.bytes > r.carried ? r.bytes - r.carried : 0);
    carried = push ? "; the remote held " + HumanBytes(r.carried) + " of it already, " + now + " sent now"
                   : "; " + HumanBytes(r.carried) + " of it kept here by an earlier try, " + now + " fetched now";
  }
  std::fprintf(stderr, "git-zipnn: %s %zu object%s (%s%s) %s %s; %zu of %zu were %s already\n",
               push ? "pushed" : "fetched", r.moved, r.moved == 1 ? "" : "s", HumanBytes(r.bytes).c_str(),
               carried.c_str(), push ? "to" : "from", done.where.c_str(), r.present, r.needed, push ? "there" : "here");
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

const std::vector<formats::Tensor>& TensorsOf(const formats::FileLayout& layout) {
  return layout.views.empty() ? layout.tensors : layout.views;
}

Status SayIfApproximate(const access::Versions& versions, const store::Pointer& pointer, const std::string& name) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> note, ops::ApproximateNote(versions, pointer));
  if (note) std::fprintf(stderr, "git-zipnn: %s: approximate bytes: %s\n", name.c_str(), note->c_str());
  return OkStatus();
}

std::string ForShell(const std::string& path) {
  if (!path.empty() && path.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-") ==
                           std::string::npos) {
    return path;
  }
  std::string quoted = "'";
  for (char c : path) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace zipnn::cmd
