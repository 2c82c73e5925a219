// ZIPNN_HOT: marks a hot kernel to be compiled twice, for baseline x86-64
// and for x86-64-v3 (AVX2, BMI2), the copy chosen once at load time by the
// CPU it runs on (GCC's target_clones). Both copies compute the same
// integers, so output never depends on the machine. Elsewhere a no-op.
#pragma once

// Building with -DZIPNN_NO_CLONES (bazel --config=baseline) keeps only the
// baseline copy, so that tests run it on machines that have AVX2.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(ZIPNN_NO_CLONES)
#define ZIPNN_HOT __attribute__((target_clones("default", "arch=x86-64-v3")))
#else
#define ZIPNN_HOT
#endif

// ZIPNN_INLINE: a helper of a ZIPNN_HOT kernel that must be compiled inside
// each copy of it. A helper left out of line is compiled once, for the
// baseline, and the x86-64-v3 copy then calls baseline code.
#define ZIPNN_INLINE __attribute__((always_inline)) inline
