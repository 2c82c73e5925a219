// git zipnn inspect: what an object holds and how each byte group was coded.
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/container/object.h"
#include "lib/store/parents.h"
#include "lib/formats/detect.h"

namespace zipnn::cmd {

namespace {

// How a delta region's chunks were taken: one transform's name, or each
// with its chunk count ("difference 12 + xor 3 chunks").
std::string TransformsOf(const container::RegionStats& stats) {
  std::vector<std::string> used;
  for (const codec::TransformInfo& t : codec::kTransforms) {
    if (stats.chunks_by_transform[static_cast<size_t>(t.transform)] > 0) used.push_back(t.name);
  }
  if (used.size() <= 1) return used.empty() ? codec::kTransforms[0].name : used[0];
  std::string text;
  for (auto t = std::rbegin(codec::kTransforms); t != std::rend(codec::kTransforms); ++t) {
    const uint64_t chunks = stats.chunks_by_transform[static_cast<size_t>(t->transform)];
    if (chunks == 0) continue;
    text += (text.empty() ? "" : " + ") + std::string(t->name) + " " + std::to_string(chunks);
  }
  return text + (stats.chunks_by_transform[0] == 1 ? " chunk" : " chunks");
}

void PrintGroupRows(size_t region, const std::vector<container::GroupStats>& groups,
                    const std::function<std::string(int)>& label) {
  for (size_t g = 0; g < groups.size(); ++g) {
    const container::GroupStats& s = groups[g];
    std::string coders;
    for (uint8_t c = 0; c <= codec::kMaxCoderValue; ++c) {
      if (s.chunks_by_coder[c] == 0) continue;
      if (!coders.empty()) coders += ", ";
      coders +=
          std::string(codec::CoderName(static_cast<codec::Coder>(c))) + " " + std::to_string(s.chunks_by_coder[c]);
    }
    std::printf("%-7zu %-6s %14llu %14llu %8s   %s\n", region, label(static_cast<int>(g)).c_str(),
                static_cast<unsigned long long>(s.raw_bytes), static_cast<unsigned long long>(s.stored_bytes),
                Percent(s.stored_bytes, s.raw_bytes).c_str(), coders.c_str());
  }
}

}  // namespace

Status PrintObjectReport(const std::string& path) {
  ZIPNN_ASSIGN_OR_RETURN(ReadFile object, ReadFile::Open(path));
  ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(object));
  ZIPNN_ASSIGN_OR_RETURN(std::vector<container::RegionStats> stats, container::ScanObject(object, info));
  const container::ObjectHeader& h = info.header;

  std::printf("object       %s\n", path.c_str());
  std::printf("format       version %u\n", static_cast<unsigned>(h.version));
  if (h.kind == container::ObjectKind::kDelta) {
    std::printf("kind         delta against %s (%llu bytes)\n", h.base_id.Hex().c_str(),
                static_cast<unsigned long long>(h.base_size));
    if (const std::string why = store::BaseChoiceText(h.choice); !why.empty()) {
      std::printf("base chosen  %s\n", why.c_str());
    }
    for (size_t k = 0; k < h.references.size(); ++k) {
      std::printf("reference %zu  %s (%llu bytes)\n", k + 1, h.references[k].id.Hex().c_str(),
                  static_cast<unsigned long long>(h.references[k].size));
    }
  } else {
    std::printf("kind         base (standalone)\n");
  }
  std::printf("content id   %s\n", info.content_id.Hex().c_str());
  std::printf("raw size     %llu bytes (%s)\n", static_cast<unsigned long long>(h.raw_size),
              HumanBytes(h.raw_size).c_str());
  std::printf("object size  %llu bytes (%s of raw)\n", static_cast<unsigned long long>(info.object_size),
              Percent(info.object_size, h.raw_size).c_str());
  std::printf("chunks       %zu of up to %u bytes\n\n", info.chunks.size(), h.chunk_size);

  std::printf("%-7s %-8s %14s %14s  %s\n", "region", "dtype", "offset", "length", "delta");
  for (size_t i = 0; i < h.layout.regions.size(); ++i) {
    const container::Region& r = h.layout.regions[i];
    const std::string source = r.source == 0 ? "base" : "ref" + std::to_string(r.source);
    std::string delta = r.delta ? TransformsOf(stats[i]) + " " + source + "@" + std::to_string(r.base_offset)
                        : r.prefix_length > 0
                            ? "zstd after base@" + std::to_string(r.base_offset) + "+" + std::to_string(r.prefix_length)
                            : "-";
    std::printf("%-7zu %-8s %14llu %14llu  %s\n", i, std::string(codec::DTypeName(r.dtype)).c_str(),
                static_cast<unsigned long long>(r.offset), static_cast<unsigned long long>(r.length), delta.c_str());
  }

