/* jit_group.c: a bench-only prototype of a JIT for compile()'s fused groups
 * (issue 14, "Block interpreter or JIT"), to measure against vm/jit/fuse.c.
 *
 * It compiles, with Debian's libgccjit, the fused group of bench/compile.ad's
 * chain100k rows: N records 'y = y * 1.0001' over a float32 [4] register,
 * ended by a sum (accumulated in double, as vm/jit/fuse.c does). The group is
 * split into functions of CHUNK records (one function of 100,000 statements
 * is slow to compile; each function loads the register, runs its records on
 * it and stores it back), each a loop over the elements whose body is the
 * chunk's records on one scalar, as code generated from vm/jit/plan.h's group
 * instructions would be. (The block interpreter reads the input and stores
 * nothing: its sum ends the group; the chunks here write their value for the
 * next chunk, a store per element per chunk.) The result is checked bit for bit against the same
 * float arithmetic in a plain C loop.
 *
 * Build: gcc -O2 -I/usr/lib/gcc/x86_64-linux-gnu/12/include bench/jit_group.c \
 *            -L/usr/lib/gcc/x86_64-linux-gnu/12 -lgccjit -o jit_group
 * Usage: jit_group N OPT CHUNK CALLS [LANES]
 *   LANES 1 (default): a loop over elements, the chunk's records on one
 *   scalar; 4: a block of 4 elements per iteration, each record on 4 scalars.
 *   ELEMENTS: the tensor's size (4 by default, chain100k's).
 *   Prints the compile time (all chunks), the time per call and per record,
 *   and "same true" when the JIT's sum equals the reference's. CALLS 0 runs
 *   the compiled group once (for callgrind: instructions per record are
 *   (count with CALLS - count with 0) / CALLS / N). */
#define _POSIX_C_SOURCE 200809L
#include <sys/types.h>
#include <libgccjit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"

typedef void (*chunk_fn)(const float *x, float *y, long n);

/* The chunk's function, void name(const float *x, float *y, long n), and its
 * parameters; f32 and i64 are the float and long types. */
static gcc_jit_function *chunk_sig(gcc_jit_context *ctx, const char *name, gcc_jit_type **f32, gcc_jit_type **i64,
                                   gcc_jit_param **px, gcc_jit_param **py, gcc_jit_param **pn) {
    *f32 = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_FLOAT);
    *i64 = gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_LONG);
    gcc_jit_type *pf = gcc_jit_type_get_pointer(*f32);
    *px = gcc_jit_context_new_param(ctx, NULL, pf, "x");
    *py = gcc_jit_context_new_param(ctx, NULL, pf, "y");
    *pn = gcc_jit_context_new_param(ctx, NULL, *i64, "n");
    gcc_jit_param *params[3] = {*px, *py, *pn};
    return gcc_jit_context_new_function(ctx, NULL, GCC_JIT_FUNCTION_EXPORTED, gcc_jit_context_get_type(ctx, GCC_JIT_TYPE_VOID),
                                        name, 3, params, 0);
}

/* for (i = 0; i < n; ...): the blocks made after the function's locals (as
 * they were written out in each builder); the caller fills *body, which
 * steps i and jumps back to cond, and *done returns. */
static gcc_jit_block *chunk_loop(gcc_jit_context *ctx, gcc_jit_function *fn, gcc_jit_type *i64, gcc_jit_lvalue *i,
                                 gcc_jit_param *pn, gcc_jit_block **cond, gcc_jit_block **done) {
    gcc_jit_block *entry = gcc_jit_function_new_block(fn, "entry");
    *cond = gcc_jit_function_new_block(fn, "cond");
    gcc_jit_block *body = gcc_jit_function_new_block(fn, "body");
    *done = gcc_jit_function_new_block(fn, "done");
    gcc_jit_block_add_assignment(entry, NULL, i, gcc_jit_context_zero(ctx, i64));
    gcc_jit_block_end_with_jump(entry, NULL, *cond);
    gcc_jit_block_end_with_conditional(
        *cond, NULL,
        gcc_jit_context_new_comparison(ctx, NULL, GCC_JIT_COMPARISON_LT, gcc_jit_lvalue_as_rvalue(i),
                                       gcc_jit_param_as_rvalue(pn)),
        body, *done);
    return body;
}

