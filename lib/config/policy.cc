#include "lib/config/policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <optional>
#include <iterator>
#include <vector>

#include "lib/base/closest.h"
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
    return Bad(source, key,
               "must be from " + std::to_string(lo) + " to " + std::to_string(hi) + ", not " + std::to_string(v));
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
  const size_t power = unit.empty()       ? 0
                       : unit.size() == 1 ? kUnits.find(static_cast<char>(std::tolower(unit[0]))) + 1
                                          : 0;
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

// ", not 'value'" for a value given, to end an error.
std::string Not(const std::string& value) { return value.empty() ? "" : ", not '" + value + "'"; }

const char* const kKeys[] = {"base_interval", "newest",  "delta_against", "max_chain", "min_gain", "delta_transform",
                             "chunk_size",    "threads", "zstd_level",    "series",    "raw_cache",
                             "parents",       "retention"};

// "2026-11-01" (midnight UTC) as seconds since the epoch.
std::optional<int64_t> ParseDate(const std::string& text) {
  int y = 0, m = 0, d = 0;
  char tail = 0;
  if (text.size() != 10 || std::sscanf(text.c_str(), "%4d-%2d-%2d%c", &y, &m, &d, &tail) != 3) return std::nullopt;
  if (y < 1970 || y > 9999 || m < 1 || m > 12 || d < 1 || d > 31) return std::nullopt;
  struct tm t = {};
  t.tm_year = y - 1900;
  t.tm_mon = m - 1;
  t.tm_mday = d;
  const time_t at = timegm(&t);
  struct tm back = {};
  if (at < 0 || gmtime_r(&at, &back) == nullptr || back.tm_mday != d) return std::nullopt;  // 2026-02-30
  return static_cast<int64_t>(at);
}

// "30 days", "2 weeks", "1 day" as seconds.
std::optional<int64_t> ParseAge(const std::string& text) {
  long long n = -1;
  char unit[16] = {};
  if (std::sscanf(text.c_str(), "%lld %15s", &n, unit) != 2 || n < 0 || n > 100000) return std::nullopt;
  const std::string u = unit;
  if (u == "day" || u == "days") return static_cast<int64_t>(n) * 86400;
  if (u == "week" || u == "weeks") return static_cast<int64_t>(n) * 7 * 86400;
  return std::nullopt;
}

// `key` (at `where`) is none of `keys`, which are `what`: said with the
// one meant when it is a slip of the fingers, then all of them.
template <size_t N>
Status UnknownKey(const std::string& source, const std::string& where, const std::string& key,
                  const char* const (&keys)[N], const std::string& what) {
  const std::vector<std::string> known(std::begin(keys), std::end(keys));
  const std::vector<std::string> closest = ClosestWords(key, known);
  std::string listed;
  for (const std::string& k : known) listed += (listed.empty() ? "" : ", ") + k;
  return Bad(source, where,
             "is not a " + what + (closest.empty() ? "" : " (did you mean '" + closest.front() + "'?)") +
                 "; the keys are " + listed);
}

