/* test_oom.c: an allocator that fails the N-th allocation, run for every N
 * over a whole model script (ops, matmul, backward) until the script passes;
 * each run must end in ADDSL_OK or a clean ADDSL_ENOMEM and free everything.
 * addsl_open is swept too, every ADDSL_OOM_OPEN_STEP-th N (default 97; 1 = all). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addsl.h"
#include "alloc_hook.h"
#include "tap_api.h"

static const char *const model =
    "op sq(x) {\n"
    "    forward: x * x\n"
    "    x: 2 * grad * x\n"
    "    result: 2 * x_p * x_t\n"
    "}\n"
    "fn loss(w, x, y) { return mean(sq(x @ w - y)) }\n"
    "let w = tensor([[0.5], [-0.25], [1.0]], requires_grad=true)\n"
    "let x = tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])\n"
    "let y = tensor([[1.0], [2.0]])\n"
    "for step in range(2) {\n"
    "    let l = loss(w, x, y)\n"
    "    backward(l)\n"
    "    no_grad { w = (w - 0.01 * w.grad).requires_grad_() }\n"
    "}\n"
    "let s = sigmoid(x).sum(dim=1, keepdim=true)\n"
    "let msg = str(s.shape) + \" done\"\n";

/* One run failing at allocation 'n' (0: never). */
static int run_once(long n, long skip_open, alloc_count *f, int *rc_out) {
    memset(f, 0, sizeof *f);
    f->fail_at = skip_open ? 0 : n;
    addsl_state *S = open_hooked(counting_alloc, f, quiet);
    if (!S) { *rc_out = ADDSL_ENOMEM; return f->live == 0 && f->failed; }
    if (skip_open) f->fail_at = f->count + n;
    int rc = addsl_dostring(S, model, "model.ad");
    *rc_out = rc;
    int sane = rc == ADDSL_OK || (rc == ADDSL_ENOMEM && f->failed && strlen(addsl_errmsg(S)) > 0);
    addsl_close(S);
    return sane && f->live == 0;
}

int main(void) {
    alloc_count f;
    int rc;
    int clean = run_once(0, 0, &f, &rc);
    /* a count of 0 would be a hook not in effect, and every sweep below empty */
    ok(clean && rc == ADDSL_OK && f.count > 0, "the model runs with no failure (%ld allocations)", f.count);
    long opens = f.count;
    /* The script: every N after a successful open, until it passes. */
    long bad = 0, n;
    for (n = 1; n < 1000000; n++) {
        int good = run_once(n, 1, &f, &rc);
        if (!good) {
            if (bad++ < 10) printf("# script: failing allocation %ld: rc %d, %ld blocks leaked, failed=%d\n", n, rc, f.live, f.failed);
        }
        if (rc == ADDSL_OK && !f.failed) break;
    }
    ok(bad == 0 && n > 1, "script: every one of %ld failure points ends in ENOMEM or OK, with nothing leaked", n - 1);
    /* The state's opening (the embedded op library). */
    const char *e = getenv("ADDSL_OOM_OPEN_STEP");
    long step = e ? atol(e) : 97;
    if (step < 1) step = 1;
    long bad_open = 0, tried = 0;
    for (n = 1; n <= opens; n += step) {
        tried++;
        if (!run_once(n, 0, &f, &rc)) {
            if (bad_open++ < 10) printf("# open: failing allocation %ld: rc %d, %ld blocks leaked\n", n, rc, f.live);
        }
    }
    ok(bad_open == 0, "open: %ld failure points (every %ld-th of %ld) end cleanly", tried, step, opens);
    return tap_done();
}
