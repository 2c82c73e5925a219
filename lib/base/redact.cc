#include "lib/base/redact.h"

#include <cctype>
#include <cstring>

namespace zipnn {

namespace {

// Where a URL that starts at `from` ends in free text.
size_t UrlEnd(const std::string& text, size_t from) {
  size_t end = from;
  while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end])) &&
         std::strchr("\"'<>`", text[end]) == nullptr) {
    ++end;
  }
  // Punctuation that ends a sentence or a clause ends the URL too
  // ("GET <url>: refused", "(<url>)").
  while (end > from && std::strchr(":,.;)]", text[end - 1]) != nullptr) --end;
  return end;
}

bool SchemeChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.'; }

bool EqualsNoCase(const std::string& text, size_t at, const char* word) {
  const size_t n = std::strlen(word);
  if (at + n > text.size()) return false;
  for (size_t i = 0; i < n; ++i) {
    if (std::tolower(static_cast<unsigned char>(text[at + i])) != std::tolower(static_cast<unsigned char>(word[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string RedactUrl(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t host = scheme + 3;
  // The authority ends at the first '/', '?' or '#'; a userinfo is what
  // comes before its last '@'.
  const size_t authority_end = std::min(url.find_first_of("/?#", host), url.size());
  const size_t at = url.rfind('@', authority_end == 0 ? 0 : authority_end - 1);
  std::string out = url.substr(0, host);
  out += (at != std::string::npos && at >= host && at < authority_end) ? url.substr(at + 1, authority_end - at - 1)
                                                                       : url.substr(host, authority_end - host);
  const size_t query = url.find('?', authority_end);
  const size_t fragment = url.find('#', authority_end);
  const size_t path_end = std::min(query, fragment);
  out += url.substr(authority_end, (path_end == std::string::npos ? url.size() : path_end) - authority_end);
  if (query != std::string::npos && query < fragment) {
    out += '?';
    const size_t params_end = fragment == std::string::npos ? url.size() : fragment;
    const std::string params = url.substr(query + 1, params_end - query - 1);
    size_t from = 0;
    while (from <= params.size()) {
      size_t amp = params.find('&', from);
      if (amp == std::string::npos) amp = params.size();
      const std::string param = params.substr(from, amp - from);
      const size_t eq = param.find('=');
      if (from > 0) out += '&';
      // A bare word may be a secret too (a token given as "?<token>").
      out += eq == std::string::npos ? (param.empty() ? "" : kRedacted) : param.substr(0, eq + 1) + kRedacted;
      from = amp + 1;
    }
  }
  // A fragment is never sent; it is dropped, whatever it holds.
  return out;
}

std::string RedactSecrets(const std::string& text) {
  std::string out;
  size_t done = 0;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 3, "://") == 0) {
      size_t start = i;
      while (start > done && SchemeChar(text[start - 1])) --start;
      if (start < i) {
        const size_t end = UrlEnd(text, i);
        out += text.substr(done, start - done);
        out += RedactUrl(text.substr(start, end - start));
        done = i = end;
        continue;
      }
    }
    if (EqualsNoCase(text, i, "authorization") && (i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1])))) {
      // "Authorization: Basic x", "authorization=x", "\"Authorization\": \"Bearer x\"": the name and
      // what joins it to its value stay; the value, to the end of its line or string, goes.
      size_t v = i + std::strlen("authorization");
      bool joined = false;  // by ':' or '=': a header or field, not the word in a sentence
      while (v < text.size() && (text[v] == '"' || text[v] == ':' || text[v] == '=' || text[v] == ' ')) {
        joined = joined || text[v] == ':' || text[v] == '=';
        ++v;
      }
      if (joined) {
        size_t end = v;
        while (end < text.size() && text[end] != '\n' && text[end] != '"' && text[end] != ',' && text[end] != '}') {
          ++end;
        }
        out += text.substr(done, v - done);
        out += kRedacted;
        done = i = end;
        continue;
      }
    }
    ++i;
  }
  out += text.substr(done);
  return out;
}

}  // namespace zipnn
