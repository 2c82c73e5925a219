// What the commands share: output for push and fetch, a sink for standard
// output, tables of tensors, and the common --threads and --remote
// options. What a command opens comes from its ops::Context, and the
// logic lives in lib/ops and below; this is glue and printing.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/access/versions.h"
#include "lib/base/io.h"
#include "lib/base/progress.h"  // HumanBytes, Percent
#include "lib/base/status.h"
#include "lib/formats/checkpoint.h"
#include "lib/ops/context.h"
#include "lib/ops/fetch.h"
#include "lib/ops/held.h"
#include "lib/ops/workspace.h"
#include "lib/remote/transfer.h"
#include "lib/store/chain.h"
#include "lib/store/restore.h"
#include "lib/store/retention.h"
#include "lib/store/store.h"

namespace zipnn::cmd {

// Where pointers are found (lib/git/pointers.h, through lib/ops), as the
// commands name them.
using git::FoundPointers;
using git::Place;
using ops::PatternList;

inline constexpr char kObjectSuffix[] = ".zipnn";

// Writes to file descriptor 1.
class StdoutSink : public ByteSink {
 public:
  Status Append(const void* data, size_t n) override;
};

void AddThreadsOption(CLI::App& sub, int& threads);

// A path as the shell reads it back, for a command a message suggests:
// quoted when it holds anything but letters, digits and "/._-".
std::string ForShell(const std::string& path);

// A `--remote [NAME]` option (fsck, retain): after parsing, `value()`
// is nullopt when it was not given, "" for the default remote, else the
// name.
class RemoteOption {
 public:
  RemoteOption(CLI::App& sub, const std::string& help)
      : option_(sub.add_option("--remote", help)->expected(0, 1)) {}
  std::optional<std::string> value() const {
    if (option_->count() == 0) return std::nullopt;
    return option_->results().empty() ? "" : option_->results()[0];
  }

 private:
  CLI::Option* option_;
};

// For a reader given --approximate: when `pointer`'s version is one
// retention thinned (and no exact copy is here), says on stderr that the
// bytes are approximate and how far off (ops::ApproximateNote).
Status SayIfApproximate(const access::Versions& versions, const store::Pointer& pointer, const std::string& name);

// Warns on stderr about each damaged pointer `found` holds (they are
// skipped).
void WarnDamaged(const FoundPointers& found);

// The line push and fetch end with, on stderr, unless `quiet`.
void PrintTransfer(bool push, const remote::Transferred& done, bool quiet);

// inspect's report on one object file: header, layout, coders (also the
// second half of `show`).
Status PrintObjectReport(const std::string& path);

// What a user calls a file's tensors: for torch.save files each tensor
// the pickle builds (its storages hold them), else the layout's tensors.
const std::vector<formats::Tensor>& TensorsOf(const formats::FileLayout& layout);

// A table of tensors (name, dtype, shape, bytes) and a count, as
// `cat --list` and `show --tensors` print it; a strided view (a torch.save
// view cat cannot write) shows "strided" for its bytes.
void PrintTensorTable(const std::vector<formats::Tensor>& tensors);

}  // namespace zipnn::cmd
