/* jit/compiled.c: compile(f): the compiled-function object, its cache of traced
 * programs keyed by the signature of a call, and the call that replays one. */
#include "jit/compiled.h"

#include <stdio.h>
#include <string.h>

#include "ad_limits.h"
#include "buf.h"
#include "jit/compiled_jvp.h"
#include "jit/compiled_vjp.h"
#include "tensor/device.h"
#include "autograd/op.h"
#include "jit/replay_graph.h"
#include "gc.h"
#include "state.h"
#include "tensor/tensor.h"
#include "trace/trace.h"
#include "vm.h"

typedef struct ad_centry {
    ad_buf sig;            /* the signature's bytes */
    ad_buf desc;           /* ... as text */
    ad_value held;         /* a list keeping alive the objects the signature names by address */
    ad_trace *prog;        /* NULL: this signature runs eagerly */
    ad_opdef *node_op;     /* calls with grad: one graph node (vm/jit/compiled_vjp.c), held, or NULL */
    bool node_tried;
    char node_why[200];    /* ... why not */
    ad_cjvp *tan_prog;     /* calls on inputs with jvp() tangents: the tangent program (vm/jit/compiled_jvp.c), or NULL */
    bool tan_tried;
    char tan_why[200];     /* ... why not */
    char why[240];         /* ... and why */
    ad_cgraph *graph;      /* calls on GPU inputs: the CUDA graph (vm/jit/replay_graph.c), or NULL */
    uint64_t hits;
    int retraces;          /* traces after a guard failed */
} ad_centry;

typedef struct ad_compiled {
    ad_value f;
    bool passes;
    bool fullgraph; /* data-dependent control flow is an error, not a guard */
    char name[80];
    int n;
    ad_centry e[AD_COMPILE_CACHE];
    bool warned_full;
    uint64_t eager_calls;
    /* A call's signature bytes and input list, kept between calls so that a
     * hit allocates nothing; a call made while one is in use (f calling cf)
     * makes its own. */
    ad_buf scratch_sig;
    ad_tensor **scratch_in;
    int scratch_cap;
    bool scratch_busy;
} ad_compiled;

/* ---- signatures ---- */

typedef struct sigctx {
    ad_buf *sig, *desc;
    ad_list *held;
    ad_tensor **inputs;
    int ninputs, cap;
} sigctx;

static int push_input(ad_state *S, sigctx *c, ad_tensor *t) {
    if (c->ninputs == c->cap) {
        int cap = c->cap ? 2 * c->cap : 8;
        ad_tensor **p = ad_realloc(S, c->inputs, (size_t)cap * sizeof *p);
        if (!p) return ADDSL_ENOMEM;
        c->inputs = p; c->cap = cap;
    }
    c->inputs[c->ninputs++] = t;
    return ADDSL_OK;
}

static int sig_tensor(ad_state *S, sigctx *c, ad_tensor *t) {
    /* Inputs that are the same tensor, or share memory, stay so in the program. */
    int32_t same = -1, shares = -1;
    for (int i = 0; i < c->ninputs; i++) {
        if (c->inputs[i] == t && same < 0) same = i;
        if (c->inputs[i]->storage == t->storage && shares < 0) shares = i;
    }
    int32_t head[6] = {'T', (int32_t)t->dtype, ad_tensor_device(t), t->requires_grad, same, shares};
    ad_buf_add(c->sig, (const char *)head, sizeof head);
    ad_buf_add(c->sig, (const char *)&t->ndim, sizeof t->ndim);
    ad_buf_add(c->sig, (const char *)t->shape, (size_t)t->ndim * sizeof *t->shape);
    if (c->desc) ad_buf_printf(c->desc, "%s[", ad_dtype_name(t->dtype));
    for (int i = 0; i < t->ndim && c->desc; i++) ad_buf_printf(c->desc, i ? ",%lld" : "%lld", (long long)t->shape[i]);
    if (c->desc) ad_buf_printf(c->desc, "]%s", t->requires_grad ? " requires_grad" : "");
    if (ad_tensor_device(t) && c->desc) ad_buf_printf(c->desc, " %s", ad_device_name(ad_tensor_device(t)));
    return push_input(S, c, t);
}

