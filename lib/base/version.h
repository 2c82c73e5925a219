// The release version of git-zipnn (the object format has its own version,
// lib/container/format.h).
#pragma once

namespace zipnn {
inline constexpr char kVersion[] = "0.10.5";
}  // namespace zipnn
