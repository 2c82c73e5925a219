#include "lib/store/retention.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>

#include "lib/base/file.h"

namespace zipnn::store {

namespace {

constexpr char kMagic[] = "git-zipnn retained 1";
// A record lists one line per tensor; a checkpoint of a million tensors
// makes one of about 80 MiB. Anything larger is not one of ours.

std::string Hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

std::string Number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Tensor names may hold any byte: '%', control bytes and spaces at the
// ends are written as %XX so that a name is the rest of its line.
std::string Escape(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    const bool edge_space = c == ' ' && (i == 0 || i + 1 == name.size());
    if (c < 0x20 || c == 0x7f || c == '%' || edge_space) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::optional<std::string> Unescape(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size() + 0 || !std::isxdigit(static_cast<unsigned char>(text[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      return std::nullopt;
    }
    out += static_cast<char>(std::strtol(text.substr(i + 1, 2).c_str(), nullptr, 16));
    i += 2;
  }
  return out;
}

std::string Short(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

Result<uint64_t> Unsigned(const std::string& text) {
  if (text.empty() || text.size() > 20 || !std::all_of(text.begin(), text.end(), ::isdigit)) {
    return Corruption("'" + text + "' is not a number");
  }
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno != 0) return Corruption("'" + text + "' is out of range");
  return static_cast<uint64_t>(v);
}

Result<double> Real(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(v >= 0) || v > 1e308) {
    return Corruption("'" + text + "' is not an error size");
  }
  return v;
}

}  // namespace

std::string Day(int64_t seconds) {
  const time_t at = static_cast<time_t>(seconds);
  struct tm t = {};
  gmtime_r(&at, &t);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &t);
  return buf;
}

double Retained::MaxAbs() const {
  double m = 0;
  for (const TensorError& t : tensors) m = std::max(m, t.max_abs);
  return m;
}

double Retained::MaxRel() const {
  double m = 0;
  for (const TensorError& t : tensors) m = std::max(m, t.max_rel);
  return m;
}

std::string Retained::Describe() const {
  if (dropped) return "dropped by retention on " + Day(date);
  return "thinned by retention on " + Day(date) + " (" + precision.Text() + "; max error " + Short(MaxAbs()) +
         " absolute, " + Short(MaxRel()) + " relative)";
}

std::string RecordText(const Retained& r) {
  std::ostringstream out;
  out << kMagic << "\n";
  out << "version " << r.id.Hex() << "\n";
  out << "size " << r.size << "\n";
  out << "state " << (r.dropped ? "dropped" : "thinned") << "\n";
  out << "date " << r.date << "\n";
  if (!r.dropped) {
    out << "approximate " << r.approximate.Hex() << "\n";
    out << "precision " << (r.precision.kind == codec::Precision::Kind::kAbsolute ? "absolute " : "relative ")
        << r.precision.bits << "\n";
    for (const TensorError& t : r.tensors) {
      out << "tensor " << Number(t.max_abs) << " " << Number(t.max_rel) << " " << t.changed << " " << t.values << " "
          << Escape(t.name) << "\n";
    }
  }
  std::string text = out.str();
  text += "check " + Hex64(Checksum64(text.data(), text.size())) + "\n";
  return text;
}

Result<Retained> ParseRecord(const std::string& text, const ContentId& id) {
  auto bad = [&](const std::string& why) { return Corruption("retention record of " + id.Hex() + " is damaged: " + why); };
  const size_t check_at = text.rfind("check ");
  if (check_at == std::string::npos || (check_at > 0 && text[check_at - 1] != '\n') || text.back() != '\n') {
    return bad("no checksum line at its end");
  }
  if (text.substr(check_at + 6, text.size() - check_at - 7) != Hex64(Checksum64(text.data(), check_at))) {
    return bad("its checksum does not match");
  }
  std::istringstream in(text.substr(0, check_at));
  std::string line;
  if (!std::getline(in, line) || line != kMagic) return bad("it does not start with '" + std::string(kMagic) + "'");
  Retained r;
  bool have_version = false, have_state = false;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (key == "version") {
      std::optional<ContentId> v = ContentId::FromHex(value);
      if (!v || *v != id) return bad("it is the record of " + value);
      r.id = *v;
      have_version = true;
    } else if (key == "size") {
      ZIPNN_ASSIGN_OR_RETURN(r.size, Unsigned(value));
    } else if (key == "state") {
      if (value != "thinned" && value != "dropped") return bad("unknown state '" + value + "'");
      r.dropped = value == "dropped";
      have_state = true;
    } else if (key == "date") {
      ZIPNN_ASSIGN_OR_RETURN(uint64_t d, Unsigned(value));
      r.date = static_cast<int64_t>(std::min<uint64_t>(d, INT64_MAX));
    } else if (key == "approximate") {
      std::optional<ContentId> a = ContentId::FromHex(value);
      if (!a) return bad("'" + value + "' is not a content id");
      r.approximate = *a;
    } else if (key == "precision") {
      Result<codec::Precision> p = codec::ParsePrecision(value);
      if (!p.ok()) return bad(p.status().message());
      r.precision = *p;
    } else if (key == "tensor") {
      std::istringstream fields(value);
      std::string a, b, c, d;
      if (!(fields >> a >> b >> c >> d)) return bad("a tensor line lacks fields");
      std::string rest;
      std::getline(fields, rest);
      if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
      TensorError t;
      ZIPNN_ASSIGN_OR_RETURN(t.max_abs, Real(a));
      ZIPNN_ASSIGN_OR_RETURN(t.max_rel, Real(b));
      ZIPNN_ASSIGN_OR_RETURN(t.changed, Unsigned(c));
      ZIPNN_ASSIGN_OR_RETURN(t.values, Unsigned(d));
      std::optional<std::string> name = Unescape(rest);
      if (!name) return bad("a tensor name is badly escaped");
      t.name = std::move(*name);
      r.tensors.push_back(std::move(t));
    } else {
      return bad("unknown line '" + key + "'");
    }
  }
  if (!have_version || !have_state) return bad("it lacks its version or state");
  if (!r.dropped && r.approximate == ContentId()) return bad("a thinned version names no approximate version");
  return r;
}

std::string RecordPath(const ObjectStore& objects, const ContentId& id) { return objects.PathOf(id) + kRecordSuffix; }

Result<std::optional<Retained>> ReadRecord(const ObjectStore& objects, const ContentId& id) {
  const std::string path = RecordPath(objects, id);
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<Retained>();
    return IoError(path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > kMaxRecordBytes) {
    return Corruption(path + " is not a retention record (not a regular file of at most 128 MiB)");
  }
  ZIPNN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadWholeFile(path));
  ZIPNN_ASSIGN_OR_RETURN(Retained r, ParseRecord(std::string(bytes.begin(), bytes.end()), id));
  return std::optional<Retained>(std::move(r));
}

Status WriteRecord(const ObjectStore& objects, const Retained& r) {
  const std::string path = RecordPath(objects, r.id);
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(path.substr(0, path.rfind('/')), /*durable=*/true));
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(path, /*overwrite=*/true));
  const std::string text = RecordText(r);
  ZIPNN_RETURN_IF_ERROR(out.Append(text.data(), text.size()));
  return out.Commit();
}

}  // namespace zipnn::store
