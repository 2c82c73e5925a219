#include "lib/git/series_versions.h"

#include <algorithm>
#include <map>
#include <set>

#include "lib/git/git.h"
#include "lib/git/pointers.h"

namespace zipnn::git {

Status SeriesVersions::ReadShallow() {
  if (shallow_read_) return OkStatus();
  ZIPNN_ASSIGN_OR_RETURN(std::optional<Oid> head, git_->ResolveCommit("HEAD"));
  std::vector<FileEntry> files;
  if (head) {
    ZIPNN_ASSIGN_OR_RETURN(files, git_->TreeFiles(*head));
  }
  if (!git_->work_dir().empty()) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<FileEntry> staged, git_->IndexFiles());
    files.insert(files.end(), staged.begin(), staged.end());
  }
  for (FileEntry& f : files) {
    shallow_[rules_.Place(f.path).name].push_back(Held{std::move(f.path), f.blob});
  }
  shallow_read_ = true;
  return OkStatus();
}

Status SeriesVersions::ReadHistory() {
  if (history_read_) return OkStatus();
  ZIPNN_ASSIGN_OR_RETURN(std::optional<Oid> head, git_->ResolveCommit("HEAD"));
  if (head) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<CommitInfo> commits, git_->Commits({"HEAD"}));
    // Newest first, each file at the newest commit that has it; reversed
    // below so that the oldest comes first.
    std::vector<std::pair<size_t, FileEntry>> seen;
    ZIPNN_RETURN_IF_ERROR(
        git_->VisitHistoryFiles(commits, [&](size_t commit, const FileEntry& f) { seen.emplace_back(commit, f); }));
    std::stable_sort(seen.begin(), seen.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (auto& [commit, f] : seen) history_[rules_.Place(f.path).name].push_back(Held{std::move(f.path), f.blob});
  }
  history_read_ = true;
  return OkStatus();
}

Result<std::optional<ContentId>> SeriesVersions::PointerIn(const Oid& blob) {
  auto known = pointers_.find(blob);
  if (known != pointers_.end()) return known->second;
  Result<std::optional<store::Pointer>> read = PointerInBlob(*git_, blob);
  if (!read.ok() && read.status().code() == StatusCode::kGit) return read.status();
  // A damaged pointer is no version to build on.
  std::optional<ContentId> id;
  if (read.ok() && *read) id = (*read)->id;
  pointers_.emplace(blob, id);
  return id;
}

Result<std::vector<SeriesFile>> SeriesFilesAt(const series::Rules& rules, const std::string& rev,
                                              const std::string& path, const std::string& cwd) {
  const std::string name = rules.Place(path).name;
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> listed, FilesAt(rev, cwd));
  std::vector<SeriesFile> found;
  for (const std::string& f : listed) {
    series::Placed placed = rules.Place(f);
    if (placed.name == name) found.push_back(SeriesFile{std::move(placed.step), f});
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const SeriesFile& a, const SeriesFile& b) { return series::StepLess(a.step, b.step); });
  return found;
}

Result<std::vector<store::Version>> SeriesVersions::Of(const std::string& name, bool deep) {
  std::vector<store::Version> versions;
  auto add_held = [&](const std::map<std::string, std::vector<Held>>& from) -> Status {
    auto it = from.find(name);
    if (it == from.end()) return OkStatus();
    std::vector<Oid> unread;
    for (const Held& h : it->second) {
      if (pointers_.count(h.blob) == 0) unread.push_back(h.blob);
    }
    ZIPNN_RETURN_IF_ERROR(git_->FetchMissing(unread));  // a partial clone's, all at once
    for (const Held& h : it->second) {
      ZIPNN_ASSIGN_OR_RETURN(std::optional<ContentId> id, PointerIn(h.blob));
      if (id) versions.push_back(store::Version{*id, rules_.Place(h.path).step, h.path});
    }
    return OkStatus();
  };
  if (deep) {
    ZIPNN_RETURN_IF_ERROR(ReadHistory());
    ZIPNN_RETURN_IF_ERROR(add_held(history_));
  }
  ZIPNN_RETURN_IF_ERROR(ReadShallow());
  ZIPNN_RETURN_IF_ERROR(add_held(shallow_));
  auto own = session_.find(name);
  if (own != session_.end()) versions.insert(versions.end(), own->second.begin(), own->second.end());
  store::SortSeries(versions);
  return versions;
}

Result<std::vector<store::Version>> SeriesVersions::Recent(const std::string& name) {
  ZIPNN_RETURN_IF_ERROR(ReadShallow());
  std::vector<store::Version> recent;
  // This process's own first, the latest first: a twin is usually saved
  // right beside its double.
  std::vector<std::pair<size_t, const store::Version*>> own;
  for (const auto& [series, versions] : session_) {
    if (series == name) continue;
    for (const store::Version& v : versions) own.emplace_back(own.size(), &v);
  }
  for (auto it = own.rbegin(); it != own.rend(); ++it) recent.push_back(*it->second);
  std::set<std::string> names;
  for (const auto& [series, held] : shallow_) names.insert(series);
  for (const auto& [series, versions] : session_) names.insert(series);
  names.erase(name);
  for (const std::string& series : names) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<store::Version> versions, Of(series, /*deep=*/false));
    if (!versions.empty()) recent.push_back(versions.back());
  }
  return recent;
}

