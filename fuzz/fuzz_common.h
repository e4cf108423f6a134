/* fuzz_common.h: the sandboxed interpreter state the libFuzzer targets share.
 * Bounded memory, depth and instructions; no files, no native code, no output. */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addsl.h"

#define FUZZ_MEMORY_LIMIT ((size_t)64 << 20) /* bytes of tensor storage per run */
#define FUZZ_MAX_DEPTH 64                    /* script call depth */
#define FUZZ_POLL_EVERY 64                   /* backward jumps and calls per poll */
#define FUZZ_MAX_POLLS 2000                  /* polls before the run is stopped */
#define FUZZ_MAX_INPUT 4096                  /* longer inputs are cut (keeps runs short) */

/* Interrupt budget: the host stops a script after FUZZ_MAX_POLLS polls. */
typedef struct fuzz_budget { uint64_t polls; } fuzz_budget;

static int fuzz_interrupt(void *ud) {
    fuzz_budget *b = ud;
    return ++b->polls > FUZZ_MAX_POLLS;
}

static void fuzz_discard(void *ud, const char *text, size_t len, int is_err) {
    (void)ud; (void)text; (void)len; (void)is_err;
}

/* Globals a fuzzed script must not reach: the file system and native code
 * (extern compiles to a call of extern_fn; kernel values take raw pointers). */
static const char *const fuzz_closed[] = {"extern_fn", "kernel", "call_kernel", "save", "load"};

static addsl_state *fuzz_open(fuzz_budget *b) {
    addsl_config cfg;
    addsl_config_init(&cfg);
    cfg.memory_limit = FUZZ_MEMORY_LIMIT;
    cfg.max_depth = FUZZ_MAX_DEPTH;
    cfg.write = fuzz_discard;
    cfg.interrupt = fuzz_interrupt;
    cfg.interrupt_ud = b;
    cfg.interrupt_every = FUZZ_POLL_EVERY;
    addsl_state *S = addsl_open(&cfg);
    if (!S) return NULL;
    for (size_t i = 0; i < sizeof fuzz_closed / sizeof fuzz_closed[0]; i++)
        addsl_set_number(S, fuzz_closed[i], 0);
    return S;
}

/* A NUL-terminated copy of the fuzz input, cut at FUZZ_MAX_INPUT bytes. */
static char *fuzz_cstr(const uint8_t *data, size_t size) {
    if (size > FUZZ_MAX_INPUT) size = FUZZ_MAX_INPUT;
    char *s = malloc(size + 1);
    if (!s) return NULL;
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
