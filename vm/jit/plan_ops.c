/* jit/plan_ops.c: the records of a plan that are not element-wise: matrix
 * products on the gemm kernels eager calls, views as strides, sums over dims. */
#include "jit/plan_ops.h"

#include <string.h>

#include "../../builtins/kernels/blas_layout.h"
#include "../../builtins/system/blas_lazy.h"
#include "../../builtins/kernels/reduce.h"
#include "ad_limits.h"
#include "tensor/device.h"
#include "jit/fuse.h"
#include "autograd/op.h"
#include "trace/op_ids.h"
#include "vm.h"

/* ---- which records ---- */

static const ad_tensor *tensor_of(const ad_trace *T, int v) {
    if (v < 0 || v >= T->nvals || T->vals[v].v.t != AD_TTENSOR) return NULL;
    return T->vals[v].v.u.tensor;
}

static const struct {
    int id; /* ad_op_id */
    int kind;
} KINDS[] = {
    {AD_OP_matmul, AD_PLK_MATMUL},  {AD_OP_mm, AD_PLK_MATMUL},         {AD_OP_bmm, AD_PLK_MATMUL},
    {AD_OP_addmm, AD_PLK_ADDMM},    {AD_OP_transpose, AD_PLK_TRANSPOSE}, {AD_OP_t, AD_PLK_TRANSPOSE},
    {AD_OP_reshape, AD_PLK_RESHAPE}, {AD_OP_view, AD_PLK_RESHAPE},     {AD_OP_squeeze, AD_PLK_RESHAPE},
    {AD_OP_unsqueeze, AD_PLK_RESHAPE}, {AD_OP_flatten, AD_PLK_RESHAPE}, {AD_OP_sum, AD_PLK_SUMDIM},
    {AD_OP_linear, AD_PLK_LINEAR},  {AD_OP_index_get, AD_PLK_INDEX},  {AD_OP_index_add_at, AD_PLK_ADDAT},
    {AD_OP_mean, AD_PLK_SUMDIM},
};

const char *ad_plk_name(int kind) {
    switch (kind) {
    case AD_PLK_MATMUL: return "matmul";
    case AD_PLK_ADDMM: return "addmm";
    case AD_PLK_TRANSPOSE: return "transpose";
    case AD_PLK_RESHAPE: return "reshape";
    case AD_PLK_SUMDIM: return "sum";
    case AD_PLK_LINEAR: return "linear";
    case AD_PLK_INDEX: return "index";
    case AD_PLK_ADDAT: return "index_add_at";
    default: return "?";
    }
}

static bool is_float(ad_dtype dt) { return dt == AD_FLOAT32 || dt == AD_FLOAT64; }

/* Argument k by parameter name: positional, or a keyword; NULL when absent. */
static const ad_targ *arg_named(const ad_tnode *n, const ad_opdef *op, const char *name) {
    int npos = n->nargs - (n->kw ? (int)n->kw->len : 0);
    for (int k = 0; k < npos && k < op->nparams; k++)
        if (strcmp(op->pnames[k], name) == 0) return &n->args[k];
    for (int k = npos; k < n->nargs; k++)
        if (strcmp(n->kw->items[k - npos].u.s->data, name) == 0) return &n->args[k];
    return NULL;
}

/* The dims 'sum' reduces (a bit per dim of an nd-dim operand), or 0 when it
 * is not a sum over dims the kernel runs (no dim: the element-wise groups'
 * whole sum; a dtype given). */
static uint32_t sum_mask(const ad_tnode *n, const ad_opdef *op, int nd) {
    const ad_targ *dim = arg_named(n, op, "dim"), *dt = arg_named(n, op, "dtype");
    if (!dim || dim->ref >= 0 || dim->sub || (dt && (dt->ref >= 0 || dt->c.t != AD_TNONE))) return 0;
    ad_value d = dim->c;
    uint32_t m = 0;
    int64_t cnt = d.t == AD_TLIST || d.t == AD_TTUPLE ? d.u.l->len : 1;
    if (d.t == AD_TNONE || cnt == 0 || nd == 0) return 0;
    for (int64_t i = 0; i < cnt; i++) {
        ad_value x = d.t == AD_TLIST || d.t == AD_TTUPLE ? d.u.l->items[i] : d;
        if (x.t != AD_TINT) return 0;
        int k = (int)x.u.n;
        if (k < 0) k += nd;
        if (k < 0 || k >= nd) return 0;
        m |= 1u << k;
    }
    return m;
}

/* An index of ints and slices (a positive step) on an nd-dim tensor of
 * 'shape', as Python reads it: per dim its first index, step and size, and
 * which dims an integer drops. False for anything else (none, ..., tensors,
 * lists, negative steps): those stay on the seam. */
