#include "lib/base/redact.h"

#include <doctest/doctest.h>

namespace zipnn {
namespace {

TEST_CASE("a URL is printed without its user, password or token, and without its query's values") {
  CHECK(RedactUrl("https://alice:ghp_T0KEN@github.com/a/b.git") == "https://github.com/a/b.git");
  CHECK(RedactUrl("https://ghp_T0KEN@github.com/a/b.git") == "https://github.com/a/b.git");
  CHECK(RedactUrl("https://alice:s3cret@host:8443/a/b?c=d@e") == "https://host:8443/a/b?c=REDACTED");
  CHECK(RedactUrl("https://host/x@y") == "https://host/x@y");
  CHECK(RedactUrl("https://u:p@host?token=abc") == "https://host?token=REDACTED");
  CHECK(RedactUrl("https://bucket.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F&"
                  "X-Amz-Signature=ab12cd&bare") ==
        "https://bucket.s3.amazonaws.com/o?X-Amz-Algorithm=REDACTED&X-Amz-Credential=REDACTED&"
        "X-Amz-Signature=REDACTED&REDACTED");
  CHECK(RedactUrl("https://host/p#frag-secret") == "https://host/p");
  CHECK(RedactUrl("ssh://alice:pw@host:22/srv/x.git") == "ssh://host:22/srv/x.git");
  CHECK(RedactUrl("s3://bucket/prefix") == "s3://bucket/prefix");
  CHECK(RedactUrl("/srv/hub.git") == "/srv/hub.git");
  CHECK(RedactUrl("not a url") == "not a url");
}

TEST_CASE("every URL and Authorization value in a message is redacted; the rest of it stays") {
  CHECK(RedactSecrets("error: GET https://cdn.example/o?X-Amz-Signature=abc: transfer closed") ==
        "error: GET https://cdn.example/o?X-Amz-Signature=REDACTED: transfer closed");
  CHECK(RedactSecrets("remotes origin: the Git LFS storage of https://alice:tok@host/r.git (x), "
                      "and 'ftp://u:p@h/f'") ==
        "remotes origin: the Git LFS storage of https://host/r.git (x), and 'ftp://h/f'");
  CHECK(RedactSecrets("sent Authorization: Basic YWxpY2U6cHc=\nnext line") ==
        "sent Authorization: REDACTED\nnext line");
  CHECK(RedactSecrets("{\"header\": {\"Authorization\": \"Bearer t0k\"}}") ==
        "{\"header\": {\"Authorization\": \"REDACTED\"}}");
  CHECK(RedactSecrets("no secrets at all: object 12ab, 3 of 4") == "no secrets at all: object 12ab, 3 of 4");
  CHECK(RedactSecrets("the authorization server said no") == "the authorization server said no");
  CHECK(RedactSecrets("authorization=abc&x") == "authorization=REDACTED");
  CHECK(RedactSecrets("://odd") == "://odd");
}

}  // namespace
}  // namespace zipnn