// One entry of `retention`.
Result<Policy::RetentionRule> ReadRetentionRule(const YAML::Node& v, const std::string& source) {
  const std::string key = "retention";
  constexpr const char* kShape =
      "must be a list of rules such as {checkpoints: 'out/**', keep_newest: 3, rest: thin, precision: absolute 23}";
  if (!v.IsMap()) return Bad(source, key, kShape);
  Policy::RetentionRule rule;
  bool rest_set = false, precision_set = false;
  static const char* const kRuleKeys[] = {"checkpoints", "keep_newest", "keep_every", "keep_tagged",
                                          "keep_since",  "keep",        "rest",       "precision"};
  for (const auto& item : v) {
    const std::string k = item.first.IsScalar() ? item.first.as<std::string>() : "";
    const YAML::Node& value = item.second;
    const std::string where = "retention: " + k;
    if (k == "checkpoints") {
      rule.checkpoints = value.IsScalar() ? value.as<std::string>() : "";
      if (rule.checkpoints.empty() || rule.checkpoints.size() > kMaxSeriesPatternLength) {
        return Bad(source, where, "must be a glob of checkpoint paths such as 'out/**'");
      }
    } else if (k == "keep_newest") {
      ZIPNN_ASSIGN_OR_RETURN(int64_t n, Integer(value, source, where, 0, 1000000));
      rule.keep_newest = static_cast<uint32_t>(n);
    } else if (k == "keep_every") {
      ZIPNN_ASSIGN_OR_RETURN(int64_t n, Integer(value, source, where, 0, 1000000));
      rule.keep_every = static_cast<uint32_t>(n);
    } else if (k == "keep_tagged") {
      bool b;
      if (!value.IsScalar() || !YAML::convert<bool>::decode(value, b)) return Bad(source, where, "must be true or false");
      rule.keep_tagged = b;
    } else if (k == "keep_since") {
      const std::string text = value.IsScalar() ? value.as<std::string>() : "";
      if (auto date = ParseDate(text)) {
        rule.keep_since_date = *date;
      } else if (auto age = ParseAge(text)) {
        rule.keep_since_age = *age;
      } else {
        return Bad(source, where, "must be a date such as 2026-11-01 or an age such as '30 days'" + Not(text));
      }
      rule.keep_since_text = text;
    } else if (k == "keep") {
      if (!value.IsSequence()) return Bad(source, where, "must be a list of versions such as 'v1.0:out/model.pt'");
      for (const auto& named : value) {
        const std::string text = named.IsScalar() ? named.as<std::string>() : "";
        if (text.find(':') == std::string::npos || text.size() > kMaxSeriesPatternLength) {
          return Bad(source, where, "must be a list of versions such as 'v1.0:out/model.pt'" + Not(text));
        }
        rule.keep.push_back(text);
      }
    } else if (k == "rest") {
      const std::string text = value.IsScalar() ? value.as<std::string>() : "";
      if (text != "thin" && text != "drop") return Bad(source, where, "must be 'thin' or 'drop'" + Not(text));
      rule.drop = text == "drop";
      rest_set = true;
    } else if (k == "precision") {
      const std::string text = value.IsScalar() ? value.as<std::string>() : "";
      Result<codec::Precision> precision = codec::ParsePrecision(text);
      if (!precision.ok()) return Annotate(precision.status(), source + ": '" + where + "'");
      rule.precision = *precision;
      precision_set = true;
    } else {
      return UnknownKey(source, where, k, kRuleKeys, "retention key");
    }
  }
  if (rule.checkpoints.empty()) return Bad(source, key, "rule names no 'checkpoints' glob");
  if (!rest_set) return Bad(source, key, "rule for '" + rule.checkpoints + "' does not say 'rest: thin' or 'rest: drop'");
  if (!rule.drop && !precision_set) {
    return Bad(source, key,
               "rule for '" + rule.checkpoints +
                   "' thins the rest but names no precision (such as 'absolute 23' or 'relative 5')");
  }
  return rule;
}