Result<std::optional<store::Version>> SeriesVersions::At(const std::string& path) {
  const std::string name = rules_.Place(path).name;
  if (const auto own = session_.find(name); own != session_.end()) {
    for (auto v = own->second.rbegin(); v != own->second.rend(); ++v) {
      if (v->path == path) return std::optional<store::Version>(*v);
    }
  }
  // In series order, HEAD's before the index's.
  ZIPNN_ASSIGN_OR_RETURN(std::vector<store::Version> versions, Of(name, /*deep=*/false));
  std::optional<store::Version> at;
  for (const store::Version& v : versions) {
    if (v.path == path) at = v;
  }
  return at;
}

Result<std::optional<std::string>> SeriesVersions::PathOf(const ContentId& id) {
  // This process's versions first: the paths below are read once, and a
  // version stored since (a model's weights, stored just before the
  // training state that holds them in the same add) is among them too.
  for (const auto& [name, versions] : session_) {
    for (const store::Version& v : versions) {
      if (v.id == id) return std::optional<std::string>(v.path);
    }
  }
  if (!paths_) {
    ZIPNN_ASSIGN_OR_RETURN(auto all, All());
    paths_.emplace();
    for (const auto& [name, versions] : all) {
      for (const store::Version& v : versions) paths_->emplace(v.id, v.path);
    }
  }
  const auto it = paths_->find(id);
  if (it == paths_->end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

void SeriesVersions::Add(const std::string& path, const ContentId& id) {
  const series::Placed placed = rules_.Place(path);
  session_[placed.name].push_back(store::Version{id, placed.step, path});
}

Result<std::map<std::string, std::vector<store::Version>>> SeriesVersions::All() {
  ZIPNN_RETURN_IF_ERROR(ReadHistory());
  ZIPNN_RETURN_IF_ERROR(ReadShallow());
  std::vector<std::string> names;
  for (const auto* from : {&history_, &shallow_}) {
    for (const auto& [name, held] : *from) names.push_back(name);
  }
  for (const auto& [name, versions] : session_) names.push_back(name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::map<std::string, std::vector<store::Version>> all;
  for (const std::string& name : names) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<store::Version> versions, Of(name, /*deep=*/true));
    if (!versions.empty()) all.emplace(name, std::move(versions));
  }
  return all;
}

// The characters of a commit's subject a label shows.
constexpr size_t kSubjectInLabel = 24;

Result<std::vector<VersionToRead>> VersionsToAnalyze(const series::Rules& rules, const std::string& path,
                                                     const std::string& range) {
  ZIPNN_ASSIGN_OR_RETURN(const std::string top, TopLevel());
  const std::string rev = range.empty() ? "HEAD" : range;
  // The tip of a range "a..b" is b; of "a.." it is HEAD.
  std::string tip = rev;
  if (size_t dots = rev.find(".."); dots != std::string::npos) {
    tip = rev.substr(dots + (rev.compare(dots, 3, "...") == 0 ? 3 : 2));
    if (tip.empty()) tip = "HEAD";
  }
  // Checked and resolved before git reads any of it ("--output=F..HEAD"
  // would have git log write F).
  if (Status checked = CheckRange(rev, top); !checked.ok()) return InvalidArgument("--rev " + checked.message());
  if (!rules.Place(path).step.empty()) {
    // Every file of its series the range's history holds, each read from
    // the newest commit that holds it: a run that keeps only its last few
    // saves (save_total_limit) deleted the others from the tip, not from
    // history. Only the commits that touch the path's top folder are read.
    const std::string folder = path.substr(0, path.find('/'));
    ZIPNN_ASSIGN_OR_RETURN(std::vector<CommitTouching> commits, CommitsTouching(rev, folder, top));
    std::map<std::string, std::pair<SeriesFile, std::string>> newest;  // path -> the file, its commit
    for (auto c = commits.rbegin(); c != commits.rend(); ++c) {
      ZIPNN_ASSIGN_OR_RETURN(std::vector<SeriesFile> held, SeriesFilesAt(rules, c->commit, path, top));
      for (const SeriesFile& f : held) newest.emplace(f.path, std::make_pair(f, c->commit));
    }
    if (newest.size() > 1) {
      std::vector<std::pair<SeriesFile, std::string>> found;
      for (auto& [p, held] : newest) found.push_back(std::move(held));
      std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
        return series::StepLess(a.first.step, b.first.step);
      });
      std::vector<std::string> paths;
      for (const auto& [f, commit] : found) paths.push_back(f.path);
      const std::vector<std::string> labels = series::Labels(rules, paths);
      std::vector<VersionToRead> versions;
      for (size_t i = 0; i < found.size(); ++i) {
        const auto& [f, commit] = found[i];
        versions.push_back(VersionToRead{labels[i], commit + ":" + f.path, "", commit, f.path});
      }
      return versions;
    }
  }
  std::vector<VersionToRead> versions;
  ZIPNN_ASSIGN_OR_RETURN(std::vector<CommitTouching> history, CommitsTouching(rev, path, top));
  // One path saved over and over: each version by its commit, short, and
  // the start of the commit's subject ("3f2a1bc step 300").
  for (const CommitTouching& c : history) {
    std::string label = c.commit.substr(0, 7);
    if (!c.subject.empty()) label += " " + (c.subject.size() > kSubjectInLabel ? c.subject.substr(0, kSubjectInLabel - 3) + "..." : c.subject);
    versions.push_back(VersionToRead{label, c.commit + ":" + path, c.subject, c.commit, path});
  }
  return versions;
}

}  // namespace zipnn::git
