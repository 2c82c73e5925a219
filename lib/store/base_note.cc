#include "lib/store/base_note.h"

#include <sys/stat.h>
#include <unistd.h>

#include <sstream>
#include <utility>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/container/format.h"
#include "lib/container/object.h"

namespace zipnn::store {

namespace {

constexpr char kMagic[] = "git-zipnn base 1";
constexpr uint64_t kMaxNotedSize = uint64_t{1} << 50;  // far above any object

// The reasons a note may hold, and the word each is written as.
struct ReasonWord {
  BaseReason reason;
  const char* word;
  bool figure;  // followed by the policy's figure
};
constexpr ReasonWord kReasonWords[] = {
    {BaseReason::kFirst, "first", false},         {BaseReason::kNotStored, "not-stored", false},
    {BaseReason::kDue, "due", true},              {BaseReason::kChain, "chain", true},
    {BaseReason::kNoGain, "no-gain", true},       {BaseReason::kDamagedBase, "damaged-base", false},
    {BaseReason::kNewest, "newest", false},
};

const ReasonWord* WordOf(BaseReason reason) {
  for (const ReasonWord& w : kReasonWords) {
    if (w.reason == reason) return &w;
  }
  return nullptr;
}

// The size of `id`'s object when it is standalone; nullopt when the store
// holds none, or a delta, or one whose header does not read.
std::optional<uint64_t> StandaloneSize(const ObjectStore& objects, const ContentId& id) {
  Result<ReadFile> object = objects.Open(id);
  if (!object.ok()) return std::nullopt;
  Result<container::ObjectInfo> info = container::ReadObjectInfo(*object);
  if (!info.ok() || info->header.kind != container::ObjectKind::kBase || info->content_id != id) return std::nullopt;
  return object->size();
}

Status WriteNoteText(const ObjectStore& objects, const ContentId& id, const std::string& text) {
  const std::string path = BaseNotePath(objects, id);
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(path, /*overwrite=*/true));
  ZIPNN_RETURN_IF_ERROR(out.Append(text.data(), text.size()));
  return out.Commit();
}

}  // namespace

BaseNote NoteOf(BaseReason reason, const config::Policy& policy, uint64_t object_size) {
  return BaseNote{reason, ReasonFigure(reason, policy), object_size};
}

std::string DescribeNote(const BaseNote& note) {
  const std::string text = BaseReasonText(note.reason, note.figure);
  return note.reason == BaseReason::kNewest ? text + " when stored" : text;
}

std::string ReasonWords(const BaseNote& note) {
  const ReasonWord* word = WordOf(note.reason);
  if (word == nullptr) return "first";
  return word->figure ? std::string(word->word) + " " + std::to_string(note.figure) : word->word;
}

std::optional<BaseNote> ParseReasonWords(const std::vector<std::string>& words) {
  const ReasonWord* word = nullptr;
  for (const ReasonWord& w : kReasonWords) {
    if (!words.empty() && words[0] == w.word) word = &w;
  }
  if (word == nullptr || words.size() != (word->figure ? 2u : 1u)) return std::nullopt;
  BaseNote note;
  note.reason = word->reason;
  if (word->figure) {
    const std::optional<uint64_t> figure = DecimalAtMost(words[1], 1000000);
    if (!figure) return std::nullopt;
    note.figure = static_cast<uint32_t>(*figure);
  }
  return note;
}

std::string BaseNoteText(const ContentId& id, const BaseNote& note) {
  std::ostringstream out;
  out << kMagic << "\n";
  out << "version " << id.Hex() << "\n";
  out << "object " << note.object_size << "\n";
  out << "reason " << ReasonWords(note) << "\n";
  return out.str();
}

Result<BaseNote> ParseBaseNote(const std::string& text, const ContentId& id) {
  auto bad = [&](const std::string& why) { return Corruption("base note of " + id.Hex() + ": " + why); };
  if (text.size() > kMaxBaseNoteBytes) return bad("longer than " + std::to_string(kMaxBaseNoteBytes) + " bytes");
  std::vector<std::vector<std::string>> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> words;
    std::istringstream split(line);
    for (std::string w; split >> w;) words.push_back(w);
    lines.push_back(std::move(words));
  }
  if (text.empty() || text.back() != '\n' || lines.size() != 4) return bad("not four lines");
  if (lines[0] != std::vector<std::string>{"git-zipnn", "base", "1"}) return bad("not a base note");
  if (lines[1].size() != 2 || lines[1][0] != "version" || lines[1][1] != id.Hex()) return bad("of another version");
  const std::optional<uint64_t> size = lines[2].size() == 2 && lines[2][0] == "object"
                                           ? DecimalAtMost(lines[2][1], kMaxNotedSize)
                                           : std::nullopt;
  if (!size) return bad("no object size");
  const std::vector<std::string>& reason = lines[3];
  std::optional<BaseNote> note;
  if (!reason.empty() && reason[0] == "reason") note = ParseReasonWords({reason.begin() + 1, reason.end()});
  if (!note) return bad("no reason it knows");
  note->object_size = *size;
  return *note;
}

std::string BaseNotePath(const ObjectStore& objects, const ContentId& id) {
  return objects.PathOf(id) + kBaseNoteSuffix;
}

void WriteBaseNote(const ObjectStore& objects, const ContentId& id, BaseReason reason, const config::Policy& policy) {
  if (reason == BaseReason::kNotBase || reason == BaseReason::kNoGainOrPolicy) return;
  const std::optional<uint64_t> size = StandaloneSize(objects, id);
  if (!size) return;
  (void)WriteNoteText(objects, id, BaseNoteText(id, NoteOf(reason, policy, *size)));
}

void RemoveBaseNote(const ObjectStore& objects, const ContentId& id) {
  ::unlink(BaseNotePath(objects, id).c_str());
}

Status KeepBaseNote(const ObjectStore& objects, const ContentId& id, const std::string& text) {
  ZIPNN_ASSIGN_OR_RETURN(BaseNote note, ParseBaseNote(text, id));
  if (StandaloneSize(objects, id) != note.object_size) {
    return InvalidArgument("base note of " + id.Hex() + ": it explains no standalone object held here");
  }
  return WriteNoteText(objects, id, text);
}

namespace {

// The note of `id`'s object as its text and what it says, when it
// explains the object there now (ReadBaseNote).
std::optional<std::pair<std::string, BaseNote>> ReadNote(const ObjectStore& objects, const ContentId& id) {
  const std::string path = BaseNotePath(objects, id);
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) > kMaxBaseNoteBytes) {
    return std::nullopt;
  }
  Result<std::vector<uint8_t>> bytes = ReadWholeFile(path);
  if (!bytes.ok()) return std::nullopt;
  std::string text(bytes->begin(), bytes->end());
  Result<BaseNote> note = ParseBaseNote(text, id);
  if (!note.ok() || StandaloneSize(objects, id) != note->object_size) return std::nullopt;
  return std::make_pair(std::move(text), *note);
}

}  // namespace

std::optional<std::string> BaseNoteTextOf(const ObjectStore& objects, const ContentId& id) {
  auto read = ReadNote(objects, id);
  if (!read) return std::nullopt;
  return std::move(read->first);
}

std::optional<BaseNote> ReadBaseNote(const ObjectStore& objects, const ContentId& id) {
  auto read = ReadNote(objects, id);
  if (!read) return std::nullopt;
  return read->second;
}

}  // namespace zipnn::store
