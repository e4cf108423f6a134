/* fuzz_opcall.c: libFuzzer target for calls of every op and builtin with arguments of every kind.
 * The input names a callable (its first line, or bytes pick one) and describes its arguments;
 * the target calls it, then takes first- and second-order gradients and a jvp through it. */
#include <stdarg.h>
#include <stdio.h>

#include "fuzz_common.h"
#include "buf.h"
#include "repl/help.h"
#include "autograd/library.h"
#include "state.h"
#include "vm.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_STATE_USES 16 /* inputs per state (see fuzz_state) */
#define MAX_ARGS 5
#define MAX_KWARGS 2
#define SRC_MAX 8192

static fuzz_budget budget;

/* The registry as the target saw it at start-up: every callable global and its
 * parameter names, so that ops added to the library are fuzzed without edits here. */
typedef struct callee { char *name; char **params; int nparams; } callee;
static callee *callees;
static int ncallees;

/* Names that reach outside the sandboxed interpreter or only end the run. */
static const char *const excluded[] = {"kernel", "call_kernel", "extern_fn", "exit", "quit", "progress"};

/* Run in every fresh state: what happens after the call. Errors end a step, never the input. */
static const char prelude[] =
    "fn __fz_sum(r) {\n"
    "    if type(r) == \"tensor\" {\n"
    "        if r.requires_grad { return r.sum() }\n"
    "        return none\n"
    "    }\n"
    "    if type(r) != \"list\" and type(r) != \"tuple\" { return none }\n"
    "    let s = none\n"
    "    for x in r {\n"
    "        let y = __fz_sum(x)\n"
    "        if type(y) != \"none\" { if type(s) == \"none\" { s = y } else { s = s + y } }\n"
    "    }\n"
    "    return s\n"
    "}\n"
    "fn __fz_grads(r, leaves, second) {\n"
    "    let s = __fz_sum(r)\n"
    "    if type(s) == \"none\" or len(leaves) == 0 { return none }\n"
    "    let g = grad(s, leaves, create_graph=second, allow_unused=true)\n"
    "    if not second { return g }\n"
    "    let t = none\n"
    "    for gi in g {\n"
    "        if type(gi) == \"tensor\" and gi.requires_grad {\n"
    "            let u = (gi * gi).sum()\n"
    "            if type(t) == \"none\" { t = u } else { t = t + u }\n"
    "        }\n"
    "    }\n"
    "    if type(t) != \"none\" { grad(t, leaves, allow_unused=true) }\n"
    "    return g\n"
    "}\n"
    "fn __fz_backward(r, leaves) {\n"
    "    let s = __fz_sum(r)\n"
    "    if type(s) != \"none\" { s.backward() }\n"
    "    for l in leaves { let g = l.grad }\n"
    "}\n"
    "let __fz_ready = 1\n";

/* ---- the input as a stream of choices ---- */

typedef struct reader { const uint8_t *p, *end; } reader;

static unsigned next(reader *r) { return r->p < r->end ? *r->p++ : 0; }

typedef struct script {
    char src[SRC_MAX];
    size_t len;
    int ok; /* 0 once it no longer fits */
    int nleaves;
    struct script *pre; /* where statements the text needs first go */
} script;

static void put(script *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(script *s, const char *fmt, ...) {
    if (!s->ok) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s->src + s->len, SRC_MAX - s->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= SRC_MAX - s->len) { s->ok = 0; return; }
    s->len += (size_t)n;
}

static const char *const numbers[] = {"0", "1", "-1", "2", "0.5", "-0.0", "3", "nan", "inf", "-inf",
    "1e308", "1e-308", "4611686018427387904", "-9223372036854775807", "1e18", "100", "0.25", "-2.5",
    "7", "-3", "1.5", "1e-8"};
static const char *const strings[] = {"\"sum\"", "\"mean\"", "\"none\"", "\"reflect\"", "\"constant\"",
    "\"linear\"", "\"nearest\"", "\"floor\"", "\"trunc\"", "\"amax\"", "\"fro\"", "\"nuc\"", "\"\"",
    "\"float64\"", "\"cpu\"", "\"cuda\"", "\"replicate\"", "\"circular\"", "\"same\"", "\"valid\"",
    "\"batchmean\"", "\"ij\"", "\"ii->i\"", "\"ij,jk->ik\"", "\"prod\"", "\"tanh\"", "\"x\""};
