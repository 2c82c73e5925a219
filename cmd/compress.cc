// git zipnn compress: one checkpoint file -> one object file.
#include <cstdio>
#include <memory>
#include <vector>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/strings.h"
#include "lib/base/file.h"
#include "lib/base/thread_pool.h"
#include "lib/formats/checkpoint.h"
#include "lib/container/object.h"
#include "lib/formats/detect.h"

namespace zipnn::cmd {

namespace {

struct CompressArgs {
  std::string input;
  std::string output;
  std::string dtype = "auto";
  std::string format = "auto";
  std::string base;
  std::vector<std::string> references;
  std::string coder = "auto";
  std::string transform = "auto";
  int threads = 0;
  int level = 3;
  uint32_t chunk_size = container::kDefaultChunkSize;
  bool force = false;
  bool quiet = false;
};

// The regions to store: from the file's format (tensor-aware for a delta),
// or, with an explicit --dtype, the whole file as one region of that type.
struct Plan {
  container::Layout layout;
  std::string description;  // "safetensors, 25 tensors in 8 regions"
  // kShared when tensors were taken against others of their bytes.
  container::BaseChoice choice = container::BaseChoice::kSeries;
  std::string shared;  // ", 1.2 MiB of tensors taken against ..." then
  // Of the --reference files, those some tensor is taken against (their
  // indexes), in the order the object names them.
  std::vector<size_t> references;
};

Result<Plan> PlanRegions(const CompressArgs& a, const ReadFile& input, const ReadFile* base,
                         const std::vector<ReadFile>& references) {
  Plan plan;
  if (a.dtype != "auto") {
    std::optional<codec::DType> dtype = codec::ParseDType(a.dtype);
    if (!dtype)
      return InvalidArgument("unknown dtype '" + a.dtype + "' (one of: auto, " + codec::DTypeNameList() + ")");
    plan.layout = container::Layout::Single(*dtype, input.size());
    if (base != nullptr) {
      if (base->size() != input.size()) {
        return InvalidArgument("base " + a.base + " has " + std::to_string(base->size()) + " bytes and " + a.input +
                               " has " + std::to_string(input.size()) +
                               "; with --dtype a delta needs a base of the same size (leave --dtype out for a "
                               "tensor-aware delta)");
      }
      plan.layout = plan.layout.AsDeltaOfSameLayout();
    }
    plan.description = "one " + std::string(codec::DTypeName(*dtype)) + " region";
    return plan;
  }
  ZIPNN_ASSIGN_OR_RETURN(const formats::FormatChoice choice, formats::ParseFormatChoice(a.format));
  ZIPNN_ASSIGN_OR_RETURN(formats::FileLayout file, formats::ReadLayout(input, choice));
  for (const std::string& w : file.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  if (base != nullptr) {
    ZIPNN_ASSIGN_OR_RETURN(formats::FileLayout base_file, formats::ReadLayout(*base, choice));
    for (const std::string& w : base_file.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
    // Tensors are matched by their bytes too, whatever their names.
    ThreadPool pool(a.threads > 0 ? a.threads : ThreadPool::DefaultThreads());
    ZIPNN_RETURN_IF_ERROR(formats::HashTensorContents(input, file, pool));
    ZIPNN_RETURN_IF_ERROR(formats::HashTensorContents(*base, base_file, pool));
    std::vector<formats::FileLayout> reference_files;
    for (size_t k = 0; k < references.size(); ++k) {
      ZIPNN_ASSIGN_OR_RETURN(formats::FileLayout r, formats::ReadLayout(references[k], choice));
      ZIPNN_RETURN_IF_ERROR(formats::HashTensorContents(references[k], r, pool));
      reference_files.push_back(std::move(r));
    }
    std::vector<const formats::FileLayout*> from;
    for (const formats::FileLayout& r : reference_files) from.push_back(&r);
    plan.layout = formats::ToDeltaRegions(file, base_file, from);
    plan.references = plan.layout.KeepUsedReferences(references.size());
    if (const formats::Shared shared = formats::SharedByContent(file, base_file); shared.tensors > 0) {
      plan.choice = container::BaseChoice::kShared;
      plan.shared = ", " + HumanBytes(shared.bytes) + " of tensors taken against the base's of the same bytes";
    }
    if (const formats::Shared taken = formats::TakenFromReferences(file, base_file, from); taken.tensors > 0) {
      plan.choice = container::BaseChoice::kShared;
      plan.shared +=
          ", " + HumanBytes(taken.bytes) + " of tensors taken from " + Counted(plan.references.size(), "reference");
    }
  } else {
    plan.layout = formats::ToRegions(file);
  }
  plan.description = std::string(formats::FormatName(file.format));
  if (file.format == formats::Format::kRaw && !file.tensors.empty()) {
    plan.description += " (" + std::string(codec::DTypeName(file.tensors[0].dtype)) + " by a sample)";
  } else if (file.format != formats::Format::kRaw) {
    plan.description +=
        ", " + Counted(file.tensors.size(), "tensor") + " in " + Counted(plan.layout.regions.size(), "region");
  }
  return plan;
}

Status RunCompress(const CompressArgs& a) {
  ZIPNN_ASSIGN_OR_RETURN(ReadFile input, ReadFile::Open(a.input));
  std::optional<codec::CoderPolicy> policy = codec::ParseCoderPolicy(a.coder);
  if (!policy)
    return InvalidArgument("unknown coder '" + a.coder + "' (one of: auto, " + codec::CoderNameList(", ") + ")");
  ZIPNN_ASSIGN_OR_RETURN(const codec::TransformPolicy transform, codec::ParseTransformPolicy(a.transform));

  std::optional<ReadFile> base_file;
  container::DeltaBase base;
  if (!a.base.empty()) {
    ZIPNN_ASSIGN_OR_RETURN(base_file, ReadFile::Open(a.base));
    ZIPNN_ASSIGN_OR_RETURN(base.id, HashSource(*base_file));
    base.source = &*base_file;
  }
  if (!a.references.empty() && a.base.empty()) {
    return InvalidArgument("--reference takes tensors from other checkpoints besides a base: give --base too");
  }
  std::vector<ReadFile> references;
  for (const std::string& path : a.references) {
    ZIPNN_ASSIGN_OR_RETURN(ReadFile r, ReadFile::Open(path));
    references.push_back(std::move(r));
  }
  ZIPNN_ASSIGN_OR_RETURN(Plan plan, PlanRegions(a, input, base_file ? &*base_file : nullptr, references));
  const container::Layout& layout = plan.layout;
  base.choice = plan.choice;
  for (size_t k = 0, used = 0; k < references.size(); ++k) {
    if (used < plan.references.size() && plan.references[used] == k) {
      ++used;
      ZIPNN_ASSIGN_OR_RETURN(const ContentId id, HashSource(references[k]));
      base.references.push_back(container::ReferenceSource{&references[k], id});
    } else {
      std::fprintf(stderr,
                   "note: %s holds no tensor of %s that the base or an earlier --reference does not; left out\n",
                   a.references[k].c_str(), a.input.c_str());
    }
  }

  const std::string out_path = a.output.empty() ? a.input + kObjectSuffix : a.output;
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(out_path, a.force));
  container::EncodeOptions options;
  options.chunk_size = a.chunk_size;
  options.threads = a.threads;
  options.zstd_level = a.level;
  options.policy = *policy;
  options.transform = transform;
  ZIPNN_ASSIGN_OR_RETURN(container::EncodeResult r,
                         container::EncodeObject(input, layout, base_file ? &base : nullptr, options, out));
  ZIPNN_RETURN_IF_ERROR(out.Commit());
  if (!a.quiet) {
    std::printf("%s -> %s: %s -> %s (%s), %s%s\n", a.input.c_str(), out_path.c_str(), HumanBytes(r.raw_size).c_str(),
                HumanBytes(r.object_size).c_str(), Percent(r.object_size, r.raw_size).c_str(), plan.description.c_str(),
                base_file ? (", delta against " + base.id.Hex() + plan.shared).c_str() : "");
  }
  return OkStatus();
}

}  // namespace

Action SetupCompress(CLI::App& sub) {
  auto a = std::make_shared<CompressArgs>();
  sub.add_option("file", a->input, "Checkpoint file to compress")->required();
  sub.add_option("-o,--output", a->output, "Object file to write (default: <file>.zipnn)");
  sub.add_option(
      "--format", a->format,
      "How to read the file: auto (by its content, the default), or one of " + formats::FormatNameList(", "));
  sub.add_option("--dtype", a->dtype,
                 "auto (the default): tensors and their dtypes come from the file's format; or one of " +
                     codec::DTypeNameList() + " to store the whole file as one region of that type");
  sub.add_option(
      "--base", a->base,
      "Store as a delta against this checkpoint: tensors are matched by their bytes, else by name, dtype and "
      "shape");
  sub.add_option("--reference", a->references,
                 "With --base: another checkpoint whose tensors of the same bytes are taken from it (repeat for "
                 "more; the object is then format 8, and decompress needs each one it names)")
      ->allow_extra_args(false);
  sub.add_option("--level", a->level, "zstd level for the groups that use zstd (default 3)")->check(CLI::Range(1, 22));
  sub.add_option("--chunk-size", a->chunk_size, "Bytes of input per chunk (default 262144)")
      ->check(CLI::Range(container::kMinChunkSize, container::kMaxChunkSize));
  sub.add_option("--coder", a->coder,
                 "auto (default), or force one of " + codec::CoderNameList(", ") + " for every group");
  sub.add_option("--transform", a->transform,
                 "How delta chunks are taken against the base: auto (the smaller of xor and difference per chunk, "
                 "the default), xor, or difference");
  AddThreadsOption(sub, a->threads);
  sub.add_flag("-f,--force", a->force, "Overwrite the output file if it exists");
  sub.add_flag("-q,--quiet", a->quiet, "Print nothing on success");
  return [a] { return RunCompress(*a); };
}

}  // namespace zipnn::cmd