// Reads one key's value into `p` (a copy the caller keeps only when this
// succeeds: an error may leave it half-written).
Status ReadKey(Policy& p, bool& max_chain_set, const std::string& key, const YAML::Node& v, const std::string& source) {
  if (key == "base_interval") {
    ZIPNN_ASSIGN_OR_RETURN(int64_t n, Integer(v, source, key, 1, 1000000));
    p.base_interval = static_cast<uint32_t>(n);
  } else if (key == "max_chain") {
    ZIPNN_ASSIGN_OR_RETURN(int64_t n, Integer(v, source, key, 0, kMaxChainLimit));
    p.max_chain = static_cast<uint32_t>(n);
    max_chain_set = true;
  } else if (key == "chunk_size") {
    ZIPNN_ASSIGN_OR_RETURN(int64_t n, Integer(v, source, key, 4096, 64 << 20));
    if (n % 8 != 0) return Bad(source, key, "must be a multiple of 8");
    p.chunk_size = static_cast<uint32_t>(n);
  } else if (key == "threads") {
    ZIPNN_ASSIGN_OR_RETURN(int64_t n, Integer(v, source, key, 0, 4096));
    p.threads = static_cast<int>(n);
  } else if (key == "zstd_level") {
    ZIPNN_ASSIGN_OR_RETURN(int64_t n, Integer(v, source, key, 1, 22));
    p.zstd_level = static_cast<int>(n);
  } else if (key == "min_gain") {
    double g;
    if (!v.IsScalar() || !YAML::convert<double>::decode(v, g)) return Bad(source, key, "must be a number");
    if (!(g >= 0 && g < 1)) return Bad(source, key, "must be from 0 up to (not including) 1");
    p.min_gain = g;
  } else if (key == "series") {
    if (!v.IsSequence()) return Bad(source, key, "must be a list of patterns such as 'runs/*/ckpt-{step}/model.pt'");
    if (v.size() > kMaxSeriesPatterns) {
      return Bad(source, key,
                 "lists " + std::to_string(v.size()) + " patterns; at most " + std::to_string(kMaxSeriesPatterns) +
                     " are allowed");
    }
    for (const auto& item : v) {
      if (!item.IsScalar()) return Bad(source, key, "must be a list of patterns such as 'runs/*/ckpt-{step}/model.pt'");
      const std::string pattern = item.as<std::string>();
      if (pattern.size() > kMaxSeriesPatternLength) {
        // Named by its start: the whole of it could fill a terminal.
        return InvalidArgument(source + ": series pattern '" + pattern.substr(0, 40) + "...' is " +
                               std::to_string(pattern.size()) + " characters long; at most " +
                               std::to_string(kMaxSeriesPatternLength) + " are allowed");
      }
      Status checked = series::CheckPattern(pattern);
      if (!checked.ok()) return Annotate(checked, source);
      p.series.push_back(pattern);
    }
  } else if (key == "parents") {
    constexpr const char* kShape = "must map globs of checkpoints to the file or folder they were trained from, "
                                   "such as 'ft/**': out/checkpoint-250";
    if (!v.IsMap()) return Bad(source, key, kShape);
    if (v.size() > kMaxSeriesPatterns) {
      return Bad(source, key,
                 "lists " + std::to_string(v.size()) + " globs; at most " + std::to_string(kMaxSeriesPatterns) +
                     " are allowed");
    }
    for (const auto& item : v) {
      if (!item.first.IsScalar() || !item.second.IsScalar()) return Bad(source, key, kShape);
      Policy::ParentRule rule{item.first.as<std::string>(), item.second.as<std::string>()};
      while (rule.parent.size() > 1 && rule.parent.back() == '/') rule.parent.pop_back();
      if (rule.checkpoints.empty() || rule.parent.empty()) return Bad(source, key, kShape);
      if (rule.checkpoints.size() > kMaxSeriesPatternLength || rule.parent.size() > kMaxSeriesPatternLength) {
        return Bad(source, key,
                   "holds an entry of over " + std::to_string(kMaxSeriesPatternLength) + " characters");
      }
      p.parents.push_back(std::move(rule));
    }
  } else if (key == "retention") {
    if (!v.IsSequence()) return Bad(source, key, "must be a list of rules such as {checkpoints: 'out/**', keep_newest: 3, rest: drop}");
    if (v.size() > kMaxSeriesPatterns) {
      return Bad(source, key,
                 "lists " + std::to_string(v.size()) + " rules; at most " + std::to_string(kMaxSeriesPatterns) +
                     " are allowed");
    }
    for (const auto& item : v) {
      ZIPNN_ASSIGN_OR_RETURN(Policy::RetentionRule rule, ReadRetentionRule(item, source));
      p.retention.push_back(std::move(rule));
    }
  } else if (key == "raw_cache") {
    ZIPNN_ASSIGN_OR_RETURN(p.raw_cache, Size(v, source, key));
  } else if (key == "delta_transform") {
    const std::string s = v.IsScalar() ? v.as<std::string>() : "";
    const Result<codec::TransformPolicy> t = codec::ParseTransformPolicy(s);
    if (!t.ok()) return Bad(source, key, "must be " + Alternatives(codec::TransformPolicyNames(), "'") + Not(s));
    p.delta_transform = *t;
  } else if (key == "newest") {
    const std::string s = v.IsScalar() ? v.as<std::string>() : "";
    if (s == "whole")
      p.newest = Newest::kWhole;
    else if (s == "delta")
      p.newest = Newest::kDelta;
    else
      return Bad(source, key, "must be 'whole' or 'delta'" + Not(s));
  } else if (key == "delta_against") {
    const std::string s = v.IsScalar() ? v.as<std::string>() : "";
    if (s == "previous")
      p.delta_against = DeltaAgainst::kPrevious;
    else if (s == "base")
      p.delta_against = DeltaAgainst::kBase;
    else
      return Bad(source, key, "must be 'previous' or 'base'" + Not(s));
  }
  return OkStatus();
}

}  // namespace

