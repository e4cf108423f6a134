/* test_cuda_util.h: what the CUDA test programs share: a seeded random
 * stream, checked host allocation and the "Bail out!" on a failed call. */
#ifndef ADDSL_TEST_CUDA_UTIL_H
#define ADDSL_TEST_CUDA_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "traj_cuda.h"

static inline uint64_t rng_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

static inline void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "Bail out! out of host memory\n");
        exit(1);
    }
    return p;
}

/* Without a GPU: the TAP skip plan, and 77 (the skip status of plain test
 * drivers) or $TRAJ_CUDA_SKIP_STATUS (0 under automake's TAP driver, which
 * wants the plan and status 0). With one: 0 after printing its name. */
static inline int skip_without_gpu(int *status) {
    if (addsl_cuda_device_count() <= 0) {
        const char *st = getenv("TRAJ_CUDA_SKIP_STATUS");
        printf("1..0 # SKIP no CUDA device (driver or GPU absent)\n");
        *status = st && *st ? atoi(st) : 77;
        return 1;
    }
    char name[256] = "";
    if (addsl_cuda_device_name(name, sizeof name) == 0) printf("# device: %s\n", name);
    return 0;
}

/* A test program stops at the first failed CUDA call (positive codes are
 * cudaError_t, negative ones the module's own). */
#define CK(call)                                                                              \
    do {                                                                                      \
        int rc_ = (call);                                                                     \
        if (rc_) {                                                                            \
            printf("Bail out! %s: %s\n", #call, rc_ > 0 ? addsl_cuda_error_string(rc_) : "addsl error"); \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

#endif
