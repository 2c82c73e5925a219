#include "lib/ops/held.h"

#include <algorithm>

#include <limits.h>
#include <stdlib.h>

#include "lib/container/object.h"
#include "lib/formats/detect.h"
#include "lib/formats/file_layout.h"
#include "lib/git/discover.h"
#include "lib/git/git.h"
#include "lib/git/textconv_cache.h"
#include "lib/store/store.h"
#include "lib/store/parents.h"
#include "lib/store/restore.h"

namespace zipnn::ops {

HeldVersion DescribeHeld(const store::Store& where, const ContentId& id) {
  HeldVersion held{store::Describe(where, id), "", std::nullopt};
  if (!held.info.ok() && held.info.status().code() == StatusCode::kNotFound) {
    Result<store::Resolved> resolved = where.Resolve(id);
    if (resolved.ok() && resolved->retained) {
      held.retained = resolved->retained;
      if (!held.retained->dropped) held.info = store::Describe(where, held.retained->approximate);
    }
  }
  held.kind = held.retained                                        ? (held.retained->dropped ? "drop" : "thin")
              : held.info.ok()                                     ? (held.info->delta ? "delta" : "base")
              : held.info.status().code() == StatusCode::kNotFound ? "missing"
                                                                   : "unreadable";
  return held;
}

std::string WhyBase(Context& context, const std::string& path, const ContentId& id) {
  auto opened = context.Store();
  if (!opened.ok()) return "";
  auto series = context.Series();
  if (!series.ok()) return "";
  return git::WhyBase(**opened, **series, path, id);
}

std::string WhereHeld(Context& context, const ContentId& id) {
  auto series = context.Series();
  if (!series.ok()) return id.Hex();
  auto path = (*series)->PathOf(id);
  return path.ok() && *path ? **path : id.Hex();
}

std::string ParentNote(Context& context, container::BaseChoice choice, const ContentId& base,
                       const std::string& detail) {
  auto series = context.Series();
  if (!series.ok()) return store::BaseChoiceText(choice) + (detail.empty() ? "" : ": " + detail);
  return git::ParentNote(**series, choice, base, detail);
}

Result<SharedWith> SharedWithBase(const access::Versions& versions, const ContentId& id,
                                  const formats::FileLayout* layout) {
  const store::Store& store = versions.store();
  ZIPNN_ASSIGN_OR_RETURN(const store::ChainLink top, store::ReadLink(store, id));
  if (!top.delta || (top.choice != container::BaseChoice::kShared && top.references.empty())) return SharedWith{};
  ZIPNN_ASSIGN_OR_RETURN(ReadFile object, ReadFile::Open(store.objects.PathOf(id)));
  ZIPNN_ASSIGN_OR_RETURN(const container::ObjectInfo info, container::ReadObjectInfo(object));
  // Both layouts are read by parts: the headers, decoded down each chain.
  auto read_layout = [&](const ContentId& of, uint64_t size) -> Result<formats::FileLayout> {
    ZIPNN_ASSIGN_OR_RETURN(const access::Parts parts, versions.OpenParts(store::Pointer{of, size, ""}, of.Hex()));
    return formats::ReadLayout(parts.source(), formats::kAutoFormat);
  };
  std::optional<formats::FileLayout> own;
  if (layout == nullptr) {
    ZIPNN_ASSIGN_OR_RETURN(own, read_layout(id, top.raw_size));
    layout = &*own;
  }
  ZIPNN_ASSIGN_OR_RETURN(const store::ChainLink base, store::ReadLink(store, top.base));
  ZIPNN_ASSIGN_OR_RETURN(const formats::FileLayout base_layout, read_layout(top.base, base.raw_size));
  SharedWith shared;
  shared.of = layout->tensors.size();
  // Under another name, a tensor was taken for its bytes (by their hash);
  // under its own, when its delta chunks hold nothing (ChunkUnchanged).
  const auto unchanged = [&](const formats::Tensor& t) {
    auto chunk = std::partition_point(info.chunks.begin(), info.chunks.end(), [&](const container::ChunkRef& c) {
      return c.span.offset + c.span.length <= t.offset;
    });
    for (; chunk != info.chunks.end() && chunk->span.offset < t.offset + t.length; ++chunk) {
      if (!container::ChunkUnchanged(info, static_cast<size_t>(chunk - info.chunks.begin()))) return false;
    }
    return t.length > 0;
  };
  for (const auto& [t, b] : formats::TensorsTakenFrom(*layout, info.header.layout, base_layout, 0, /*any_name=*/true)) {
    const formats::Tensor& mine = layout->tensors[t];
    const formats::Tensor& its = base_layout.tensors[b];
    if (mine.name != its.name || unchanged(mine))
      shared.tensors.push_back(SharedTensor{mine.name, its.name, mine.length});
  }
  for (size_t k = 0; k < info.header.references.size(); ++k) {
    const container::Reference& r = info.header.references[k];
    ZIPNN_ASSIGN_OR_RETURN(const formats::FileLayout from, read_layout(r.id, r.size));
    SharedWith::Referenced taken{r.id, {}};
    for (const auto& [t, b] : formats::TensorsTakenFrom(*layout, info.header.layout, from, static_cast<uint32_t>(k + 1),
                                                        /*any_name=*/true)) {
      taken.tensors.push_back(
          SharedTensor{layout->tensors[t].name, from.tensors[b].name, layout->tensors[t].length, r.id});
    }
    shared.references.push_back(std::move(taken));
  }
  return shared;
}

std::string UnderOtherNames(const std::vector<SharedTensor>& tensors) {
  const auto renamed = static_cast<size_t>(
      std::count_if(tensors.begin(), tensors.end(), [](const SharedTensor& t) { return t.name != t.base_name; }));
  if (renamed == 0) return "";
  if (renamed == tensors.size()) return " under other names";
  return ", " + std::to_string(renamed) + " under other names";
}

size_t SharedWith::ReferencedTensors() const {
  size_t n = 0;
  for (const Referenced& r : references) n += r.tensors.size();
  return n;
}

uint64_t SharedWith::ReferencedBytes() const {
  uint64_t bytes = 0;
  for (const Referenced& r : references) bytes += BytesOf(r.tensors);
  return bytes;
}

uint64_t BytesOf(const std::vector<SharedTensor>& tensors) {
  uint64_t bytes = 0;
  for (const SharedTensor& t : tensors) bytes += t.bytes;
  return bytes;
}

Result<formats::Checkpoint> CheckpointInFile(Context& context, const std::string& file) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<store::Pointer> pointer, store::PointerInFile(file));
  if (!pointer) return formats::Checkpoint::Open(file);
  ZIPNN_ASSIGN_OR_RETURN(store::Store * opened, context.Store());
  return access::Versions(*opened, access::Copies::kAll).Open(*pointer, file);
}