  // Per dtype: what each kind of data costs (weights, counters, headers).
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_dtype;  // raw, stored (records)
  for (size_t i = 0; i < stats.size(); ++i) {
    auto& [raw, stored] = by_dtype[std::string(codec::DTypeName(h.layout.regions[i].dtype))];
    raw += h.layout.regions[i].length;
    stored += stats[i].record_bytes;
  }
  std::printf("\n%-8s %14s %14s %8s\n", "dtype", "raw", "stored", "ratio");
  for (const auto& [name, sizes] : by_dtype) {
    std::printf("%-8s %14llu %14llu %8s\n", name.c_str(), static_cast<unsigned long long>(sizes.first),
                static_cast<unsigned long long>(sizes.second), Percent(sizes.second, sizes.first).c_str());
  }

  // Groups of chunks taken by the difference are other bytes (d0, d1, ...)
  // than those of chunks stored as they are or XORed (exp, man0, ...).
  std::printf("\n%-7s %-6s %14s %14s %8s   chunks by coder\n", "region", "group", "raw", "stored", "ratio");
  for (size_t i = 0; i < stats.size(); ++i) {
    const codec::DType dtype = h.layout.regions[i].dtype;
    for (const codec::TransformInfo& t : codec::kTransforms) {
      PrintGroupRows(i, stats[i].groups[static_cast<size_t>(t.transform)],
                     [dtype, &t](int g) { return t.group_label(dtype, g); });
    }
  }
  return OkStatus();
}

// The tensors of the checkpoint an object holds, by name, read by parts:
// through the store's chain for a content id, or from a base object file
// alone (a delta file needs its base, which only the store knows).
Status PrintObjectTensors(const std::string& path, const store::Store* store,
                          const std::optional<ContentId>& id) {
  std::printf("\n");
  if (store && id) {
    ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<store::VersionReader> version, store::OpenVersion(*store, *id));
    ZIPNN_ASSIGN_OR_RETURN(formats::FileLayout layout, formats::ReadLayout(*version, formats::kAutoFormat));
    PrintTensorTable(TensorsOf(layout));
    return OkStatus();
  }
  ZIPNN_ASSIGN_OR_RETURN(ReadFile object, ReadFile::Open(path));
  ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(object));
  if (info.header.kind == container::ObjectKind::kDelta) {
    return InvalidArgument(path + " is a delta: its tensors are read through its base; give the content id of a " +
                           "version in a store (`git zipnn inspect --tensors <id>`) or use `git zipnn cat --list`");
  }
  if (!container::HasRawChecksums(info.header)) {
    return Unsupported(path + " is of object format " + std::to_string(info.header.version) +
                       ", whose parts cannot be checked alone: decompress it to read its tensors");
  }
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<container::ObjectReader> reader,
                         container::ObjectReader::Open(object, info, nullptr, /*check_raw=*/true));
  ZIPNN_ASSIGN_OR_RETURN(formats::FileLayout layout, formats::ReadLayout(*reader, formats::kAutoFormat));
  PrintTensorTable(TensorsOf(layout));
  return OkStatus();
}

Action SetupInspect(CLI::App& sub) {
  auto path = std::make_shared<std::string>();
  auto tensors = std::make_shared<bool>(false);
  sub.add_option("object", *path, "Object file to describe, or the content id of one in this repository's store")
      ->required();
  sub.add_flag("-t,--tensors", *tensors, "Also list the tensors of the checkpoint it holds, read by parts");
  return [path, tensors]() -> Status {
    // A content id names the object of that version in the store.
    ops::Context context;
    const store::Store* store = nullptr;
    std::optional<ContentId> id;
    std::string file = *path;
    if (!FileExists(*path) && (id = ContentId::FromHex(*path))) {
      ZIPNN_ASSIGN_OR_RETURN(store, context.Store());
      file = store->objects.PathOf(*id);
    }
    ZIPNN_RETURN_IF_ERROR(PrintObjectReport(file));
    return *tensors ? PrintObjectTensors(file, store, id) : OkStatus();
  };
}

}  // namespace zipnn::cmd
