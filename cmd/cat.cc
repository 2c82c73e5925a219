// git zipnn cat: one stored version of a checkpoint, or some of its
// tensors, written to a file or to standard output. Tensors are read by
// parts through the version's chain (access::Versions::OpenParts), so a
// tensor of a deep delta costs its own chunks, not the whole file; every
// part is checked against its raw checksums, the whole file against its
// id. Choosing and writing tensors is lib/formats/tensor_file.h's.
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/access/versions.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/formats/detect.h"
#include "lib/formats/tensor_file.h"

namespace zipnn::cmd {

namespace {

struct CatArgs {
  std::string spec;
  std::vector<std::string> tensors;
  std::string output;
  std::string format;  // raw, npy, safetensors; empty: by -o's name, else raw
  bool list = false;
  bool json = false;
  bool force = false;
  bool approximate = false;
  int threads = 0;
};

using OutputFormat = formats::TensorFile;

Result<OutputFormat> FormatOf(const CatArgs& a) {
  if (a.format == "raw") return OutputFormat::kRaw;
  if (a.format == "npy") return OutputFormat::kNpy;
  if (a.format == "safetensors") return OutputFormat::kSafetensors;
  if (!a.format.empty()) return InvalidArgument("--format must be raw, npy or safetensors, not '" + a.format + "'");
  if (EndsWith(a.output, ".npy")) return OutputFormat::kNpy;
  if (EndsWith(a.output, ".safetensors")) return OutputFormat::kSafetensors;
  // Tensors under a torch.save name would be raw bytes that torch.load
  // cannot read.
  for (const char* torch : {".pt", ".pth", ".ckpt"}) {
    if (!a.tensors.empty() && EndsWith(a.output, torch)) {
      return InvalidArgument("cat writes tensors as raw bytes, npy or safetensors, not as a torch.save file: name " +
                             a.output + " .safetensors or .npy, or give --format raw for the bare bytes");
    }
  }
  return OutputFormat::kRaw;
}

void PrintList(const formats::FileLayout& layout, const std::vector<formats::Tensor>& tensors,
               const store::Pointer& pointer, const std::string& spec, bool json) {
  if (json) {
    nlohmann::ordered_json doc = {{"spec", spec},
                                  {"id", pointer.id.Hex()},
                                  {"size", pointer.size},
                                  {"format", formats::FormatName(layout.format)},
                                  {"tensors", nlohmann::ordered_json::array()}};
    for (const formats::Tensor& t : tensors) {
      nlohmann::ordered_json entry = {{"name", t.name},
                                      {"dtype", std::string(codec::DTypeName(t.dtype))},
                                      {"shape", t.shape},
                                      {"offset", t.offset},
                                      {"bytes", formats::DataBytes(t)}};
      if (t.strided) {
        // Elements out of order in a shared storage: `offset` is the
        // first's, `strides` say where the others lie.
        entry["strided"] = true;
        entry["strides"] = t.strides;
      }
      doc["tensors"].push_back(entry);
    }
    // A name that is not UTF-8 (a pickle may hold any bytes) prints with
    // replacement characters rather than as invalid JSON.
    std::printf("%s\n", doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    return;
  }
  PrintTensorTable(tensors);
}

// An -o file there already, without --force: refused before anything is
// read (or fetched).
Status RefuseExisting(const CatArgs& a) {
  struct stat st;
  if (!a.output.empty() && !a.force && ::stat(a.output.c_str(), &st) == 0) {
    return InvalidArgument(a.output + " exists; cat does not write over it (pass --force to replace it)");
  }
  return OkStatus();
}

// Where the bytes go: -o's file (whole or not at all), or standard output
// unless that is a terminal.
Status WithOutput(const CatArgs& a, const std::function<Status(ByteSink&)>& write) {
  if (a.output.empty()) {
    if (::isatty(STDOUT_FILENO)) {
      return InvalidArgument("not writing checkpoint bytes to a terminal: give -o FILE, or pipe the output");
    }
    StdoutSink out;
    return write(out);
  }
  ZIPNN_RETURN_IF_ERROR(RefuseExisting(a));  // again: it may have appeared since
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(a.output, /*overwrite=*/true));
  ZIPNN_RETURN_IF_ERROR(write(out));
  return out.Commit();
}

Status RunCat(const CatArgs& a) {
  ZIPNN_ASSIGN_OR_RETURN(const OutputFormat format, FormatOf(a));
  if (!a.list) ZIPNN_RETURN_IF_ERROR(RefuseExisting(a));
  ops::Context context(ops::Context::Options{a.threads});
  ZIPNN_ASSIGN_OR_RETURN(store::Store * opened, context.Store());
  store::Store& store = *opened;
  if (a.approximate) ZIPNN_RETURN_IF_ERROR(ops::RefuseTrackedOutput(a.output));
  ZIPNN_ASSIGN_OR_RETURN(const store::Pointer pointer, ops::PointerAt(ops::GitSpec(a.spec)));

  access::Options options;
  options.approximate = a.approximate;
  const access::Versions versions(store, options);
  // Said once the bytes are read: a clone learns of a retention on the
  // remote as it reads.
  auto say = [&](Status st) {
    if (st.ok() && a.approximate) st = SayIfApproximate(versions, pointer, a.spec);
    return st;
  };
  // The whole file, as stored: one restore, checked against the id.
  if (!a.list && a.tensors.empty() && format == OutputFormat::kRaw) {
    return say(WithOutput(a, [&](ByteSink& out) { return versions.Write(pointer, a.spec, out); }));
  }
  ZIPNN_ASSIGN_OR_RETURN(const access::Parts version, versions.OpenParts(pointer, a.spec));
  ZIPNN_ASSIGN_OR_RETURN(formats::FileLayout layout, formats::ReadLayout(version.source(), formats::kAutoFormat));
  if (layout.format == formats::Format::kRaw) {
    std::string why = layout.warnings.empty() ? "" : " (" + layout.warnings.front() + ")";
    return InvalidArgument(a.spec + " is not a safetensors or torch.save checkpoint git-zipnn can read tensors of" +
                           why + "; `git zipnn cat " + a.spec + " -o FILE` writes it whole");
  }
  for (const std::string& warning : layout.warnings)
    std::fprintf(stderr, "warning: %s: %s\n", a.spec.c_str(), warning.c_str());
  Result<std::vector<formats::Tensor>> selected = formats::SelectTensors(TensorsOf(layout), a.tensors, a.spec);
  if (!selected.ok()) {
    return WithHint(selected.status(), "; `git zipnn cat --list " + a.spec + "` lists them");
  }
  const std::vector<formats::Tensor>& tensors = *selected;
  if (a.list) {
    PrintList(layout, tensors, pointer, a.spec, a.json);
    return say(OkStatus());
  }

  if (format == OutputFormat::kNpy && tensors.size() != 1) {
    return InvalidArgument("a .npy file holds one tensor, and " + std::to_string(tensors.size()) +
                           " are chosen: name one with --tensor, or write safetensors");
  }
  return say(
      WithOutput(a, [&](ByteSink& out) { return formats::WriteTensors(version.source(), tensors, format, out); }));
}

}  // namespace

Action SetupCat(CLI::App& sub) {
  auto a = std::make_shared<CatArgs>();
  sub.add_option("spec", a->spec,
                 "<rev>:<path> as git names a file at a revision (path from the top, or ./path), or a path "
                 "(HEAD's version, from the current folder)")
      ->required();
  sub.add_option("-t,--tensor", a->tensors, "A tensor to write, by name or glob (repeat for more); default: all")
      ->allow_extra_args(false);
  sub.add_option("-o,--output", a->output, "Write here instead of to standard output");
  sub.add_option("--format", a->format,
                 "raw (the bytes; without --tensor the whole file), npy (one tensor) or safetensors; default: "
                 "by -o's extension, else raw");
  sub.add_flag("-l,--list", a->list, "List the tensors (name, dtype, shape, bytes) instead of writing them");
  sub.add_flag("--json", a->json, "With --list: print JSON");
  sub.add_flag("-f,--force", a->force, "Write over an existing -o file");
  sub.add_flag("--approximate", a->approximate,
               "For a version retention thinned: write its approximate values (the error bound is printed)");
  AddThreadsOption(sub, a->threads);
  return [a] { return RunCat(*a); };
}

}  // namespace zipnn::cmd
