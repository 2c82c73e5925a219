#include "lib/remote/lfs_git.h"

#include <cstdio>
#include <mutex>
#include <utility>

#include "lib/git/discover.h"
#include "lib/git/git.h"
#include "lib/git/object_map.h"
#include "lib/remote/http.h"
#include "lib/remote/lfs.h"

namespace zipnn::remote {

namespace {

// The map as git holds it, read once and kept up to date with what this
// process adds. A version it lacks makes it fetch the remote's copy once.
class GitObjectMap : public lfs::ObjectMap {
 public:
  explicit GitObjectMap(std::string remote) : remote_(std::move(remote)) {}

  Result<std::vector<Entry>> Find(const ContentId& id) override { return Look(id, /*fetch=*/true); }
  Result<std::vector<Entry>> Known(const ContentId& id) override { return Look(id, /*fetch=*/false); }

  Status Add(const Entry& entry) override {
    std::lock_guard<std::mutex> lock(mu_);
    const std::vector<std::string> lines = lfs::MapLines(entry);
    if (held_) {
      held_->operator[](entry.id.Hex()).insert(lines.begin(), lines.end());
    } else {
      ZIPNN_RETURN_IF_ERROR(git::AddToObjectMap({{entry.id.Hex(), {lines.begin(), lines.end()}}}));
    }
    if (lines_) (*lines_)[entry.id.Hex()].insert(lines.begin(), lines.end());
    return OkStatus();
  }

  void Hold() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!held_) held_.emplace();
  }

  // One commit for everything held (none when it holds nothing new).
  Status Write() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!held_) return OkStatus();
    const git::MapLines held = std::move(*held_);
    held_.reset();
    if (held.empty()) return OkStatus();
    return git::AddToObjectMap(held);
  }

 private:
  Result<std::vector<Entry>> Look(const ContentId& id, bool fetch) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!lines_) ZIPNN_RETURN_IF_ERROR(Reread());
    std::vector<Entry> forms = FormsOf(id);
    if (forms.empty() && fetch && !fetched_) {
      fetched_ = true;
      ZIPNN_RETURN_IF_ERROR(git::FetchObjectMap(remote_));
      ZIPNN_RETURN_IF_ERROR(Reread());
      forms = FormsOf(id);
    }
    return forms;
  }

  // The map as git holds it, and what is held to be written.
  Status Reread() {
    ZIPNN_ASSIGN_OR_RETURN(lines_, git::ReadObjectMap());
    if (held_) {
      for (const auto& [key, lines] : *held_) (*lines_)[key].insert(lines.begin(), lines.end());
    }
    return OkStatus();
  }

  std::vector<Entry> FormsOf(const ContentId& id) const {
    const auto it = lines_->find(id.Hex());
    if (it == lines_->end()) return {};
    return lfs::ParseMapLines(id, {it->second.begin(), it->second.end()});
  }

  const std::string remote_;
  std::mutex mu_;
  std::optional<git::MapLines> lines_;
  std::optional<git::MapLines> held_;  // between Hold and Write
  bool fetched_ = false;
};

}  // namespace

Result<std::unique_ptr<RemoteStore>> OpenGitLfsStore(
    const std::string& remote, const std::string& endpoint, const LfsTransfers& transfers,
    std::function<Result<lfs::Grant>(const std::string& operation)> authenticate) {
  lfs::Options o;
  o.endpoint = endpoint;
  o.timeout = transfers.timeout;
  o.low_speed = transfers.low_speed;
  o.max_object_size = transfers.max_object_size;
  o.part_size = transfers.part_size;
  o.connections = transfers.connections;
  o.learnt_limit = [remote, where = http::Redacted(endpoint)](uint64_t limit) {
    const std::string key = "remote." + remote + ".zipnnMaxObjectSize";
    const Result<std::optional<std::string>> named = git::ConfigGet("remote." + remote + ".url");
    const bool kept = named.ok() && named->has_value() && git::ConfigSet("--local", key, std::to_string(limit)).ok();
    std::fprintf(stderr, "git-zipnn: %s takes objects of at most %llu bytes: larger ones go up in parts%s\n",
                 where.c_str(), static_cast<unsigned long long>(limit),
                 kept ? (" (kept in git config " + key + ")").c_str() : "");
  };
  o.authenticate = std::move(authenticate);
  // As git sends it to the same URL (http.<url>.extraHeader first).
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> extra, git::ConfigGetForUrl("http.extraheader", endpoint));
  if (extra && !extra->empty()) o.headers.push_back(*extra);
  o.credentials.fill = [](const std::string& url) -> Result<lfs::Credential> {
    ZIPNN_ASSIGN_OR_RETURN(git::Credential c, git::CredentialFill(url));
    return lfs::Credential{c.user, c.password};
  };
  o.credentials.report = [](const std::string& url, const lfs::Credential& c, bool taken) {
    git::CredentialReport(url, git::Credential{c.user, c.password}, taken);
  };
  o.publish = [remote] { return git::PushObjectMap(remote); };
  ZIPNN_ASSIGN_OR_RETURN(git::Folders folders, git::RepositoryFolders());
  o.partial_dir = git::ScratchDirOf(folders.git_dir) + "/lfs-partial";
  return lfs::Remote(http::Redacted(endpoint), std::move(o), std::make_shared<GitObjectMap>(remote));
}

}  // namespace zipnn::remote
