/* bi_index.c: t[...] and t[...] = v with PyTorch's rules: basic indices give
 * views, int/bool tensor (advanced) indices gather into a new tensor. */
#include <stdio.h>
#include <math.h>
#include <string.h>

#include "builtins.h"
#include "tensor/device.h"
#include "state.h"
#include "buf.h"

/* One advanced index: an int64 tensor applied at dim 'pos' of the view. */
typedef struct adv {
    int pos;
    int src_dim; /* the indexed tensor's dim, for messages */
    ad_tensor *idx;
} adv;

/* The result of the basic pass: a view plus the advanced indices left to apply. */
typedef struct ix {
    ad_tensor *r;
    int d;   /* next dim of r to index */
    int src; /* next dim of the original tensor */
    int nadv;
    adv a[AD_MAX_DIMS];
} ix;

static void ix_free(ad_state *S, ix *x) {
    ad_tensor_decref(S, x->r);
    x->r = NULL;
    for (int i = 0; i < x->nadv; i++) ad_tensor_decref(S, x->a[i].idx);
    x->nadv = 0;
}

/* Replaces x->r by 'v' (a new reference, or NULL after an error). */
static int ix_step(ad_state *S, ix *x, ad_tensor *v) {
    if (!v) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    ad_tensor_decref(S, x->r);
    x->r = v;
    return AD_OK;
}

