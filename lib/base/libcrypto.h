// The functions of libcrypto git-zipnn calls (SHA-1 and SHA-256 through
// EVP), loaded when first called (lazy_library.h), for lib/git (the
// SHA-1 of git blobs migrate reads) and lib/remote (the SHA-256 of S3
// uploads and Git LFS objects).
#pragma once

#include <openssl/evp.h>
#include <openssl/opensslv.h>

#include "lib/base/lazy_library.h"

namespace zipnn {

inline constexpr char kLibcrypto[] = "libcrypto.so." ZIPNN_STRING(OPENSSL_SHLIB_VERSION);
ZIPNN_LAZY(kLibcrypto, EVP_MD_CTX_new)
ZIPNN_LAZY(kLibcrypto, EVP_MD_CTX_free)
ZIPNN_LAZY(kLibcrypto, EVP_DigestInit_ex)
ZIPNN_LAZY(kLibcrypto, EVP_DigestUpdate)
ZIPNN_LAZY(kLibcrypto, EVP_DigestFinal_ex)
ZIPNN_LAZY(kLibcrypto, EVP_sha1)
ZIPNN_LAZY(kLibcrypto, EVP_sha256)

}  // namespace zipnn
