#include "filters/checkpoint_filter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "lib/base/file.h"
#include "lib/base/progress.h"
#include "lib/base/redact.h"
#include "lib/series/series.h"

namespace zipnn::filters {

namespace {

// The first kMaxPointerBytes + 1 bytes (or all): enough to tell a pointer
// from content.
Result<std::string> ReadHead(ByteReader& in) { return ReadUpTo(in, store::kMaxPointerBytes + 1); }

Status Copy(ByteReader& in, ByteSink& out) {
  char buf[1 << 16];
  for (;;) {
    ZIPNN_ASSIGN_OR_RETURN(size_t n, in.Read(buf, sizeof buf));
    if (n == 0) return OkStatus();
    ZIPNN_RETURN_IF_ERROR(out.Append(buf, n));
  }
}

}  // namespace

Status CheckpointFilter::Clean(const std::string& path, ByteReader& content, ByteSink& out) {
  // Ctrl-C during `git add` stops git and this process alike; git then
  // says only that its filter failed.
  SetSignalNote("git-zipnn: stopped while storing " + path +
                "; no half-written file is left (git add stores it again)\n");
  const Status cleaned = cleaner_.Clean(path, content, out);
  SetSignalNote("");
  return cleaned;
}

Status CheckpointFilter::Finish() { return cleaner_.Finish(); }

std::optional<ReadFile> CheckpointFilter::FindCopy(const ContentId& id, const std::string& series) {
  // The work-tree file of a version: one this process restored (git has
  // written it before it asks for the next), or one git holds for it in
  // HEAD or the index (a checkout back to a later commit finds the saves
  // the earlier one kept). It is used only if it still hashes to its id:
  // the user, a hook or the checkout under way may have changed it.
  if (repo_.work_dir.empty()) return std::nullopt;
  {
    std::string path;
    if (const auto it = checked_out_.find(id); it != checked_out_.end()) {
      path = it->second;
    } else if (series_) {
      auto versions = series_->Of(series, /*deep=*/false);
      if (versions.ok()) {
        const auto v =
            std::find_if(versions->begin(), versions->end(), [&](const store::Version& v) { return v.id == id; });
        if (v != versions->end()) path = v->path;
      }
    }
    if (!path.empty()) {
      if (auto file = ReadFile::OpenHolding(repo_.work_dir + "/" + path, id)) return file;
    }
  }
  return std::nullopt;
}

bool CheckpointFilter::DelayedKey::operator<(const DelayedKey& o) const {
  // Steps equal in value may be spelled apart ("100", "0100"): those are
  // two files, ordered by path, never one key.
  if (series::SeriesLess(placed, o.placed)) return true;
  if (series::SeriesLess(o.placed, placed)) return false;
  return path < o.path;
}

bool CheckpointFilter::Delay(const std::string& path, const std::string& content) {
  if (smudge_.leave_pointers || !store::ParsePointer(content).ok()) return false;
  const series::Placed placed = series_ ? series_->rules().Place(path) : series::Rules().Place(path);
  delayed_.insert(DelayedKey{placed, path});
  delayed_pointers_[path] = content;
  return true;
}

std::optional<std::string> CheckpointFilter::NextDelayed() {
  if (delayed_.empty()) return std::nullopt;
  std::string path = delayed_.begin()->path;
  delayed_.erase(delayed_.begin());
  return path;
}

Status CheckpointFilter::NoteOutside(const std::string& path) {
  if (!smudge_.outside_list) return Unsupported("no list of what is written after git's checkout");
  ZIPNN_ASSIGN_OR_RETURN(const std::string list, smudge_.outside_list());
  const int fd = ::open(list.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(list + ": cannot open it to add " + path);
  const std::string entry = path + '\0';
  const Status written = WriteAll(fd, entry.data(), entry.size(), list);
  ::close(fd);
  return written;
}

Status CheckpointFilter::Smudge(const std::string& path, ByteReader& content, ByteSink& out) {
  ZIPNN_ASSIGN_OR_RETURN(std::string head, ReadHead(content));
  // A delayed file, asked for again: git sends no content this time.
  if (const auto it = delayed_pointers_.find(path); it != delayed_pointers_.end()) {
    if (head.empty()) head = it->second;
    delayed_pointers_.erase(it);
  }
  // Anything that is not a valid pointer is checked out as it is: what git
  // holds is then the file (a merge conflict in a pointer shows as text).
  auto parsed = store::ParsePointer(head);
  if (!parsed.ok()) {
    ZIPNN_RETURN_IF_ERROR(out.Append(head.data(), head.size()));
    return Copy(content, out);
  }
  const store::Pointer& pointer = *parsed;
  if (smudge_.leave_pointers) {
    ++pointers_left_;
    return out.Append(head.data(), head.size());
  }
  if (smudge_.outside_above != 0 && pointer.size > smudge_.outside_above) {
    const Status noted = NoteOutside(path);
    if (noted.ok()) {
      if (left_outside_++ == 0) {
        std::fprintf(stderr,
                     "git-zipnn: checkpoints over %s are written once git is done, so that git never holds "
                     "one in memory; if one stays a pointer, `git zipnn pull` writes it\n",
                     HumanBytes(smudge_.outside_above).c_str());
      }
      return out.Append(head.data(), head.size());
    }
    // Not noted, it goes through git as any other.
    std::fprintf(stderr, "git-zipnn: warning: %s; %s goes through git's filter\n", noted.message().c_str(),
                 path.c_str());
  }
  Progress progress("git-zipnn: " + path, pointer.size);
  progress.Update("restoring", 0);
  ProgressSink restored(out, progress, "restoring");
  const std::string series = series_ ? series_->rules().Place(path).name : std::string();
  const store::FindCopy in_work_tree = [this, &series](const ContentId& id) { return FindCopy(id, series); };
  const access::Versions& reader = remote_down_ ? local_versions_ : versions_;
  Status st = reader.Write(pointer, path, restored, in_work_tree);
  if (st.ok()) checked_out_[pointer.id] = path;
  // The remote could not give its objects: the pointer stands in for it,
  // and the other checkpoints this store lacks are not asked for again
  // (each would wait on the same remote).
  const bool unfetched = st.code() == StatusCode::kUnavailable || (remote_down_ && st.code() == StatusCode::kNotFound);
  if (unfetched && restored.done() == 0) {
    if (!remote_down_) {
      std::fprintf(stderr,
                   "git-zipnn: warning: %s; it is left as its pointer, and so is every other checkpoint of this "
                   "checkout that the store here lacks (the remote is not asked again)\n",
                   RedactSecrets(st.message()).c_str());
    } else {
      std::fprintf(stderr, "git-zipnn: warning: %s is left as its pointer (the store here lacks its objects)\n",
                   path.c_str());
    }
    remote_down_ = true;
    ++left_unfetched_;
    return out.Append(head.data(), head.size());
  }
  // A version retention thinned or dropped is never checked out as
  // approximate bytes, nor does it fail the checkout: its pointer stays.
  if (st.code() == StatusCode::kRemoved && restored.done() == 0) {
    std::fprintf(stderr, "git-zipnn: warning: %s; left as its pointer\n", RedactSecrets(st.message()).c_str());
    return out.Append(head.data(), head.size());
  }
  // Nothing written yet: the pointer can stand in for the checkpoint.
  if (!st.ok() && smudge_.keep_pointer_on_error && restored.done() == 0) {
    std::fprintf(stderr, "git-zipnn: warning: %s; %s is left as its pointer (`git zipnn pull` restores it)\n",
                 RedactSecrets(st.message()).c_str(), path.c_str());
    return out.Append(head.data(), head.size());
  }
  if (st.code() == StatusCode::kNotFound && restored.done() == 0) {
    return WithHint(st,
                    "; to check out the other files all the same, set zipnn.skipSmudgeErrors "
                                 "(git -c zipnn.skipSmudgeErrors=true checkout, or clone), then "
                                 "`git zipnn pull` once the object is there");
  }
  return st;
}

}  // namespace zipnn::filters
