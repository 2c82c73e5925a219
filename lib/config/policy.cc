#include "lib/config/policy.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <set>

#include "lib/base/file.h"
#include "lib/series/series.h"

namespace zipnn::config {

namespace {

Status Bad(const std::string& source, const std::string& key, const std::string& what) {
  return InvalidArgument(source + ": '" + key + "' " + what);
}

// An integer key within [lo, hi].
Result<int64_t> Integer(const YAML::Node& node, const std::string& source, const std::string& key, int64_t lo,
                        int64_t hi) {
  int64_t v;
  if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, v)) {
    return Bad(source, key, "must be a whole number");
  }
  if (v < lo || v > hi) {
    return Bad(source, key, "must be from " + std::to_string(lo) + " to " + std::to_string(hi) + ", not " +
                                std::to_string(v));
  }
  return v;
}

// A size in bytes: a whole number, optionally with k, m, g or t (powers
// of 1024).
Result<uint64_t> Size(const YAML::Node& node, const std::string& source, const std::string& key) {
  const std::string text = node.IsScalar() ? node.as<std::string>() : "";
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const std::string unit = text.substr(digits);
  static const std::string kUnits = "kmgt";
  const size_t power = unit.empty() ? 0 : unit.size() == 1 ? kUnits.find(static_cast<char>(std::tolower(unit[0]))) + 1 : 0;
  if (digits == 0 || digits > 15 || (!unit.empty() && power == 0)) {
    return Bad(source, key, "must be a size such as 0, 500m or 2g");
  }
  uint64_t bytes = std::stoull(text.substr(0, digits));
  for (size_t i = 0; i < power; ++i) {
    if (bytes > (uint64_t{1} << 50)) return Bad(source, key, "is too large");
    bytes <<= 10;
  }
  return bytes;
}

}  // namespace

Result<Policy> ParsePolicy(const std::string& yaml, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(source + ": not valid YAML (line " + std::to_string(e.mark.line + 1) + "): " + e.msg);
  }
  Policy p;
  if (root.IsNull()) return p;  // an empty file
  if (!root.IsMap()) return InvalidArgument(source + ": must be a mapping of keys to values");
  static const std::set<std::string> kKeys = {"base_interval", "delta_against", "max_chain", "min_gain", "chunk_size",
                                              "threads",       "zstd_level",    "series",    "raw_cache"};
  bool max_chain_set = false;
  for (const auto& item : root) {
    if (!item.first.IsScalar()) return InvalidArgument(source + ": keys must be names");
    const std::string key = item.first.as<std::string>();
    const YAML::Node& v = item.second;
    if (kKeys.count(key) == 0) {
      return Bad(source, key, "is not a policy key (base_interval, delta_against, max_chain, min_gain, "
                              "chunk_size, threads, zstd_level, series, raw_cache)");
    }
    if (key == "base_interval") {
      ASSIGN_OR_RETURN(int64_t n, Integer(v, source, key, 1, 1000000));
      p.base_interval = static_cast<uint32_t>(n);
    } else if (key == "max_chain") {
      ASSIGN_OR_RETURN(int64_t n, Integer(v, source, key, 0, 1000000));
      p.max_chain = static_cast<uint32_t>(n);
      max_chain_set = true;
    } else if (key == "chunk_size") {
      ASSIGN_OR_RETURN(int64_t n, Integer(v, source, key, 4096, 64 << 20));
      if (n % 8 != 0) return Bad(source, key, "must be a multiple of 8");
      p.chunk_size = static_cast<uint32_t>(n);
    } else if (key == "threads") {
      ASSIGN_OR_RETURN(int64_t n, Integer(v, source, key, 0, 4096));
      p.threads = static_cast<int>(n);
    } else if (key == "zstd_level") {
      ASSIGN_OR_RETURN(int64_t n, Integer(v, source, key, 1, 22));
      p.zstd_level = static_cast<int>(n);
    } else if (key == "min_gain") {
      double g;
      if (!v.IsScalar() || !YAML::convert<double>::decode(v, g)) return Bad(source, key, "must be a number");
      if (!(g >= 0 && g < 1)) return Bad(source, key, "must be from 0 up to (not including) 1");
      p.min_gain = g;
    } else if (key == "series") {
      if (!v.IsSequence()) return Bad(source, key, "must be a list of patterns such as 'runs/*/ckpt-{step}/model.pt'");
      for (const auto& item : v) {
        if (!item.IsScalar()) return Bad(source, key, "must be a list of patterns such as 'runs/*/ckpt-{step}/model.pt'");
        const std::string pattern = item.as<std::string>();
        Status checked = series::CheckPattern(pattern);
        if (!checked.ok()) return InvalidArgument(source + ": " + checked.message());
        p.series.push_back(pattern);
      }
    } else if (key == "raw_cache") {
      ASSIGN_OR_RETURN(p.raw_cache, Size(v, source, key));
    } else if (key == "delta_against") {
      const std::string s = v.IsScalar() ? v.as<std::string>() : "";
      if (s == "previous") p.delta_against = DeltaAgainst::kPrevious;
      else if (s == "base") p.delta_against = DeltaAgainst::kBase;
      else return Bad(source, key, "must be 'previous' or 'base'");
    }
  }
  if (!max_chain_set) p.max_chain = DefaultMaxChain(p.base_interval);
  return p;
}

Result<Policy> LoadPolicy(const std::string& path) {
  if (!FileExists(path)) return Policy{};
  ASSIGN_OR_RETURN(std::vector<uint8_t> text, ReadWholeFile(path));
  return ParsePolicy(std::string(text.begin(), text.end()), path);
}

}  // namespace zipnn::config
