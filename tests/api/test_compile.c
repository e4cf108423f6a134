/* test_compile.c: two states in two threads compile and replay the same
 * source at the same time and each gets what a lone state gets (a trace
 * lives in its state); the cache-limit warning is written once, on stderr. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "addsl.h"
#include "tap_api.h"

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

int main(void) {
    job alone[2] = {{.seed = 1}, {.seed = 2}}, both[2] = {{.seed = 1}, {.seed = 2}};
    run(&alone[0]);
    run(&alone[1]);
    ok(alone[0].rc == ADDSL_OK && alone[1].rc == ADDSL_OK, "one state at a time: the script runs");
    ok(alone[0].result < 1e-3 && alone[0].result != alone[1].result, "the compiled training loop converges (%.3g)",
       alone[0].result);
    ok(alone[0].result == alone[0].eager && alone[1].result == alone[1].eager,
       "compiled and eager loops end at the same loss (%.17g, %.17g)", alone[0].result, alone[0].eager);
    ok(alone[0].warnings == 1, "the cache-limit warning is written once (%d)", alone[0].warnings);
    pthread_t t[2];
    int started = pthread_create(&t[0], NULL, run, &both[0]) == 0;
    started &= pthread_create(&t[1], NULL, run, &both[1]) == 0;
    ok(started, "two threads started");
    if (started) { pthread_join(t[0], NULL); pthread_join(t[1], NULL); }
    ok(both[0].rc == ADDSL_OK && both[1].rc == ADDSL_OK, "both threads ran their script");
    ok(both[0].result == alone[0].result && both[1].result == alone[1].result,
       "concurrent results equal the lone ones (%.9g, %.9g)", both[0].result, both[1].result);
    ok(both[0].warnings == 1 && both[1].warnings == 1, "each state warned once");
    return tap_done();
}
