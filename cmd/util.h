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

#include "lib/base/io.h"
#include "lib/base/progress.h"  // HumanBytes, Percent
#include "lib/base/status.h"
#include "lib/formats/checkpoint.h"
#include "lib/git/pointers.h"
#include "lib/remote/transfer.h"
#include "lib/store/restore.h"
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

// The checkpoint in `file`: the file itself, or the version it names when
// it holds a git-zipnn pointer (as the files git hands to diff drivers
// may), restored from the repository around the current folder.
Result<formats::Checkpoint> CheckpointInFile(const std::string& file);

// `checkpoint` with its layout read.
Result<formats::Checkpoint> WithLayout(Result<formats::Checkpoint> checkpoint);

// Warns on stderr about each damaged pointer `found` holds (they are
// skipped).
void WarnDamaged(const FoundPointers& found);

// The line push and fetch end with, on stderr, unless `quiet`.
void PrintTransfer(bool push, const remote::Transferred& done, bool quiet);

// inspect's report on one object file: header, layout, coders (also the
// second half of `show`).
Status PrintObjectReport(const std::string& path);

// "<rev>:<path>" as git spells it (the path from the top of the work
// tree, or from the current folder with "./"); a bare path is HEAD's
// version of that file, from the current folder (cat, show).
std::string GitSpec(const std::string& spec);

// A version to read by parts (cat, show): through its chain, or, for an
// object older than format 5 (no raw checksums), restored whole and
// checked into a scratch file. Objects missing here are fetched from the
// default remote; `name` is what messages call the version.
struct OpenedVersion {
  std::unique_ptr<store::VersionReader> parts;
  std::optional<formats::Checkpoint> whole;
  const ByteSource& source() const {
    return parts ? static_cast<const ByteSource&>(*parts) : static_cast<const ByteSource&>(whole->file());
  }
};
Result<OpenedVersion> OpenForParts(const store::Store& repo, const store::Pointer& pointer, const std::string& name);

// What a user calls a file's tensors: for torch.save files each tensor
// the pickle builds (its storages hold them), else the layout's tensors.
const std::vector<formats::Tensor>& TensorsOf(const formats::FileLayout& layout);

// A table of tensors (name, dtype, shape, bytes) and a count, as
// `cat --list` and `show --tensors` print it; a strided view (a torch.save
// view cat cannot write) shows "strided" for its bytes.
void PrintTensorTable(const std::vector<formats::Tensor>& tensors);

}  // namespace zipnn::cmd
