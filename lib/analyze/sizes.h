// Stored sizes for the analysis: a checkpoint coded into a whole object
// (standalone or as a delta) with each coder policy, counted but not kept,
// and the order-0 entropy bound of the bytes the coders see. Each call runs
// on its own pool (container::EncodeObject) or on the one given.
#pragma once

#include "lib/analyze/analysis.h"
#include "lib/base/content_id.h"
#include "lib/base/io.h"
#include "lib/base/thread_pool.h"
#include "lib/container/layout.h"
#include "lib/formats/checkpoint.h"

namespace zipnn::analyze {

enum class Coders { kAll, kAutoOnly };

// Sizes of `target` coded standalone (base null) or as a delta against
// `base`, by the coding parameters of `policy`. With kAutoOnly only
// `automatic` is measured. `id` receives the target's content id.
Result<Sizes> MeasureSizes(const formats::CheckpointView& target, const formats::CheckpointView* base,
                           const config::Policy& policy, Coders coders, ThreadPool& pool, ContentId* id = nullptr);

}  // namespace zipnn::analyze
