/* export/export_c.c: export_c(f, args, PATH, name="f"): traces f at example
 * arguments and writes the program as a C99 file and its header. */
#include "export/nest.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "system/fileio.h"
#include "autograd/library.h"
#include "tensor/device.h"
#include "gc.h"
#include "state.h"
#include "vm.h"

#define WORK_ALIGN 16

/* One exported C function: its traced program and what the C code knows of it. */
typedef struct xfun {
    const char *cname;          /* "f", "f_vjp", ... */
    ad_trace *T;
    ad_xval *v;
    int *outs;
    int nouts, capouts;
    ad_buf body, consts, decls;
    int64_t work;               /* bytes */
    ad_buf *prelude;            /* file-scope text the functions share (borrowed) */
} xfun;

static void xfun_free(ad_state *S, xfun *F) {
    ad_trace_free(S, F->T);
    ad_free(S, F->v);
    ad_free(S, F->outs);
    ad_buf_free(&F->body);
    ad_buf_free(&F->consts);
    ad_buf_free(&F->decls);
}

/* ---- tracing ---- */

static int collect_inputs(ad_state *S, ad_trace *T, ad_value v) {
    if (v.t == AD_TTENSOR) {
        if (ad_tensor_device(v.u.tensor)) return ad_error(S, "export_c(): example tensors must be on the CPU");
        return ad_trace_input(S, T, v.u.tensor);
    }
    if (ad_is_seq(v)) {
        int rc = ad_nest_enter(S, "while reading export_c()'s example arguments");
        if (rc) return rc;
        for (int64_t i = 0; !rc && i < v.u.l->len; i++) rc = collect_inputs(S, T, v.u.l->items[i]);
        ad_nest_leave(S);
        if (rc) return rc;
    }
    return ADDSL_OK;
}

static int push_out(ad_state *S, xfun *F, int ref) {
    if (F->nouts == F->capouts) {
        int cap = F->capouts ? 2 * F->capouts : 8;
        int *p = ad_realloc(S, F->outs, (size_t)cap * sizeof *p);
        if (!p) return ADDSL_ENOMEM;
        F->outs = p; F->capouts = cap;
    }
    F->outs[F->nouts++] = ref;
    return ADDSL_OK;
}

static int collect_outs(ad_state *S, xfun *F, const ad_targ *a) {
    if (a->ref >= 0) return push_out(S, F, a->ref);
    if (a->sub) {
        for (int i = 0; i < a->nsub; i++) {
            int rc = collect_outs(S, F, &a->sub[i]);
            if (rc) return rc;
        }
        return ADDSL_OK;
    }
    return ad_error(S, "export_c(): %s returns %s; an exported function returns tensors (or lists and tuples of them)",
                    F->cname, ad_type_name(a->c));
}

/* Traces fn(args...) into F, keeping each value's shape and dtype before the
 * passes release the trace-time tensors. */
