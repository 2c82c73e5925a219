// forge_object OBJECT ID: writes to standard output the object file OBJECT
// with the content id in its trailer rewritten to ID and its checksums
// made to match, as a remote that lies would serve it. For the remote
// tests: only a decode can tell it from the real object.
// test_objects.h brings doctest; this is no test.
#define DOCTEST_CONFIG_DISABLE

#include <cstdio>
#include <string>

#include "lib/base/file.h"
#include "lib/store/test_objects.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: forge_object OBJECT ID\n");
    return 2;
  }
  auto bytes = zipnn::ReadWholeFile(argv[1]);
  const auto id = zipnn::ContentId::FromHex(argv[2]);
  if (!bytes.ok() || !id) {
    std::fprintf(stderr, "forge_object: cannot read %s, or %s is not an object id\n", argv[1], argv[2]);
    return 1;
  }
  const auto forged = zipnn::store::testing::ForgeObject(std::string(bytes->begin(), bytes->end()), *id);
  if (!forged.ok()) {
    std::fprintf(stderr, "forge_object: %s\n", forged.status().message().c_str());
    return 1;
  }
  return std::fwrite(forged->data(), 1, forged->size(), stdout) == forged->size() ? 0 : 1;
}
