// The order-0 entropy bound of an object's payload: what an ideal order-0
// coder of every byte group of every chunk would need. The coders land
// within about 1% above it on weights, so it is a cheap stand-in for
// coding a checkpoint (the store uses it to judge whether a delta pays,
// the analysis to show how close the coders come).
// Thread-safe; work runs on the pool given.
#pragma once

#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/base/thread_pool.h"
#include "lib/codec/delta_transform.h"
#include "lib/container/layout.h"

namespace zipnn::container {

// The bound, in bytes, for `input` cut into `layout`'s regions and chunks
// of `chunk_size`. Each chunk of a delta region is taken against `base`
// as `transform` allows: for kAuto, the smaller bound of XOR and the
// difference (what the encoder picks from).
Result<double> EntropyBound(const ByteSource& input, const Layout& layout, const ByteSource* base, uint32_t chunk_size,
                            ThreadPool& pool, codec::TransformPolicy transform = codec::kAutoTransform);

}  // namespace zipnn::container
