/* fuzz_common.h: the sandboxed interpreter state the libFuzzer targets share.
 * Bounded memory, depth and instructions; no files, no native code, no output. */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addsl.h"

#define FUZZ_MEMORY_LIMIT ((size_t)64 << 20) /* bytes of tensor storage per run */
#define FUZZ_MAX_DEPTH 64                    /* script call depth */
#define FUZZ_POLL_EVERY 64                   /* backward jumps and calls per poll */
#define FUZZ_MAX_POLLS 2000                  /* polls before the run is stopped */
#define FUZZ_MAX_INPUT 4096                  /* longer inputs are cut (keeps runs short) */
#define FUZZ_HEAP_LIMIT ((size_t)512 << 20)  /* all allocations: strings and lists too */

/* The host's budgets: interrupt polls per run, and live bytes per state. */
typedef struct fuzz_budget { uint64_t polls; size_t live; } fuzz_budget;

/* memory_limit bounds tensor storage only; a host that must bound strings and
 * lists as well counts bytes in its allocator, as this one does. */
static inline void *fuzz_alloc(void *ud, void *p, size_t n) {
    fuzz_budget *b = ud;
    size_t old = p ? malloc_usable_size(p) : 0;
    if (n == 0) { b->live -= old; free(p); return NULL; }
    if (n > old && b->live - old + n > FUZZ_HEAP_LIMIT) return NULL;
    void *q = realloc(p, n);
    if (!q) return NULL;
    b->live = b->live - old + malloc_usable_size(q);
    return q;
}

static inline int fuzz_interrupt(void *ud) {
    fuzz_budget *b = ud;
    return ++b->polls > FUZZ_MAX_POLLS;
}

static inline void fuzz_discard(void *ud, const char *text, size_t len, int is_err) {
    (void)ud; (void)text; (void)len; (void)is_err;
}

/* A fuzzed script must not reach the file system or native code: cfg.deny
 * closes extern and load/save. Kernel values are rebound as well to keep the
 * fuzzer on the interpreter (shipped kernels check their arguments, and a
 * method call like "k".call_kernel() still reaches them). */
static const char *const fuzz_closed[] = {"kernel", "call_kernel"};

static inline addsl_state *fuzz_open_kernels(fuzz_budget *b, int kernels_open) {
    addsl_config cfg;
    addsl_config_init(&cfg);
    cfg.alloc = fuzz_alloc;
    cfg.alloc_ud = b;
    cfg.memory_limit = FUZZ_MEMORY_LIMIT;
    cfg.max_depth = FUZZ_MAX_DEPTH;
    cfg.write = fuzz_discard;
    cfg.interrupt = fuzz_interrupt;
    cfg.interrupt_ud = b;
    cfg.interrupt_every = FUZZ_POLL_EVERY;
    cfg.deny = ADDSL_DENY_EXTERN | ADDSL_DENY_FILES;
    addsl_state *S = addsl_open(&cfg);
    if (!S) return NULL;
    for (size_t i = 0; !kernels_open && i < sizeof fuzz_closed / sizeof fuzz_closed[0]; i++)
        addsl_set_number(S, fuzz_closed[i], 0);
    return S;
}

static inline addsl_state *fuzz_open(fuzz_budget *b) { return fuzz_open_kernels(b, 0); }

/* The state for the next input: one state serves 'every' inputs (opening one
 * costs more than most inputs), then a fresh one starts, so that what a script
 * defines steers few others. FUZZ_FRESH=1 in the environment (replaying a
 * crash) gives every input a fresh state. 'drop' closes the current one now. */
static inline addsl_state *fuzz_state(fuzz_budget *b, unsigned every, int drop) {
    static addsl_state *S;
    static unsigned uses;
    static int fresh = -1;
    if (fresh < 0) fresh = getenv("FUZZ_FRESH") != NULL;
    if (drop || (S && (fresh || ++uses >= every))) {
        addsl_close(S);
        S = NULL;
        uses = 0;
    }
    if (!S && !drop) S = fuzz_open(b);
    b->polls = 0;
    return S;
}

/* A NUL-terminated copy of the fuzz input, cut at FUZZ_MAX_INPUT bytes. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size) {
    if (size > FUZZ_MAX_INPUT) size = FUZZ_MAX_INPUT;
    char *s = malloc(size + 1);
    if (!s) return NULL;
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