/* lanes 1: void name(const float *x, float *y, long n)
 *   { for (i = 0; i < n; i++) { float r = x[i]; r = r * c; ... y[i] = r; } }
 * lanes W > 1: the same over blocks of W elements, each record written once
 * per lane on W scalars (r0 = r0 * c; r1 = r1 * c; ...), which gcc turns into
 * one vector multiply per record: the interpreter's order (record outer,
 * elements inner), with the block in registers. */
static void build_chunk_lanes(gcc_jit_context *ctx, const char *name, int nrec, float c, int lanes) {
    gcc_jit_type *f32, *i64;
    gcc_jit_param *px, *py, *pn;
    gcc_jit_function *fn = chunk_sig(ctx, name, &f32, &i64, &px, &py, &pn);
    gcc_jit_lvalue *i = gcc_jit_function_new_local(fn, NULL, i64, "i");
    gcc_jit_lvalue *r[16];
    char rn[8];
    for (int l = 0; l < lanes; l++) {
        snprintf(rn, sizeof rn, "r%d", l);
        r[l] = gcc_jit_function_new_local(fn, NULL, f32, rn);
    }
    gcc_jit_block *cond, *done;
    gcc_jit_block *body = chunk_loop(ctx, fn, i64, i, pn, &cond, &done);
    gcc_jit_lvalue *yl[16];
    for (int l = 0; l < lanes; l++) {
        gcc_jit_rvalue *idx = gcc_jit_context_new_binary_op(ctx, NULL, GCC_JIT_BINARY_OP_PLUS, i64, gcc_jit_lvalue_as_rvalue(i),
                                                            gcc_jit_context_new_rvalue_from_int(ctx, i64, l));
        yl[l] = gcc_jit_context_new_array_access(ctx, NULL, gcc_jit_param_as_rvalue(py), idx);
        gcc_jit_lvalue *xl = gcc_jit_context_new_array_access(ctx, NULL, gcc_jit_param_as_rvalue(px), idx);
        gcc_jit_block_add_assignment(body, NULL, r[l], gcc_jit_lvalue_as_rvalue(xl));
    }
    gcc_jit_rvalue *k = gcc_jit_context_new_rvalue_from_double(ctx, f32, (double)c);
    for (int j = 0; j < nrec; j++)
        for (int l = 0; l < lanes; l++)
            gcc_jit_block_add_assignment(body, NULL, r[l],
                                         gcc_jit_context_new_binary_op(ctx, NULL, GCC_JIT_BINARY_OP_MULT, f32,
                                                                       gcc_jit_lvalue_as_rvalue(r[l]), k));
    for (int l = 0; l < lanes; l++) gcc_jit_block_add_assignment(body, NULL, yl[l], gcc_jit_lvalue_as_rvalue(r[l]));
    gcc_jit_block_add_assignment_op(body, NULL, i, GCC_JIT_BINARY_OP_PLUS, gcc_jit_context_new_rvalue_from_int(ctx, i64, lanes));
    gcc_jit_block_end_with_jump(body, NULL, cond);
    gcc_jit_block_end_with_void_return(done, NULL);
}

static void build_chunk(gcc_jit_context *ctx, const char *name, int nrec, float c) {
    gcc_jit_type *f32, *i64;
    gcc_jit_param *px, *py, *pn;
    gcc_jit_function *fn = chunk_sig(ctx, name, &f32, &i64, &px, &py, &pn);
    gcc_jit_lvalue *i = gcc_jit_function_new_local(fn, NULL, i64, "i");
    gcc_jit_lvalue *r = gcc_jit_function_new_local(fn, NULL, f32, "r");
    gcc_jit_block *cond, *done;
    gcc_jit_block *body = chunk_loop(ctx, fn, i64, i, pn, &cond, &done);
    gcc_jit_lvalue *yi = gcc_jit_context_new_array_access(ctx, NULL, gcc_jit_param_as_rvalue(py), gcc_jit_lvalue_as_rvalue(i));
    gcc_jit_lvalue *xi = gcc_jit_context_new_array_access(ctx, NULL, gcc_jit_param_as_rvalue(px), gcc_jit_lvalue_as_rvalue(i));
    gcc_jit_block_add_assignment(body, NULL, r, gcc_jit_lvalue_as_rvalue(xi));
    gcc_jit_rvalue *k = gcc_jit_context_new_rvalue_from_double(ctx, f32, (double)c);
    for (int j = 0; j < nrec; j++)
        gcc_jit_block_add_assignment(body, NULL, r,
                                     gcc_jit_context_new_binary_op(ctx, NULL, GCC_JIT_BINARY_OP_MULT, f32,
                                                                   gcc_jit_lvalue_as_rvalue(r), k));
    gcc_jit_block_add_assignment(body, NULL, yi, gcc_jit_lvalue_as_rvalue(r));
    gcc_jit_block_add_assignment_op(body, NULL, i, GCC_JIT_BINARY_OP_PLUS, gcc_jit_context_one(ctx, i64));
    gcc_jit_block_end_with_jump(body, NULL, cond);
    gcc_jit_block_end_with_void_return(done, NULL);
}

