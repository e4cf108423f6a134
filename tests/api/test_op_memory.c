/* test_op_memory.c: the bytes a recorded op keeps alive, counted through the allocator hook:
 * a chain of small ops (y = y * 1.0001 + 0.0001 on a [4] tensor) is built and kept, and the
 * live bytes divided by the ops recorded must stay under the bound below. */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addsl.h"
#include "tap_api.h"

/* Bytes per recorded op (node, output header, storage, saved arguments), measured 447 after
 * headers moved to slabs and small storages inline (was 1130). The goal is 300. */
#define MAX_BYTES_PER_OP 480

typedef struct counter { size_t live; } counter;

static void *counting_alloc(void *ud, void *p, size_t n) {
    counter *c = ud;
    size_t old = p ? malloc_usable_size(p) : 0;
    if (n == 0) { c->live -= old; free(p); return NULL; }
    void *q = realloc(p, n);
    if (!q) return NULL;
    c->live = c->live - old + malloc_usable_size(q);
    return q;
}

static size_t live_after(const char *code, int *ok_run) {
    counter c = {0};
    addsl_config cfg;
    addsl_config_init(&cfg);
    cfg.alloc = counting_alloc;
    cfg.alloc_ud = &c;
    addsl_state *S = addsl_open(&cfg);
    if (!S) { *ok_run = 0; return 0; }
    *ok_run = addsl_dostring(S, code, "chain.ad") == ADDSL_OK;
    size_t live = c.live;
    addsl_close(S);
    return live;
}

int main(void) {
    static const char head[] =
        "fn chain(n) {\n"
        "    let x = tensor([1.0, 2.0, 3.0, 4.0], requires_grad=true)\n"
        "    let y = x\n"
        "    for i in range(n) { y = y * 1.0001 + 0.0001 }\n"
        "    return y\n"
        "}\n";
    char small[512], large[512];
    /* the same program, kept graphs of 2 * 1000 and 2 * 51000 ops: the difference is the ops' */
    snprintf(small, sizeof small, "%slet y = chain(1000)\nlet s = y.sum()\n", head);
    snprintf(large, sizeof large, "%slet y = chain(51000)\nlet s = y.sum()\n", head);
    int ok1, ok2;
    size_t a = live_after(small, &ok1), b = live_after(large, &ok2);
    ok(ok1 && ok2, "both chains run");
    double per_op = (double)(b > a ? b - a : 0) / (2.0 * 50000);
    ok(per_op > 50, "the count sees the ops (%.0f bytes per op)", per_op);
    ok(per_op <= MAX_BYTES_PER_OP, "a recorded op on [4] keeps %.0f bytes (at most %d)", per_op, MAX_BYTES_PER_OP);
    return tap_done();
}