static bool basic_index(ad_value idx, int nd, const int64_t *shape, ad_plkern *k) {
    if (idx.t != AD_TLIST && idx.t != AD_TTUPLE) return false;
    int64_t n = idx.u.l->len;
    if (n > nd) return false;
    k->idrop = 0;
    for (int d = 0; d < nd; d++) {
        k->istart[d] = 0;
        k->istep[d] = 1;
        k->isize[d] = shape[d];
        if (d >= n) continue;
        ad_value x = idx.u.l->items[d];
        if (x.t == AD_TINT) {
            int64_t i = (int64_t)x.u.n;
            if (i < 0) i += shape[d];
            if (i < 0 || i >= shape[d]) return false;
            k->istart[d] = i;
            k->isize[d] = 1;
            k->idrop |= 1u << d;
            continue;
        }
        if (x.t != AD_TSLICE) return false;
        const ad_slice *sl = x.u.sl;
        ad_value a = sl->start, b = sl->stop, c = sl->step;
        if ((a.t != AD_TNONE && a.t != AD_TINT) || (b.t != AD_TNONE && b.t != AD_TINT) ||
            (c.t != AD_TNONE && c.t != AD_TINT))
            return false;
        int64_t step = c.t == AD_TNONE ? 1 : (int64_t)c.u.n;
        if (step <= 0) return false;
        k->isize[d] = ad_slice_span(shape[d], a.t == AD_TNONE ? 0 : (int64_t)a.u.n,
                                    b.t == AD_TNONE ? shape[d] : (int64_t)b.u.n, step, &k->istart[d]);
        k->istep[d] = step;
    }
    return true;
}

/* The shape basic_index selects, against the traced result's. */
static bool index_shape_is(const ad_plkern *k, int nd, const ad_tensor *o) {
    int m = 0;
    for (int d = 0; d < nd; d++) {
        if (k->idrop >> d & 1) continue;
        if (m >= o->ndim || o->shape[m] != k->isize[d]) return false;
        m++;
    }
    return m == o->ndim;
}

int ad_plk_classify(const ad_trace *T, const ad_tnode *n, bool nograd) {
    if (n->kind != AD_TN_OP || n->effect || n->random || n->out.ref < 0 || n->out.sub) return 0;
    const ad_opdef *op = n->fn.u.op;
    /* linear is the library's composite (its body: a transpose, matmul, add) */
    bool linear = op->id == AD_OP_linear && op->forward.t == AD_TFUNC && !op->has_formulas &&
                  op->forward.u.fn->p->chunk && op->forward.u.fn->p->chunk->library;
    if (!linear && (op->forward.t != AD_TBUILTIN || op->forward.u.bi->kid >= 0 || strcmp(op->name, op->forward.u.bi->name)))
        return 0;
    int kind = 0;
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (KINDS[i].id == op->id) kind = KINDS[i].kind;
    if (!kind) return 0;
    const ad_tensor *o = tensor_of(T, n->out.ref);
    if (!o || !is_float(o->dtype) || ad_tensor_device(o) != 0 || o->ndim > AD_MAX_DIMS) return 0;
    if (o->requires_grad && n->grad_enabled && !nograd) return 0;
    /* tensor operands: the first (two for products, three for addmm); the rest constants */
    int ntens = kind == AD_PLK_MATMUL ? 2 : kind == AD_PLK_ADDMM || kind == AD_PLK_LINEAR ? 3 : 1;
    if (kind == AD_PLK_ADDAT) {
        /* self, idx, value: the tensors are the first and the last */
        if (n->kw || n->nargs != 3 || n->args[1].ref >= 0 || n->args[1].sub || n->args[2].ref < 0) return 0;
        const ad_tensor *a0 = tensor_of(T, n->args[0].ref), *v = tensor_of(T, n->args[2].ref);
        if (!a0 || !v || a0->dtype != o->dtype || v->dtype != o->dtype || ad_tensor_device(a0) || ad_tensor_device(v) ||
            a0->ndim > AD_MAX_DIMS || (n->grad_enabled && !nograd && (a0->requires_grad || v->requires_grad)))
            return 0;
        ad_plkern k;
        if (!basic_index(n->args[1].c, a0->ndim, a0->shape, &k) || !ad_shape_equal(a0->ndim, a0->shape, o->ndim, o->shape))
            return 0;
        /* the value broadcasts to the selection (not the other way) */
        int m = 0;
        int64_t sel[AD_MAX_DIMS];
        for (int d = 0; d < a0->ndim; d++)
            if (!(k.idrop >> d & 1)) sel[m++] = k.isize[d];
        if (v->ndim > m) return 0;
        for (int d = 0; d < v->ndim; d++)
            if (v->shape[d] != 1 && v->shape[d] != sel[m - v->ndim + d]) return 0;
        return kind;
    }
    if (kind == AD_PLK_LINEAR) {
        /* input, weight and a bias tensor, or none (then two) */
        if (n->kw || n->nargs < 2 || n->nargs > 3) return 0;
        if (n->nargs == 2 || (n->args[2].ref < 0 && n->args[2].c.t == AD_TNONE)) ntens = 2;
    }
    if ((kind != AD_PLK_LINEAR && n->nargs < ntens) || (kind == AD_PLK_MATMUL && n->nargs != 2)) return 0;
    for (int k = 0; k < n->nargs; k++) {
        const ad_targ *a = &n->args[k];
        if (a->sub) return 0;
        if (k >= ntens) {
            if (a->ref >= 0) return 0;
            continue;
        }
        const ad_tensor *t = tensor_of(T, a->ref);
        if (!t || t->dtype != o->dtype || ad_tensor_device(t) != 0) return 0;
        if (n->grad_enabled && t->requires_grad && !nograd) return 0;
    }
    const ad_tensor *a = tensor_of(T, n->args[0].ref);
    switch (kind) {
    case AD_PLK_MATMUL: {
        const ad_tensor *b = tensor_of(T, n->args[1].ref);
        /* dot products run another kernel; 0-d operands are errors */
        if (a->ndim == 0 || b->ndim == 0 || (a->ndim == 1 && b->ndim == 1)) return 0;
        return kind;
    }
    case AD_PLK_ADDMM:
        if (n->kw || tensor_of(T, n->args[1].ref)->ndim != 2 || tensor_of(T, n->args[2].ref)->ndim != 2) return 0;
        for (int k = 3; k < n->nargs; k++)
            if (!ad_is_number(n->args[k].c)) return 0;
        return kind;
    case AD_PLK_TRANSPOSE:
        if (n->kw) return 0;
        return kind;
    case AD_PLK_RESHAPE:
        /* only where eager made a view: a copy made at the record would not see a
         * later in-place write to the source, a read through it would */
        return o->numel == a->numel && o->storage == a->storage ? kind : 0;
    case AD_PLK_SUMDIM:
        return sum_mask(n, op, a->ndim) ? kind : 0;
    case AD_PLK_INDEX: {
        ad_plkern k;
        if (n->kw || n->nargs != 2 || n->args[1].ref >= 0) return 0;
        return basic_index(n->args[1].c, a->ndim, a->shape, &k) && index_shape_is(&k, a->ndim, o) ? kind : 0;
    }
    case AD_PLK_LINEAR: {
        const ad_tensor *w = tensor_of(T, n->args[1].ref);
        if (a->ndim == 0 || (w->ndim != 1 && w->ndim != 2) || (a->ndim == 1 && w->ndim == 1)) return 0;
        /* a bias of more dims would broadcast the product to another shape */
        if (ntens == 3 && tensor_of(T, n->args[2].ref)->ndim > 1) return 0;
        return kind;
    }
    }
    return 0;
}