static const char *const specials[] = {"nan", "inf", "-inf", "0.0", "-0.0", "1e30", "-1e30", "1e-30"};

#define PICK(r, tab) ((tab)[next(r) % (sizeof(tab) / sizeof((tab)[0]))])

typedef struct shape { int ndim, dim[4]; } shape;

static shape read_shape(reader *r) {
    shape sh;
    sh.ndim = (int)(next(r) % 4);
    for (int i = 0; i < sh.ndim; i++) sh.dim[i] = (int)(next(r) % 5);
    return sh;
}

static void put_shape(script *s, const shape *sh) {
    put(s, "[");
    for (int i = 0; i < sh->ndim; i++) put(s, "%s%d", i ? ", " : "", sh->dim[i]);
    put(s, "]");
}

/* A float tensor of shape sh: its values, dtype and layout (contiguous, transposed,
 * expanded, sliced) from the input; a leaf requiring grad is named __lN so the
 * gradient steps can ask for it. Writes the expression into the script. */
static void put_float_tensor(script *s, reader *r, const shape *sh) {
    unsigned how = next(r);
    const char *dtype = how & 1 ? "float64" : "float32";
    int layout = (int)((how >> 1) % 4), grad = (how >> 3) & 1, values = (int)((how >> 4) % 4);
    shape base = *sh;
    if (layout == 1 && sh->ndim >= 2) { /* transposed: the base has the last two dims swapped */
        base.dim[sh->ndim - 1] = sh->dim[sh->ndim - 2];
        base.dim[sh->ndim - 2] = sh->dim[sh->ndim - 1];
    } else if (layout == 2 && sh->ndim >= 1) {
        base.dim[0] = 1;
    } else if (layout == 3 && sh->ndim >= 1) {
        base.dim[sh->ndim - 1] = sh->dim[sh->ndim - 1] * 2;
    } else {
        layout = 0;
    }
    /* a leaf requiring grad is a statement of its own, before the argument's */
    script *out = s;
    if (grad) {
        s = s->pre;
        put(s, "let __l%d = (", out->nleaves);
    } else {
        put(s, "(");
    }
    switch (values) {
    case 0: put(s, "randn("); put_shape(s, &base); put(s, ", dtype=%s)", dtype); break;
    case 1: put(s, "(rand("); put_shape(s, &base); put(s, ", dtype=%s) + 0.5)", dtype); break;
    case 2: put(s, "full("); put_shape(s, &base); put(s, ", %s, dtype=%s)", PICK(r, specials), dtype); break;
    default: put(s, "(randn("); put_shape(s, &base); put(s, ", dtype=%s) * 100)", dtype); break;
    }
    if (grad) {
        put(s, ").requires_grad_()\n");
        s = out;
        put(s, "(__l%d", s->nleaves++);
    }
    switch (layout) {
    case 1: put(s, ".mT"); break;
    case 2: put(s, ".expand("); put_shape(s, sh); put(s, ")"); break;
    case 3: put(s, "[..., ::2]"); break;
    default: break;
    }
    put(s, ")");
}

static void put_arg(script *s, reader *r, int depth);

static void put_list(script *s, reader *r, int depth, const char *open, const char *close) {
    int n = (int)(next(r) % 5);
    unsigned kind = next(r) % 4;
    shape sh = read_shape(r);
    put(s, "%s", open);
    for (int i = 0; i < n; i++) {
        if (i) put(s, ", ");
        switch (kind) {
        case 0: put(s, "%d", (int)(next(r) % 8) - 2); break;
        case 1: put(s, "%s", PICK(r, numbers)); break;
        case 2: put_float_tensor(s, r, &sh); break; /* same shape: cat, stack */
        default: put_arg(s, r, depth + 1); break;
        }
    }
    if (n == 1 && close[0] == ')') put(s, ",");
    put(s, "%s", close);
}