static int sig_value(ad_state *S, sigctx *c, ad_value v) {
    char tag = (char)('a' + (int)v.t);
    switch (v.t) {
    case AD_TTENSOR: return sig_tensor(S, c, v.u.tensor);
    case AD_TNONE: case AD_TELLIPSIS:
        ad_buf_add(c->sig, &tag, 1);
        return c->desc ? ad_value_format(S, v, c->desc, true) : ADDSL_OK;
    case AD_TBOOL: case AD_TINT: case AD_TNUM: case AD_TDTYPE: {
        ad_buf_add(c->sig, &tag, 1);
        double x = v.t == AD_TBOOL ? (double)v.u.b : v.t == AD_TDTYPE ? (double)v.u.dtype : v.u.n;
        ad_buf_add(c->sig, (const char *)&x, sizeof x);
        return c->desc ? ad_value_format(S, v, c->desc, true) : ADDSL_OK;
    }
    case AD_TSTR:
        ad_buf_add(c->sig, &tag, 1);
        ad_buf_add(c->sig, (const char *)&v.u.s->len, sizeof v.u.s->len);
        ad_buf_add(c->sig, v.u.s->data, v.u.s->len);
        return c->desc ? ad_value_format(S, v, c->desc, true) : ADDSL_OK;
    case AD_TLIST: case AD_TTUPLE: {
        ad_buf_add(c->sig, &tag, 1);
        ad_buf_add(c->sig, (const char *)&v.u.l->len, sizeof v.u.l->len);
        if (c->desc) ad_buf_puts(c->desc, v.t == AD_TLIST ? "[" : "(");
        /* A list holding itself has no finite signature: RecursionError. */
        int rc = ad_nest_enter(S, "while reading the arguments of a compiled function");
        if (rc) return rc;
        for (int64_t i = 0; !rc && i < v.u.l->len; i++) {
            if (i && c->desc) ad_buf_puts(c->desc, ", ");
            rc = sig_value(S, c, v.u.l->items[i]);
        }
        ad_nest_leave(S);
        if (rc) return rc;
        if (c->desc) ad_buf_puts(c->desc, v.t == AD_TLIST ? "]" : ")");
        return ADDSL_OK;
    }
    default: {
        /* Other objects by identity, held so that the address is not reused. */
        ad_buf_add(c->sig, &tag, 1);
        ad_buf_add(c->sig, (const char *)&v.u.o, sizeof v.u.o);
        if (c->desc) ad_buf_printf(c->desc, "<%s>", ad_type_name(v));
        if (!c->held) return ADDSL_OK;
        ad_value_incref(v);
        return ad_list_push(S, c->held, v);
    }
    }
}

/* Keyword arguments are the trailing kw->len values; their names are part of
 * the signature, in the order the call gives them. */
static int signature(ad_state *S, const ad_value *argv, int argc, const ad_list *kw, sigctx *c) {
    char mode = S->grad_enabled ? 'G' : 'N';
    ad_buf_add(c->sig, &mode, 1);
    int npos = argc - (kw ? (int)kw->len : 0);
    if (c->desc) ad_buf_puts(c->desc, "(");
    for (int i = 0; i < argc; i++) {
        if (i && c->desc) ad_buf_puts(c->desc, ", ");
        if (i >= npos) {
            const ad_str *name = kw->items[i - npos].u.s;
            char tag = '=';
            ad_buf_add(c->sig, &tag, 1);
            ad_buf_add(c->sig, name->data, name->len + 1);
            if (c->desc) ad_buf_printf(c->desc, "%s=", name->data);
        }
        int rc = sig_value(S, c, argv[i]);
        if (rc) return rc;
    }
    if (c->desc) ad_buf_printf(c->desc, ")%s", S->grad_enabled ? "" : " no_grad");
    return c->sig->failed || (c->desc && c->desc->failed) ? ADDSL_ENOMEM : ADDSL_OK;
}

/* ---- the cache ---- */

static void entry_clear(ad_state *S, ad_centry *e) {
    ad_buf_free(&e->sig);
    ad_buf_free(&e->desc);
    ad_value_decref(S, e->held);
    e->held = ad_none();
    ad_trace_free(S, e->prog);
    e->prog = NULL;
    if (e->node_op) ad_value_decref(S, (ad_value){.t = AD_TOP, .u.op = e->node_op});
    e->node_op = NULL;
    e->node_tried = false;
    e->node_why[0] = '\0';
    ad_cjvp_free(S, e->tan_prog);
    e->tan_prog = NULL;
    e->tan_tried = false;
    e->tan_why[0] = '\0';
    ad_cgraph_free(S, e->graph);
    e->graph = NULL;
}

