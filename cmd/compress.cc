// git zipnn compress: one checkpoint file -> one object file.
#include <cstdio>
#include <memory>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/file.h"
#include "lib/container/object.h"

namespace zipnn::cmd {

namespace {

struct CompressArgs {
  std::string input;
  std::string output;
  std::string dtype = "auto";
  std::string base;
  std::string coder = "auto";
  int threads = 0;
  int level = 3;
  uint32_t chunk_size = container::kDefaultChunkSize;
  bool force = false;
  bool quiet = false;
};

Status RunCompress(const CompressArgs& a) {
  ASSIGN_OR_RETURN(ReadFile input, ReadFile::Open(a.input));
  codec::DType dtype = codec::DType::kBytes;
  if (a.dtype != "auto") {
    std::optional<codec::DType> parsed = codec::ParseDType(a.dtype);
    if (!parsed) return InvalidArgument("unknown dtype '" + a.dtype + "' (one of: auto, " + codec::DTypeNameList() + ")");
    dtype = *parsed;
  }
  std::optional<codec::CoderPolicy> policy = codec::ParseCoderPolicy(a.coder);
  if (!policy) return InvalidArgument("unknown coder '" + a.coder + "' (one of: auto, huffman, rans, zstd, raw)");

  container::Layout layout = container::Layout::Single(dtype, input.size());
  std::optional<ReadFile> base_file;
  container::DeltaBase base;
  if (!a.base.empty()) {
    ASSIGN_OR_RETURN(base_file, ReadFile::Open(a.base));
    if (base_file->size() != input.size()) {
      return InvalidArgument("base " + a.base + " has " + std::to_string(base_file->size()) + " bytes and " +
                             a.input + " has " + std::to_string(input.size()) +
                             "; a delta needs a base of the same layout");
    }
    ASSIGN_OR_RETURN(base.id, HashSource(*base_file));
    base.source = &*base_file;
    layout = layout.AsDeltaOfSameLayout();
  }

  const std::string out_path = a.output.empty() ? a.input + kObjectSuffix : a.output;
  ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(out_path, a.force));
  container::EncodeOptions options;
  options.chunk_size = a.chunk_size;
  options.threads = a.threads;
  options.zstd_level = a.level;
  options.policy = *policy;
  ASSIGN_OR_RETURN(container::EncodeResult r,
                   container::EncodeObject(input, layout, base_file ? &base : nullptr, options, out));
  RETURN_IF_ERROR(out.Commit());
  if (!a.quiet) {
    std::printf("%s -> %s: %s -> %s (%s)%s\n", a.input.c_str(), out_path.c_str(),
                HumanBytes(r.raw_size).c_str(), HumanBytes(r.object_size).c_str(),
                Percent(r.object_size, r.raw_size).c_str(),
                base_file ? (", delta against " + base.id.Hex()).c_str() : "");
  }
  return OkStatus();
}

}  // namespace

Action SetupCompress(CLI::App& sub) {
  auto a = std::make_shared<CompressArgs>();
  sub.add_option("file", a->input, "Checkpoint file to compress")->required();
  sub.add_option("-o,--output", a->output, "Object file to write (default: <file>.zipnn)");
  sub.add_option("--dtype", a->dtype,
                 "Element type of the file's bytes: auto (opaque bytes until checkpoint formats are "
                 "parsed), or one of " + codec::DTypeNameList());
  sub.add_option("--base", a->base, "Store as an XOR delta against this checkpoint (same size and layout)");
  sub.add_option("--level", a->level, "zstd level for the groups that use zstd (default 3)")->check(CLI::Range(1, 22));
  sub.add_option("--chunk-size", a->chunk_size, "Bytes of input per chunk (default 262144)")
      ->check(CLI::Range(container::kMinChunkSize, container::kMaxChunkSize));
  sub.add_option("--coder", a->coder, "auto (default), or force huffman, rans, zstd or raw for every group");
  AddThreadsOption(sub, a->threads);
  sub.add_flag("-f,--force", a->force, "Overwrite the output file if it exists");
  sub.add_flag("-q,--quiet", a->quiet, "Print nothing on success");
  return [a] { return RunCompress(*a); };
}

}  // namespace zipnn::cmd
