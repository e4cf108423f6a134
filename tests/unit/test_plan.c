/* test_plan.c: a compiled program's fused records take no tensor storage
 * per call (vm/jit/plan.h): the storage requests of one call, counted by the
 * tensor heap, do not grow with the program, while eager's do. */
#include "tap.h"

#include "addsl.h"
#include "tensor/heap.h"
#include "../api/steps_program.h"

static const char fmt[] = STEPS_PROGRAM
    "let r = cf(x)\n"
    "r = cf(x)\n";

/* Storage blocks one 'call' asks the heap for (from the system or a pool); -1 on failure. */
static long requests(int nsteps, const char *call) {
    char code[1024];
    snprintf(code, sizeof code, fmt, nsteps);
    addsl_config cfg;
    addsl_config_init(&cfg);
    ad_state *S = addsl_open(&cfg);
    if (!S) return -1;
    long n = -1;
    if (addsl_dostring(S, code, "setup.ad") == ADDSL_OK) {
        ad_heap_stats a, b;
        ad_heap_stats_get(S, &a);
        if (addsl_dostring(S, call, "call.ad") == ADDSL_OK) {
            ad_heap_stats_get(S, &b);
            n = (long)((b.system_allocs + b.pool_hits) - (a.system_allocs + a.pool_hits));
        }
    }
    addsl_close(S);
    return n;
}

int main(void) {
    plan(3);
    long e3 = requests(3, "r = steps(x)\n"), e40 = requests(40, "r = steps(x)\n");
    long c3 = requests(3, "r = cf(x)\n"), c40 = requests(40, "r = cf(x)\n");
    ok(e3 >= 0 && e40 >= 0 && c3 >= 0 && c40 >= 0, "the runs succeed");
    ok(e40 - e3 >= 37 * 2, "eager asks for storage per op: %ld blocks for 40 steps, %ld for 3", e40, e3);
    ok(c40 == c3 && c3 <= 1, "compiled: %ld blocks for 40 steps, %ld for 3 (at most the result)", c40, c3);
    return done_testing();
}
