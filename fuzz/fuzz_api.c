/* fuzz_api.c: libFuzzer target for the C API as a host drives it: random sequences of tensor
 * creation and wrapping, globals, calls, autograd, kernels and releases, on one state per input. */
#include <stdio.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NSLOTS 8    /* tensor references the host holds */
#define MAX_STEPS 64

static fuzz_budget budget;

typedef struct reader { const uint8_t *p, *end; } reader;

static unsigned next(reader *r) { return r->p < r->end ? *r->p++ : 0; }
static int done(const reader *r) { return r->p >= r->end; }

/* Host kernels, each registered only with its true signature when scripts may call it. */
static double host_add(double a, double b) { return a + b; }
static void host_triple_f64(double *out, const double *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = 3 * x[i];
}

/* Wrapped host memory: release frees it, so a missed or doubled release is a leak or a double free. */
static void host_release(void *ud, void *p) {
    (void)ud;
    free(p);
}

static const char *const names[] = {"x", "y", "w", "loss", "sum", "relu", "f", "g", "", "1bad", "print"};
static const char *const fnames[] = {"f", "g", "h", "sum", "add", "matmul", "relu", "exp", "mean", "cat",
    "nope", "print", "grad", "zeros", "fz3", "len", "softmax", "max", "backward", ""};
static const char *const snippets[] = {
    "fn f(a) { return (a * a).sum() }\n",
    "fn g(a, b) { return a + b }\n",
    "fn h(a, b) { return a @ b, a.T }\n",
    "op fz3(x) {\n    forward: kernel(\"fz_triple_f64\")\n    x: 3 * grad\n}\n",
    "let q = call_kernel(\"fz_add\", 1, 2.5)\n",
    "x.add_(1.0)\n",
    "x = x * 2\n",
    "let x = randn([3], dtype=float64, requires_grad=true)\n",
    "let y = x.detach()\n",
    "no_grad { w -= 0.1 * w.grad }\n",
    "x[0] = 5.0\n",
    "let loss = (x * x).sum()\nloss.backward()\n",
    "let w = zeros([2, 2])\n",
    "print(x, y, w)\n",
    "x = none\n",
    "let z = fz3(x)\n",
};
static const char *const sigs[] = {"f64(f64,f64)", "v(p,p,i64)", "f64(f64,x)", "f64(v)", "f64", "v()", "",
    "i32(i32", "p(p,p,p,p,p,p,p,p,p,p,p,p,p,p,p,p,p,p,p,p,p)"};

#define PICK(r, tab) ((tab)[next(r) % (sizeof(tab) / sizeof((tab)[0]))])

static void put_slot(addsl_state *S, addsl_tensor **slot, addsl_tensor *t) {
    if (*slot) addsl_tensor_release(S, *slot);
    *slot = t;
}

static addsl_dtype read_dtype(reader *r) {
    static const addsl_dtype dts[] = {ADDSL_FLOAT32, ADDSL_FLOAT64, ADDSL_INT64, ADDSL_BOOL};
    return dts[next(r) % 4];
}

static int read_shape(reader *r, int64_t *shape) {
    int nd = (int)(next(r) % 4);
    for (int i = 0; i < nd; i++) shape[i] = (int64_t)(next(r) % 5);
    if (next(r) % 16 == 0 && nd > 0) shape[0] = -1 - (int64_t)(next(r) % 3); /* a bad size */
    return nd;
}

static size_t dtype_size(addsl_dtype dt) {
    switch (dt) {
    case ADDSL_FLOAT32: return 4;
    case ADDSL_BOOL: return 1;
    default: return 8;
    }
}

/* Touches every element the tensor says it has, as a host reading results would. */
static void read_all(addsl_tensor *t) {
    if (!t) return;
    int nd = addsl_tensor_ndim(t);
    const int64_t *sh = addsl_tensor_shape(t), *st = addsl_tensor_strides(t);
    int64_t n = addsl_tensor_numel(t);
    unsigned char *p = addsl_tensor_data(t);
    size_t es = dtype_size(addsl_tensor_dtype(t));
    volatile unsigned char sink = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t rem = k, off = 0;
        for (int d = nd - 1; d >= 0; d--) {
            off += (rem % sh[d]) * st[d];
            rem /= sh[d];
        }
        for (size_t b = 0; b < es; b++) sink ^= p[off * (int64_t)es + (int64_t)b];
    }
    (void)sink;
}

