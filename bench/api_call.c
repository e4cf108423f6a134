/* api_call.c: the cost of crossing the C API: calling a tiny script function
 * from C, and a registered kernel through the registry (call_kernel from a
 * script, and kernel values) against the same C function called directly.
 * Prints "NAME SECONDS_PER_CALL" lines for bench/run.sh.
 * Build: cc -O2 api_call.c $(pkg-config --cflags --libs addsl) */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <addsl.h>

#include "bench_clock.h"

static double add_f64(double a, double b) { return a + b; }

/* Keeps the direct call from being folded away. */
static double (*volatile direct)(double, double) = add_f64;

int main(void) {
    addsl_config cfg;
    addsl_config_init(&cfg);
    addsl_state *S = addsl_open(&cfg);
    if (!S) return 1;
    const long N = 200000;
    int rc = addsl_register_kernel(S, "bench_add", (void (*)(void))add_f64, "f64(f64,f64)");
    if (!rc) rc = addsl_dostring(S,
        "fn tiny(a, b) { return a }\n"
        "let k = kernel(\"bench_add\")\n"
        "fn loop_call_kernel(n) { let s = 0\n for i in range(n) { s = call_kernel(\"bench_add\", s, 1.0) }\n return s }\n"
        "fn loop_kernel_value(n) { let s = 0\n for i in range(n) { s = k(s, 1.0) }\n return s }\n"
        "fn loop_script_fn(n) { let s = 0\n for i in range(n) { s = tiny(s, 1.0) }\n return s }\n", "bench");
    if (rc) { fprintf(stderr, "%s\n", addsl_errmsg(S)); return 1; }

    int64_t shape[1] = {1};
    addsl_tensor *t = addsl_tensor_new(S, ADDSL_FLOAT32, 1, shape);
    addsl_tensor *args[2] = {t, t};
    double t0 = now();
    for (long i = 0; i < N && !rc; i++) {
        addsl_tensor *r = NULL;
        rc = addsl_call(S, "tiny", 2, args, &r);
        addsl_tensor_release(S, r);
    }
    double c_to_script = (now() - t0) / (double)N;

    addsl_value in[2] = {addsl_number(1), addsl_number(2)}, out;
    t0 = now();
    for (long i = 0; i < N && !rc; i++) rc = addsl_callv(S, "tiny", 2, in, 1, &out);
    double c_to_script_v = (now() - t0) / (double)N;

    /* Loops inside the script, minus the same loop calling a script function. */
    addsl_value n = addsl_number((double)N), res;
    t0 = now();
    if (!rc) rc = addsl_callv(S, "loop_call_kernel", 1, &n, 1, &res);
    double via_call_kernel = (now() - t0) / (double)N;
    t0 = now();
    if (!rc) rc = addsl_callv(S, "loop_kernel_value", 1, &n, 1, &res);
    double via_kernel_value = (now() - t0) / (double)N;
    t0 = now();
    if (!rc) rc = addsl_callv(S, "loop_script_fn", 1, &n, 1, &res);
    double via_script_fn = (now() - t0) / (double)N;

    double s = 0;
    t0 = now();
    for (long i = 0; i < N * 10; i++) s = direct(s, 1.0);
    double direct_call = (now() - t0) / (double)(N * 10);
    if (rc || s < 0) { fprintf(stderr, "%s\n", addsl_errmsg(S)); return 1; }

    printf("api_call_tensor %.3e\n", c_to_script);
    printf("api_callv_numbers %.3e\n", c_to_script_v);
    printf("kernel_call_kernel %.3e\n", via_call_kernel);
    printf("kernel_value_call %.3e\n", via_kernel_value);
    printf("script_fn_call %.3e\n", via_script_fn);
    printf("kernel_direct_c %.3e\n", direct_call);
    addsl_tensor_release(S, t);
    addsl_close(S);
    return 0;
}