static void put_arg(script *s, reader *r, int depth) {
    unsigned kind = next(r) % 12;
    if (depth > 1 && (kind == 7 || kind == 8)) kind = 6;
    switch (kind) {
    case 0: case 1: case 2: {
        shape sh = read_shape(r);
        put_float_tensor(s, r, &sh);
        break;
    }
    case 3: {
        shape sh = read_shape(r);
        int lo = -(int)(next(r) % 3);
        put(s, "randint(%d, %d, ", lo, lo + 1 + (int)(next(r) % 5));
        put_shape(s, &sh);
        put(s, ")");
        break;
    }
    case 4: {
        shape sh = read_shape(r);
        put(s, "(randn(");
        put_shape(s, &sh);
        put(s, ") > 0)");
        break;
    }
    case 5: put(s, "%s", PICK(r, numbers)); break;
    case 6: put(s, "%d", (int)(next(r) % 9) - 3); break;
    case 7: put_list(s, r, depth, "[", "]"); break;
    case 8: put_list(s, r, depth, "(", ")"); break;
    case 9: put(s, "none"); break;
    case 10: put(s, next(r) & 1 ? "true" : "false"); break;
    default: put(s, "%s", PICK(r, strings)); break;
    }
}

/* ---- the registry ---- */

static int is_excluded(const char *name) {
    if (name[0] == '_') return 1;
    for (size_t i = 0; i < sizeof excluded / sizeof excluded[0]; i++)
        if (strcmp(name, excluded[i]) == 0) return 1;
    return 0;
}

static void add_callee(ad_state *S, const char *name) {
    int slot = ad_global_user_slot(S, name, false, false);
    if (slot < 0 || ad_global_resolve(S, &slot) || !S->globals->defined[slot]) return;
    ad_value v = S->globals->values[slot];
    if (v.t != AD_TBUILTIN && v.t != AD_TOP && v.t != AD_TFUNC) return;
    ad_names params;
    ad_names_init(&params, S);
    if (ad_help_params(v, &params)) { ad_names_free(&params); return; }
    callee c = {strdup(name), calloc((size_t)params.n + 1, sizeof(char *)), params.n};
    if (!c.name || !c.params) { free(c.name); free(c.params); ad_names_free(&params); return; }
    for (int i = 0; i < params.n; i++) c.params[i] = strdup(params.v[i]);
    ad_names_free(&params);
    callee *grown = realloc(callees, (size_t)(ncallees + 1) * sizeof *callees);
    if (!grown) return;
    callees = grown;
    callees[ncallees++] = c;
}

/* FUZZ_OPCALL_DICT=PATH: also writes a libFuzzer dictionary of the names. */
static void write_dict(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    for (int i = 0; i < ncallees; i++) {
        fprintf(f, "\"%s\\x0a\"\n", callees[i].name);
        for (int j = 0; j < callees[i].nparams; j++) fprintf(f, "\"%s\"\n", callees[i].params[j]);
    }
    fclose(f);
}

