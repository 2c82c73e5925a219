// What the commands share: opening the repository (and saying what is
// wrong with its .zipnn.yaml), reading checkpoints for analyze and diff,
// output for push and fetch, a sink for standard output, and the common
// --threads option. The logic lives in lib/; this is glue and printing.
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
#include "lib/git/git.h"
#include "lib/git/pointers.h"
#include "lib/remote/transfer.h"
#include "lib/store/chain.h"
#include "lib/store/restore.h"
#include "lib/store/retention.h"
#include "lib/store/store.h"

namespace zipnn::cmd {

// Where pointers are found (lib/git/pointers.h), as the commands name them.
using git::FoundPointers;
using git::Place;

inline constexpr char kObjectSuffix[] = ".zipnn";

// Writes to file descriptor 1.
class StdoutSink : public ByteSink {
 public:
  Status Append(const void* data, size_t n) override;
};

void AddThreadsOption(CLI::App& sub, int& threads);

// git::OpenStoreRepository, with a warning on stderr for each mistake in
// .zipnn.yaml (its key keeps the default).
Result<store::Store> OpenRepository();
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

// How the store holds version `id`, for log and ls-files: its object's
// StoredInfo (for a version retention thinned, its approximate
// version's; for one it dropped, NotFound) and a word for it: "base",
// "delta", "thin", "drop", "missing" (its object, or a base of its chain,
// is not here) or "unreadable" (damaged, or of a newer format).
struct HeldVersion {
  Result<store::StoredInfo> info;
  std::string kind;
  std::optional<store::Retained> retained;
};
HeldVersion DescribeHeld(const store::Store& repo, const ContentId& id);

// For a reader given --approximate: InvalidArgument when `output` is a
// file git tracks here (however it is spelled), which approximate bytes
// must never replace.
Status RefuseTrackedOutput(const std::string& output);
// For a reader given --approximate: when `pointer`'s version is one
// retention thinned (and no exact copy is here), says on stderr that the
// bytes are approximate and how far off.
Status SayIfApproximate(const access::Versions& versions, const store::Pointer& pointer, const std::string& name);
Result<store::Store> OpenRepository(const git::Folders& folders, const git::ConfigSnapshot& config);

// The checkpoint in `file`: the file itself, or the version it names when
// it holds a git-zipnn pointer (as the files git hands to diff drivers
// may), read from the repository around the current folder
// (access::Versions, fetching what is missing).
Result<formats::Checkpoint> CheckpointInFile(const std::string& file);

// `checkpoint` with its layout read.
Result<formats::Checkpoint> WithLayout(Result<formats::Checkpoint> checkpoint);

// Warns on stderr about each damaged pointer `found` holds (they are
// skipped).
void WarnDamaged(const FoundPointers& found);

// Path patterns as Git LFS takes them (--include, --exclude): several to
// a word, comma-separated ("*.pt, *.bin"), the spaces around a comma no
// part of a pattern.
std::vector<std::string> PatternList(const std::vector<std::string>& given);

// The line push and fetch end with, on stderr, unless `quiet`.
void PrintTransfer(bool push, const remote::Transferred& done, bool quiet);

// inspect's report on one object file: header, layout, coders (also the
// second half of `show`).
Status PrintObjectReport(const std::string& path);

// "<rev>:<path>" as git spells it (the path from the top of the work
// tree, or from the current folder with "./"); a bare path is HEAD's
// version of that file, from the current folder (cat, show).
std::string GitSpec(const std::string& spec);

// What a user calls a file's tensors: for torch.save files each tensor
// the pickle builds (its storages hold them), else the layout's tensors.
const std::vector<formats::Tensor>& TensorsOf(const formats::FileLayout& layout);

// A table of tensors (name, dtype, shape, bytes) and a count, as
// `cat --list` and `show --tensors` print it; a strided view (a torch.save
// view cat cannot write) shows "strided" for its bytes.
void PrintTensorTable(const std::vector<formats::Tensor>& tensors);

}  // namespace zipnn::cmd