/* One call: the first chunk reads the input, each writes the value the
 * next reads (in place), then the sum in double. */
__attribute__((noinline)) static double run(chunk_fn *fns, int nfn, const float *x0, float *y, long ne) {
    for (int k = 0; k < nfn; k++) fns[k](k ? y : x0, y, ne);
    double s = 0;
    for (long e = 0; e < ne; e++) s += y[e];
    return s;
}

int main(int argc, char **argv) {
    if (argc < 5 || argc > 7) {
        fprintf(stderr, "usage: %s N OPT CHUNK CALLS [LANES [ELEMENTS]]\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]), opt = atoi(argv[2]), chunk = atoi(argv[3]), calls = atoi(argv[4]);
    int lanes = argc >= 6 ? atoi(argv[5]) : 1;
    long ne = argc >= 7 ? atol(argv[6]) : 4;
    if (n < 1 || opt < 0 || opt > 3 || calls < 0 || (lanes != 1 && lanes != 2 && lanes != 4) || ne < lanes ||
        ne % lanes)
        return 2;
    if (chunk <= 0 || chunk > n) chunk = n;
    const float c = 1.0001f;
    float *x0 = malloc((size_t)ne * sizeof *x0), *y = malloc((size_t)ne * sizeof *y);
    float *ref = malloc((size_t)ne * sizeof *ref);
    if (!x0 || !y || !ref) return 1;
    for (long e = 0; e < ne; e++) x0[e] = (float)((e % 7) - 3) * 0.25f + 0.125f;
    int nfn = (n + chunk - 1) / chunk;

    double t0 = now();
    gcc_jit_context *ctx = gcc_jit_context_acquire();
    if (!ctx) return 1;
    gcc_jit_context_set_int_option(ctx, GCC_JIT_INT_OPTION_OPTIMIZATION_LEVEL, opt);
    char name[32];
    for (int k = 0; k < nfn; k++) {
        snprintf(name, sizeof name, "chunk%d", k);
        int nrec = k == nfn - 1 ? n - k * chunk : chunk;
        if (lanes == 1) build_chunk(ctx, name, nrec, c);
        else build_chunk_lanes(ctx, name, nrec, c, lanes);
    }
    gcc_jit_result *res = gcc_jit_context_compile(ctx);
    if (!res) {
        fprintf(stderr, "jit: %s\n", gcc_jit_context_get_first_error(ctx));
        return 1;
    }
    chunk_fn *fns = malloc((size_t)nfn * sizeof *fns);
    if (!fns) return 1;
    for (int k = 0; k < nfn; k++) {
        snprintf(name, sizeof name, "chunk%d", k);
        fns[k] = (chunk_fn)gcc_jit_result_get_code(res, name);
        if (!fns[k]) return 1;
    }
    double t_compile = now() - t0;

    memcpy(ref, x0, (size_t)ne * sizeof *ref);
    for (long e = 0; e < ne; e++)
        for (int j = 0; j < n; j++) ref[e] = ref[e] * c;
    double sref = 0;
    for (long e = 0; e < ne; e++) sref += ref[e];

    double s = run(fns, nfn, x0, y, ne);
    double t1 = now();
    for (int k = 0; k < calls; k++) s = run(fns, nfn, x0, y, ne);
    double t_call = calls ? (now() - t1) / calls : 0;
    printf("elements %ld lanes %d records %d opt %d chunk %d functions %d compile_s %.4f per_call_s %.3e per_record_ns %.3f same %s\n",
           ne, lanes, n, opt, chunk, nfn, t_compile, t_call, 1e9 * t_call / n, s == sref ? "true" : "false");
    gcc_jit_result_release(res);
    gcc_jit_context_release(ctx);
    free(fns);
    free(x0);
    free(y);
    free(ref);
    return s == sref ? 0 : 1;
}