/* Whether every element of t is +0.0 (its bits all zero). */
static bool all_pos_zero(const ad_tensor *t) {
    if (!ad_tensor_is_contiguous(t)) return false;
    const unsigned char *p = ad_tensor_data(t);
    size_t n = (size_t)t->numel * (t->dtype == AD_FLOAT64 ? 8 : 4);
    for (size_t i = 0; i < n; i++)
        if (p[i]) return false;
    return true;
}

void ad_plk_describe(const ad_trace *T, const ad_tnode *n, int kind, ad_plkern *k) {
    memset(k, 0, sizeof *k);
    k->kind = (uint8_t)kind;
    k->a = n->args[0].ref;
    k->b = k->c = -1;
    k->out = n->out.ref;
    k->alpha = 1;
    const ad_tensor *a = tensor_of(T, k->a);
    switch (kind) {
    case AD_PLK_MATMUL: k->b = n->args[1].ref; break;
    case AD_PLK_ADDMM:
        k->c = n->args[0].ref;
        k->a = n->args[1].ref;
        k->b = n->args[2].ref;
        k->beta = n->nargs > 3 ? n->args[3].c.u.n : 1;
        k->alpha = n->nargs > 4 ? n->args[4].c.u.n : 1;
        break;
    case AD_PLK_TRANSPOSE:
        if (n->nargs == 1) { k->d0 = 0; k->d1 = a->ndim < 2 ? 0 : 1; }
        else {
            int nd = a->ndim ? a->ndim : 1;
            k->d0 = (int)n->args[1].c.u.n;
            k->d1 = (int)n->args[2].c.u.n;
            if (k->d0 < 0) k->d0 += nd;
            if (k->d1 < 0) k->d1 += nd;
            if (a->ndim == 0) k->d0 = k->d1 = 0;
        }
        break;
    case AD_PLK_SUMDIM:
        k->rmask = sum_mask(n, n->fn.u.op, a->ndim);
        k->mean = n->fn.u.op->id == AD_OP_mean;
        break;
    case AD_PLK_INDEX: basic_index(n->args[1].c, a->ndim, a->shape, k); break;
    case AD_PLK_ADDAT:
        basic_index(n->args[1].c, a->ndim, a->shape, k);
        k->b = n->args[2].ref;
        /* a constant (held by the program) or a folded value */
        k->zbase = (T->vals[k->a].kind == AD_TV_CONST || T->vals[k->a].folded) && all_pos_zero(a);
        if (k->zbase) k->zver = a->storage->version;
        break;
    case AD_PLK_LINEAR:
        k->b = n->args[1].ref;
        if (n->nargs > 2 && n->args[2].ref >= 0) k->c = n->args[2].ref;
        break;
    default: break;
    }
}