static int trace_fun(ad_state *S, xfun *F, ad_value fn, const ad_list *args) {
    if (S->trace) return ad_error(S, "export_c(): cannot be called while a function is compiled or traced");
    ad_trace *T = ad_trace_new(S);
    if (!T) return ADDSL_ENOMEM;
    F->T = T;
    int rc = ADDSL_OK;
    for (int64_t i = 0; i < args->len && !rc; i++) rc = collect_inputs(S, T, args->items[i]);
    if (rc) return rc;
    ad_value res = ad_none();
    S->trace = T;
    rc = ad_vm_call_value(S, fn, (int)args->len, args->items, &res);
    S->trace = NULL;
    if (!rc) rc = ad_trace_set_result(S, T, res);
    ad_value_decref(S, res);
    if (rc) return rc;
    if (T->fail[0]) return ad_error(S, "export_c(): %s cannot be exported: %s", F->cname, T->fail);
    F->v = ad_calloc(S, (size_t)(T->nvals ? T->nvals : 1), sizeof *F->v);
    if (!F->v) return ADDSL_ENOMEM;
    for (int i = 0; i < T->nvals; i++) {
        ad_xval *x = &F->v[i];
        x->base = i; x->out = -1; x->def = x->last = -1; x->share = -1;
        ad_value tv = T->vals[i].v;
        if (tv.t != AD_TTENSOR) continue;
        const ad_tensor *t = tv.u.tensor;
        if (ad_tensor_device(t)) return ad_error(S, "export_c(): %s computes on a GPU; export traces on the CPU", F->cname);
        x->dt = t->dtype; x->ndim = t->ndim; x->numel = t->numel;
        for (int d = 0; d < t->ndim; d++) x->shape[d] = t->shape[d];
    }
    ad_trace_optimize(S, T, true);
    for (int i = 0; i < T->nvals; i++) {
        ad_xval *x = &F->v[i];
        const ad_tval *tv = &T->vals[i];
        if (tv->kind == AD_TV_INPUT) { x->kind = AD_XV_INPUT; x->index = i; }
        else if (tv->kind == AD_TV_CONST || tv->folded) x->kind = tv->v.t == AD_TTENSOR ? AD_XV_CONST : AD_XV_NONE;
        int64_t s = 1;
        for (int d = x->ndim - 1; d >= 0; d--) { x->st[d] = s; s *= x->shape[d]; }
    }
    return collect_outs(S, F, &T->result);
}

/* ---- constants ---- */

double ad_export_elem(const ad_tensor *t, int64_t lin) {
    int64_t pos = t->offset, rest = lin;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t i = t->shape[d] ? rest % t->shape[d] : 0;
        rest = t->shape[d] ? rest / t->shape[d] : 0;
        pos += i * t->strides[d];
    }
    const char *p = (const char *)t->storage->data;
    switch (t->dtype) {
    case AD_FLOAT32: return ((const float *)p)[pos];
    case AD_FLOAT64: return ((const double *)p)[pos];
    case AD_INT64: return (double)((const int64_t *)p)[pos];
    case AD_BOOL: return ((const uint8_t *)p)[pos];
    default: return 0;
    }
}

bool ad_export_splat(const ad_xctx *ctx, int id, double *x) {
    const ad_tval *tv = &ctx->T->vals[ctx->v[id].base];
    if (tv->v.t != AD_TTENSOR || !tv->v.u.tensor->numel) return false;
    const ad_tensor *t = tv->v.u.tensor;
    double first = ad_export_elem(t, 0);
    for (int64_t i = 1; i < t->numel; i++) {
        double y = ad_export_elem(t, i);
        if (!(y == first || (y != y && first != first)) || signbit(y) != signbit(first)) return false;
    }
    *x = first;
    return true;
}

/* A constant read by the program: a static const array of its elements. */
static void write_const(xfun *F, const char *name, int id) {
    const ad_tensor *t = F->T->vals[id].v.u.tensor;
    ad_buf *b = &F->consts;
    ad_buf_printf(b, "static const %s %s_k%d[%lld] = {", ad_export_ctype(t->dtype), name, id,
                  (long long)(t->numel ? t->numel : 1));
    if (!t->numel) ad_buf_puts(b, "0");
    for (int64_t i = 0; i < t->numel; i++) {
        ad_buf_puts(b, i == 0 ? "" : (i % 6 == 0 ? ",\n    " : ", "));
        ad_export_literal(b, t->dtype, ad_export_elem(t, i));
    }
    ad_buf_puts(b, "};\n");
}

/* ---- the work buffer plan ---- */

typedef struct block { int64_t off, size; int last, id; } block;

typedef struct defid { int def, id; } defid;

static int cmp_defid(const void *a, const void *b) {
    const defid *p = a, *q = b;
    if (p->def != q->def) return p->def < q->def ? -1 : 1;
    return (p->id > q->id) - (p->id < q->id);
}

static int64_t align_up(int64_t x) { return (x + WORK_ALIGN - 1) / WORK_ALIGN * WORK_ALIGN; }

