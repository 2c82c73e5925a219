// A Git LFS server as an object store: the one that hosts the repository
// (GitHub, GitLab, Gitea, the Hugging Face Hub), spoken to through the
// Git LFS batch API with the basic transfer adapter.
//
// An LFS server names what it holds by the SHA-256 of the bytes (the
// "oid"), and checks an upload against it. git-zipnn names a version by
// the hash of the checkpoint it restores to, and stores it in some form
// (whole, or a delta on a base). So each object goes up as an LFS object
// of its own bytes, and an ObjectMap says which oid holds the object for
// which version; the map travels in git (lib/git/object_map.h), so every
// clone finds what anyone pushed. The server cannot delete, so what it
// holds stays: a version sent whole is not re-stored there as a delta
// (Demote keeps the whole one).
//
// A server may refuse objects over a size (GitHub's 2 GiB): an object
// larger than the limit goes up as several LFS objects, its parts, each
// at most the limit, and the map names them in order (docs/remotes.md,
// "Objects in parts"). The limit is set per remote, known for the big
// hosts, and learnt from the server's own refusal. A server that offers
// the Hugging Face Hub's "multipart" adapter takes one LFS object in
// chunks, each to a link of its own.
//
// Nothing from the server is trusted: an object fetched from it takes its
// name only once decoded to its id (remote_store.h), whatever the oid
// said; its size must be the one the map gives, and no more than its
// checkpoint can take.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/rate.h"
#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/container/format.h"
#include "lib/remote/remote_store.h"
#include "lib/store/base_note.h"