/* ---- run time ---- */

/* An operand with its strides spelled out (a contiguous view has none). */
typedef struct mat {
    const char *data;
    int nd;
    int64_t shape[AD_MAX_DIMS + 1];
    int64_t strides[AD_MAX_DIMS + 1];
} mat;

static void contiguous_strides(int nd, const int64_t *shape, int64_t *st) {
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) { st[d] = s; s *= shape[d] > 1 ? shape[d] : 1; }
}

static int load(ad_state *S, const ad_trace *T, ad_plan *P, ad_value *env, int v, mat *m) {
    ad_fuview f;
    int rc = ad_plan_view_of(S, T, P, env, v, &f);
    if (rc) return rc;
    m->data = f.data;
    m->nd = f.ndim;
    if (f.ndim) memcpy(m->shape, f.shape, (size_t)f.ndim * sizeof *m->shape);
    if (f.strides) memcpy(m->strides, f.strides, (size_t)f.ndim * sizeof *m->strides);
    else contiguous_strides(f.ndim, m->shape, m->strides);
    return ADDSL_OK;
}

static bool mat_contiguous(const mat *m) {
    int64_t expect = 1;
    for (int d = m->nd - 1; d >= 0; d--) {
        if (m->shape[d] != 1 && m->strides[d] != expect) return false;
        expect *= m->shape[d];
    }
    return true;
}

/* Calls fn(ctx, offset of each innermost run, i) over the runs of 'm' in row-major order:
 * the innermost dim is the caller's tight loop (stride m->strides[nd - 1]). */
typedef void (*run_fn)(void *ctx, int64_t off, int64_t i, int64_t len, int64_t stride);

static void for_runs(const mat *m, run_fn fn, void *ctx) {
    int nd = m->nd;
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= m->shape[d];
    if (n == 0) return;
    if (nd == 0) { fn(ctx, 0, 0, 1, 1); return; }
    int64_t idx[AD_MAX_DIMS + 1], len = m->shape[nd - 1], off = 0;
    for (int d = 0; d < nd; d++) idx[d] = 0;
    for (int64_t i = 0; i < n; i += len) {
        fn(ctx, off, i, len, m->strides[nd - 1]);
        for (int d = nd - 2; d >= 0; d--) {
            off += m->strides[d];
            if (++idx[d] < m->shape[d]) break;
            off -= m->strides[d] * idx[d];
            idx[d] = 0;
        }
    }
}

typedef struct copy_ctx { const char *src; char *dst; size_t es; } copy_ctx;

static void copy_run_fn(void *ctx, int64_t off, int64_t i, int64_t len, int64_t stride) {
    const copy_ctx *c = ctx;
    const char *src = c->src + (size_t)off * c->es;
    char *dst = c->dst + (size_t)i * c->es;
    if (stride == 1) { memcpy(dst, src, (size_t)len * c->es); return; }
    if (c->es == 8) {
        const double *x = (const double *)(const void *)src;
        double *y = (double *)(void *)dst;
        for (int64_t j = 0; j < len; j++) y[j] = x[j * stride];
    } else {
        const float *x = (const float *)(const void *)src;
        float *y = (float *)(void *)dst;
        for (int64_t j = 0; j < len; j++) y[j] = x[j * stride];
    }
}

/* Copies m (any strides) into 'out' in row-major order; m becomes that copy. */
static void materialize(mat *m, char *out, size_t es) {
    int64_t n = 1;
    for (int d = 0; d < m->nd; d++) n *= m->shape[d];
    if (mat_contiguous(m)) { if (m->data != out) memcpy(out, m->data, (size_t)n * es); }
    else for_runs(m, copy_run_fn, &(copy_ctx){m->data, out, es});
    m->data = out;
    contiguous_strides(m->nd, m->shape, m->strides);
}

/* c (contiguous [batch..., M, N], holding beta's term) = alpha a b + beta c with a
 * [batch..., M, K] and b [batch..., K, N] broadcast to one batch shape: the small
 * kernel or a BLAS call per matrix, an operand BLAS cannot read copied first, all as
 * bi_linalg.c's gemm_batched chooses, so the products round as eager's do. */