/* Buffers are placed in the order their records run; a buffer's block is free
 * again after its last reader, first fit among the live blocks. An op never
 * writes a block that one of its inputs still holds (both are live at it),
 * except the block of its 'share' input when that one dies there: the
 * statement reads each element of it before writing the same element. */
static int plan_work(ad_state *S, xfun *F, bool share) {
    ad_trace *T = F->T;
    block *live = ad_malloc(S, (size_t)(T->nvals ? T->nvals : 1) * sizeof *live);
    if (!live) return ADDSL_ENOMEM;
    /* in the order their records write them (a fused loop writes its values
     * from its first record on), ids breaking ties */
    defid *order = ad_malloc(S, (size_t)(T->nvals ? T->nvals : 1) * sizeof *order);
    if (!order) { ad_free(S, live); return ADDSL_ENOMEM; }
    int n = 0;
    for (int id = 0; id < T->nvals; id++) {
        const ad_xval *x = &F->v[id];
        if (x->kind == AD_XV_BUF && x->out < 0 && !x->scalar) order[n++] = (defid){x->def, id};
    }
    qsort(order, (size_t)n, sizeof *order, cmp_defid);
    int nlive = 0;
    int64_t top = 0;
    for (int q = 0; q < n; q++) {
        ad_xval *x = &F->v[order[q].id];
        int k = 0;
        for (int j = 0; j < nlive; j++) if (live[j].last >= x->def) live[k++] = live[j];
        nlive = k;
        int64_t size = align_up(x->numel * (int64_t)ad_dtype_size(x->dt));
        int took = -1;
        for (int j = 0; j < nlive && share && x->share >= 0 && took < 0; j++)
            if (live[j].id == x->share && live[j].last == x->def && live[j].size >= size) took = j;
        if (took >= 0) {
            x->woff = live[took].off;
            live[took].last = x->last;
            live[took].id = order[q].id;
            continue;
        }
        /* first fit: the live blocks sorted by offset, gaps between them */
        for (int a = 1; a < nlive; a++)
            for (int j = a; j > 0 && live[j - 1].off > live[j].off; j--) { block t = live[j]; live[j] = live[j - 1]; live[j - 1] = t; }
        int64_t at = 0;
        for (int j = 0; j < nlive; j++) {
            if (live[j].off - at >= size) break;
            if (live[j].off + live[j].size > at) at = live[j].off + live[j].size;
        }
        x->woff = at;
        if (at + size > top) top = at + size;
        if (size) live[nlive++] = (block){at, size, x->last, order[q].id};
    }
    ad_free(S, live);
    ad_free(S, order);
    F->work = top;
    return ADDSL_OK;
}

/* ---- writing ---- */

static void signature(ad_buf *b, const xfun *F, bool names) {
    ad_buf_printf(b, "void %s(", F->cname);
    for (int i = 0; i < F->T->ninputs; i++)
        ad_buf_printf(b, "%sconst %s *%s%d", i ? ", " : "", ad_export_ctype(F->v[i].dt), names ? "in" : "in", i);
    for (int k = 0; k < F->nouts; k++)
        ad_buf_printf(b, "%s%s *out%d", F->T->ninputs + k ? ", " : "", ad_export_ctype(F->v[F->outs[k]].dt), k);
    ad_buf_puts(b, F->T->ninputs + F->nouts ? ", void *work)" : "void *work)");
}

static void shape_text(ad_buf *b, const ad_xval *x) {
    ad_buf_printf(b, "%s[", ad_dtype_name(x->dt));
    for (int d = 0; d < x->ndim; d++) ad_buf_printf(b, d ? ",%lld" : "%lld", (long long)x->shape[d]);
    ad_buf_puts(b, "]");
}

static void describe_args(ad_buf *b, const xfun *F) {
    for (int i = 0; i < F->T->ninputs; i++) {
        ad_buf_printf(b, " *   in%d: ", i);
        shape_text(b, &F->v[i]);
        ad_buf_printf(b, ", %lld elements\n", (long long)F->v[i].numel);
    }
    for (int k = 0; k < F->nouts; k++) {
        ad_buf_printf(b, " *   out%d: ", k);
        shape_text(b, &F->v[F->outs[k]]);
        ad_buf_printf(b, ", %lld elements\n", (long long)F->v[F->outs[k]].numel);
    }
}