/* A replay without the one graph node: through its CUDA graph when the
 * inputs are on the GPU and the program allows it (vm/jit/replay_graph.c). */
static int plain_replay(ad_state *S, ad_centry *e, ad_tensor *const *inputs, ad_value *out) {
    int rc = ad_cgraph_replay(S, &e->graph, e->prog, inputs, out);
    return rc >= 0 ? rc : ad_trace_replay(S, e->prog, inputs, out);
}

/* A replay; with grad, one graph node when the program allows it. */
static int replay(ad_state *S, ad_centry *e, ad_tensor *const *inputs, ad_value *out) {
    if (ad_cjvp_wanted(S, inputs, e->prog->ninputs)) {
        if (!e->tan_tried) {
            e->tan_tried = true;
            int rc = ad_cjvp_derive(S, e->prog, inputs, &e->tan_prog, e->tan_why, sizeof e->tan_why);
            if (rc) return rc;
        }
        int rc = e->tan_prog ? ad_cjvp_call(S, e->tan_prog, inputs, out) : -1;
        if (rc >= 0) return rc;
        return ad_trace_replay(S, e->prog, inputs, out);
    }
    if (!ad_cvjp_wanted(S, inputs, e->prog->ninputs)) return plain_replay(S, e, inputs, out);
    if (!e->node_tried) {
        e->node_tried = true;
        int rc = ad_cvjp_derive(S, e->prog, inputs, &e->node_op, e->node_why, sizeof e->node_why);
        if (rc) return rc;
    }
    if (!e->node_op) return plain_replay(S, e, inputs, out);
    return ad_cvjp_call(S, e->node_op, inputs, out);
}

static void compiled_free(ad_state *S, void *ud) {
    ad_compiled *c = ud;
    for (int i = 0; i < c->n; i++) entry_clear(S, &c->e[i]);
    ad_buf_free(&c->scratch_sig);
    ad_free(S, c->scratch_in);
    ad_value_decref(S, c->f);
    ad_free(S, c);
}

static void warn(ad_state *S, const char *fmt, const char *a, const char *b) {
    char msg[512];
    int n = snprintf(msg, sizeof msg, fmt, a, b);
    if (n > 0) ad_write(S, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1, 1);
}

/* Whether a replay stopped at a guard on a value f read (_compiled_guard):
 * the call traces again (nothing with an effect ran before the guard). */
static bool guard_failed(ad_state *S, int rc) {
    if (!rc || !S->trace_guard_failed) return false;
    S->trace_guard_failed = false;
    ad_clear_error(S);
    return true;
}

/* _compiled_guard(t, expected): a compiled program's check that a tensor f
 * read into control flow holds what it held at the trace (bit for bit). */
static int bi_compiled_guard(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    *out = ad_none();
    if (argv[0].t != AD_TTENSOR || argv[1].t != AD_TTENSOR) return ad_error(S, "_compiled_guard(): needs two tensors");
    const ad_tensor *t = argv[0].u.tensor, *x = argv[1].u.tensor;
    bool same =
        t->dtype == x->dtype && ad_tensor_device(t) == 0 && ad_shape_equal(t->ndim, t->shape, x->ndim, x->shape);
    if (same) {
        ad_tensor *c = ad_tensor_clone(S, t);
        if (!c) return S->errcode ? S->errcode : ADDSL_ENOMEM;
        size_t n = (size_t)c->numel * ad_dtype_size(c->dtype);
        same = n == 0 || memcmp(ad_tensor_data(c), ad_tensor_data(x), n) == 0;
        ad_tensor_decref(S, c);
    }
    if (same) return ADDSL_OK;
    int rc = ad_error(S, "compiled program: a value f read into control flow changed (the call traces again)");
    S->trace_guard_failed = true;
    return rc;
}

/* Traces f on these arguments into 'e' (a new or stale entry). Returns f's
 * result from the traced run, which is an eager run. */