namespace zipnn::lfs {

// An object as the server knows it.
struct Oid {
  std::string sha256;  // 64 hex digits
  uint64_t size = 0;
};

// Where each version's object is on the server. Thread-safe.
class ObjectMap {
 public:
  struct Entry {
    ContentId id;  // the version (the checkpoint's content id)
    // The stored form: its SHA-256 and size, which name it; the LFS
    // object that holds it unless it went up in parts.
    Oid oid;
    bool delta = false;
    ContentId base;  // a delta's base
    // The SHA-256 of the object's frame (FrameDigest), recorded by the
    // push that proved the object; empty when the map has none (an
    // object pushed before frames were recorded). Parts of the object are
    // read where it lies only when it is known (OpenRanges).
    std::string frame;
    // For a whole form: why it is standalone, as its base note says
    // (its object_size unused: the form's oid says it); none when the map
    // has no note.
    std::optional<store::BaseNote> note;
    // The LFS objects holding the form in parts, in order, when it went
    // up so (larger than the server takes in one); empty when `oid` is
    // one LFS object.
    std::vector<Oid> parts;
  };
  virtual ~ObjectMap() = default;
  // Every stored form of `id` the map knows of (several when clones
  // pushed it in different forms); empty when it knows none.
  virtual Result<std::vector<Entry>> Find(const ContentId& id) = 0;
  // The same from what this clone knows already, without asking the
  // remote for its copy of the map (a push's question, where not knowing
  // costs only an offer the server answers by the object's bytes).
  virtual Result<std::vector<Entry>> Known(const ContentId& id) { return Find(id); }
  // Records that the server holds `entry.oid` for `entry.id`.
  virtual Status Add(const Entry& entry) = 0;
  // Between the two, Add keeps what it records (Find sees it) and Write
  // writes all of it at once; Write without Hold writes nothing.
  virtual void Hold() {}
  virtual Status Write() { return OkStatus(); }
};

struct Credential {
  std::string user;
  std::string password;
};

// How a request gets credentials when the server asks for them (git's
// credential helpers: lib/git's CredentialFill and CredentialReport).
struct CredentialSource {
  // Credentials for `url`; an error when there are none to be had.
  std::function<Result<Credential>(const std::string& url)> fill;
  // Whether the server took them (so a helper keeps or forgets them).
  std::function<void(const std::string& url, const Credential& credential, bool taken)> report;
};

// Where to send API requests for one operation, and with which headers:
// what ssh's `git-lfs-authenticate <path> <operation>` answers.
struct Grant {
  std::string href;
  std::vector<std::string> headers;
  double expires_in = 0;  // seconds it holds; 0: as long as the process
};

struct Options {
  // The LFS API: "https://host/owner/repo.git/info/lfs".
  std::string endpoint;
  // For a repository reached over ssh: asked for a Grant before the first
  // request of each operation ("upload", "download"), and again once it
  // expires; its href and headers then take the place of `endpoint` and
  // `headers`.
  std::function<Result<Grant>(const std::string& operation)> authenticate;
  // Headers every API request carries (git's http.extraHeader, or what
  // ssh's git-lfs-authenticate answered). Never printed.
  std::vector<std::string> headers;
  CredentialSource credentials;
  // Seconds a request may go without a byte moving, and the slowest an
  // object may go up or come down.
  double timeout = 60;
  LowSpeed low_speed = kDefaultLowSpeed;
  // The most bytes the server takes in one LFS object (0: no limit
  // known): a larger object goes up in parts of at most this size.
  uint64_t max_object_size = 0;
  // Objects larger than this go up in parts of it too (0: only over
  // max_object_size), so that the parts of one object move at once and
  // a push or fetch cut short moves again only the parts it had not.
  // With several connections, an object of more than 4 MiB goes up in
  // as many parts as there are connections, each of at least 4 MiB.
  uint64_t part_size = 0;
  // How many uploads and downloads of LFS objects may run at once, the
  // parts of one object included.
  int connections = 1;
  // Called when the server refused an upload for its size and said its
  // limit (a 422 "Size must be less than or equal to N"): the store keeps
  // to that limit from then on, and the caller may remember it.
  std::function<void(uint64_t limit)> learnt_limit;
  // After a push (RemoteStore::Publish): what makes the objects findable
  // by others (the map sent to the git remote). None: nothing to do.
  std::function<Status()> publish;
  // Where downloads of large objects are kept as they come in, so that
  // one cut short (the network, a timeout, a kill) resumes where it
  // stopped; none when empty.
  std::string partial_dir;
};

// The lines of the map for `entry`: "<sha256> <size> whole" or
// "<sha256> <size> delta <base id>", with " parts <n>" after it for a
// form in parts and a line "part <sha256> <i> <part sha256> <part size>"
// for each part (i from 0; a reader that does not know parts skips such
// a form rather than look for an LFS object that is not there); when its
// frame is known,
// "frame <sha256> <frame sha256>" (a line of its own, so that a reader
// that does not know it skips it and still finds the form); for a whole
// form with a base note, "base <sha256> <reason words>".
std::vector<std::string> MapLines(const ObjectMap::Entry& entry);
// The stored forms of version `id` that `lines` (all the map holds for
// it) name, each with its frame and base note where a line gives one; a
// line that is none of these is skipped (a newer git-zipnn's), and so is
// a frame or note of an oid no form names. Of two notes of one form (the
// newest when it was pushed, then why it stayed whole once it was not),
// the one that is not "newest" is taken.
std::vector<ObjectMap::Entry> ParseMapLines(const ContentId& id, const std::vector<std::string>& lines);

// The limit a server's refusal of an upload states ("Size must be less
// than or equal to 2147483648", or "less than N": N - 1); nullopt when
// the message states none.
std::optional<uint64_t> SizeLimitIn(const std::string& message);
// The least limit taken (from a setting or a refusal): parts of 64 KiB.
inline constexpr uint64_t kMinObjectLimit = uint64_t{64} << 10;
// The most parts one object may go up in.
inline constexpr uint64_t kMaxParts = 10000;

// The SHA-256 (hex) of an object's frame: everything but its chunk
// records, that is its header and region table, then its chunk index and
// trailer. The index holds every record's checksum and the trailer the
// content id, so the frame, once known, vouches for the whole object.
Result<std::string> FrameDigest(const ByteSource& object, const container::ObjectInfo& info);
// The Grant in what git-lfs-authenticate printed ({"href": ...,
// "header": {...}, "expires_in": ...}); Corruption when it is not one.
Result<Grant> ParseGrant(const std::string& json_text);

// The LFS endpoint of a git remote's URL, as Git LFS derives it: an
// http(s) URL gets ".git" (unless it ends so) and "/info/lfs"; an ssh URL
// (ssh://[user@]host[:port]/path, or [user@]host:path) names the https
// one of the same host and path. InvalidArgument for other URLs.
Result<std::string> EndpointOf(const std::string& git_url);

// The store on the server at `options.endpoint`, finding and recording
// objects in `map`. `where` names it in messages.
std::unique_ptr<remote::RemoteStore> Remote(std::string where, Options options, std::shared_ptr<ObjectMap> map);

}  // namespace zipnn::lfs
