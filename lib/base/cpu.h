// ZIPNN_HOT: marks a hot kernel to be compiled twice, for baseline x86-64
// and for x86-64-v3 (AVX2, BMI2), the copy chosen once at load time by the
// CPU it runs on (GCC's target_clones). Both copies compute the same
// integers, so output never depends on the machine. Elsewhere a no-op.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ZIPNN_HOT __attribute__((target_clones("default", "arch=x86-64-v3")))
#else
#define ZIPNN_HOT
#endif
