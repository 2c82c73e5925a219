// A dtype guess for files of no known format: a sample of the file is
// byte-grouped as each candidate element type and the one with the smallest
// order-0 estimate wins, if it beats both plain bytes and zstd on the same
// sample by kGuessMinGain. Thread-safe (no shared state).
#pragma once

#include <optional>

#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/codec/dtype.h"

namespace zipnn::formats {

inline constexpr double kGuessMinGain = 0.03;
// The narrowest element width whose estimate is within this of the best.
inline constexpr double kGuessWidthSlack = 0.01;
// Samples: this many blocks of this size, spread evenly over the file.
inline constexpr size_t kGuessBlocks = 16;
inline constexpr size_t kGuessBlockBytes = 4096;

// bf16 and fp16 group identically (a 16-bit rotation), so one stands for
// both; the guess names bf16.
Result<std::optional<codec::DType>> GuessDType(const ByteSource& file);

}  // namespace zipnn::formats