std::optional<PreviousVersion> PreviousInSeries(Context& context, const std::string& path) {
  auto opened = context.Store();
  if (!opened.ok()) return std::nullopt;
  auto series = context.Series();
  if (!series.ok()) return std::nullopt;
  auto previous = git::PreviousInSeries(**series, path);
  if (!previous.ok() || !*previous) return std::nullopt;
  const store::Version& v = **previous;
  auto link = store::ReadLink(**opened, v.id);
  if (!link.ok()) return std::nullopt;
  const access::Versions versions(**opened, access::Copies::kAll);
  auto checkpoint = WithLayout(versions.Open(store::Pointer{v.id, link->raw_size, ""}, v.path));
  if (!checkpoint.ok()) return std::nullopt;
  return PreviousVersion{std::move(*checkpoint), v};
}

std::string ListingFailure(const std::string& why) { return git::ListingFailure(why); }

Result<formats::Checkpoint> WithLayout(Result<formats::Checkpoint> checkpoint) {
  if (checkpoint.ok()) ZIPNN_RETURN_IF_ERROR(checkpoint->ReadLayout());
  return checkpoint;
}

Status RefuseTrackedOutput(const std::string& output) {
  if (output.empty() || output == "-") return OkStatus();
  // Spelled as git would not: "../repo/x", through a link to the folder.
  const size_t slash = output.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : output.substr(0, slash);
  char resolved[PATH_MAX];
  const std::string canonical = ::realpath(folder.c_str(), resolved) != nullptr
                                    ? std::string(resolved) + "/" + output.substr(slash + 1)
                                    : output;
  if (!git::TrackedPath(canonical).ok() && !git::TrackedPath(output).ok()) return OkStatus();
  return InvalidArgument(output + " is a file git tracks here: approximate bytes never take a committed file's place "
                                  "(a commit would store them as a new version); name a file git does not track");
}

Result<std::optional<std::string>> ApproximateNote(const access::Versions& versions, const store::Pointer& pointer) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<store::Retained> retained, versions.Retention(pointer.id));
  if (!retained || retained->dropped) return std::optional<std::string>();  // reading it says what became of it
  return std::optional<std::string>("version " + pointer.id.Hex().substr(0, 12) + " was " + retained->Describe());
}

}  // namespace zipnn::ops
