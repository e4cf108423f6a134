/* ad_limits.h: every tunable and hard limit of addsl in one place (with
 * kernels/kernel_limits.h, the ones the kernels read). Change a number here,
 * not at its point of use. */
#ifndef AD_LIMITS_H
#define AD_LIMITS_H

/* The rank limit, the parallel thresholds and the small-product sizes: the
 * kernels' own header holds them, as the kernels may not include vm/. */
#include "kernels/kernel_limits.h"

#define AD_MAX_REGS 250             /* registers per function frame */
#define AD_REG_PRESSURE 32          /* an expression compiled with fewer free registers than this left reuses its
                                       destination for partial results (vm/codegen.c, binary chains) */
#define AD_DEFAULT_MAX_DEPTH 200    /* script call depth before "stack overflow" */
#define AD_DEFAULT_MEMORY_LIMIT ((size_t)4 << 30)  /* bytes of tensor storage */
#define AD_MAX_STRING ((size_t)1 << 30)            /* bytes in one string */
#define AD_MAX_LIST ((int64_t)1 << 28)             /* elements in one list */
#define AD_MAX_SOURCE ((size_t)64 << 20)           /* bytes of one source file (a script, an import) */
#define AD_STORAGE_INLINE_MAX 64    /* CPU tensors of at most this many bytes keep their data inside the storage header */
#define AD_HEAP_MIN_CLASS 6         /* smallest pooled block: 64 bytes */
#define AD_HEAP_MAX_CLASS 40        /* blocks up to 2^40 bytes are pooled */
#define AD_HEAP_MAX_FREE_PER_CLASS 64 /* cached blocks kept per size class */
#define AD_ERRMSG_MAX 1024          /* bytes of one error message */
#define AD_MAX_SYNTAX_DEPTH 1000    /* nesting of expressions and blocks the compiler walks recursively */
#define AD_MAX_NEST_DEPTH 1000     /* nesting of containers that printing, comparing and hashing walk recursively */
#define AD_GC_YOUNG_THRESHOLD 1000  /* containers made (minus freed) that start a young collection (vm/gc.c) */
#define AD_GC_FULL_MIN 10000        /* promotions to the old generation before a full collection, at the least;
                                       past this a full one waits until the old generation grew by a quarter */
#define AD_MAX_CALL_ARGS 256        /* arguments one call passes (the compiler emits at most 255) */
#define AD_COMPILE_CACHE 8          /* signatures one compile()d function traces before it runs eagerly (as torch.compile's cache_size_limit) */
#define AD_SUGGEST_MAX_LEN 64       /* longest name "did you mean" compares (vm/repl/suggest.c) */

#endif