/* Lowers every record of F, then copies outputs that are views, inputs,
 * constants or repeats into the caller's arrays. */
/* Options of export_c beyond the contract's four parameters. */
typedef struct xopts {
    bool fuse;                  /* element-wise chains as one loop (default) */
    bool blas;                  /* matrix products as CBLAS calls */
} xopts;

static int lower_fun(ad_state *S, xfun *F, const char *chunk, const char *name, const xopts *opt) {
    ad_trace *T = F->T;
    ad_buf_init(&F->body, S);
    ad_buf_init(&F->consts, S);
    ad_buf_init(&F->decls, S);
    for (int k = 0; k < F->nouts; k++) {
        ad_xval *x = &F->v[F->outs[k]];
        bool first = true;
        for (int j = 0; j < k; j++) if (F->outs[j] == F->outs[k]) first = false;
        if (first && T->vals[F->outs[k]].kind == AD_TV_NODE && !T->vals[F->outs[k]].folded) x->out = k;
    }
    (void)name;
    ad_xctx ctx = {S, T, F->v, chunk, F->cname, &F->body, &F->consts, 0, 0, F->outs, F->nouts, NULL, NULL, NULL, opt->blas, 0, F->prelude};
    int rc = ad_export_readers(&ctx);
    if (!rc && opt->fuse) {
        ctx.fuse = ad_malloc(S, sizeof *ctx.fuse);
        if (!ctx.fuse) rc = ADDSL_ENOMEM;
        else { ctx.fuse->ng = 0; ctx.fuse->last = -1; }
    }
    for (int i = 0; i < T->nnodes && !rc; i++) {
        if (T->nodes[i].dead || T->nodes[i].folded) continue;
        ctx.node = i;
        ctx.now = i * AD_XTIME;
        rc = ad_export_lower(&ctx);
    }
    ctx.node = T->nnodes;
    ctx.now = T->nnodes * AD_XTIME;
    if (!rc) rc = ad_export_fuse_flush(&ctx);
    ad_free(S, ctx.fuse);
    ad_free(S, ctx.rd_start);
    ad_free(S, ctx.rd_node);
    for (int k = 0; k < F->nouts && !rc; k++) rc = ad_export_copy_out(&ctx, F->outs[k], k);
    if (rc) return rc;
    for (int id = 0; id < T->nvals; id++)
        if (F->v[id].kind == AD_XV_CONST && F->v[id].read) write_const(F, F->cname, id);
    /* taking over blocks changes where first fit puts the rest: the smaller plan wins */
    rc = plan_work(S, F, true);
    int64_t shared = F->work;
    if (!rc) rc = plan_work(S, F, false);
    if (!rc && shared <= F->work) rc = plan_work(S, F, true);
    if (rc) return rc;
    /* a record's scratch lies above every block: nothing else is live there */
    int64_t scratch_at = align_up(F->work);
    if (ctx.scratch) F->work = scratch_at + ctx.scratch;
    bool any = false;
    for (int id = 0; id < T->nvals; id++) {
        const ad_xval *x = &F->v[id];
        if (x->kind != AD_XV_BUF || x->out >= 0 || x->scalar) continue;
        any = true;
        ad_buf_printf(&F->decls, "    %s *v%d = (%s *)(w + %lld); /* ", ad_export_ctype(x->dt), id, ad_export_ctype(x->dt),
                      (long long)x->woff);
        shape_text(&F->decls, x);
        ad_buf_printf(&F->decls, ", live over records %d..%d", x->def / AD_XTIME, (x->last + AD_XTIME - 1) / AD_XTIME);
        if (x->share >= 0 && F->v[x->share].woff == x->woff && F->v[x->share].last == x->def)
            ad_buf_printf(&F->decls, ", in %%%d's block", x->share);
        ad_buf_puts(&F->decls, " */\n");
    }
    if (any || ctx.scratch) {
        ad_buf *d = &F->decls;
        ad_buf tmp;
        ad_buf_init(&tmp, S);
        ad_buf_puts(&tmp, "    unsigned char *w = (unsigned char *)work;\n");
        if (ctx.scratch)
            ad_buf_printf(&tmp, "    unsigned char *scratch = w + %lld; /* %lld bytes for the records that need them */\n",
                          (long long)scratch_at, (long long)ctx.scratch);
        ad_buf_add(&tmp, d->data, d->len);
        ad_buf_free(d);
        *d = tmp;
    } else ad_buf_puts(&F->decls, "    (void)work;\n");
    /* parameters no statement reads or writes (empty arrays) */
    for (int i = 0; i < T->ninputs; i++)
        if (!F->v[i].read || !F->v[i].numel) ad_buf_printf(&F->decls, "    (void)in%d;\n", i);
    for (int k = 0; k < F->nouts; k++)
        if (!F->v[F->outs[k]].numel) ad_buf_printf(&F->decls, "    (void)out%d;\n", k);
    return F->body.failed || F->consts.failed || F->decls.failed ? ADDSL_ENOMEM : ADDSL_OK;
}