static int trace_into(ad_state *S, ad_builtin *b, ad_centry *e, const ad_value *argv, int argc, const ad_list *kw,
                      sigctx *sc, ad_value *out) {
    ad_compiled *c = b->ud;
    ad_trace *T = ad_trace_new(S);
    if (!T) return ADDSL_ENOMEM;
    T->self = b;
    T->guard_data = !c->fullgraph;
    int rc = ADDSL_OK;
    ad_list *args = ad_list_new(S, AD_TTUPLE, argc);
    if (!args) {
        ad_trace_free(S, T);
        return S->errcode ? S->errcode : ADDSL_ENOMEM;
    }
    for (int i = 0; i < argc; i++) {
        args->items[i] = argv[i];
        ad_value_incref(argv[i]);
    }
    T->args = ad_list_value(args, AD_TTUPLE);
    for (int i = 0; i < sc->ninputs && !rc; i++) rc = ad_trace_input(S, T, sc->inputs[i]);
    if (rc) { ad_trace_free(S, T); return rc; }
    ad_trace *outer = S->trace;
    S->trace = T;
    for (int i = 0; i < argc; i++) ad_trace_guard_object(S, argv[i]);
    rc = ad_vm_call_value_kw(S, c->f, argc, argv, kw, out);
    S->trace = outer;
    /* the arguments are needed only while tracing: the program must not keep the first call's */
    ad_value_decref(S, T->args);
    T->args = ad_none();
    if (!rc && (rc = ad_trace_set_result(S, T, *out))) { ad_value_decref(S, *out); *out = ad_none(); }
    if (rc) { ad_trace_free(S, T); return rc; }
    if (!T->fail[0]) ad_trace_optimize(S, T, c->passes);
    if (T->fail[0]) {
        snprintf(e->why, sizeof e->why, "%s", T->fail);
        warn(S, "warning: compile(%s): %s; this signature runs eagerly\n", c->name, T->fail);
        ad_trace_free(S, T);
        return ADDSL_OK;
    }
    if (T->note[0]) warn(S, "warning: compile(%s): %s\n", c->name, T->note);
    e->prog = T;
    return ADDSL_OK;
}

