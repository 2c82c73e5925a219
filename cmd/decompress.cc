// git zipnn decompress: one object file -> the exact original bytes.
#include <cstdio>
#include <memory>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/file.h"
#include "lib/container/object.h"

namespace zipnn::cmd {

namespace {

struct DecompressArgs {
  std::string input;
  std::string output;
  std::string base;
  int threads = 0;
  bool force = false;
};

Result<std::string> OutputPath(const DecompressArgs& a) {
  if (!a.output.empty()) return a.output;
  const std::string suffix = kObjectSuffix;
  if (a.input.size() > suffix.size() && a.input.compare(a.input.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return a.input.substr(0, a.input.size() - suffix.size());
  }
  return InvalidArgument(a.input + ": does not end in " + suffix + "; name the output with -o");
}

Status RunDecompress(const DecompressArgs& a) {
  ASSIGN_OR_RETURN(ReadFile object, ReadFile::Open(a.input));
  ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(object));
  std::optional<ReadFile> base;
  if (info.header.kind == container::ObjectKind::kDelta) {
    if (a.base.empty()) {
      return InvalidArgument(a.input + ": is a delta against " + info.header.base_id.Hex() +
                             "; give that checkpoint with --base");
    }
    ASSIGN_OR_RETURN(base, ReadFile::Open(a.base));
    ASSIGN_OR_RETURN(ContentId id, HashSource(*base));
    if (id != info.header.base_id) {
      return InvalidArgument("wrong base: " + a.base + " has content id " + id.Hex() + ", but " + a.input +
                             " is a delta against " + info.header.base_id.Hex());
    }
  } else if (!a.base.empty()) {
    return InvalidArgument(a.input + ": is a standalone object; it takes no --base");
  }
  container::DecodeOptions options;
  options.threads = a.threads;
  const ByteSource* base_source = base ? &*base : nullptr;
  if (a.output == "-") {
    StdoutSink out;
    return container::DecodeObject(object, info, base_source, options, out);
  }
  ASSIGN_OR_RETURN(std::string path, OutputPath(a));
  ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(path, a.force));
  RETURN_IF_ERROR(container::DecodeObject(object, info, base_source, options, out));
  return out.Commit();  // only verified bytes ever appear under the name
}

}  // namespace

Action SetupDecompress(CLI::App& sub) {
  auto a = std::make_shared<DecompressArgs>();
  sub.add_option("object", a->input, "Object file to decompress")->required();
  sub.add_option("-o,--output", a->output, "File to write (default: the object's name without .zipnn; - for stdout)");
  sub.add_option("--base", a->base, "For a delta: the checkpoint it was made against");
  AddThreadsOption(sub, a->threads);
  sub.add_flag("-f,--force", a->force, "Overwrite the output file if it exists");
  return [a] { return RunDecompress(*a); };
}

}  // namespace zipnn::cmd