static void write_fun_c(ad_buf *b, const xfun *F, const char *what) {
    ad_buf_printf(b, "\n/* %s\n", what);
    describe_args(b, F);
    ad_buf_printf(b, " * work: %lld bytes of the header's WORK_BYTES */\n", (long long)F->work);
    if (F->consts.len) { ad_buf_add(b, F->consts.data, F->consts.len); }
    signature(b, F, true);
    ad_buf_puts(b, "\n{\n");
    ad_buf_add(b, F->decls.data, F->decls.len);
    if (F->body.len) ad_buf_add(b, F->body.data, F->body.len);
    ad_buf_puts(b, "}\n");
}

static int write_file(ad_state *S, const char *path, const ad_buf *text) {
    ad_atomic_file af;
    int rc = ad_atomic_begin(S, "export_c", path, &af);
    if (rc) return rc;
    size_t n = fwrite(text->data ? text->data : "", 1, text->len, af.f);
    int err = errno;
    return ad_atomic_commit(S, "export_c", &af, n == text->len, err);
}

static bool c_identifier(const char *s) {
    if (!*s || !(isalpha((unsigned char)*s) || *s == '_')) return false;
    for (const char *p = s; *p; p++) if (!(isalnum((unsigned char)*p) || *p == '_')) return false;
    return strlen(s) < 48;
}

