// git zipnn decompress: one object file -> the exact original bytes.
#include <cstdio>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <vector>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/file.h"
#include "lib/base/thread_pool.h"
#include "lib/container/object.h"

namespace zipnn::cmd {

namespace {

struct DecompressArgs {
  std::string input;
  std::string output;
  std::string base;
  std::vector<std::string> references;
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

// Decodes into the output named by `a`; `check` must pass too before the
// output is committed.
Status Decode(const DecompressArgs& a, const ByteSource& object, const container::ObjectInfo& info,
              const container::Sources& base, const std::function<Status()>& check) {
  container::DecodeOptions options;
  options.threads = a.threads;
  if (a.output == "-") {
    StdoutSink out;
    Status st = container::DecodeObject(object, info, base, options, out);
    ZIPNN_RETURN_IF_ERROR(check());
    return st;
  }
  ZIPNN_ASSIGN_OR_RETURN(std::string path, OutputPath(a));
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(path, a.force));
  Status st = container::DecodeObject(object, info, base, options, out);
  ZIPNN_RETURN_IF_ERROR(check());
  ZIPNN_RETURN_IF_ERROR(st);
  return out.Commit();  // only verified bytes ever appear under the name
}

Status RunDecompress(const DecompressArgs& a) {
  ZIPNN_ASSIGN_OR_RETURN(ReadFile object, ReadFile::Open(a.input));
  ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(object));
  if (info.header.kind != container::ObjectKind::kDelta) {
    if (!a.base.empty() || !a.references.empty()) {
      return InvalidArgument(a.input + ": is a standalone object; it takes no --base or --reference");
    }
    return Decode(a, object, info, container::Sources{}, [] { return OkStatus(); });
  }
  if (a.base.empty()) {
    std::string also;
    for (const container::Reference& r : info.header.references) also += ", and " + r.id.Hex() + " with --reference";
    return InvalidArgument(a.input + ": is a delta against " + info.header.base_id.Hex() +
                           "; give that checkpoint with --base" + also);
  }
  // A format 8 delta's references, each checked by its content id first
  // and given in the order the object names them.
  container::Sources sources;
  std::vector<ReadFile> given;
  for (const std::string& path : a.references) {
    ZIPNN_ASSIGN_OR_RETURN(ReadFile r, ReadFile::Open(path));
    given.push_back(std::move(r));
  }
  std::map<ContentId, size_t> by_id;  // -> index in `given`
  for (size_t k = 0; k < given.size(); ++k) {
    ZIPNN_ASSIGN_OR_RETURN(const ContentId id, HashSource(given[k]));
    by_id.emplace(id, k);
  }
  for (const container::Reference& r : info.header.references) {
    auto it = by_id.find(r.id);
    if (it == by_id.end()) {
      std::string given_ids;
      for (const auto& [id, k] : by_id) {
        given_ids += "; " + a.references[k] + " is " + id.Hex() + (id == info.header.base_id ? " (its base)" : "");
      }
      return InvalidArgument(a.input + ": takes tensors from " + r.id.Hex() + " (" + std::to_string(r.size) +
                             " bytes) besides its base; give that checkpoint with --reference" + given_ids);
    }
    sources.references.push_back(&given[it->second]);
    by_id.erase(it);
  }
  if (!by_id.empty()) {
    return InvalidArgument(a.input + ": takes no tensors from " + a.references[by_id.begin()->second] +
                           " (content id " + by_id.begin()->first.Hex() + "), given with --reference");
  }
  ZIPNN_ASSIGN_OR_RETURN(ReadFile base, ReadFile::Open(a.base));
  auto right_base = [&](const Result<ContentId>& id) -> Status {
    if (!id.ok()) return id.status();
    if (*id == info.header.base_id) return OkStatus();
    return InvalidArgument("wrong base: " + a.base + " has content id " + id->Hex() + ", but " + a.input +
                           " is a delta against " + info.header.base_id.Hex());
  };
  // With more than one thread the base is hashed while the delta decodes
  // rather than before it, which would be a serial pass over the whole base.
  // The output is committed only if both succeed.
  if (a.threads == 1 || ThreadPool::DefaultThreads() == 1) {
    ZIPNN_RETURN_IF_ERROR(right_base(HashSource(base)));
    sources.base = &base;
    return Decode(a, object, info, sources, [] { return OkStatus(); });
  }
  std::future<Result<ContentId>> hashing = std::async(std::launch::async, [&base] { return HashSource(base); });
  sources.base = &base;
  return Decode(a, object, info, sources, [&] { return right_base(hashing.get()); });
}

}  // namespace

Action SetupDecompress(CLI::App& sub) {
  auto a = std::make_shared<DecompressArgs>();
  sub.add_option("object", a->input, "Object file to decompress")->required();
  sub.add_option("-o,--output", a->output, "File to write (default: the object's name without .zipnn; - for stdout)");
  sub.add_option("--base", a->base, "For a delta: the checkpoint it was made against");
  sub.add_option("--reference", a->references,
                 "For a format 8 delta: each other checkpoint it takes tensors from (repeat; any order)")
      ->allow_extra_args(false);
  AddThreadsOption(sub, a->threads);
  sub.add_flag("-f,--force", a->force, "Overwrite the output file if it exists");
  return [a] { return RunDecompress(*a); };
}

}  // namespace zipnn::cmd
