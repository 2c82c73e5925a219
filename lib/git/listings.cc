#include "lib/git/listings.h"

#include <optional>

#include "lib/git/children.h"
#include "lib/git/discover.h"
#include "lib/git/git.h"
#include "lib/git/setup.h"
#include "lib/git/textconv_cache.h"
#include "lib/store/pointer.h"

namespace zipnn::git {

namespace {

// Two clones list the same checkpoint the same way; a failure gives way
// to a listing.
std::string MergeListing(const std::string& ours, const std::string& theirs) {
  return IsListingFailure(ours) && !IsListingFailure(theirs) ? theirs : ours;
}

// A listing far bigger than any checkpoint's (a line per tensor) is not
// one.
constexpr size_t kMaxListing = size_t{16} << 20;

// `config`, when given, holds kStartKeys already (read by the caller).
std::optional<TextconvCache> OpenCache(const ConfigSnapshot* config) {
  if (config != nullptr) return TextconvCache::Open(kDriver, *config);
  auto read = ConfigSnapshot::Read(kStartKeys);
  if (!read.ok()) return std::nullopt;
  return TextconvCache::Open(kDriver, *read);
}

// Whether `listing` is one textconv would print for the pointer blob
// `blob`: the blob is here and ListingFitsPointer.
bool Fits(const std::string& blob, const std::string& listing) {
  auto text = ReadBlob(blob, store::kMaxPointerBytes);
  return text.ok() && *text && ListingFitsPointer(**text, listing);
}

}  // namespace

bool ListingFitsPointer(const std::string& pointer_text, const std::string& listing) {
  if (!store::LooksLikePointer(pointer_text)) return false;
  auto pointer = store::ParsePointer(pointer_text);
  if (!pointer.ok()) return false;
  const std::string head = "checkpoint " + pointer->id.Hex() + ": " + std::to_string(pointer->size) + " bytes";
  return listing.rfind(head, 0) == 0 && listing.size() > head.size() && listing[head.size()] == ',';
}

const UnionRef kListings = {"refs/zipnn/listings", "listings", "tensor listings", MergeListing};

Status KeepListings(const std::string& remote, const std::vector<std::string>& blobs, const ConfigSnapshot* config) {
  if (!CanTrack(remote)) return OkStatus();
  std::optional<TextconvCache> cache = OpenCache(config);
  if (!cache) return OkStatus();
  RefFiles files;
  for (const std::string& blob : blobs) {
    std::optional<std::string> note = cache->NoteOfBlob(blob);
    if (note && !IsListingFailure(*note)) files[blob] = std::move(*note);
  }
  if (files.empty()) return OkStatus();
  // On top of what the remote held when last seen, so that the push need
  // not merge again unless another landed meanwhile.
  ZIPNN_RETURN_IF_ERROR(MergeUnionRef(kListings, remote));
  return AddToUnionRef(kListings, files);
}

Status PushListings(const std::string& remote) {
  if (!CanTrack(remote)) return OkStatus();
  return PushUnionRefs({&kListings, &kChildren}, remote);
}

Result<size_t> TakeListings(const std::string& remote, const ConfigSnapshot* config, bool prompt) {
  if (!CanTrack(remote)) return size_t{0};
  std::optional<TextconvCache> cache = OpenCache(config);
  if (!cache) return size_t{0};
  if (!FetchedHere(kListings, remote)) {
    ZIPNN_RETURN_IF_ERROR(FetchUnionRefs({&kListings, &kChildren}, remote, prompt));
  }
  ZIPNN_ASSIGN_OR_RETURN(const auto theirs, ListRemoteCopy(kListings, remote));
  size_t taken = 0;
  for (const auto& [blob, listing_blob] : theirs) {
    std::string note_blob;
    const std::optional<std::string> note = cache->NoteOfBlob(blob, &note_blob);
    if (note && (note_blob == listing_blob || !IsListingFailure(*note))) continue;  // held already
    ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> listing, ReadBlob(listing_blob, kMaxListing));
    if (!listing || IsListingFailure(*listing) || !Fits(blob, *listing)) continue;
    cache->AddForBlob(blob, std::move(*listing));
    ++taken;
  }
  ZIPNN_RETURN_IF_ERROR(cache->Write());
  return taken;
}

}  // namespace zipnn::git
