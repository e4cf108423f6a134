/* kernels/ew_simd.h: the attribute that gives a kernel an AVX2 copy picked at load
 * time (GCC target_clones), for kernels built for the SSE2 baseline. */
#ifndef AD_EW_SIMD_H
#define AD_EW_SIMD_H

/* GCC only: clang (14) exports a cloned function under its ".ifunc" name, so
 * callers in other files that see a plain declaration fail to link. Values
 * are the same bits in both copies: ISO C mode leaves fp-contract off, so the
 * AVX2 copy has twice the lanes but no fused multiply-adds. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define AD_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef AD_SIMD_CLONES
#define AD_SIMD_CLONES
#endif

#endif