static int gemm_batched(ad_state *S, mat *a, mat *b, char *c, ad_dtype dt, double alpha, double beta) {
    int nd = a->nd, nb = nd - 2, ta, tb;
    int64_t M = a->shape[nd - 2], K = a->shape[nd - 1], N = b->shape[nd - 1], lda, ldb, sa, sb, nbatch = 1;
    if (M == 0 || N == 0) return ADDSL_OK;
    for (int i = 0; i < nb; i++) nbatch *= a->shape[i];
    if (M == N && N == K && (M <= AD_GEMM_SMALL_SQUARE || (M == 2 * AD_GEMM_SMALL_SQUARE && dt == AD_FLOAT64)) &&
        ad_flat_batch_stride(a->strides, nb, a->shape, &sa) && ad_flat_batch_stride(b->strides, nb, a->shape, &sb)) {
        int64_t g[10] = {nbatch, M, N, K, sa, a->strides[nd - 2], a->strides[nd - 1], sb, b->strides[nd - 2],
                         b->strides[nd - 1]};
        if (dt == AD_FLOAT32) ad_red_gemm_small_f32(a->data, b->data, c, g, alpha, beta);
        else ad_red_gemm_small_f64(a->data, b->data, c, g, alpha, beta);
        return ADDSL_OK;
    }
    if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX)
        return ad_error(S, "matmul: a matrix dimension exceeds the BLAS limit of %d", INT32_MAX);
    const ad_blas_api *blas = ad_blas_api_get(S, "matmul");
    if (!blas) return S->errcode;
    size_t es = dt == AD_FLOAT64 ? 8 : 4;
    char *copy[2] = {NULL, NULL};
    mat *ops[2] = {a, b};
    int *tr[2] = {&ta, &tb};
    int64_t *ld[2] = {&lda, &ldb};
    for (int i = 0; i < 2; i++) {
        mat *m = ops[i];
        if (ad_blas_layout(m->shape[nd - 2], m->shape[nd - 1], m->strides[nd - 2], m->strides[nd - 1], tr[i], ld[i]))
            continue;
        /* eager clones such an operand (a broadcast row, odd strides): rare, so allocated here */
        int64_t n = 1;
        for (int d = 0; d < nd; d++) n *= m->shape[d];
        if (!(copy[i] = ad_malloc(S, (size_t)(n ? n : 1) * es))) {
            ad_free(S, copy[0]);
            return S->errcode ? S->errcode : ADDSL_ENOMEM;
        }
        materialize(m, copy[i], es);
        ad_blas_layout(m->shape[nd - 2], m->shape[nd - 1], m->strides[nd - 2], m->strides[nd - 1], tr[i], ld[i]);
    }
    ad_red_gemm_fn gemm = dt == AD_FLOAT64 ? ad_red_gemm_f64 : ad_red_gemm_f32;
    for (int64_t bi = 0; bi < nbatch; bi++) {
        int64_t ao, bo;
        ad_batch_offsets(bi, nb, a->shape, a->strides, b->strides, &ao, &bo);
        gemm(blas, a->data + (size_t)ao * es, b->data + (size_t)bo * es, c + (size_t)(bi * M * N) * es, M, N, K,
             K ? lda : 1, K ? ldb : ad_blas_max64(N, 1), N, K ? ta : 0, K ? tb : 0, alpha, beta);
    }
    ad_free(S, copy[0]);
    ad_free(S, copy[1]);
    return ADDSL_OK;
}

/* Inserts a size-1 dim at 'd' (as unsqueeze does). */
static void lift(mat *m, int d) {
    for (int i = m->nd; i > d; i--) { m->shape[i] = m->shape[i - 1]; m->strides[i] = m->strides[i - 1]; }
    m->shape[d] = 1;
    m->strides[d] = d < m->nd ? m->shape[d + 1] * m->strides[d + 1] : 1;
    m->nd++;
}

/* Broadcasts m's batch dims (all but the last two) to 'bshape' (nb dims). */
static void expand_batch(mat *m, int nb, const int64_t *bshape) {
    mat e = *m;
    int off = nb - (m->nd - 2);
    for (int i = 0; i < nb; i++) {
        int k = i - off;
        e.shape[i] = bshape[i];
        e.strides[i] = k < 0 || m->shape[k] == 1 ? 0 : m->strides[k];
    }
    for (int j = 0; j < 2; j++) {
        e.shape[nb + j] = m->shape[m->nd - 2 + j];
        e.strides[nb + j] = m->strides[m->nd - 2 + j];
    }
    e.nd = nb + 2;
    *m = e;
}

/* torch.matmul's ranks (1-D operands lifted to matrices, batch dims
 * broadcast, a contiguous batch times one matrix as a single product), as
 * bi_linalg.c's matmul_nd. */