/* FUZZ_OPCALL_SEEDS=DIR: a seed per callee, calling it with float64 matrices that require grad. */
static void write_seeds(const char *dir) {
    for (int i = 0; i < ncallees; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.txt", dir, callees[i].name);
        FILE *f = fopen(path, "w");
        if (!f) return;
        int nargs = callees[i].nparams < 1 ? 1 : callees[i].nparams > MAX_ARGS ? MAX_ARGS : callees[i].nparams;
        /* flags: second order and jvp; nargs; no keywords; seed 0; then per argument: a float
         * tensor of shape [2, 3], float64, contiguous, requiring grad, normal values */
        fprintf(f, "%s\n%c%c%c%c", callees[i].name, 6, nargs, 0, 0);
        for (int a = 0; a < nargs; a++) fprintf(f, "%c%c%c%c%c", 0, 2, 2, 3, 9);
        fclose(f);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    fuzz_budget b = {0, 0};
    addsl_state *S = fuzz_open(&b);
    if (!S) return 0;
    ad_names names;
    ad_names_init(&names, S);
    if (ad_help_scope(S, &names, false) == ADDSL_OK)
        for (int i = 0; i < names.n; i++)
            if (!is_excluded(names.v[i])) add_callee(S, names.v[i]);
    ad_names_free(&names);
    addsl_close(S);
    const char *dict = getenv("FUZZ_OPCALL_DICT");
    if (dict) write_dict(dict);
    const char *seeds = getenv("FUZZ_OPCALL_SEEDS");
    if (seeds) write_seeds(seeds);
    return 0;
}

/* ---- one input ---- */

static const callee *choose(reader *r) {
    const uint8_t *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
    if (nl && nl - r->p < 64) {
        size_t n = (size_t)(nl - r->p);
        for (int i = 0; i < ncallees; i++)
            if (strlen(callees[i].name) == n && memcmp(callees[i].name, r->p, n) == 0) {
                r->p = nl + 1;
                return &callees[i];
            }
    }
    unsigned k = next(r) | next(r) << 8;
    return &callees[k % (unsigned)ncallees];
}

/* Runs one step; a script error is an expected outcome, and only a state that
 * exited or ran out of memory must be dropped. Returns 0 when the state is gone. */
static int step(addsl_state *S, const char *src) {
    int rc = addsl_dostring(S, src, "<fuzz-opcall>");
    if (rc == ADDSL_EXIT || rc == ADDSL_ENOMEM) {
        fuzz_state(&budget, 0, 1);
        return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ncallees) return 0;
    if (size > FUZZ_MAX_INPUT) size = FUZZ_MAX_INPUT;
    reader r = {data, data + size};
    const callee *c = choose(&r);
    unsigned flags = next(&r);
    static script s, pre;
    s.len = pre.len = 0;
    s.ok = pre.ok = 1;
    s.nleaves = 0;
    s.pre = &pre;

    /* the arguments, each bound to a name so the later steps can reuse them */
    int nargs = (int)(next(&r) % (MAX_ARGS + 1)), nkw = (int)(next(&r) % (MAX_KWARGS + 1));
    if (c->nparams == 0) nkw = 0;
    put(&pre, "manual_seed(%u)\n", next(&r));
    for (int i = 0; i < nargs + nkw; i++) {
        put(&s, "let __a%d = ", i);
        put_arg(&s, &r, 0);
        put(&s, "\n");
    }
    put(&s, "let __leaves = [");
    for (int i = 0; i < s.nleaves; i++) put(&s, "%s__l%d", i ? ", " : "", i);
    put(&s, "]\n");
    /* the call, kept as text for the jvp's closure */
    char call[1024];
    int n = snprintf(call, sizeof call, "%s(", c->name);
    for (int i = 0; i < nargs + nkw && n < (int)sizeof call; i++) {
        const char *kw = i >= nargs ? c->params[next(&r) % (unsigned)c->nparams] : NULL;
        n += snprintf(call + n, sizeof call - (size_t)n, "%s%s%s__a%d", i ? ", " : "", kw ? kw : "",
                      kw ? "=" : "", i);
    }
    if (n >= (int)sizeof call - 1) return 0;
    strcat(call, ")");
    put(&s, "let __r = %s\n", call);
    if (!s.ok || !pre.ok) return 0;

    addsl_state *S = fuzz_state(&budget, FUZZ_STATE_USES, 0);
    if (!S) return 0;
    double ready;
    if (addsl_get_number(S, "__fz_ready", &ready) != ADDSL_OK &&
        addsl_dostring(S, prelude, "<fuzz-prelude>") != ADDSL_OK) {
        fuzz_state(&budget, 0, 1);
        return 0;
    }
    /* FUZZ_OPCALL_PRINT=1: the script goes to stderr too (a crash's reproducer for tests/hostile/) */
    static int show = -1;
    if (show < 0) show = getenv("FUZZ_OPCALL_PRINT") != NULL;
    if (show) fprintf(stderr, "---\n%s%s", pre.src, s.src);
    if (!step(S, pre.src)) return 0;
    if (!step(S, s.src)) return 0;

    /* the gradients: backward, or first and second order through grad */
    char after[256];
    snprintf(after, sizeof after, flags & 1 ? "__fz_backward(__r, __leaves)\n" : "__fz_grads(__r, __leaves, %s)\n",
             flags & 2 ? "true" : "false");
    if (!step(S, after)) return 0;

    /* forward mode through the first float tensor argument */
    if (flags & 4 && nargs > 0) {
        int k = (int)((flags >> 3) % (unsigned)nargs);
        char jvp[1400];
        snprintf(jvp, sizeof jvp,
                 "if type(__a%d) == \"tensor\" and is_floating_point(__a%d) {\n"
                 "    let __x = __a%d.detach()\n"
                 "    jvp(fn(__a%d) => %s, [__x], [ones_like(__x)])\n"
                 "}\n", k, k, k, k, call);
        step(S, jvp);
    }
    return 0;
}
