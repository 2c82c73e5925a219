// What may be printed of a URL or of a message that carries one: the one
// place that takes secrets out of text (docs/reliability.md, "Remote
// links and secrets"). A URL keeps its scheme, host, port and path; its
// user and password (a token is often the user alone) go, and so does
// the value of every query parameter (a presigned link's signature,
// credential and token are query values). An Authorization header keeps
// its name only. Pure functions; thread-safe.
#pragma once

#include <string>

namespace zipnn {

// What stands where a secret was.
inline constexpr char kRedacted[] = "REDACTED";

// `url` without its userinfo, and with each query value replaced by
// kRedacted ("https://host/o?X-Amz-Signature=REDACTED&x=REDACTED").
// Text without "://" is returned as it is.
std::string RedactUrl(const std::string& url);

// `text` with every URL in it (a run of characters from a "scheme://" up
// to a space, a quote, an angle bracket or the end, without the
// punctuation that ends it: ":,.;)]") as RedactUrl gives it,
// and the value of every "Authorization" header or field in it replaced
// by kRedacted. For any line printed that may carry a URL or a header:
// messages, log lines, `git zipnn env`.
std::string RedactSecrets(const std::string& text);

}  // namespace zipnn