Stretch StretchOf(const Policy& policy) {
  Stretch s;
  const uint32_t between = policy.base_interval - 1;  // versions between two bases
  if (policy.delta_against == DeltaAgainst::kBase) {
    s.forward = policy.max_chain > 0 ? between : 0;
    s.against_base = true;
    return s;
  }
  s.forward = std::min(policy.max_chain, between - between / 2);
  s.reverse = std::min(policy.max_chain, between - s.forward);
  return s;
}

Policy WithBaseInterval(Policy policy, uint32_t k) {
  const bool chain_by_default = policy.max_chain == DefaultMaxChain(policy.base_interval, policy.newest);
  policy.base_interval = k;
  if (chain_by_default) policy.max_chain = DefaultMaxChain(k, policy.newest);
  return policy;
}

int EffectiveThreads(const Policy& policy, int cores) {
  cores = std::max(cores, 1);
  return policy.threads > 0 ? std::min(policy.threads, cores) : cores;
}

LoadedPolicy ParsePolicyLenient(const std::string& yaml, const std::string& source) {
  LoadedPolicy loaded;
  Policy& p = loaded.policy;
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    loaded.warnings.push_back(source + ": not valid YAML (line " + std::to_string(e.mark.line + 1) + "): " + e.msg);
    return loaded;
  }
  if (root.IsNull()) return loaded;  // an empty file
  if (!root.IsMap()) {
    loaded.warnings.push_back(source + ": must be a mapping of keys to values");
    return loaded;
  }
  bool max_chain_set = false;
  for (const auto& item : root) {
    if (!item.first.IsScalar()) {
      loaded.warnings.push_back(source + ": keys must be names");
      continue;
    }
    const std::string key = item.first.as<std::string>();
    const bool known = std::any_of(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return key == k; });
    Policy trial = p;
    bool trial_chain = max_chain_set;
    Status s = known ? ReadKey(trial, trial_chain, key, item.second, source)
                     : UnknownKey(source, key, key, kKeys, "policy key");
    if (s.ok()) {
      p = std::move(trial);
      max_chain_set = trial_chain;
    } else {
      loaded.warnings.push_back(s.message());
    }
  }
  if (!max_chain_set) p.max_chain = DefaultMaxChain(p.base_interval, p.newest);
  return loaded;
}

Result<Policy> ParsePolicy(const std::string& yaml, const std::string& source) {
  LoadedPolicy loaded = ParsePolicyLenient(yaml, source);
  if (!loaded.warnings.empty()) return InvalidArgument(loaded.warnings.front());
  return loaded.policy;
}

Result<Policy> LoadPolicy(const std::string& path) {
  if (!FileExists(path)) return Policy{};
  ZIPNN_ASSIGN_OR_RETURN(std::vector<uint8_t> text, ReadWholeFile(path));
  return ParsePolicy(std::string(text.begin(), text.end()), path);
}

LoadedPolicy LoadPolicyLenient(const std::string& path) {
  if (!FileExists(path)) return LoadedPolicy{};
  auto text = ReadWholeFile(path);
  if (!text.ok()) {
    LoadedPolicy loaded;
    loaded.warnings.push_back(path + ": cannot be read (" + text.status().message() + ")");
    return loaded;
  }
  return ParsePolicyLenient(std::string(text->begin(), text->end()), path);
}

}  // namespace zipnn::config