static int compiled_call(ad_state *S, ad_builtin *b, const ad_value *argv, int argc, const ad_list *kw, ad_value *out) {
    ad_compiled *c = b->ud;
    *out = ad_none();
    /* The signature's bytes only; its text and the objects it names are
     * kept on a miss, by a second pass. */
    ad_buf sig, desc;
    ad_buf_init(&sig, S);
    ad_buf_init(&desc, S);
    sigctx sc = {&sig, NULL, NULL, NULL, 0, 0};
    bool scratch = !c->scratch_busy;
    if (scratch) {
        c->scratch_busy = true;
        c->scratch_sig.S = S;
        c->scratch_sig.len = 0;
        c->scratch_sig.failed = 0;
        sc = (sigctx){&c->scratch_sig, NULL, NULL, c->scratch_in, 0, c->scratch_cap};
    }
    int rc = signature(S, argv, argc, kw, &sc);
    const ad_buf *key = sc.sig;
    int hit = -1;
    for (int i = 0; i < c->n && !rc && hit < 0; i++)
        if (c->e[i].sig.len == key->len && memcmp(c->e[i].sig.data, key->data, key->len) == 0) hit = i;
    /* a miss: the entry keeps its own copy of the scratch bytes */
    if (!rc && hit < 0 && scratch && key->len && ad_buf_add(&sig, key->data, key->len)) rc = ADDSL_ENOMEM;
    if (!rc && hit >= 0) {
        ad_centry *e = &c->e[hit];
        e->hits++;
        if (!e->prog) rc = ad_vm_call_value_kw(S, c->f, argc, argv, kw, out);
        else if (ad_trace_guards_hold(S, e->prog) && !(S->trace_guard_failed = false) &&
                 !guard_failed(S, (rc = replay(S, e, sc.inputs, out)))) {
            /* replayed (or failed as f would) */
        } else {
            rc = ADDSL_OK;
            /* A global or captured tensor that f reads was rebound, or a value
             * f read into control flow changed: trace again. */
            ad_trace_free(S, e->prog);
            e->prog = NULL;
            if (e->node_op) ad_value_decref(S, (ad_value){.t = AD_TOP, .u.op = e->node_op});
            e->node_op = NULL;
            e->node_tried = false;
            ad_cjvp_free(S, e->tan_prog);
            e->tan_prog = NULL;
            e->tan_tried = false;
            ad_cgraph_free(S, e->graph);
            e->graph = NULL;
            if (++e->retraces > AD_COMPILE_CACHE) {
                /* State that changes at every call (a step count kept as a
                 * number) would trace every call: run eagerly instead. */
                snprintf(e->why, sizeof e->why,
                         "what it reads from globals, containers or tensor values changed at %d calls", e->retraces);
                warn(S, "warning: compile(%s): %s; this signature runs eagerly\n", c->name, e->why);
                rc = ad_vm_call_value_kw(S, c->f, argc, argv, kw, out);
            } else {
                rc = trace_into(S, b, e, argv, argc, kw, &sc, out);
            }
        }
    } else if (!rc && c->n == AD_COMPILE_CACHE) {
        if (!c->warned_full) {
            c->warned_full = true;
            char lim[16];
            snprintf(lim, sizeof lim, "%d", AD_COMPILE_CACHE);
            warn(S, "warning: compile(%s): traced for %s signatures, the cache limit; new signatures run eagerly\n",
                 c->name, lim);
        }
        c->eager_calls++;
        rc = ad_vm_call_value_kw(S, c->f, argc, argv, kw, out);
    } else if (!rc) {
        ad_buf scratch;
        ad_buf_init(&scratch, S);
        ad_list *held = ad_list_new(S, AD_TLIST, 0);
        sigctx full = {&scratch, &desc, held, NULL, 0, 0};
        rc = held ? signature(S, argv, argc, kw, &full) : ADDSL_ENOMEM;
        ad_buf_free(&scratch);
        ad_free(S, full.inputs);
        if (rc) {
            if (held) ad_value_decref(S, ad_list_value(held, AD_TLIST));
        } else {
            ad_centry *e = &c->e[c->n];
            memset(e, 0, sizeof *e);
            e->held = ad_list_value(held, AD_TLIST);
            e->sig = sig;
            e->desc = desc;
            ad_buf_init(&sig, S);
            ad_buf_init(&desc, S);
            int k = c->n++;
            rc = trace_into(S, b, e, argv, argc, kw, &sc, out);
            if (rc) {
                /* A recursive call of cf may have added entries after this one. */
                entry_clear(S, e);
                memmove(&c->e[k], &c->e[k + 1], (size_t)(c->n - k - 1) * sizeof c->e[0]);
                c->n--;
            }
        }
    }
    ad_buf_free(&sig);
    ad_buf_free(&desc);
    if (scratch) {
        c->scratch_in = sc.inputs;
        c->scratch_cap = sc.cap;
        c->scratch_busy = false;
    } else {
        ad_free(S, sc.inputs);
    }
    return rc;
}

static int stub(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argv; (void)argc; (void)out;
    return ad_error(S, "a compiled function was called without its record");
}

/* compile(f, passes=true) */
static int bi_compile(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_value f = argv[0];
    if (f.t != AD_TFUNC && f.t != AD_TBUILTIN && f.t != AD_TOP)
        return ad_error(S, "compile(): argument 'f' must be a function, not %s", ad_type_name(f));
    bool passes, fullgraph;
    int rc = ad_arg_bool(S, argv[1], "compile", "passes", &passes);
    if (!rc) rc = ad_arg_bool(S, argv[2], "compile", "fullgraph", &fullgraph);
    if (rc) return rc;
    ad_compiled *c = ad_calloc(S, 1, sizeof *c);
    ad_builtin *b = ad_calloc(S, 1, sizeof *b);
    if (!c || !b) { ad_free(S, c); ad_free(S, b); return ADDSL_ENOMEM; }
    c->f = f;
    ad_value_incref(f);
    c->passes = passes;
    c->fullgraph = fullgraph;
    const char *fname = f.t == AD_TFUNC ? ad_vm_closure_name(f.u.fn) : f.t == AD_TBUILTIN ? f.u.bi->name : f.u.op->name;
    snprintf(c->name, sizeof c->name, "%s", fname ? fname : "<fn>");
    b->hdr.refcount = 1;
    b->name = c->name;
    b->fn = stub;
    b->nparams = -1;
    b->kid = -1;
    b->on_device = true;
    b->ud = c;
    b->ud_free = compiled_free;
    b->call = compiled_call;
    out->t = AD_TBUILTIN;
    out->u.bi = b;
    return ADDSL_OK;
}