static void run(addsl_state *S, reader *r) {
    addsl_tensor *slot[NSLOTS] = {0};
    for (int stepn = 0; stepn < MAX_STEPS && !done(r); stepn++) {
        addsl_tensor **a = &slot[next(r) % NSLOTS], *b = slot[next(r) % NSLOTS];
        int64_t shape[4];
        switch (next(r) % 16) {
        case 0: { /* a new tensor, filled */
            addsl_dtype dt = read_dtype(r);
            int nd = read_shape(r, shape);
            addsl_tensor *t = addsl_tensor_new(S, dt, nd, shape);
            if (t) memset(addsl_tensor_data(t), (int)next(r), (size_t)addsl_tensor_numel(t) * dtype_size(dt));
            put_slot(S, a, t);
            break;
        }
        case 1: { /* host memory, freed by the release callback (or borrowed static memory) */
            static double borrowed[64];
            addsl_dtype dt = next(r) & 1 ? ADDSL_FLOAT64 : ADDSL_FLOAT32;
            int nd = read_shape(r, shape);
            int64_t n = 1;
            for (int i = 0; i < nd; i++) n *= shape[i] < 0 ? 0 : shape[i];
            if (next(r) & 1) {
                addsl_tensor *t = addsl_tensor_wrap(S, dt, nd, shape, borrowed, NULL, NULL);
                put_slot(S, a, t);
            } else {
                void *mem = calloc((size_t)n + 1, 8);
                if (!mem) break;
                addsl_tensor *t = addsl_tensor_wrap(S, dt, nd, shape, mem, host_release, NULL);
                if (!t) free(mem); /* refused: the host still owns it */
                put_slot(S, a, t);
            }
            break;
        }
        case 2: put_slot(S, a, NULL); break;
        case 3: if (b) put_slot(S, a, addsl_tensor_retain(b)); break;
        case 4: addsl_set_global(S, PICK(r, names), b); break;
        case 5: {
            addsl_tensor *t = NULL;
            if (addsl_get_tensor(S, PICK(r, names), &t) == ADDSL_OK) put_slot(S, a, t);
            break;
        }
        case 6: {
            double x = 0;
            const char *n = PICK(r, names);
            if (next(r) & 1) addsl_set_number(S, n, (double)(int8_t)next(r) / 4);
            else addsl_get_number(S, n, &x);
            break;
        }
        case 7: { /* addsl_call with the held tensors (NULL among them is the host's error) */
            addsl_tensor *args[3], *res = NULL;
            int nargs = (int)(next(r) % 4);
            for (int i = 0; i < nargs; i++) args[i] = slot[next(r) % NSLOTS];
            if (addsl_call(S, PICK(r, fnames), nargs, args, next(r) & 1 ? &res : NULL) == ADDSL_OK && res) {
                read_all(res);
                put_slot(S, a, res);
            }
            break;
        }
        case 8: { /* addsl_callv with mixed values */
            addsl_value args[3], res[2];
            int nargs = (int)(next(r) % 4);
            for (int i = 0; i < nargs; i++) {
                switch (next(r) % 5) {
                case 0: args[i].type = ADDSL_TNONE; break;
                case 1: args[i].type = ADDSL_TBOOL; args[i].as.boolean = (int)next(r) & 1; break;
                case 2: args[i] = addsl_number((double)(int8_t)next(r)); break;
                case 3: args[i] = addsl_string(PICK(r, names)); break;
                default:
                    if (b) args[i] = addsl_tensor_value(b);
                    else args[i].type = ADDSL_TNONE;
                    break;
                }
            }
            int nres = (int)(next(r) % 3);
            if (addsl_callv(S, PICK(r, fnames), nargs, args, nres, res) == ADDSL_OK)
                for (int i = 0; i < nres; i++) {
                    if (res[i].type == ADDSL_TTENSOR) read_all(res[i].as.tensor);
                    addsl_value_release(S, &res[i]);
                }
            break;
        }
        case 9: if (*a) addsl_tensor_set_requires_grad(S, *a, (int)next(r) & 1); break;
        case 10: if (*a) addsl_backward(S, *a, next(r) & 1 ? b : NULL); break;
        case 11: {
            if (!*a || !b) break;
            addsl_tensor *in[2] = {b, slot[next(r) % NSLOTS]}, *g[2] = {NULL, NULL};
            int n = in[1] ? 2 : 1;
            if (addsl_grad(S, *a, n, in, g) == ADDSL_OK)
                for (int i = 0; i < n; i++) {
                    read_all(g[i]);
                    if (g[i]) addsl_tensor_release(S, g[i]);
                }
            break;
        }
        case 12: {
            if (!*a) break;
            addsl_tensor *g = NULL;
            if (next(r) & 1) addsl_tensor_zero_grad(S, *a);
            else if (addsl_tensor_grad(S, *a, &g) == ADDSL_OK && g) { read_all(g); addsl_tensor_release(S, g); }
            break;
        }
        case 13: {
            if (!*a) break;
            double x;
            addsl_tensor_item(S, *a, &x);
            addsl_tensor *c = addsl_tensor_contiguous(S, *a);
            read_all(c);
            if (c) addsl_tensor_release(S, c);
            addsl_tensor_requires_grad(*a);
            break;
        }
        case 14: { /* kernels: the true signatures under script-callable names, bad ones elsewhere */
            unsigned k = next(r) % 3;
            if (k == 0) addsl_register_kernel(S, "fz_add", (void (*)(void))host_add, "f64(f64,f64)");
            else if (k == 1) addsl_register_kernel(S, "fz_triple_f64", (void (*)(void))host_triple_f64, "v(p,p,i64)");
            else addsl_register_kernel(S, next(r) & 1 ? "add_f32" : "fz_bad", (void (*)(void))host_add, PICK(r, sigs));
            break;
        }
        default:
            if (addsl_dostring(S, PICK(r, snippets), "<fuzz-api>") == ADDSL_EXIT) goto out;
            break;
        }
    }
out:
    for (int i = 0; i < NSLOTS; i++) put_slot(S, &slot[i], NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FUZZ_MAX_INPUT) size = FUZZ_MAX_INPUT;
    reader r = {data, data + size};
    /* a fresh state per input: what a sequence leaves behind (globals, kernels) is part of it */
    budget.polls = 0;
    /* kernel() stays open: only the host's own kernels, registered below with their true
     * signatures, and the shipped ones (which check their arguments) are reachable */
    addsl_state *S = fuzz_open_kernels(&budget, 1);
    if (!S) return 0;
    run(S, &r);
    addsl_close(S);
    return 0;
}
