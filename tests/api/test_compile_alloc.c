/* test_compile_alloc.c: a compiled program's planned part allocates nothing
 * after its first call, counted through the allocator hook: the allocations of
 * one call do not grow with the number of fused records (vm/jit/plan.h). Tensor
 * storage and headers come from the state's pools once warm, eager or not
 * (tests/unit/test_plan.c counts those requests); what the hook sees here is
 * everything else: the plan's arena and environment, kept from the first replay. */
#include <stdio.h>

#include "addsl.h"
#include "alloc_hook.h"
#include "steps_program.h"
#include "tap_api.h"

/* Allocations of one 'call' statement after 'setup' and two warm-up calls
 * (*first: those of the first call, which traces); -1 on failure. */
static long allocs_of(const char *setup, const char *call, long *first) {
    alloc_count c = {0};
    addsl_state *S = open_hooked(counting_alloc, &c, NULL);
    if (!S) return -1;
    long n = -1;
    long start = 0;
    if (addsl_dostring(S, setup, "setup.ad") == ADDSL_OK && (start = c.count, 1) &&
        addsl_dostring(S, call, "call.ad") == ADDSL_OK && (*first = c.count - start, 1) &&
        addsl_dostring(S, call, "call.ad") == ADDSL_OK) {
        long before = c.count;
        if (addsl_dostring(S, call, "call.ad") == ADDSL_OK) n = c.count - before;
    }
    addsl_close(S);
    return n;
}

static const char fmt[] = STEPS_PROGRAM
    "let r = none\n"
    "fn same(x) { return x }\n";

static const char mlp[] =
    "manual_seed(0)\n"
    "let x = randn(16, 8, dtype=float64)\n"
    "let y = randn(16, 2, dtype=float64)\n"
    "let W1 = randn(8, 32, dtype=float64) * 0.3\n"
    "let b1 = zeros(32, dtype=float64)\n"
    "let W2 = randn(32, 2, dtype=float64) * 0.3\n"
    "fn step(W1, b1, W2) {\n"
    "    let h = relu(x @ W1 + b1)\n"
    "    let loss = ((h @ W2 - y) ** 2).mean()\n"
    "    let g = grad(loss, [W1, b1, W2])\n"
    "    let out = none\n"
    "    no_grad { out = (loss.detach(), W1 - 0.1 * g[0], b1 - 0.1 * g[1], W2 - 0.1 * g[2]) }\n"
    "    return out\n"
    "}\n"
    "let cstep = compile(step)\n"
    "W1.requires_grad_()\n"
    "b1.requires_grad_()\n"
    "W2.requires_grad_()\n"
    "let r = none\n"
    "fn four(x) { return (x, x, x, x) }\n";

int main(void) {
    char few[1024], many[1024];
    snprintf(few, sizeof few, fmt, 3);
    snprintf(many, sizeof many, fmt, 40);
    long tf = 0, tm = 0;
    long cf = allocs_of(few, "r = cf(x)\n", &tf), cm = allocs_of(many, "r = cf(x)\n", &tm);
    ok(cf > 0 && cm > 0, "both runs succeed (%ld and %ld allocations per call)", cf, cm);
    /* the counter sees the program: tracing 40 steps allocates more than 3 */
    ok(tm > tf + 37 * 4, "the first call (the trace) allocates %ld for 40 steps, %ld for 3", tm, tf);
    long base = allocs_of(few, "r = same(x)\n", &tf);
    /* vm/jit/compiled.c keeps a call's signature bytes and input list between calls */
    ok(cf <= base, "a compiled call allocates %ld, no more than a call of an empty function (%ld)", cf, base);
    ok(cm == cf, "a later call: %ld allocations for 40 steps, %ld for 3 (the planned part allocates nothing)", cm, cf);
    /* An MLP training step: matmuls, bias, relu, a squared loss, grad() inside the
     * step (its VJP's products and sums are kernel records), the SGD update under
     * no_grad (new weights without a graph: the call needs no graph node). */
    long t1 = 0, t2 = 0;
    long step = allocs_of(mlp, "r = cstep(W1, b1, W2)\n", &t1);
    long empty = allocs_of(mlp, "r = four(W1)\n", &t2);
    ok(step >= 0 && step <= empty,
       "an MLP step after the first allocates %ld, a call of a function that returns a 4-tuple %ld", step, empty);
    return tap_done();
}
