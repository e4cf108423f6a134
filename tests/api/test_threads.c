/* test_threads.c: two states in two threads run a training loop at the same
 * time and each gets the result a lone state gets (states share nothing).
 * Meant to run under ThreadSanitizer too (see docs/embedding.md). */
#include <stdio.h>
#include <string.h>

#include "addsl.h"
#include "tap_api.h"
#include "thread_pair.h"

static const char *const model =
    "manual_seed(SEED)\n"
    "let w = randn([4, 1], requires_grad=true)\n"
    "let x = randn([16, 4])\n"
    "let y = x @ tensor([[1.0], [-2.0], [0.5], [3.0]])\n"
    "for step in range(200) {\n"
    "    let l = mean((x @ w - y) ** 2)\n"
    "    backward(l)\n"
    "    no_grad { w = (w - 0.05 * w.grad).requires_grad_() }\n"
    "}\n"
    "let final = mean((x @ w - y) ** 2).item()\n";

typedef struct job { int seed; int rc; double result; char out[64]; } job;

static void sink(void *ud, const char *text, size_t len, int is_err) { (void)ud; (void)text; (void)len; (void)is_err; }

static void *run(void *arg) {
    job *j = arg;
    addsl_config cfg;
    addsl_config_init(&cfg);
    cfg.write = sink;
    addsl_state *S = addsl_open(&cfg);
    if (!S) { j->rc = ADDSL_ENOMEM; return NULL; }
    j->rc = addsl_set_number(S, "SEED", j->seed);
    if (!j->rc) j->rc = addsl_dostring(S, model, "thread.ad");
    if (!j->rc) j->rc = addsl_get_number(S, "final", &j->result);
    addsl_close(S);
    return NULL;
}

int main(void) {
    job alone[2] = {{.seed = 1}, {.seed = 2}}, both[2] = {{.seed = 1}, {.seed = 2}};
    run(&alone[0]);
    run(&alone[1]);
    ok(alone[0].rc == ADDSL_OK && alone[1].rc == ADDSL_OK && alone[0].result != alone[1].result,
       "one state at a time: two seeds, two results");
    ok(run_pair(run, &both[0], &both[1]), "two threads started");
    ok(both[0].rc == ADDSL_OK && both[1].rc == ADDSL_OK, "both threads ran their script");
    ok(both[0].result == alone[0].result && both[1].result == alone[1].result,
       "concurrent results equal the lone ones (%.9g, %.9g)", both[0].result, both[1].result);
    return tap_done();
}
