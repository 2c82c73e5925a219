// git zipnn cat: one stored version of a checkpoint, or some of its
// tensors, written to a file or to standard output. Tensors are read by
// parts through the version's chain (store::OpenVersion), so a tensor of a
// deep delta costs its own chunks, not the whole file; every part is
// checked against its raw checksums, the whole file against its id.
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/access/versions.h"
#include "lib/base/buffer.h"
#include "lib/base/closest.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/formats/detect.h"
#include "lib/formats/tensor_file.h"
#include "lib/git/checkpoint_at.h"

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
  int threads = 0;
};

enum class OutputFormat { kRaw, kNpy, kSafetensors };

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

// The tensors `patterns` name (each a name or a glob), in file order;
// every tensor when there are none. A pattern that names nothing is an
// error with the closest names.
Result<std::vector<formats::Tensor>> Select(const std::vector<formats::Tensor>& all,
                                            const std::vector<std::string>& patterns, const std::string& spec) {
  if (patterns.empty()) return all;
  std::vector<bool> chosen(all.size(), false);
  for (const std::string& pattern : patterns) {
    bool any = false;
    for (size_t i = 0; i < all.size(); ++i) {
      const std::string& name = all[i].name;
      if (name == pattern || ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0) chosen[i] = any = true;
    }
    if (any) continue;
    std::vector<std::string> names;
    for (const formats::Tensor& t : all) names.push_back(t.name);
    const std::vector<std::string> close = ClosestWords(pattern, names);
    const std::string hint = close.empty() ? "" : " (did you mean " + Alternatives(close, "'") + "?)";
    return NotFound("no tensor '" + pattern + "' in " + spec + hint + "; `git zipnn cat --list " + spec +
                    "` lists them");
  }
  std::vector<formats::Tensor> picked;
  for (size_t i = 0; i < all.size(); ++i) {
    if (chosen[i]) picked.push_back(all[i]);
  }
  return picked;
}