static int bad_index(ad_state *S, const char *what) {
    return ad_error(S, "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                       "valid indices (got %s)", what);
}

/* Turns an index value into a tensor when it is one (lists become tensors). */
static int index_tensor(ad_state *S, ad_value v, ad_tensor **out) {
    *out = NULL;
    if (v.t == AD_TTENSOR) { ad_tensor_incref(v.u.tensor); *out = v.u.tensor; }
    else if (ad_is_seq(v)) {
        int rc = ad_tensor_from_value(S, v, v.u.l->len == 0 ? AD_INT64 : -1, out);
        if (rc) return rc;
    } else return AD_OK;
    if (ad_dtype_is_float((*out)->dtype)) {
        ad_tensor_decref(S, *out);
        *out = NULL;
        return ad_error(S, "tensors used as indices must be long, byte or bool tensors");
    }
    return AD_OK;
}

/* Dims of the indexed tensor that index 'v' consumes. */
static int consumed(ad_value v) {
    switch (v.t) {
    case AD_TNONE: case AD_TELLIPSIS: return 0;
    case AD_TBOOL: return 0;
    case AD_TTENSOR: return v.u.tensor->dtype == AD_BOOL ? v.u.tensor->ndim : 1;
    default: return 1;
    }
}

static bool is_scalar_int_tensor(ad_value v) {
    return v.t == AD_TTENSOR && v.u.tensor->ndim == 0 && v.u.tensor->dtype == AD_INT64;
}

static int do_int(ad_state *S, ix *x, int64_t i) {
    int64_t size = x->r->shape[x->d];
    if (i < -size || i >= size)
        return ad_error(S, "index %lld is out of bounds for dimension %d with size %lld", (long long)i, x->src,
                        (long long)size);
    x->src++;
    return ix_step(S, x, ad_tensor_select(S, x->r, x->d, i));
}

static int slice_part(ad_state *S, ad_value v, int64_t dflt, int64_t *out) {
    if (v.t == AD_TNONE) { *out = dflt; return AD_OK; }
    if (v.t == AD_TINT || (v.t == AD_TNUM && isfinite(v.u.n) && v.u.n == floor(v.u.n))) {
        double n = v.u.n;
        *out = n > 9e18 ? INT64_MAX : n < -9e18 ? INT64_MIN + 1 : (int64_t)n;
        return AD_OK;
    }
    if (is_scalar_int_tensor(v)) { *out = (int64_t)ad_tensor_get_flat(v.u.tensor, 0); return AD_OK; }
    return ad_error(S, "slice indices must be integers or None or have an __index__ method");
}

static int do_slice(ad_state *S, ix *x, const ad_slice *sl) {
    int64_t a, b, st;
    int rc = slice_part(S, sl->step, 1, &st);
    if (rc || (rc = slice_part(S, sl->start, 0, &a)) || (rc = slice_part(S, sl->stop, INT64_MAX, &b))) return rc;
    if (st <= 0) return ad_error(S, "step must be greater than zero");
    x->src++;
    rc = ix_step(S, x, ad_tensor_slice(S, x->r, x->d, a, b, st));
    x->d++;
    return rc;
}

static int add_adv(ad_state *S, ix *x, ad_tensor *idx) {
    if (x->nadv == AD_MAX_DIMS) {
        ad_tensor_decref(S, idx);
        return ad_error(S, "too many advanced indices (at most %d)", AD_MAX_DIMS);
    }
    x->a[x->nadv].pos = x->d++;
    x->a[x->nadv].src_dim = x->src++;
    x->a[x->nadv++].idx = idx;
    return AD_OK;
}

static int mask_error(ad_state *S, const ad_tensor *m, int at, const ad_tensor *r) {
    ad_buf b;
    ad_buf_init(&b, S);
    ad_buf_puts(&b, "The shape of the mask ");
    ad_buf_shape(&b, m->ndim, m->shape);
    ad_buf_printf(&b, " at index %d does not match the shape of the indexed tensor ", at);
    ad_buf_shape(&b, r->ndim, r->shape);
    ad_buf_printf(&b, " at index %d", at);
    int rc = b.failed ? ad_nomem(S) : ad_error(S, "%s", b.data);
    ad_buf_free(&b);
    return rc;
}

/* A bool mask over k dims becomes k int64 index tensors (its nonzero coordinates). */
static int do_mask(ad_state *S, ix *x, const ad_tensor *m) {
    if (m->ndim == 0) { /* a 0-d mask indexes a new unit dim */
        int rc = ix_step(S, x, ad_tensor_unsqueeze(S, x->r, x->d));
        if (rc) return rc;
        int64_t n = ad_tensor_get_flat(m, 0) != 0.0;
        ad_tensor *idx = ad_tensor_zeros(S, AD_INT64, 1, &n);
        if (!idx) return S->errcode;
        x->src--;
        return add_adv(S, x, idx);
    }
    for (int k = 0; k < m->ndim; k++)
        if (x->d + k >= x->r->ndim || m->shape[k] != x->r->shape[x->d + k]) return mask_error(S, m, x->src, x->r);
    int64_t count = 0;
    for (int64_t i = 0; i < m->numel; i++) count += ad_tensor_get_flat(m, i) != 0.0;
    ad_tensor *cols[AD_MAX_DIMS] = {NULL};
    int rc = AD_OK;
    for (int k = 0; k < m->ndim && !rc; k++)
        if (!(cols[k] = ad_tensor_empty(S, AD_INT64, 1, &count))) rc = S->errcode;
    for (int64_t i = 0, at = 0; !rc && i < m->numel; i++) {
        if (ad_tensor_get_flat(m, i) == 0.0) continue;
        int64_t rem = i;
        for (int k = m->ndim - 1; k >= 0; k--) {
            ((int64_t *)ad_tensor_data(cols[k]))[at] = rem % m->shape[k];
            rem /= m->shape[k];
        }
        at++;
    }
    for (int k = 0; k < m->ndim; k++) {
        if (rc) ad_tensor_decref(S, cols[k]);
        else rc = add_adv(S, x, cols[k]);
    }
    return rc;
}

static int do_tensor(ad_state *S, ix *x, ad_value v) {
    ad_tensor *it;
    int rc = index_tensor(S, v, &it);
    if (rc) return rc;
    if (it->dtype == AD_BOOL) {
        rc = do_mask(S, x, it);
        ad_tensor_decref(S, it);
        return rc;
    }
    return add_adv(S, x, it);
}

static int do_one(ad_state *S, ix *x, ad_value v, int ellipsis_span) {
    switch (v.t) {
    case AD_TNONE:
        x->d++;
        return ix_step(S, x, ad_tensor_unsqueeze(S, x->r, x->d - 1));
    case AD_TELLIPSIS:
        x->d += ellipsis_span;
        x->src += ellipsis_span;
        return AD_OK;
    case AD_TBOOL: {
        ad_tensor *m = ad_tensor_scalar(S, AD_BOOL, v.u.b);
        if (!m) return S->errcode;
        int rc = do_mask(S, x, m);
        ad_tensor_decref(S, m);
        return rc;
    }
    case AD_TINT: return do_int(S, x, (int64_t)v.u.n);
    case AD_TNUM:
        /* Checked before the cast: nan, inf and huge values have no int64. */
        if (!(fabs(v.u.n) < 9.2e18) || v.u.n != floor(v.u.n)) return bad_index(S, "float");
        return do_int(S, x, (int64_t)v.u.n);
    case AD_TSLICE: return do_slice(S, x, v.u.sl);
    case AD_TTENSOR:
        if (is_scalar_int_tensor(v)) return do_int(S, x, (int64_t)ad_tensor_get_flat(v.u.tensor, 0));
        return do_tensor(S, x, v);
    case AD_TLIST: case AD_TTUPLE: return do_tensor(S, x, v);
    default: return bad_index(S, ad_type_name(v));
    }
}

/* Applies every basic index; advanced ones are collected in x->a. */
static int basic_pass(ad_state *S, ad_tensor *t, int n, const ad_value *idx, ix *x) {
    memset(x, 0, sizeof *x);
    int used = 0;
    for (int i = 0; i < n; i++) {
        if (ad_is_seq(idx[i])) used += 1; /* a bool list is rare; its rank is checked later */
        else used += consumed(idx[i]);
    }
    if (used > t->ndim) {
        if (t->ndim == 0)
            return ad_error(S, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                               "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
        return ad_error(S, "too many indices for tensor of dimension %d", t->ndim);
    }
    ad_tensor_incref(t);
    x->r = t;
    /* torch lets a second '...' through; only the first one spans dims */
    for (int i = 0, span = t->ndim - used; i < n; i++) {
        int rc = do_one(S, x, idx[i], span);
        if (idx[i].t == AD_TELLIPSIS) span = 0;
        if (rc) { ix_free(S, x); return rc; }
    }
    return AD_OK;
}

/* ---- advanced indexing ---- */

/* The layout of an advanced gather/scatter over x->r. */
typedef struct plan {
    ad_tensor *src;              /* x->r permuted: indexed dims first, in order */
    ad_tensor *idx[AD_MAX_DIMS]; /* each index expanded to the broadcast shape */
    int nb;                      /* broadcast index rank */
    int64_t bshape[AD_MAX_DIMS];
    int nrest;                   /* the dims of src after the indexed ones */
    int64_t rest[AD_MAX_DIMS];
    int at;                      /* where the index dims land in the result (0 unless adjacent) */
    int nout;
    int64_t oshape[AD_MAX_DIMS];
} plan;

static void plan_free(ad_state *S, plan *p) {
    ad_tensor_decref(S, p->src);
    for (int i = 0; i < AD_MAX_DIMS; i++) ad_tensor_decref(S, p->idx[i]);
    memset(p, 0, sizeof *p);
}

static int broadcast_indices(ad_state *S, const ix *x, plan *p) {
    p->nb = 0;
    for (int j = 0; j < x->nadv; j++) {
        const ad_tensor *t = x->a[j].idx;
        int n;
        int64_t out[AD_MAX_DIMS];
        if (ad_broadcast_shapes(S, p->nb, p->bshape, t->ndim, t->shape, &n, out)) {
            ad_buf b;
            ad_buf_init(&b, S);
            ad_buf_puts(&b, "shape mismatch: indexing tensors could not be broadcast together with shapes ");
            for (int k = 0; k < x->nadv; k++) {
                if (k) ad_buf_puts(&b, ", ");
                ad_buf_shape(&b, x->a[k].idx->ndim, x->a[k].idx->shape);
            }
            int rc = b.failed ? ad_nomem(S) : ad_error(S, "%s", b.data);
            ad_buf_free(&b);
            return rc;
        }
        p->nb = n;
        memcpy(p->bshape, out, sizeof out);
    }
    return AD_OK;
}

static int check_bounds(ad_state *S, const ix *x) {
    for (int j = 0; j < x->nadv; j++) {
        const ad_tensor *t = x->a[j].idx;
        int64_t size = x->r->shape[x->a[j].pos];
        for (int64_t i = 0; i < t->numel; i++) {
            double v = ad_tensor_get_flat(t, i);
            if (v < -(double)size || v >= (double)size)
                return ad_error(S, "index %lld is out of bounds for dimension %d with size %lld", (long long)v,
                                x->a[j].src_dim, (long long)size);
        }
    }
    return AD_OK;
}

static int make_plan(ad_state *S, const ix *x, plan *p) {
    memset(p, 0, sizeof *p);
    int rc = broadcast_indices(S, x, p);
    if (rc || (rc = check_bounds(S, x))) return rc;
    int64_t perm[AD_MAX_DIMS];
    bool indexed[AD_MAX_DIMS] = {false};
    bool adjacent = true;
    for (int j = 0; j < x->nadv; j++) {
        perm[j] = x->a[j].pos;
        indexed[x->a[j].pos] = true;
        if (j && x->a[j].pos != x->a[j - 1].pos + 1) adjacent = false;
    }
    int k = x->nadv;
    for (int i = 0; i < x->r->ndim; i++)
        if (!indexed[i]) { p->rest[p->nrest++] = x->r->shape[i]; perm[k++] = i; }
    if (p->nb + p->nrest > AD_MAX_DIMS)
        return ad_error(S, "index result has %d dimensions, but at most %d are supported", p->nb + p->nrest, AD_MAX_DIMS);
    if (!(p->src = ad_tensor_permute(S, x->r, x->r->ndim, perm))) return S->errcode;
    for (int j = 0; j < x->nadv; j++)
        if (!(p->idx[j] = ad_tensor_expand(S, x->a[j].idx, p->nb, p->bshape))) return S->errcode;
    p->at = adjacent ? x->a[0].pos : 0;
    p->nout = p->nb + p->nrest;
    for (int i = 0, r = 0, b = 0; i < p->nout; i++)
        p->oshape[i] = (i >= p->at && i < p->at + p->nb) ? p->bshape[b++] : p->rest[r++];
    return AD_OK;
}

/* Storage offset in p->src of the indexed block for broadcast position b. */
static int64_t block_offset(const plan *p, int nadv, int64_t b) {
    int64_t off = p->src->offset;
    for (int j = 0; j < nadv; j++) {
        int64_t i = (int64_t)ad_tensor_get_flat(p->idx[j], b), size = p->src->shape[j];
        if (i < 0) i += size;
        off += i * p->src->strides[j];
    }
    return off;
}

static bool next_coord(int n, const int64_t *shape, int64_t *c) {
    for (int d = n - 1; d >= 0; d--) {
        if (++c[d] < shape[d]) return true;
        c[d] = 0;
    }
    return false;
}

/* Moves elements between p->src and 'buf', a contiguous tensor laid out as
 * "broadcast index dims, then the rest"; 'write' copies buf into src. */
static void plan_walk(const plan *p, int nadv, ad_tensor *buf, bool write) {
    int64_t nblocks = 1, restn = 1, k = 0;
    for (int i = 0; i < p->nb; i++) nblocks *= p->bshape[i];
    for (int i = 0; i < p->nrest; i++) restn *= p->rest[i];
    if (nblocks == 0 || restn == 0) return;
    size_t sz = ad_dtype_size(p->src->dtype);
    char *sd = p->src->storage->data, *bd = ad_tensor_data(buf);
    const int64_t *rs = p->src->strides + nadv;
    for (int64_t b = 0; b < nblocks; b++) {
        int64_t base = block_offset(p, nadv, b), c[AD_MAX_DIMS] = {0};
        do {
            int64_t off = base;
            for (int i = 0; i < p->nrest; i++) off += c[i] * rs[i];
            if (write) memcpy(sd + (size_t)off * sz, bd + (size_t)k * sz, sz);
            else memcpy(bd + (size_t)k * sz, sd + (size_t)off * sz, sz);
            k++;
        } while (next_coord(p->nrest, p->rest, c));
    }
}

/* Permutation between "index dims first" order and the result order, in
 * which the index dims sit at p->at: to_result picks the former's dims. */
static void order_perm(const plan *p, bool to_result, int64_t *perm) {
    int k = 0;
    if (to_result) {
        for (int i = 0; i < p->at; i++) perm[k++] = p->nb + i;
        for (int i = 0; i < p->nb; i++) perm[k++] = i;
        for (int i = p->at; i < p->nrest; i++) perm[k++] = p->nb + i;
    } else {
        for (int i = 0; i < p->nb; i++) perm[k++] = p->at + i;
        for (int i = 0; i < p->at; i++) perm[k++] = i;
        for (int i = p->at + p->nb; i < p->nout; i++) perm[k++] = i;
    }
}

static int adv_get(ad_state *S, const ix *x, ad_tensor **out) {
    plan p;
    int rc = make_plan(S, x, &p);
    int64_t shape[AD_MAX_DIMS], perm[AD_MAX_DIMS];
    ad_tensor *buf = NULL;
    if (!rc) {
        memcpy(shape, p.bshape, (size_t)p.nb * sizeof *shape);
        memcpy(shape + p.nb, p.rest, (size_t)p.nrest * sizeof *shape);
        if (!(buf = ad_tensor_empty(S, x->r->dtype, p.nout, shape))) rc = S->errcode;
    }
    if (!rc) plan_walk(&p, x->nadv, buf, false);
    if (!rc && p.at > 0) {
        order_perm(&p, true, perm);
        ad_tensor *v = ad_tensor_permute(S, buf, p.nout, perm);
        ad_tensor *c = v ? ad_tensor_clone(S, v) : NULL;
        ad_tensor_decref(S, v);
        ad_tensor_decref(S, buf);
        buf = c;
        if (!c) rc = S->errcode;
    }
    plan_free(S, &p);
    *out = buf;
    return rc;
}

/* GPU tensors take basic indices (views) only: advanced ones read index
 * values on the host. */
static int device_check(ad_state *S, const ad_tensor *t, int n, const ad_value *idx) {
    bool dev = ad_tensor_device(t) != AD_DEV_CPU;
    for (int i = 0; i < n; i++) if (idx[i].t == AD_TTENSOR && ad_tensor_device(idx[i].u.tensor)) dev = true;
    if (!dev) return AD_OK;
    for (int i = 0; i < n; i++)
        if (idx[i].t == AD_TTENSOR || ad_is_seq(idx[i]))
            return ad_error(S, "indexing with tensors or lists is not implemented for CUDA tensors (move them with .cpu())");
    return AD_OK;
}

int ad_bi_index_get(ad_state *S, ad_tensor *t, int n, const ad_value *idx, ad_value *out) {
    ix x;
    int rc = device_check(S, t, n, idx);
    if (rc) return rc;
    rc = basic_pass(S, t, n, idx, &x);
    if (rc) return rc;
    ad_tensor *r = NULL;
    if (x.nadv) rc = adv_get(S, &x, &r);
    else if (x.r == t) { /* t[...] is a new view, as in torch, not t itself */
        r = ad_tensor_as_strided(S, t, t->ndim, t->shape, t->strides, t->offset);
        if (!r) rc = S->errcode;
    } else {
        r = x.r;
        ad_tensor_incref(r);
    }
    ix_free(S, &x);
    if (rc) return rc;
    *out = ad_tensor_value(r);
    return AD_OK;
}

/* ---- assignment ---- */

/* The value to store, as a tensor of t's dtype. */
static int value_tensor(ad_state *S, ad_dtype dt, ad_value v, ad_tensor **out) {
    if (v.t == AD_TTENSOR) {
        *out = ad_tensor_to(S, v.u.tensor, dt);
        return *out ? AD_OK : S->errcode;
    }
    if (ad_is_number(v) || v.t == AD_TBOOL || ad_is_seq(v)) return ad_tensor_from_value(S, v, dt, out);
    return ad_error(S, "can't assign a %s to a tensor", ad_type_name(v));
}

static bool broadcastable_to(const ad_tensor *v, int n, const int64_t *shape) {
    if (v->ndim > n) return false;
    for (int i = 0; i < v->ndim; i++) {
        int64_t a = v->shape[i], b = shape[n - v->ndim + i];
        if (a != b && a != 1) return false;
    }
    return true;
}

static int adv_set(ad_state *S, const ix *x, ad_tensor *val) {
    plan p;
    int rc = make_plan(S, x, &p);
    if (rc) return rc;
    ad_tensor *ev = NULL, *pv = NULL, *buf = NULL;
    if (!broadcastable_to(val, p.nout, p.oshape)) {
        ad_buf b;
        ad_buf_init(&b, S);
        ad_buf_puts(&b, "shape mismatch: value tensor of shape ");
        ad_buf_shape(&b, val->ndim, val->shape);
        ad_buf_puts(&b, " cannot be broadcast to indexing result of shape ");
        ad_buf_shape(&b, p.nout, p.oshape);
        rc = b.failed ? ad_nomem(S) : ad_error(S, "%s", b.data);
        ad_buf_free(&b);
    }
    if (!rc && !(ev = ad_tensor_expand(S, val, p.nout, p.oshape))) rc = S->errcode;
    if (!rc) {
        int64_t perm[AD_MAX_DIMS];
        order_perm(&p, false, perm);
        pv = ad_tensor_permute(S, ev, p.nout, perm);
        /* a contiguous copy also protects against val aliasing t */
        if (!pv || !(buf = ad_tensor_clone(S, pv))) rc = S->errcode;
    }
    if (!rc) plan_walk(&p, x->nadv, buf, true);
    ad_tensor_decref(S, buf);
    ad_tensor_decref(S, pv);
    ad_tensor_decref(S, ev);
    plan_free(S, &p);
    return rc;
}

static int basic_set(ad_state *S, ad_tensor *r, ad_tensor *val) {
    ad_tensor *ev = ad_tensor_expand(S, val, r->ndim, r->shape);
    if (!ev) return S->errcode;
    int rc = ad_tensor_copy_into(S, r, ev);
    ad_tensor_decref(S, ev);
    return rc;
}

int ad_bi_index_set(ad_state *S, ad_tensor *t, int n, const ad_value *idx, ad_value v) {
    ad_tensor *val;
    ix x;
    int rc = device_check(S, t, n, idx);
    if (rc) return rc;
    rc = value_tensor(S, t->dtype, v, &val);
    if (rc) return rc;
    rc = basic_pass(S, t, n, idx, &x);
    if (!rc) {
        if (x.nadv) rc = adv_set(S, &x, val);
        else rc = basic_set(S, x.r, val);
        ix_free(S, &x);
    }
    ad_tensor_decref(S, val);
    if (!rc) ad_tensor_bump_version(t);
    return rc;
}