static int run_matmul(ad_state *S, mat *a, mat *b, char *c, ad_dtype dt, double alpha, double beta) {
    if (a->nd == 1) lift(a, 0);
    if (b->nd == 1) lift(b, 1);
    int na = a->nd, nb = b->nd;
    if (nb == 2 && mat_contiguous(a)) {
        mat a2 = {.data = a->data, .nd = 2, .shape = {a->shape[na - 2], a->shape[na - 1]}};
        for (int i = 0; i < na - 2; i++) a2.shape[0] *= a->shape[i];
        contiguous_strides(2, a2.shape, a2.strides);
        return gemm_batched(S, &a2, b, c, dt, alpha, beta);
    }
    int nbatch = na > nb ? na - 2 : nb - 2;
    int64_t bshape[AD_MAX_DIMS];
    for (int i = 0; i < nbatch; i++) {
        int ka = i - (nbatch - (na - 2)), kb = i - (nbatch - (nb - 2));
        int64_t x = ka >= 0 ? a->shape[ka] : 1, y = kb >= 0 ? b->shape[kb] : 1;
        bshape[i] = x == 1 ? y : x;
    }
    expand_batch(a, nbatch, bshape);
    expand_batch(b, nbatch, bshape);
    return gemm_batched(S, a, b, c, dt, alpha, beta);
}

/* out = beta * c broadcast (the addmm's 'self'), before the product adds to it. */
static void beta_term(const mat *cm, const ad_plval *o, const int64_t *oshape, char *out, size_t es) {
    mat e = {.data = cm->data, .nd = o->ndim};
    int off = o->ndim - cm->nd;
    for (int d = 0; d < o->ndim; d++) {
        int k = d - off;
        e.shape[d] = oshape[d];
        e.strides[d] = k < 0 || cm->shape[k] == 1 ? 0 : cm->strides[k];
    }
    materialize(&e, out, es);
}

/* The strides with which 'shape' views memory laid out as (oshape, ostrides),
 * in the same element order; false when no strides do (torch's view rule). */
static bool view_strides(int ond, const int64_t *oshape, const int64_t *ostrides, int nd, const int64_t *shape,
                         int64_t *st) {
    int64_t numel = 1;
    for (int d = 0; d < ond; d++) numel *= oshape[d];
    if (numel == 0 || ond == 0) { contiguous_strides(nd, shape, st); return true; }
    int vd = nd - 1;
    int64_t chunk = ostrides[ond - 1], tensor_n = 1, view_n = 1;
    for (int td = ond - 1; td >= 0; td--) {
        tensor_n *= oshape[td];
        if (td == 0 || (oshape[td - 1] != 1 && ostrides[td - 1] != tensor_n * chunk)) {
            while (vd >= 0 && (view_n < tensor_n || shape[vd] == 1)) {
                st[vd] = view_n * chunk;
                view_n *= shape[vd];
                vd--;
            }
            if (view_n != tensor_n) return false;
            if (td > 0) {
                chunk = ostrides[td - 1];
                tensor_n = view_n = 1;
            }
        }
    }
    return vd == -1;
}

/* The view of 'a' that index k selects: an offset and per kept dim a stride. */
static void index_view(const mat *a, const ad_plkern *k, size_t es, mat *out) {
    int64_t off = 0;
    int m = 0;
    for (int d = 0; d < a->nd; d++) {
        off += k->istart[d] * a->strides[d];
        if (k->idrop >> d & 1) continue;
        out->shape[m] = k->isize[d];
        out->strides[m++] = a->strides[d] * k->istep[d];
    }
    out->nd = m;
    out->data = a->data + (size_t)off * es;
}

int ad_plk_view(ad_state *S, const ad_trace *T, ad_plan *P, ad_value *env, int v, ad_fuview *out) {
    const ad_plval *o = &P->vals[v];
    ad_plkview *kv = &P->kviews[o->buffer];
    const ad_plkern *k = &kv->kern;
    const int64_t *shape = ad_plan_dims(P, o->dims);
    size_t es = o->dtype == AD_FLOAT64 ? 8 : 4;
    mat a;
    int rc = load(S, T, P, env, k->a, &a);
    if (rc) return rc;
    *out = (ad_fuview){a.data, o->ndim, shape, kv->strides, o->numel};
    if (k->kind == AD_PLK_TRANSPOSE) {
        memcpy(kv->strides, a.strides, (size_t)a.nd * sizeof *kv->strides);
        kv->strides[k->d0] = a.strides[k->d1];
        kv->strides[k->d1] = a.strides[k->d0];
        return ADDSL_OK;
    }
    if (k->kind == AD_PLK_INDEX) {
        mat m;
        index_view(&a, k, es, &m);
        if (m.nd) memcpy(kv->strides, m.strides, (size_t)m.nd * sizeof *kv->strides);
        out->data = m.data;
        return ADDSL_OK;
    }
    if (view_strides(a.nd, a.shape, a.strides, o->ndim, shape, kv->strides)) return ADDSL_OK;
    /* eager's reshape copies here; so does the replay (a layout the trace did not see) */
    ad_tensor *t = ad_tensor_empty(S, o->dtype, o->ndim, shape);
    if (!t) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    materialize(&a, ad_tensor_data(t), es);
    if (kv->copy) ad_tensor_decref(S, kv->copy);
    kv->copy = t;
    out->data = ad_tensor_data(t);
    contiguous_strides(o->ndim, shape, kv->strides);
    return ADDSL_OK;
}

