/* alloc_hook.h: the allocator hook through which the C API tests count the
 * allocations of a state and make the N-th of them fail, and a state opened
 * on a hook; one copy, so that every test counts by the same rule. */
#ifndef ADDSL_ALLOC_HOOK_H
#define ADDSL_ALLOC_HOOK_H

#include <stdlib.h>

#include "addsl.h"

typedef struct alloc_count {
    long count;     /* allocations so far (a realloc counts as one) */
    long fail_at;   /* the allocation (1-based) that fails; 0: none */
    long live;      /* blocks allocated and not yet freed */
    int failed;     /* the failure happened */
    int persist;    /* nonzero: every allocation from fail_at on fails too (memory gone for good) */
} alloc_count;

static inline void *counting_alloc(void *ud, void *ptr, size_t size) {
    alloc_count *f = ud;
    if (size == 0) {
        if (ptr) { f->live--; free(ptr); }
        return NULL;
    }
    ++f->count;
    if (f->fail_at && (f->count == f->fail_at || (f->persist && f->count > f->fail_at))) { f->failed = 1; return NULL; }
    void *q = realloc(ptr, size);
    if (q && !ptr) f->live++;
    return q;
}

static inline void quiet(void *ud, const char *text, size_t len, int is_err) {
    (void)ud; (void)text; (void)len; (void)is_err;
}

/* A state whose allocations go through 'alloc' (given 'ud'), and its output
 * through 'write' (NULL: the default writer); NULL when it cannot open. */
static inline addsl_state *open_hooked(addsl_alloc_fn alloc, void *ud, addsl_write_fn write) {
    addsl_config cfg;
    addsl_config_init(&cfg);
    cfg.alloc = alloc;
    cfg.alloc_ud = ud;
    if (write) cfg.write = write;
    return addsl_open(&cfg);
}

#endif
