// S3 object stores: a bucket, and a key prefix in it, that holds objects
// under <prefix>/<2 hex>/<2 hex>/<id> (the names of a local store), for
// AWS and the servers that speak its API (MinIO, Ceph, most clouds).
// Requests go through libcurl and are signed with AWS Signature Version 4
// (curl's own signer); each upload carries the SHA-256 of its bytes, which
// the server checks before it keeps the object, and a fetched object is
// checked whole by the fetcher before it takes its name.
//
// No git here: select.h reads the endpoint and region settings of a remote.
// An S3 remote is thread-safe: each request takes an idle curl handle
// (whose connection stays open) or a new one.
#pragma once

#include <memory>
#include <string>

#include "lib/base/rate.h"
#include "lib/base/status.h"
#include "lib/remote/remote_store.h"

namespace zipnn::s3 {

// Where s3://bucket/prefix points. A prefix with "." or ".." between its
// slashes is refused: a request's path cannot carry them.
struct Location {
  std::string bucket;
  std::string prefix;  // without slashes at either end; may be empty
};
Result<Location> ParseUrl(const std::string& url);

struct Credentials {
  std::string key_id;
  std::string secret;
  std::string session_token;  // for temporary credentials; may be empty
};

// The usual sources, in the usual order: AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN), else the profile
// $AWS_PROFILE (or "default") of $AWS_SHARED_CREDENTIALS_FILE (or
// ~/.aws/credentials). NotFound says where it looked.
Result<Credentials> FindCredentials();

// AWS_REGION, else AWS_DEFAULT_REGION, else the profile's region in
// $AWS_CONFIG_FILE (or ~/.aws/config), else us-east-1.
std::string FindRegion();

struct Options {
  Location location;
  // Empty: AWS itself (https://<bucket>.s3.<region>.amazonaws.com/).
  // Else the server's URL (http://127.0.0.1:9000), addressed path-style
  // (<endpoint>/<bucket>/<key>) as other servers expect.
  std::string endpoint;
  std::string region;
  Credentials credentials;
  // Objects larger than this go up in parts of this size (S3 takes at most
  // 5 GiB in one request), `connections` parts at once.
  uint64_t part_size = uint64_t{1} << 30;
  int connections = 1;
  // Seconds a request may go without a byte moving (whole seconds, at
  // least 1: curl's unit).
  double timeout = 60;
  // The slowest an object's bytes may go up or come down (the time the
  // server takes before it answers is the timeout's).
  LowSpeed low_speed = kDefaultLowSpeed;
  // Where downloads are kept as they come in, so that one cut short
  // resumes (remote/partial.h; empty: nowhere).
  std::string partial_dir;
  // Where an upload in parts notes its S3 upload and the parts S3 took,
  // so that one cut short is finished by the next push of the same file
  // (empty: nowhere; such an upload that fails is aborted).
  std::string uploads_dir;
};

// `where` names the store in messages (the s3:// URL).
std::unique_ptr<remote::RemoteStore> Remote(std::string where, Options options);

}  // namespace zipnn::s3