/* dst[i] += src[i] over a view 'dst' (any strides) and 'src' broadcast to
 * its shape (strides sst, 0 where broadcast), the innermost dim a tight loop. */
static void add_into(const mat *dst0, const char *src, const int64_t *sst0, ad_dtype dt) {
    /* dims that both walk as one merged (a slice [:, i] of [n, 7, 4, 4]: runs of 16, not 4) */
    mat m = {.data = dst0->data, .nd = 0};
    int64_t sstm[AD_MAX_DIMS + 1];
    for (int d = 0; d < dst0->nd; d++) {
        if (dst0->shape[d] == 1) continue;
        int j = m.nd - 1;
        if (j >= 0 && m.strides[j] == dst0->strides[d] * dst0->shape[d] && sstm[j] == sst0[d] * dst0->shape[d]) {
            m.shape[j] *= dst0->shape[d];
            m.strides[j] = dst0->strides[d];
            sstm[j] = sst0[d];
            continue;
        }
        m.shape[m.nd] = dst0->shape[d];
        m.strides[m.nd] = dst0->strides[d];
        sstm[m.nd++] = sst0[d];
    }
    for (int d = 0; d < dst0->nd; d++)
        if (dst0->shape[d] == 0) return;
    const mat *dst = &m;
    const int64_t *sst = sstm;
    int nd = dst->nd;
    int64_t n = 1, idx[AD_MAX_DIMS + 1], doff = 0, soff = 0;
    for (int d = 0; d < nd; d++) { n *= dst->shape[d]; idx[d] = 0; }
    int64_t len = nd ? dst->shape[nd - 1] : 1, ds = nd ? dst->strides[nd - 1] : 1, ss = nd ? sst[nd - 1] : 0;
    for (int64_t i = 0; i < n; i += len) {
        /* contiguous runs (a slice's rows) as a loop that vectorises: the same additions */
        if (dt == AD_FLOAT64) {
            double *y = (double *)(void *)dst->data + doff;
            const double *x = (const double *)(const void *)src + soff;
            if (ds == 1 && ss == 1) { _Pragma("omp simd") for (int64_t j = 0; j < len; j++) y[j] += x[j]; }
            else for (int64_t j = 0; j < len; j++) y[j * ds] += x[j * ss];
        } else {
            float *y = (float *)(void *)dst->data + doff;
            const float *x = (const float *)(const void *)src + soff;
            if (ds == 1 && ss == 1) { _Pragma("omp simd") for (int64_t j = 0; j < len; j++) y[j] += x[j]; }
            else for (int64_t j = 0; j < len; j++) y[j * ds] += x[j * ss];
        }
        for (int d = nd - 2; d >= 0; d--) {
            doff += dst->strides[d];
            soff += sst[d];
            if (++idx[d] < dst->shape[d]) break;
            doff -= dst->strides[d] * idx[d];
            soff -= sst[d] * idx[d];
            idx[d] = 0;
        }
    }
}

/* b's strides broadcast to an nd-dim shape (0 along the dims it lacks or has as 1). */
static void bcast_strides(const mat *b, int nd, int64_t *st) {
    int off = nd - b->nd;
    for (int d = 0; d < nd; d++) {
        int j = d - off;
        st[d] = j < 0 || b->shape[j] == 1 ? 0 : b->strides[j];
    }
}

/* index_add_at: out = a (copied), then out[idx] += b, b broadcast to the
 * selection: one addition per selected element, as eager's add into the view. */
static void run_addat(const mat *a, const mat *b, const ad_plkern *k, const ad_plval *o, char *out, bool zero) {
    size_t es = o->dtype == AD_FLOAT64 ? 8 : 4;
    mat c = *a, sel;
    if (zero) {
        /* a's +0.0s written, not read: what the copy would hold */
        memset(out, 0, (size_t)o->numel * es);
        c.data = out;
        contiguous_strides(c.nd, c.shape, c.strides);
    } else materialize(&c, out, es);
    index_view(&c, k, es, &sel);
    int64_t bst[AD_MAX_DIMS];
    bcast_strides(b, sel.nd, bst);
    add_into(&sel, b->data, bst, o->dtype);
}

/* out = the sum (mean: divided by the count) of a over the dims in rmask,
 * computed as eager's sum and mean compute it (bi_reduce.c's plan_layout),
 * so that it has eager's bits: reduced dims that are one run of a contiguous
 * operand go to the same kernel as [outer, n, inner]; any other set of dims,
 * or a strided operand, is copied with the kept dims first and the reduced
 * ones last, as eager copies it, and summed by rows. The copy goes to the
 * groups' register scratch (free while a kernel record runs) when it fits. */
