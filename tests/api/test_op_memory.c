/* test_op_memory.c: the bytes a recorded op keeps alive, counted through the allocator hook:
 * a chain of small ops (y = y * 1.0001 + 0.0001 on a [4] tensor) is built and kept, and the
 * live bytes divided by the ops recorded must stay under the bound below. */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addsl.h"
#include "alloc_hook.h"
#include "tap_api.h"

/* Bytes per recorded op (node, output header, storage, saved arguments): 1130 at first, 447
 * after headers moved to slabs and small storages inline, 264 with nodes that keep no array
 * pointers, edges only where a gradient flows and shape-only records of unmentioned inputs. */
#define MAX_BYTES_PER_OP 300

typedef struct byte_count { size_t live; } byte_count;

/* Live bytes, where alloc_count counts blocks: the bound is in bytes. */
static void *counting_bytes(void *ud, void *p, size_t n) {
    byte_count *c = ud;
    size_t old = p ? malloc_usable_size(p) : 0;
    if (n == 0) { c->live -= old; free(p); return NULL; }
    void *q = realloc(p, n);
    if (!q) return NULL;
    c->live = c->live - old + malloc_usable_size(q);
    return q;
}

static size_t live_after(const char *code, int *ok_run) {
    byte_count c = {0};
    addsl_state *S = open_hooked(counting_bytes, &c, NULL);
    if (!S) { *ok_run = 0; return 0; }
    *ok_run = addsl_dostring(S, code, "chain.ad") == ADDSL_OK;
    size_t live = c.live;
    addsl_close(S);
    return live;
}

/* Live bytes per op of 'fmt' run with N_SMALL and N_LARGE iterations of two ops each: the
 * difference is the ops', whatever the program keeps besides. The heap takes headers from
 * slabs of up to 8 MB, so each count may include up to 8 MB not used yet: 400000 ops apart,
 * that is at most 21 bytes per op of the figure. */
#define N_SMALL 20000
#define N_LARGE 220000

static double per_op(const char *fmt) {
    char small[1024], large[1024];
    snprintf(small, sizeof small, fmt, N_SMALL);
    snprintf(large, sizeof large, fmt, N_LARGE);
    int ok1, ok2;
    size_t a = live_after(small, &ok1), b = live_after(large, &ok2);
    if (!ok1 || !ok2) return -1;
    return (double)(b > a ? b - a : 0) / (2.0 * (N_LARGE - N_SMALL));
}

int main(void) {
    /* in a function (locals in registers) and at top level (globals): the same graph */
    static const char in_fn[] =
        "fn chain(n) {\n"
        "    let x = tensor([1.0, 2.0, 3.0, 4.0], requires_grad=true)\n"
        "    let y = x\n"
        "    for i in range(n) { y = y * 1.0001 + 0.0001 }\n"
        "    return y\n"
        "}\n"
        "let y = chain(%d)\nlet s = y.sum()\n";
    static const char top[] =
        "let x = tensor([1.0, 2.0, 3.0, 4.0], requires_grad=true)\n"
        "let y = x\n"
        "for i in range(%d) { y = y * 1.0001 + 0.0001 }\n"
        "let s = y.sum()\n";
    static const struct { const char *name, *fmt; } cases[] = {{"in a function", in_fn}, {"at top level", top}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double b = per_op(cases[i].fmt);
        ok(b >= 0, "%s: both chains run", cases[i].name);
        ok(b > 50, "%s: the count sees the ops (%.0f bytes per op)", cases[i].name, b);
        ok(b <= MAX_BYTES_PER_OP, "%s: a recorded op on [4] keeps %.0f bytes (at most %d)", cases[i].name, b,
           MAX_BYTES_PER_OP);
    }
    return tap_done();
}