static int compiled_arg(ad_state *S, ad_value v, const char *fn, ad_compiled **out) {
    if (v.t != AD_TBUILTIN || v.u.bi->call != compiled_call)
        return ad_error(S, "%s(): argument 'cf' must be a function made by compile(), not %s", fn, ad_type_name(v));
    *out = v.u.bi->ud;
    return ADDSL_OK;
}

static int graph_text(ad_state *S, const ad_compiled *c, ad_buf *b) {
    ad_buf_printf(b, "compiled %s: %d signature%s cached (limit %d)", c->name, c->n, c->n == 1 ? "" : "s", AD_COMPILE_CACHE);
    if (c->eager_calls) ad_buf_printf(b, ", %llu eager calls past the limit", (unsigned long long)c->eager_calls);
    ad_buf_puts(b, "\n");
    for (int i = 0; i < c->n; i++) {
        const ad_centry *e = &c->e[i];
        ad_buf_printf(b, "signature %d: %s, %llu replays\n", i, e->desc.data ? e->desc.data : "()", (unsigned long long)e->hits);
        if (!e->prog) { ad_buf_printf(b, "  runs eagerly: %s\n", e->why); continue; }
        int rc = ad_trace_print(S, e->prog, b);
        if (rc) return rc;
        if (e->node_op && (rc = ad_cvjp_print(S, e->node_op, b))) return rc;
        if (!e->node_op && e->node_tried) ad_buf_printf(b, "  a graph node per op (calls with grad): %s\n", e->node_why);
        if (e->tan_prog && (rc = ad_cjvp_print(S, e->tan_prog, b))) return rc;
        if (!e->tan_prog && e->tan_tried) ad_buf_printf(b, "  tangents op by op (calls under jvp): %s\n", e->tan_why);
        ad_cgraph_print(e->graph, b);
    }
    return b->failed ? ADDSL_ENOMEM : ADDSL_OK;
}

/* compiled_graph(cf): the printed programs as a string. */
static int bi_compiled_graph(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_compiled *c = NULL;
    int rc = compiled_arg(S, argv[0], "compiled_graph", &c);
    if (rc) return rc;
    ad_buf b;
    ad_buf_init(&b, S);
    rc = graph_text(S, c, &b);
    if (!rc) rc = ad_string_value(S, b.data ? b.data : "", b.len, out);
    ad_buf_free(&b);
    return rc;
}

/* print_compiled(cf): prints the same text. */
static int bi_print_compiled(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_compiled *c = NULL;
    int rc = compiled_arg(S, argv[0], "print_compiled", &c);
    if (rc) return rc;
    ad_buf b;
    ad_buf_init(&b, S);
    rc = graph_text(S, c, &b);
    if (!rc) ad_write(S, b.data ? b.data : "", b.len, 0);
    ad_buf_free(&b);
    *out = ad_none();
    return rc;
}

const ad_builtin_def ad_compiled_defs[] = {
    {"compile", bi_compile, "f, passes=true, fullgraph=false",
     "A function equal to f that traces f once per signature of its arguments (shapes, dtypes, "
     "devices, requires_grad of tensors, values of the rest) and replays the recorded op calls on "
     "later calls; gradients flow through it. passes=false skips constant folding, common "
     "subexpressions and dead code. Control flow on a tensor's value (if t, t.item()) is guarded: "
     "the call traces again when the value read changes; fullgraph=true makes it an error. "
     "See docs/compile.md."
     "\nExample: compile(fn(x) => (x * 2).sum())(tensor([1.0, 2.0]))"},
    {"_compiled_guard", bi_compiled_guard, "t, expected",
     "Internal: a compiled program's guard that tensor t, which f read into control flow, holds "
     "what it held at the trace; else the call traces again. See docs/compile.md."
     "\nExample: _compiled_guard(tensor([1.0]), tensor([1.0]))"},
    {"compiled_graph", bi_compiled_graph, "cf",
     "The programs a compiled function cached, as the text print_compiled shows."
     "\nExample: compiled_graph(compile(fn(x) => x + 1))"},
    {"print_compiled", bi_print_compiled, "cf",
     "Prints the programs a compiled function cached: per signature its inputs, constants, the "
     "recorded calls with their refs, shapes and positions, and what the passes removed."
     "\nExample: print_compiled(compile(fn(x) => x + 1))"},
    {NULL, NULL, NULL, NULL},
};
