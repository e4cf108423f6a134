/* test_compile.c: two states in two threads compile and replay the same
 * source at the same time and each gets what a lone state gets (a trace
 * lives in its state); the cache-limit warning is written once, on stderr;
 * an allocator failing the N-th allocation, for every N, through tracing,
 * the passes and replay ends in ENOMEM or OK with nothing leaked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addsl.h"
#include "alloc_hook.h"
#include "tap_api.h"
#include "thread_pair.h"

static const char *const model =
    "manual_seed(SEED)\n"
    "let w0 = randn([4, 1], dtype=float64)\n"
    "let w = w0.clone().requires_grad_()\n"
    "let x = randn([16, 4], dtype=float64)\n"
    "let y = x @ tensor([[1.0], [-2.0], [0.5], [3.0]], dtype=float64)\n"
    "fn step(w, x, y) {\n"
    "    let loss = mean((x @ w - y) ** 2)\n"
    "    let g = grad(loss, [w])[0]\n"
    "    return (loss, (w - 0.05 * g).detach().requires_grad_())\n"
    "}\n"
    "let cstep = compile(step)\n"
    "for i in range(200) { w = cstep(w, x, y)[1] }\n"
    "let final = mean((x @ w - y) ** 2).item()\n"
    "let ev = w0.detach().clone().requires_grad_()\n"
    "for i in range(200) { ev = step(ev, x, y)[1] }\n"
    "let eager_final = mean((x @ ev - y) ** 2).item()\n"
    "fn sc(t, k) { return t * k }\n"
    "let cs = compile(sc)\n"
    "for k in range(12) { cs(x, k) }\n";

typedef struct job { int seed; int rc; double result, eager; int warnings; } job;

static void sink(void *ud, const char *text, size_t len, int is_err) {
    job *j = ud;
    (void)len;
    if (is_err && text && strstr(text, "the cache limit")) j->warnings++;
}

static void *run(void *arg) {
    job *j = arg;
    addsl_config cfg;
    addsl_config_init(&cfg);
    cfg.write = sink;
    cfg.write_ud = j;
    addsl_state *S = addsl_open(&cfg);
    if (!S) { j->rc = ADDSL_ENOMEM; return NULL; }
    j->rc = addsl_set_number(S, "SEED", j->seed);
    if (!j->rc) j->rc = addsl_dostring(S, model, "thread.ad");
    if (!j->rc) j->rc = addsl_get_number(S, "final", &j->result);
    if (!j->rc) j->rc = addsl_get_number(S, "eager_final", &j->eager);
    addsl_close(S);
    return NULL;
}

/* The library's ops are loaded first, so that the sweep spends its failures
 * on compile() rather than on loading them. */
static const char *const warm =
    "let w0 = tensor([[0.5], [-0.25]], requires_grad=true)\n"
    "let g0 = grad(mean((tensor([[1.0, 2.0]]) @ w0 - 1.0) ** 2), [w0])\n"
    "let d0 = {\"a\": 1}\n";
static const char *const oom_script =
    "let K = tensor([[1.0, 0.0], [2.0, 1.0]])\n"
    "fn f(w, x, n) {\n"
    "    let k = ones(2) * 3.0\n"
    "    let a = x @ K\n"
    "    let b = x @ K\n"
    "    let l = mean((a + b + k) @ w - 1.0) ** 2\n"
    "    let g = grad(l, [w])[0]\n"
    "    return (l * n, w - 0.1 * g, {\"l\": l}[\"l\"])\n"
    "}\n"
    "let cf = compile(f)\n"
    "let w = tensor([[0.5], [-0.25]], requires_grad=true)\n"
    "let x = tensor([[1.0, 2.0]])\n"
    "cf(w, x, 2)\n"
    "let r = cf(w, x, 2)\n"
    "cf(w, tensor([[1.0, 2.0], [3.0, 4.0]]), 2)\n"
    "let text = compiled_graph(cf)\n";

static int oom_once(long n, alloc_count *f, int *rc_out) {
    memset(f, 0, sizeof *f);
    addsl_state *S = open_hooked(counting_alloc, f, quiet);
    if (!S) { *rc_out = ADDSL_ENOMEM; return 0; }
    int rc = addsl_dostring(S, warm, "warm.ad");
    if (!rc) {
        f->fail_at = n ? f->count + n : 0;
        rc = addsl_dostring(S, oom_script, "oom.ad");
    }
    *rc_out = rc;
    int sane = rc == ADDSL_OK || (rc == ADDSL_ENOMEM && f->failed && strlen(addsl_errmsg(S)) > 0);
    addsl_close(S);
    return sane && f->live == 0;
}

int main(void) {
    const char *one = getenv("ADDSL_OOM_ONE");   /* debugging: only the sweep's N-th failure */
    if (one) {
        alloc_count f;
        int rc;
        int good = oom_once(atol(one), &f, &rc);
        printf("# one: rc %d, %ld leaked, good %d\n", rc, f.live, good);
        return good ? 0 : 1;
    }
    job alone[2] = {{.seed = 1}, {.seed = 2}}, both[2] = {{.seed = 1}, {.seed = 2}};
    run(&alone[0]);
    run(&alone[1]);
    ok(alone[0].rc == ADDSL_OK && alone[1].rc == ADDSL_OK, "one state at a time: the script runs");
    ok(alone[0].result < 1e-3 && alone[0].result != alone[1].result, "the compiled training loop converges (%.3g)",
       alone[0].result);
    ok(alone[0].result == alone[0].eager && alone[1].result == alone[1].eager,
       "compiled and eager loops end at the same loss (%.17g, %.17g)", alone[0].result, alone[0].eager);
    ok(alone[0].warnings == 1, "the cache-limit warning is written once (%d)", alone[0].warnings);
    ok(run_pair(run, &both[0], &both[1]), "two threads started");
    ok(both[0].rc == ADDSL_OK && both[1].rc == ADDSL_OK, "both threads ran their script");
    ok(both[0].result == alone[0].result && both[1].result == alone[1].result,
       "concurrent results equal the lone ones (%.9g, %.9g)", both[0].result, both[1].result);
    ok(both[0].warnings == 1 && both[1].warnings == 1, "each state warned once");
    alloc_count f;
    int rc;
    int clean = oom_once(0, &f, &rc);
    ok(clean && rc == ADDSL_OK && f.count > 0, "the compile script runs with no failure (%ld allocations)", f.count);
    long bad = 0, n;
    for (n = 1; n < 1000000; n++) {
        int good = oom_once(n, &f, &rc);
        if (!good && bad++ < 10)
            printf("# failing allocation %ld: rc %d, %ld blocks leaked, failed=%d\n", n, rc, f.live, f.failed);
        if (rc == ADDSL_OK && !f.failed) break;
    }
    ok(bad == 0 && n > 1, "every one of %ld failure points in compile() ends in ENOMEM or OK, with nothing leaked", n - 1);
    return tap_done();
}
