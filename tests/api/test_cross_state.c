/* test_cross_state.c: every C API call that takes a state and a tensor
 * refuses a tensor made by another state with ADDSL_EARG, touching nothing,
 * so both states close cleanly (issue 27, item 5: S2 freeing S1's tensor
 * corrupted both heaps). Run under valgrind/ASan it also shows no access. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "addsl.h"
#include "alloc_hook.h"
#include "tap_api.h"

static int refused(addsl_state *S, int rc) {
    return rc == ADDSL_EARG && contains(addsl_errmsg(S), "another addsl_state");
}

int main(void) {
    alloc_count f1, f2;
    memset(&f1, 0, sizeof f1);
    memset(&f2, 0, sizeof f2);
    addsl_state *S1 = open_hooked(counting_alloc, &f1, quiet);
    addsl_state *S2 = open_hooked(counting_alloc, &f2, quiet);
    ok(S1 && S2, "two states open");
    if (!S1 || !S2) return tap_done();
    int64_t shape[1] = {3};
    addsl_tensor *t = addsl_tensor_new(S1, ADDSL_FLOAT64, 1, shape);
    addsl_tensor *mine = addsl_tensor_new(S2, ADDSL_FLOAT64, 1, shape);
    ok(t && mine, "a tensor in each state");
    double *d = addsl_tensor_data(t);
    d[0] = 1; d[1] = 2; d[2] = 3;
    ok(addsl_dostring(S2, "fn id(x) { return x }\nfn total(x) { return x.sum() }\n", "s2.ad") == ADDSL_OK, "S2 defines functions");

    ok(refused(S2, addsl_set_global(S2, "w", t)), "set_global of S1's tensor in S2");
    ok(addsl_dostring(S2, "let seen = w", "s2.ad") == ADDSL_ECOMPILE, "... and S2 has no global 'w'");
    ok(refused(S2, addsl_tensor_release(S2, t)), "release through S2: refused");
    addsl_tensor *args[2] = {mine, t};
    addsl_tensor *res = NULL;
    ok(refused(S2, addsl_call(S2, "id", 1, args + 1, &res)) && res == NULL, "addsl_call with S1's tensor");
    addsl_value v = addsl_tensor_value(t), out;
    ok(refused(S2, addsl_callv(S2, "id", 1, &v, 1, &out)), "addsl_callv with S1's tensor");
    ok(addsl_tensor_contiguous(S2, t) == NULL && refused(S2, ADDSL_EARG), "tensor_contiguous");
    double x = 0;
    ok(refused(S2, addsl_tensor_item(S2, t, &x)), "tensor_item");
    ok(refused(S2, addsl_tensor_set_requires_grad(S2, t, 1)) && !addsl_tensor_requires_grad(t), "set_requires_grad");
    addsl_tensor *g = (addsl_tensor *)1;
    ok(refused(S2, addsl_tensor_grad(S2, t, &g)) && g == NULL, "tensor_grad");
    ok(refused(S2, addsl_tensor_zero_grad(S2, t)), "zero_grad");
    ok(refused(S2, addsl_backward(S2, t, NULL)), "backward of S1's tensor");
    ok(refused(S2, addsl_backward(S2, mine, t)), "backward with S1's grad_output");
    addsl_tensor *grads[1];
    ok(refused(S2, addsl_grad(S2, mine, 1, &t, grads)), "grad with S1's input");
    ok(refused(S2, addsl_grad(S2, t, 1, &mine, grads)), "grad of S1's output");
    addsl_value held = addsl_tensor_value(t);
    ok(refused(S2, addsl_value_release(S2, &held)) && held.as.tensor == t, "value_release through S2 leaves the value");

    /* The state's own tensor still works, in both. */
    ok(addsl_set_global(S1, "w", t) == ADDSL_OK && addsl_dostring(S1, "let total = w.sum().item()", "s1.ad") == ADDSL_OK,
       "S1 takes its own tensor");
    double total = 0;
    int rc = addsl_get_number(S1, "total", &total);
    ok(rc == ADDSL_OK && total == 6, "... and reads it (sum %g)", total);
    ok(addsl_call(S2, "total", 1, args, &res) == ADDSL_OK && res && addsl_tensor_item(S2, res, &x) == ADDSL_OK,
       "S2 calls with its own tensor");
    ok(addsl_tensor_release(S2, res) == ADDSL_OK, "S2 releases its result");
    ok(addsl_tensor_release(S2, mine) == ADDSL_OK, "S2 releases its tensor");
    ok(addsl_tensor_release(S1, t) == ADDSL_OK, "S1 releases its tensor");
    addsl_close(S1);
    ok(f1.live == 0, "S1 closes with every block freed (%ld live)", f1.live);
    addsl_close(S2);
    ok(f2.live == 0, "S2 closes with every block freed (%ld live)", f2.live);
    return tap_done();
}
