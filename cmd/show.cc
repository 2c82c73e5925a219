// git zipnn show: one stored checkpoint, its chain of bases and its layout.
#include <cstdio>
#include <memory>
#include <map>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/access/versions.h"
#include "lib/base/strings.h"
#include "lib/base/file.h"
#include "lib/container/format.h"
#include "lib/container/object.h"
#include "lib/formats/detect.h"
#include "lib/formats/file_layout.h"
#include "lib/ops/held.h"
#include "lib/remote/transfer.h"
#include "lib/store/parents.h"

namespace zipnn::cmd {

namespace {

struct ShowArgs {
  std::string what;
  bool tensors = false;
};

// For a delta whose base holds tensors of its bytes, which of them are
// its base's bytes: their count and size, or with --tensors each name and
// the base's name for it.
Status PrintSharedTensors(ops::Context& context, const store::Store& store, const ContentId& id,
                          const formats::FileLayout& layout, bool all) {
  ZIPNN_ASSIGN_OR_RETURN(const ops::SharedWith shared, ops::SharedWithBase(access::Versions(store), id, &layout));
  if (!shared.tensors.empty()) {
    std::printf("%s (%s) of the same bytes as its base's%s%s\n", Counted(shared.tensors.size(), "tensor").c_str(),
                HumanBytes(ops::BytesOf(shared.tensors)).c_str(), ops::UnderOtherNames(shared.tensors).c_str(),
                all ? " (of tensors of equal bytes, any one may be named):" : "");
    if (all) {
      for (const ops::SharedTensor& t : shared.tensors) std::printf("  %s = %s\n", t.name.c_str(), t.base_name.c_str());
    }
  }
  for (const ops::SharedWith::Referenced& r : shared.references) {
    std::string where = ops::WhereHeld(context, r.id);
    if (where != r.id.Hex()) where += " (" + r.id.Hex() + ")";
    std::printf("%s (%s) taken from %s, a version it references%s\n", Counted(r.tensors.size(), "tensor").c_str(),
                HumanBytes(ops::BytesOf(r.tensors)).c_str(), where.c_str(), all ? ":" : "");
    if (all) {
      for (const ops::SharedTensor& t : r.tensors) std::printf("  %s = %s\n", t.name.c_str(), t.base_name.c_str());
    }
  }
  return OkStatus();
}

// The tensors of the version, read by parts (its header, decoded down the
// chain): their count, or with --tensors their table.
Status PrintTensors(ops::Context& context, const store::Store& store, const store::Pointer& pointer,
                    const std::string& what, bool all) {
  if (!all) {
    // Only what needs no whole restore: an object before format 5 is
    // read whole to list its tensors, which --tensors asks for.
    auto top = store::ReadLink(store, pointer.id);
    if (top.ok() && top->format < container::kRawChecksumVersion) {
      std::printf("tensors: `git zipnn show --tensors` lists them (object format %u: it restores the version)\n",
                  static_cast<unsigned>(top->format));
      return OkStatus();
    }
  }
  ZIPNN_ASSIGN_OR_RETURN(const access::Parts version, access::Versions(store).OpenParts(pointer, what));
  ZIPNN_ASSIGN_OR_RETURN(formats::FileLayout layout, formats::ReadLayout(version.source(), formats::kAutoFormat));
  const std::vector<formats::Tensor>& tensors = TensorsOf(layout);
  if (all) {
    PrintTensorTable(tensors);
  } else {
    std::printf("%s (`git zipnn show --tensors` or `git zipnn cat --list` lists them)\n",
                Counted(tensors.size(), "tensor").c_str());
  }
  return PrintSharedTensors(context, store, pointer.id, layout, all);
}

Status RunShow(const ShowArgs& a) {
  ops::Context context;
  ZIPNN_ASSIGN_OR_RETURN(store::Store * opened, context.Store());
  const store::Store& store = *opened;
  // A content id, or <rev>:<path> as git spells it, or a path (HEAD's).
  std::optional<ContentId> id = ContentId::FromHex(a.what);
  std::optional<store::Pointer> named;
  std::string why;  // for a base given as <rev>:<path>
  if (!id) {
    const std::string what = ops::GitSpec(a.what);
    ZIPNN_ASSIGN_OR_RETURN(store::Pointer pointer, ops::PointerAt(what));
    std::printf("%s: %s, %llu bytes\n", a.what.c_str(), pointer.format.c_str(),
                static_cast<unsigned long long>(pointer.size));
    id = pointer.id;
    named = pointer;
    if (context.Series().ok()) {
      std::string path = what.substr(what.find(':') + 1);
      if (path.rfind("./", 0) == 0) {
        auto full = ops::TrackedPath(path);
        if (full.ok()) path = *full;
      }
      why = ops::WhyBase(context, path, *id);
    }
  }
  // The chain down to its base: what a checkout of this version decodes,
  // and the object's report below, both of the stored objects; fetched
  // first where the local store lacks them (a clone has the newest).
  if (store::VisitChain(store, *id, [](const store::ChainLink&) {}).code() == StatusCode::kNotFound) {
    const std::optional<uint64_t> size = named ? std::optional<uint64_t>(named->size) : std::nullopt;
    if (Result<bool> fetched = remote::FetchChain(store, *id, size); !fetched.ok()) {
      return Annotate(fetched.status(), a.what);
    }
  }
  std::printf("chain\n");
  std::map<ContentId, ContentId> referenced;  // a version referenced -> the first object shown that references it
  ZIPNN_RETURN_IF_ERROR(store::VisitChain(store, *id, [&](const store::ChainLink& link) {
    std::string note = link.depth == 0 && !why.empty() ? "  (" + why + ")" : "";
    if (link.delta && link.choice != container::BaseChoice::kSeries) {
      // Where parents in other series are.
      note = "  (" + ops::ParentNote(context, link.choice, link.base) + ")";
    }
    if (!link.references.empty()) {
      note += "  (takes tensors from " + Counted(link.references.size(), "more version") + ", marked ref)";
    }
    for (const ContentId& r : link.references) referenced.emplace(r, link.id);
    if (auto by = referenced.find(link.id); by != referenced.end()) {
      note += "  (ref of " + by->second.Hex().substr(0, 12) + ")";
    }
    std::printf("  %*s%s %-5s %10s -> %10s %8s%s\n", 2 * link.depth, "", link.id.Hex().c_str(),
                link.delta ? "delta" : "base", HumanBytes(link.raw_size).c_str(), HumanBytes(link.object_size).c_str(),
                Percent(link.object_size, link.raw_size).c_str(), note.c_str());
  }));
  if (!named) {
    // A content id: its raw size from the object, its format from its bytes.
    ZIPNN_ASSIGN_OR_RETURN(store::ChainLink top, store::ReadLink(store, *id));
    named = store::Pointer{*id, top.raw_size, ""};
  }
  ZIPNN_RETURN_IF_ERROR(PrintTensors(context, store, *named, a.what, a.tensors));
  std::printf("\n");
  return PrintObjectReport(store.objects.PathOf(*id));
}

}  // namespace

Action SetupShow(CLI::App& sub) {
  auto a = std::make_shared<ShowArgs>();
  sub.add_option("object", a->what,
                 "A content id, <rev>:<path> of a tracked checkpoint, or a path (HEAD's version of it)")
      ->required();
  sub.add_flag("-t,--tensors", a->tensors,
               "List the tensors (name, dtype, shape, bytes), read without a whole restore");
  return [a] { return RunShow(*a); };
}

}  // namespace zipnn::cmd
