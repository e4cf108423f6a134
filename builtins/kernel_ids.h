/* kernel_ids.h: compile-time ids of the shipped kernels (AD_K_<id>, in the
 * row order of kernels.def) and registry queries used by tests and tools. */
#ifndef AD_KERNEL_IDS_H
#define AD_KERNEL_IDS_H

#include "kernel_registry.h"
#include "kernels/elementwise.h"
#include "kernels/reduce.h"

enum {
#define AD_KERNEL(id, fn, sig) AD_K_##id,
#include "kernels.def"
#undef AD_KERNEL
    AD_K_COUNT
};

/* Number of registered kernels, and of distinct signatures (each one ffi_cif). */
int ad_kreg_count(ad_state *S);
int ad_kreg_nsigs(ad_state *S);
/* The signature string of kernel 'id', or NULL. */
const char *ad_kreg_sig(ad_state *S, int id);

#endif