void PrintList(const formats::FileLayout& layout, const std::vector<formats::Tensor>& tensors, const store::Pointer& pointer,
               const std::string& spec, bool json) {
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

// Copies [offset, offset + length) of `from` to `out` in pieces, so that
// memory stays bounded whatever the tensor's size.
Status CopyRange(const ByteSource& from, uint64_t offset, uint64_t length, ByteSink& out) {
  constexpr uint64_t kPiece = 1u << 20;
  Buffer piece(static_cast<size_t>(std::min(length, kPiece)));
  while (length > 0) {
    const size_t n = static_cast<size_t>(std::min(length, kPiece));
    ZIPNN_RETURN_IF_ERROR(from.ReadAt(offset, piece.data(), n));
    ZIPNN_RETURN_IF_ERROR(out.Append(piece.data(), n));
    offset += n;
    length -= n;
  }
  return OkStatus();
}

// The largest span of storage a strided view may cover to be gathered:
// it is read whole.
constexpr uint64_t kMaxGatherBytes = 256u << 20;

// A strided view's elements, gathered in C order: the storage bytes it
// spans are read, then each element copied in turn.
Status Gather(const ByteSource& from, const formats::Tensor& t, ByteSink& out) {
  if (t.length > kMaxGatherBytes) {
    return Unsupported("'" + t.name + "' is a strided view spanning " + HumanBytes(t.length) +
                       " of its storage; cat gathers views of up to " + HumanBytes(kMaxGatherBytes));
  }
  Buffer span(static_cast<size_t>(t.length));
  ZIPNN_RETURN_IF_ERROR(from.ReadAt(t.offset, span.data(), span.size()));
  const size_t width = static_cast<size_t>(codec::DTypeWidth(t.dtype));
  const size_t dims = t.shape.size();
  std::vector<uint64_t> index(dims, 0);
  Buffer piece(1u << 20);
  size_t filled = 0;
  for (uint64_t n = formats::DataBytes(t) / width; n > 0; --n) {
    uint64_t at = 0;
    for (size_t d = 0; d < dims; ++d) at += index[d] * t.strides[d];
    std::memcpy(piece.data() + filled, span.data() + at * width, width);
    filled += width;
    if (filled + width > piece.size()) {
      ZIPNN_RETURN_IF_ERROR(out.Append(piece.data(), filled));
      filled = 0;
    }
    for (size_t d = dims; d-- > 0;) {  // the next index in C order
      if (++index[d] < t.shape[d]) break;
      index[d] = 0;
    }
  }
  return out.Append(piece.data(), filled);
}

// Writes the tensors in `format`: a head (npy, safetensors), then their
// bytes in order.
Status WriteTensors(const ByteSource& from, const std::vector<formats::Tensor>& tensors, OutputFormat format,
                    ByteSink& out) {
  // As written: every tensor's elements back to back.
  std::vector<formats::Tensor> written = tensors;
  for (formats::Tensor& t : written) t.length = formats::DataBytes(t);
  std::string head;
  if (format == OutputFormat::kNpy) {
    if (tensors.size() != 1) {
      return InvalidArgument("a .npy file holds one tensor, and " + std::to_string(tensors.size()) +
                             " are chosen: name one with --tensor, or write safetensors");
    }
    ZIPNN_ASSIGN_OR_RETURN(head, formats::NpyHead(written[0]));
  } else if (format == OutputFormat::kSafetensors) {
    ZIPNN_ASSIGN_OR_RETURN(head, formats::SafetensorsHead(written));
  }
  ZIPNN_RETURN_IF_ERROR(out.Append(head.data(), head.size()));
  for (const formats::Tensor& t : tensors) {
    ZIPNN_RETURN_IF_ERROR(t.strided ? Gather(from, t, out) : CopyRange(from, t.offset, t.length, out));
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
  struct stat st;
  if (!a.force && ::stat(a.output.c_str(), &st) == 0) {
    return InvalidArgument(a.output + " exists; cat does not write over it (pass --force to replace it)");
  }
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(a.output, /*overwrite=*/true));
  ZIPNN_RETURN_IF_ERROR(write(out));
  return out.Commit();
}

Status RunCat(const CatArgs& a) {
  ZIPNN_ASSIGN_OR_RETURN(const OutputFormat format, FormatOf(a));
  ZIPNN_ASSIGN_OR_RETURN(store::Store repo, OpenRepository());
  if (a.threads > 0) repo.policy.threads = a.threads;
  ZIPNN_ASSIGN_OR_RETURN(const store::Pointer pointer, git::PointerAt(GitSpec(a.spec)));

  const access::Versions versions(repo);
  // The whole file, as stored: one restore, checked against the id.
  if (!a.list && a.tensors.empty() && format == OutputFormat::kRaw) {
    return WithOutput(a, [&](ByteSink& out) { return versions.Write(pointer, a.spec, out); });
  }
  ZIPNN_ASSIGN_OR_RETURN(const access::Parts version, versions.OpenParts(pointer, a.spec));
  ZIPNN_ASSIGN_OR_RETURN(formats::FileLayout layout, formats::ReadLayout(version.source(), formats::kAutoFormat));
  if (layout.format == formats::Format::kRaw) {
    std::string why = layout.warnings.empty() ? "" : " (" + layout.warnings.front() + ")";
    return InvalidArgument(a.spec + " is not a safetensors or torch.save checkpoint git-zipnn can read tensors of" + why +
                           "; `git zipnn cat " + a.spec + " -o FILE` writes it whole");
  }
  for (const std::string& warning : layout.warnings) std::fprintf(stderr, "warning: %s: %s\n", a.spec.c_str(), warning.c_str());
  ZIPNN_ASSIGN_OR_RETURN(const std::vector<formats::Tensor> tensors, Select(TensorsOf(layout), a.tensors, a.spec));
  if (a.list) {
    PrintList(layout, tensors, pointer, a.spec, a.json);
    return OkStatus();
  }

  return WithOutput(a, [&](ByteSink& out) { return WriteTensors(version.source(), tensors, format, out); });
}

}  // namespace

Action SetupCat(CLI::App& sub) {
  auto a = std::make_shared<CatArgs>();
  sub.add_option("spec", a->spec,
                 "<rev>:<path> as git names a file at a revision (path from the top, or ./path), or a path "
                 "(HEAD's version, from the current folder)")
      ->required();
  sub.add_option("-t,--tensor", a->tensors, "A tensor to write, by name or glob (repeat for more); default: all");
  sub.add_option("-o,--output", a->output, "Write here instead of to standard output");
  sub.add_option("--format", a->format,
                 "raw (the bytes; without --tensor the whole file), npy (one tensor) or safetensors; default: "
                 "by -o's extension, else raw");
  sub.add_flag("-l,--list", a->list, "List the tensors (name, dtype, shape, bytes) instead of writing them");
  sub.add_flag("--json", a->json, "With --list: print JSON");
  sub.add_flag("-f,--force", a->force, "Write over an existing -o file");
  AddThreadsOption(sub, a->threads);
  return [a] { return RunCat(*a); };
}

}  // namespace zipnn::cmd