/* PATH's header: "dir/model.c" -> "dir/model.h"; any other name gets ".h" appended. */
static int header_path(ad_state *S, const char *path, char **out) {
    size_t n = strlen(path);
    bool dotc = n > 2 && strcmp(path + n - 2, ".c") == 0;
    char *h = ad_malloc(S, n + 3);
    if (!h) return ADDSL_ENOMEM;
    memcpy(h, path, n + 1);
    if (dotc) h[n - 1] = 'h';
    else memcpy(h + n, ".h", 3);
    *out = h;
    return ADDSL_OK;
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int write_files(ad_state *S, const char *path, const char *name, const char *origin, xfun *funs, int nf) {
    char *hpath = NULL;
    int rc = header_path(S, path, &hpath);
    if (rc) return rc;
    char upper[64];
    size_t i = 0;
    for (; name[i] && i < sizeof upper - 1; i++) upper[i] = (char)toupper((unsigned char)name[i]);
    upper[i] = 0;
    int64_t work = 0;
    for (int k = 0; k < nf; k++) if (funs[k].work > work) work = funs[k].work;
    ad_buf h, c;
    ad_buf_init(&h, S);
    ad_buf_init(&c, S);
    ad_buf_printf(&h, "/* %s: generated by addsl export_c from %s; do not edit.\n", base_name(hpath), origin);
    ad_buf_puts(&h, " * Arrays are contiguous (row-major) in the traced shapes; 'work' is scratch\n"
                    " * memory of the caller, at least the bytes below, aligned as a double. */\n");
    ad_buf_printf(&h, "#ifndef %s_EXPORT_H\n#define %s_EXPORT_H\n\n#include <stdint.h>\n\n", upper, upper);
    ad_buf_printf(&h, "#define %s_WORK_BYTES %lld\n", upper, (long long)(work ? work : 0));
    for (int k = 0; k < nf; k++) {
        ad_buf_puts(&h, "\n/*\n");
        describe_args(&h, &funs[k]);
        ad_buf_puts(&h, " */\n");
        signature(&h, &funs[k], true);
        ad_buf_puts(&h, ";\n");
    }
    ad_buf_printf(&h, "\n#endif\n");
    bool blas = false;
    for (int k = 0; k < nf; k++) if (funs[k].body.data && strstr(funs[k].body.data, "cblas_")) blas = true;
    ad_buf_printf(&c, "/* %s: generated by addsl export_c from %s; do not edit.\n"
                      " * C99; needs only libm%s; allocates nothing and keeps no state: calls with\n"
                      " * separate work buffers may run in parallel. */\n"
                      "#include <math.h>\n#include <stdint.h>\n%s\n#include \"%s\"\n",
                  base_name(path), origin, blas ? " and CBLAS (link -lopenblas or -lblas)" : "",
                  blas ? "\n#include <cblas.h>\n" : "", base_name(hpath));
    if (funs[0].prelude && funs[0].prelude->len) ad_buf_add(&c, funs[0].prelude->data, funs[0].prelude->len);
    for (int k = 0; k < nf; k++) {
        static const char *const what[] = {"the function", "its vector-Jacobian product", "its Jacobian-vector product"};
        write_fun_c(&c, &funs[k], what[k < 3 ? k : 0]);
    }
    if (h.failed || c.failed) rc = ADDSL_ENOMEM;
    if (!rc) rc = write_file(S, path, &c);
    if (!rc) rc = write_file(S, hpath, &h);
    ad_buf_free(&h);
    ad_buf_free(&c);
    ad_free(S, hpath);
    return rc;
}

/* The library's xc_fwd_fn, xc_vjp_fn or xc_jvp_fn (lib/export.ad):
 * g(xs, vs) whose trace is the VJP or JVP program. */
static int derivative_function(ad_state *S, const char *which, ad_value f, ad_value *g) {
    int slot = ad_global_slot(S, which, false);
    if (slot < 0) return ad_error(S, "export_c(): the library has no %s", which);
    int rc = ad_library_resolve(S, slot);
    if (rc) return rc;
    if (!S->globals->defined[slot]) return ad_error(S, "export_c(): the library has no %s", which);
    return ad_vm_call_value(S, S->globals->values[slot], 1, &f, g);
}

/* Example cotangents (F's float outputs) or tangents (its float inputs) for
 * the derivative traces: zeros, since their values do not matter (they are
 * inputs of the program). */
static int zero_examples(ad_state *S, const xfun *F, bool outputs, ad_list **out) {
    ad_list *l = ad_list_new(S, AD_TLIST, 0);
    if (!l) return ADDSL_ENOMEM;
    int n = outputs ? F->nouts : F->T->ninputs;
    for (int k = 0; k < n; k++) {
        const ad_xval *x = &F->v[outputs ? F->outs[k] : k];
        if (x->dt != AD_FLOAT32 && x->dt != AD_FLOAT64) continue;
        ad_tensor *t = ad_tensor_zeros(S, x->dt, x->ndim, x->shape);
        if (!t) { ad_value_decref(S, ad_list_value(l, AD_TLIST)); return S->errcode ? S->errcode : ADDSL_ENOMEM; }
        int rc = ad_list_push(S, l, ad_tensor_value(t));
        if (rc) { ad_value_decref(S, ad_list_value(l, AD_TLIST)); return rc; } /* the push released t */
    }
    *out = l;
    return ADDSL_OK;
}

static int export_derivative(ad_state *S, xfun *V, const xfun *F, bool jvp, ad_value f, ad_value args, const char *chunk,
                             const xopts *opt) {
    ad_value g = ad_none();
    ad_list *vs = NULL;
    int rc = derivative_function(S, jvp ? "xc_jvp_fn" : "xc_vjp_fn", f, &g);
    if (!rc) rc = zero_examples(S, F, !jvp, &vs);
    ad_list *gargs = rc ? NULL : ad_list_new(S, AD_TLIST, 2);
    if (!rc && !gargs) rc = ADDSL_ENOMEM;
    if (!rc) {
        gargs->items[0] = args;
        ad_value_incref(args);
        gargs->items[1] = ad_list_value(vs, AD_TLIST);
        vs = NULL;
        rc = trace_fun(S, V, g, gargs);
    }
    if (!rc) rc = lower_fun(S, V, chunk, NULL, opt);
    if (rc && rc != ADDSL_ENOMEM) {
        char msg[AD_ERRMSG_MAX];
        snprintf(msg, sizeof msg, "%s", S->errmsg);
        ad_clear_error(S);
        rc = ad_error(S, "%s (in %s, the %s; positions inside derivative formulas are lines of the op library)", msg,
                      V->cname, jvp ? "Jacobian-vector product" : "vector-Jacobian product");
    }
    if (gargs) ad_value_decref(S, ad_list_value(gargs, AD_TLIST));
    if (vs) ad_value_decref(S, ad_list_value(vs, AD_TLIST));
    ad_value_decref(S, g);
    return rc;
}

/* The function itself, traced through lib/export.ad's xc_fwd_fn(f). */
static int export_forward(ad_state *S, xfun *F, ad_value f, ad_value args) {
    ad_value g = ad_none();
    int rc = derivative_function(S, "xc_fwd_fn", f, &g);
    ad_list *gargs = rc ? NULL : ad_list_new(S, AD_TLIST, 1);
    if (!rc && !gargs) rc = ADDSL_ENOMEM;
    if (!rc) {
        gargs->items[0] = args;
        ad_value_incref(args);
        rc = trace_fun(S, F, g, gargs);
    }
    if (gargs) ad_value_decref(S, ad_list_value(gargs, AD_TLIST));
    ad_value_decref(S, g);
    return rc;
}

/* export_c(f, args, path, name="f") */
static int bi_export_c(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    *out = ad_none();
    ad_value f = argv[0];
    if (f.t != AD_TFUNC && f.t != AD_TBUILTIN && f.t != AD_TOP)
        return ad_error(S, "export_c(): argument 'f' must be a function, not %s", ad_type_name(f));
    if (argv[1].t != AD_TLIST && argv[1].t != AD_TTUPLE)
        return ad_error(S, "export_c(): argument 'args' must be a list of example arguments, not %s", ad_type_name(argv[1]));
    const char *path = NULL, *name = NULL;
    int rc = ad_arg_str(S, argv[2], "export_c", "path", &path);
    if (!rc) rc = ad_arg_str(S, argv[3], "export_c", "name", &name);
    xopts opt = {true, false};
    if (!rc) rc = ad_arg_bool(S, argv[4], "export_c", "blas", &opt.blas);
    if (!rc) rc = ad_arg_bool(S, argv[5], "export_c", "fuse", &opt.fuse);
    if (rc) return rc;
    if (!c_identifier(name))
        return ad_error(S, "export_c(): name '%s' is not a C identifier (letters, digits, '_', under 48 characters)", name);
    if (S->export_c_path[0]) {
        if (S->export_c_calls > 0)
            return ad_error(S, "export_c(): the command line's --export-c %s names one file, and this script calls "
                               "export_c a second time", S->export_c_path);
        path = S->export_c_path;
    }
    int line = 0, col = 0;
    const char *chunk = NULL;
    ad_vm_current_pos(S, &line, &col, &chunk);
    char origin[300];
    snprintf(origin, sizeof origin, "%s:%d", chunk ? base_name(chunk) : "?", line);
    char fname[64];
    snprintf(fname, sizeof fname, "%s", name);
    char vname[72], jname[72];
    snprintf(vname, sizeof vname, "%s_vjp", name);
    snprintf(jname, sizeof jname, "%s_jvp", name);
    xfun F[3];
    memset(F, 0, sizeof F);
    F[0].cname = fname;
    F[1].cname = vname;
    F[2].cname = jname;
    ad_buf prelude;
    ad_buf_init(&prelude, S);
    for (int k = 0; k < 3; k++) F[k].prelude = &prelude;
    const char *ch = chunk ? base_name(chunk) : "?";
    uint64_t cleared = S->nomem_cleared;
    rc = export_forward(S, &F[0], f, argv[1]);
    if (!rc) rc = lower_fun(S, &F[0], ch, name, &opt);
    if (!rc) rc = export_derivative(S, &F[1], &F[0], false, f, argv[1], ch, &opt);
    if (!rc) rc = export_derivative(S, &F[2], &F[0], true, f, argv[1], ch, &opt);
    if (!rc) rc = write_files(S, path, name, origin, F, 3);
    if (!rc) S->export_c_calls++;
    for (int k = 0; k < 3; k++) xfun_free(S, &F[k]);
    if (!rc && prelude.failed) rc = ADDSL_ENOMEM;
    ad_buf_free(&prelude);
    /* A trace short of memory keeps a call as one record or gives up a
     * guard, which export_c then refuses with a reason that is not the cause. */
    if (rc && rc != ADDSL_ENOMEM && S->nomem_cleared != cleared) rc = ad_nomem(S);
    return rc;
}

/* export_c_error(f, args, path, name="f"): export_c, with its error message
 * returned (none when the files were written), for build scripts and the
 * op-table test that ask which functions lower. Out of memory still raises. */
static int bi_export_c_error(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    int rc = bi_export_c(S, argv, argc, out);
    if (!rc || rc == ADDSL_ENOMEM) return rc;
    char msg[AD_ERRMSG_MAX];
    snprintf(msg, sizeof msg, "%s", S->errmsg);
    ad_vm_error_handled(S);
    return ad_string_value(S, msg, strlen(msg), out);
}

const ad_builtin_def ad_export_c_defs[] = {
    {"export_c", bi_export_c, "f, args, path, name=\"f\", blas=false, fuse=true",
         "Traces f at the example arguments args (a list) and writes path (C99) and the matching .h: "
         "name(inputs..., outputs..., work) over contiguous arrays of the traced shapes, with "
         "NAME_WORK_BYTES bytes of scratch from the caller. The file needs only libm and allocates "
         "nothing. blas=true writes matrix products as cblas_dgemm/sgemm calls (link -lopenblas or "
         "-lblas); fuse=false writes one loop per element-wise record. See docs/export.md."
         "\nExample: export_c(fn(x) => (x * x).sum(), [zeros(3, dtype=float64)], \"sq.c\", name=\"sq\")"},
    {"export_c_error", bi_export_c_error, "f, args, path, name=\"f\", blas=false, fuse=true",
         "export_c(f, args, path, name) that returns its error message instead of raising it, "
         "or none when it wrote the files: which functions lower to C, asked from a script."
         "\nExample: export_c_error(fn(x) => x.masked_select(x > 0.0), [zeros(3)], \"s.c\")"},
    {NULL, NULL, NULL, NULL},
};

int addsl_set_export_c(addsl_state *S, const char *path) {
    size_t n = strlen(path);
    if (n >= sizeof S->export_c_path) return ad_error(S, "--export-c: the path is too long");
    memcpy(S->export_c_path, path, n + 1);
    S->export_c_calls = 0;
    return ADDSL_OK;
}

int addsl_export_c_calls(addsl_state *S) { return S->export_c_calls; }
