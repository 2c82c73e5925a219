#include "lib/git/port.h"

namespace zipnn::git {

std::string Oid::Hex() const {
  static const char kDigits[] = "0123456789abcdef";
  std::string hex(bytes.size() * 2, '0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    hex[2 * i] = kDigits[bytes[i] >> 4];
    hex[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  return hex;
}

}  // namespace zipnn::git