static int run_sumdim(ad_state *S, const mat *a, uint32_t rmask, bool mean, char *out, ad_dtype dt, char *scratch,
                      int64_t scratch_bytes) {
    typedef void (*red_fn)(const void *, void *, int64_t, int64_t, int64_t);
    red_fn red = dt == AD_FLOAT64 ? (mean ? ad_red_mean_f64 : ad_red_sum_f64) : (mean ? ad_red_mean_f32 : ad_red_sum_f32);
    size_t es = dt == AD_FLOAT64 ? 8 : 4;
    int nd = a->nd, first = -1, last = -1, count = 0;
    int64_t numel = 1, outer = 1, n = 1, inner = 1;
    for (int d = 0; d < nd; d++) {
        numel *= a->shape[d];
        if (rmask >> d & 1) { if (first < 0) first = d; last = d; count++; }
    }
    if (last - first + 1 == count && (numel == 0 || mat_contiguous(a))) {
        for (int d = 0; d < nd; d++) {
            if (d < first) outer *= a->shape[d];
            else if (d <= last) n *= a->shape[d];
            else inner *= a->shape[d];
        }
        red(a->data, out, outer, n, inner);
        return ADDSL_OK;
    }
    mat p = {.nd = nd, .data = a->data};
    int k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d < nd; d++) {
            if ((int)(rmask >> d & 1) != pass) continue;
            p.shape[k] = a->shape[d];
            p.strides[k++] = a->strides[d];
            if (pass) n *= a->shape[d];
            else outer *= a->shape[d];
        }
    if (numel == 0) { /* nothing to copy: the kept outputs are 0 (mean: nan), as eager's */
        red(a->data, out, outer, n, 1);
        return ADDSL_OK;
    }
    char *buf = scratch, *held = NULL;
    if (!scratch || numel * (int64_t)es > scratch_bytes) {
        if (!(held = ad_malloc(S, (size_t)numel * es))) return S->errcode ? S->errcode : ADDSL_ENOMEM;
        buf = held;
    }
    materialize(&p, buf, es);
    red(buf, out, outer, n, 1);
    ad_free(S, held);
    return ADDSL_OK;
}

/* linear as its body runs it: input @ weight.T (a 2-D weight), then + bias
 * into the product (as the body's add rounds: one addition per element). */
static int run_linear(ad_state *S, mat *x, mat *w, const mat *bias, const ad_plval *o, const int64_t *oshape,
                      char *out) {
    if (w->nd == 2) {
        int64_t s = w->strides[0], n = w->shape[0];
        w->strides[0] = w->strides[1];
        w->shape[0] = w->shape[1];
        w->strides[1] = s;
        w->shape[1] = n;
    }
    int rc = run_matmul(S, x, w, out, o->dtype, 1, 0);
    if (rc || !bias || o->numel == 0) return rc;
    mat y = {.data = out, .nd = o->ndim};
    int64_t bst[AD_MAX_DIMS];
    for (int d = 0; d < o->ndim; d++) y.shape[d] = oshape[d];
    contiguous_strides(o->ndim, y.shape, y.strides);
    bcast_strides(bias, o->ndim, bst);
    add_into(&y, bias->data, bst, o->dtype);
    return ADDSL_OK;
}

int ad_plk_run(ad_state *S, const ad_trace *T, ad_plan *P, const ad_plkern *k, ad_value *env) {
    mat a, b, c;
    int rc = load(S, T, P, env, k->a, &a);
    if (!rc && k->b >= 0) rc = load(S, T, P, env, k->b, &b);
    if (!rc && k->c >= 0) rc = load(S, T, P, env, k->c, &c);
    if (rc) return rc;
    const ad_plval *o = &P->vals[k->out];
    char *out;
    if ((rc = ad_plan_dest_of(S, P, env, k->out, &out))) return rc;
    size_t es = o->dtype == AD_FLOAT64 ? 8 : 4;
    switch (k->kind) {
    case AD_PLK_MATMUL: return run_matmul(S, &a, &b, out, o->dtype, 1, 0);
    case AD_PLK_ADDMM: {
        int64_t K = a.shape[1];
        if (k->beta != 0) beta_term(&c, o, ad_plan_dims(P, o->dims), out, es);
        else if (K == 0) memset(out, 0, (size_t)o->numel * es);
        return gemm_batched(S, &a, &b, out, o->dtype, k->alpha, k->beta);
    }
    case AD_PLK_SUMDIM: return run_sumdim(S, &a, k->rmask, k->mean, out, o->dtype, P->arena, P->scratch_bytes);
    case AD_PLK_ADDAT: {
        /* the constant as the plan saw it: the same tensor, not written since */
        const ad_value *z = &env[k->a];
        bool zero = k->zbase && z->t == AD_TTENSOR && z->u.tensor == T->vals[k->a].v.u.tensor &&
                    z->u.tensor->storage->version == k->zver && mat_contiguous(&a);
        run_addat(&a, &b, k, o, out, zero);
        return ADDSL_OK;
    }
    case AD_PLK_LINEAR: return run_linear(S, &a, &b, k->c >= 0 ? &c : NULL, o, ad_plan_dims(P, o->dims), out);
    }
    return ADDSL_OK;
}
