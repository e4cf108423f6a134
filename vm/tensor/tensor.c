/* tensor/tensor.c: tensor creation and lifetime, dtypes, shapes, broadcasting,
 * element access and dtype-converting strided copies. */
#include "tensor/tensor.h"
#include "autograd/engine.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ad_assert.h"
#include "buf.h"
#include "tensor/device.h"
#include "tensor/heap.h"
#include "state.h"

/* ---- dtypes ---- */

static const size_t dtype_sizes[AD_NDTYPES] = {4, 8, 8, 1};
static const char *const dtype_names[AD_NDTYPES] = {"float32", "float64", "int64", "bool"};
/* Promotion rank: bool < int64 < float32 < float64. */
static const int dtype_rank[AD_NDTYPES] = {2, 3, 1, 0};

size_t ad_dtype_size(ad_dtype dt) { return (unsigned)dt < AD_NDTYPES ? dtype_sizes[dt] : 0; }
const char *ad_dtype_name(ad_dtype dt) { return (unsigned)dt < AD_NDTYPES ? dtype_names[dt] : "?"; }
bool ad_dtype_is_float(ad_dtype dt) { return dt == AD_FLOAT32 || dt == AD_FLOAT64; }

ad_dtype ad_promote(ad_dtype a, ad_dtype b) {
    ad_assert((unsigned)a < AD_NDTYPES && (unsigned)b < AD_NDTYPES);
    return dtype_rank[a] >= dtype_rank[b] ? a : b;
}

/* ---- shapes ---- */

bool ad_shape_equal(int na, const int64_t *a, int nb, const int64_t *b) {
    if (na != nb) return false;
    for (int i = 0; i < na; i++)
        if (a[i] != b[i]) return false;
    return true;
}

static int shape_error(ad_state *S, const char *what, int ndim, const int64_t *shape) {
    ad_buf b;
    ad_buf_init(&b, S);
    ad_buf_shape(&b, ndim, shape);
    int rc = ad_error(S, "%s%s", what, b.data ? b.data : "[]");
    ad_buf_free(&b);
    return rc;
}

int ad_shape_numel(ad_state *S, int ndim, const int64_t *shape, int64_t *out) {
    if (ndim < 0 || ndim > AD_MAX_DIMS)
        return ad_error(S, "tensor has %d dimensions, but at most %d are supported", ndim, AD_MAX_DIMS);
    int64_t n = 1;
    bool overflow = false, zero = false;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            char what[96];
            snprintf(what, sizeof what, "Trying to create tensor with negative dimension %lld: ",
                     (long long)shape[i]);
            return shape_error(S, what, ndim, shape);
        }
        /* The product stops at the first overflow: a wrapped value can be 0 ([2^40, 2^40]). */
        if (shape[i] == 0) zero = true;
        else if (!overflow && !ad_mul_ok(n, shape[i], &n)) overflow = true;
    }
    /* A zero size anywhere makes the product 0, whatever overflowed before it. */
    if (zero) { *out = 0; return AD_OK; }
    if (overflow) return shape_error(S, "tensor too large: too many elements for shape ", ndim, shape);
    *out = n;
    return AD_OK;
}

int ad_normalize_dim(ad_state *S, int64_t dim, int ndim, int *out) {
    int64_t n = ndim > 0 ? ndim : 1;
    if (dim < -n || dim >= n)
        return ad_error(S, "Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
                        (long long)-n, (long long)(n - 1), (long long)dim);
    *out = (int)(dim < 0 ? dim + n : dim);
    return AD_OK;
}

int ad_broadcast_shapes(ad_state *S, int na, const int64_t *sa, int nb, const int64_t *sb,
                        int *nout, int64_t *out) {
    int n = na > nb ? na : nb;
    int64_t res[AD_MAX_DIMS];
    for (int i = n - 1; i >= 0; i--) {
        int ia = na - n + i, ib = nb - n + i;
        int64_t a = ia >= 0 ? sa[ia] : 1, b = ib >= 0 ? sb[ib] : 1;
        if (a != b && a != 1 && b != 1) {
            ad_buf m;
            ad_buf_init(&m, S);
            ad_buf_printf(&m, "The size of tensor a (%lld) must match the size of tensor b (%lld) "
                          "at non-singleton dimension %d (shapes ", (long long)a, (long long)b, i);
            ad_buf_shape(&m, na, sa);
            ad_buf_puts(&m, " and ");
            ad_buf_shape(&m, nb, sb);
            ad_buf_puts(&m, ")");
            int rc = m.failed ? ad_nomem(S) : ad_error(S, "%s", m.data);
            ad_buf_free(&m);
            return rc;
        }
        res[i] = a == 1 ? b : a;
    }
    memcpy(out, res, (size_t)n * sizeof *out);
    *nout = n;
    return AD_OK;
}

static void contiguous_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        /* Only an empty tensor ([0, 2^40, 2^40]) can overflow here; its strides address nothing. */
        if (__builtin_mul_overflow(s, shape[i] > 1 ? shape[i] : 1, &s)) s = INT64_MAX;
    }
}

bool ad_tensor_geometry_ok(const ad_tensor *t) {
    if (!t || t->refcount <= 0 || !t->storage || t->storage->refcount <= 0) return false;
    if ((unsigned)t->dtype >= AD_NDTYPES || t->ndim < 0 || t->ndim > AD_MAX_DIMS || t->offset < 0) return false;
    if (t->shape != (int64_t *)(t + 1) || t->strides != t->shape + t->ndim) return false;
    int64_t n = 1, lo = t->offset, hi = t->offset;
    bool empty = false;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0) return false;
        if (t->shape[i] == 0) empty = true;
    }
    /* An empty tensor addresses nothing, and its strides may be as large as
     * its other sizes make them ([0, 2^40, 2^40]): only its count is checked. */
    if (empty) return t->numel == 0;
    for (int i = 0; i < t->ndim; i++) {
        int64_t reach;
        if (__builtin_mul_overflow(n, t->shape[i], &n)) return false;
        if (__builtin_mul_overflow(t->shape[i] - 1, t->strides[i], &reach)) return false;
        if (__builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi)) return false;
    }
    if (n != t->numel) return false;
    /* Every element it addresses lies inside its storage. */
    return lo >= 0 && (uint64_t)(hi + 1) * ad_dtype_size(t->dtype) <= t->storage->nbytes;
}

bool ad_tensor_is_contiguous(const ad_tensor *t) {
    if (t->numel == 0) return true;
    int64_t expect = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 1) continue;
        if (t->strides[i] != expect) return false;
        expect *= t->shape[i];
    }
    return true;
}

/* ---- creation and lifetime ---- */

/* The header of a storage whose data is inline: the header and nbytes rounded to 16. */
static size_t inline_storage_size(size_t nbytes) { return sizeof(ad_storage) + ((nbytes + 15) & ~(size_t)15); }

/* A storage over host memory with a release callback: its user data follows. */
#define WRAPPED_STORAGE_SIZE (sizeof(ad_storage) + sizeof(void *))

static ad_storage *storage_new(ad_state *S, size_t nbytes, int device) {
    /* A small CPU tensor's data sits in its storage header: one slab slot instead
     * of a header and a pooled block (a recorded op on [4] costs less than half). */
    if (!device && nbytes <= AD_STORAGE_INLINE_MAX) {
        if (ad_heap_charge_host(S, nbytes)) return NULL;
        ad_storage *st = ad_heap_alloc_header(S, inline_storage_size(nbytes));
        if (!st) { ad_heap_discharge_host(S, nbytes); return NULL; }
        st->refcount = 1;
        st->data = st + 1;
        st->nbytes = nbytes;
        st->granted = 0;
        st->release = NULL;
        st->version = 0;
        st->device = 0;
        st->inline_data = true;
        st->owner = S;
        return st;
    }
    ad_storage *st = ad_heap_alloc_header(S, sizeof *st);
    if (!st) return NULL;
    size_t granted;
    if (device && ad_heap_charge_device(S, nbytes)) { ad_heap_release_header(S, st, sizeof *st); return NULL; }
    st->data = device ? ad_device_alloc(S, nbytes, &granted) : ad_heap_alloc(S, nbytes, &granted);
    if (!st->data) {
        if (device) ad_heap_discharge_device(S, nbytes);
        ad_heap_release_header(S, st, sizeof *st);
        return NULL;
    }
    st->inline_data = false;
    st->refcount = 1;
    st->nbytes = nbytes;
    st->granted = granted;
    st->release = NULL;
    st->version = 0;
    st->device = (int16_t)device;
    st->owner = S;
    return st;
}

static void storage_decref(ad_state *S, ad_storage *st) {
    ad_assert(st->refcount > 0);
    if (--st->refcount > 0) return;
    ad_assert(!st->inline_data || st->data == st + 1);
    ad_assert(!st->inline_data || st->nbytes <= AD_STORAGE_INLINE_MAX);
    ad_assert(!st->device || !st->release);
    if (st->inline_data) {
        ad_heap_discharge_host(S, st->nbytes);
        ad_heap_release_header(S, st, inline_storage_size(st->nbytes));
        return;
    }
    if (st->release) {
        st->release(*ad_storage_release_ud(st), st->data);
        ad_heap_release_header(S, st, WRAPPED_STORAGE_SIZE);
        return;
    }
    if (st->device) { ad_device_release(S, st->data, st->granted); ad_heap_discharge_device(S, st->nbytes); }
    else if (st->granted) ad_heap_release(S, st->data, st->granted);
    ad_heap_release_header(S, st, sizeof *st);
}

/* A header over 'st' (reference stolen) with contiguous strides. */
static ad_tensor *header_new(ad_state *S, ad_storage *st, ad_dtype dt, int ndim,
                             const int64_t *shape, int64_t numel) {
    ad_assert(ndim >= 0 && ndim <= AD_MAX_DIMS && (unsigned)dt < AD_NDTYPES);
    ad_assert((uint64_t)numel * ad_dtype_size(dt) <= st->nbytes);
    ad_tensor *t = ad_heap_alloc_header(S, AD_TENSOR_HEADER_SIZE(ndim));
    if (!t) { storage_decref(S, st); return NULL; }
    ad_tensor_set_geometry_storage(t, ndim);
    t->refcount = 1;
    t->storage = st;
    t->offset = 0;
    t->numel = numel;
    t->ndim = ndim;
    t->dtype = dt;
    t->requires_grad = false;
    t->grad = NULL;
    t->grad_fn = NULL;
    t->grad_fn_weak = false;
    t->output_nr = 0;
    t->fw_grad = NULL;
    t->base = NULL;
    if (ndim > 0) memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    contiguous_strides(ndim, shape, t->strides);
    ad_assert(ad_tensor_geometry_ok(t));
    return t;
}

static int checked_nbytes(ad_state *S, ad_dtype dt, int ndim, const int64_t *shape,
                          int64_t *numel, size_t *nbytes) {
    if ((unsigned)dt >= AD_NDTYPES) return ad_error(S, "invalid dtype %d", (int)dt);
    int rc = ad_shape_numel(S, ndim, shape, numel);
    if (rc) return rc;
    int64_t nb;
    if (!ad_mul_ok(*numel, (int64_t)dtype_sizes[dt], &nb))
        return shape_error(S, "tensor too large: too many bytes for shape ", ndim, shape);
    *nbytes = (size_t)nb;
    return AD_OK;
}

ad_tensor *ad_tensor_empty_on(ad_state *S, ad_dtype dt, int ndim, const int64_t *shape, int device) {
    int64_t numel;
    size_t nbytes;
    if (checked_nbytes(S, dt, ndim, shape, &numel, &nbytes)) return NULL;
    ad_storage *st = storage_new(S, nbytes, device);
    if (!st) return NULL;
    return header_new(S, st, dt, ndim, shape, numel);
}

ad_tensor *ad_tensor_empty(ad_state *S, ad_dtype dt, int ndim, const int64_t *shape) {
    return ad_tensor_empty_on(S, dt, ndim, shape, AD_DEV_CPU);
}

ad_tensor *ad_tensor_zeros(ad_state *S, ad_dtype dt, int ndim, const int64_t *shape) {
    ad_tensor *t = ad_tensor_empty(S, dt, ndim, shape);
    if (t) memset(t->storage->data, 0, t->storage->nbytes);
    return t;
}

ad_tensor *ad_tensor_full_on(ad_state *S, ad_dtype dt, int ndim, const int64_t *shape, double v, int device) {
    ad_tensor *t = ad_tensor_empty_on(S, dt, ndim, shape, device);
    if (t && ad_tensor_fill(S, t, v)) { ad_tensor_decref(S, t); return NULL; }
    return t;
}

ad_tensor *ad_tensor_full(ad_state *S, ad_dtype dt, int ndim, const int64_t *shape, double v) {
    return ad_tensor_full_on(S, dt, ndim, shape, v, AD_DEV_CPU);
}

ad_tensor *ad_tensor_full_like(ad_state *S, const ad_tensor *t, double v) {
    return ad_tensor_full_on(S, t->dtype, t->ndim, t->shape, v, t->storage->device);
}

ad_tensor *ad_tensor_scalar(ad_state *S, ad_dtype dt, double v) {
    return ad_tensor_full(S, dt, 0, NULL, v);
}

ad_tensor *ad_tensor_wrap(ad_state *S, ad_dtype dt, int ndim, const int64_t *shape,
                          void *data, void (*release)(void *, void *), void *ud) {
    int64_t numel;
    size_t nbytes;
    if (checked_nbytes(S, dt, ndim, shape, &numel, &nbytes)) return NULL;
    ad_storage *st = ad_heap_alloc_header(S, release ? WRAPPED_STORAGE_SIZE : sizeof *st);
    if (!st) return NULL;
    st->refcount = 1;
    st->data = data;
    st->nbytes = nbytes;
    st->granted = 0;
    st->release = release;
    if (release) *ad_storage_release_ud(st) = ud;
    st->version = 0;
    st->device = 0;
    st->inline_data = false;
    st->owner = S;
    return header_new(S, st, dt, ndim, shape, numel);
}

void ad_tensor_incref(ad_tensor *t) {
    ad_assert(t->refcount > 0); /* a reference to a freed header */
    t->refcount++;
}

/* A tensor owns its grad, its tangent and (unless weak) its graph node. */
void ad_tensor_decref(ad_state *S, ad_tensor *t) {
    while (t) {
        ad_assert(t->refcount > 0);
        if (--t->refcount != 0) break;
        ad_tensor *g = t->grad;
        ad_assert(!t->base || !t->base->base); /* bases are one level deep */
        ad_assert(!g || g->base != t);
        if (t->grad_fn && !t->grad_fn_weak) ad_node_decref(S, t->grad_fn);
        if (t->fw_grad) ad_tensor_clear_tangents(S, t);
        ad_tensor_decref(S, t->base); /* a base is never a view: one level deep */
        storage_decref(S, t->storage);
        ad_heap_release_header(S, t, AD_TENSOR_HEADER_SIZE(t->ndim));
        t = g; /* a chain of grads is released without recursion */
    }
}

/* ---- forward-mode tangents (one short list per tensor, by level) ---- */

ad_tensor *ad_tensor_tangent(const ad_tensor *t, uint64_t level) {
    for (const ad_tangent *e = t->fw_grad; e && e->level <= level; e = e->next)
        if (e->level == level) return e->t;
    return NULL;
}

int ad_tensor_set_tangent(ad_state *S, ad_tensor *t, uint64_t level, ad_tensor *tan) {
    ad_assert(tan && tan != t);
    ad_tangent **p = &t->fw_grad;
    while (*p && (*p)->level < level) p = &(*p)->next;
    ad_tensor_incref(tan);
    if (*p && (*p)->level == level) {
        ad_tensor_decref(S, (*p)->t);
        (*p)->t = tan;
        return ADDSL_OK;
    }
    ad_tangent *e = ad_malloc(S, sizeof *e);
    if (!e) { ad_tensor_decref(S, tan); return S->errcode; }
    e->t = tan;
    e->level = level;
    e->next = *p;
    *p = e;
    return ADDSL_OK;
}

int ad_tensor_copy_tangents(ad_state *S, ad_tensor *dst, const ad_tensor *src, uint64_t below) {
    for (const ad_tangent *e = src->fw_grad; e && e->level < below; e = e->next) {
        int rc = ad_tensor_set_tangent(S, dst, e->level, e->t);
        if (rc) return rc;
    }
    return ADDSL_OK;
}

void ad_tensor_clear_tangents(ad_state *S, ad_tensor *t) {
    ad_tangent *e = t->fw_grad;
    t->fw_grad = NULL;
    while (e) {
        ad_tangent *next = e->next;
        ad_assert(!next || next->level > e->level); /* levels increase along the list */
        ad_tensor_decref(S, e->t);
        ad_free(S, e);
        e = next;
    }
}

/* ---- element access ---- */

static inline double load(const void *base, ad_dtype dt, int64_t i) {
    switch (dt) {
    case AD_FLOAT32: return ((const float *)base)[i];
    case AD_FLOAT64: return ((const double *)base)[i];
    case AD_INT64: return (double)((const int64_t *)base)[i];
    default: return ((const uint8_t *)base)[i] ? 1.0 : 0.0;
    }
}

/* float -> int64 truncates toward zero as PyTorch does; NaN and values out of
 * range give INT64_MIN (what x86 produces) instead of undefined behaviour. */
static inline int64_t to_i64(double v) {
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
    return (int64_t)v;
}

static inline void store(void *base, ad_dtype dt, int64_t i, double v) {
    switch (dt) {
    case AD_FLOAT32: ((float *)base)[i] = (float)v; break;
    case AD_FLOAT64: ((double *)base)[i] = v; break;
    case AD_INT64: ((int64_t *)base)[i] = to_i64(v); break;
    default: ((uint8_t *)base)[i] = v != 0; break;
    }
}

/* Storage index of the flat (row-major) element 'i'. */
static int64_t flat_to_offset(const ad_tensor *t, int64_t i) {
    int64_t off = t->offset;
    for (int d = t->ndim - 1; d >= 0 && i; d--) {
        int64_t n = t->shape[d];
        off += (i % n) * t->strides[d];
        i /= n;
    }
    ad_assert(off >= 0 && (uint64_t)(off + 1) * ad_dtype_size(t->dtype) <= t->storage->nbytes);
    return off;
}

double ad_tensor_get_flat(const ad_tensor *t, int64_t i) {
    ad_assert(i >= 0 && i < t->numel && !t->storage->device);
    return load(t->storage->data, t->dtype, flat_to_offset(t, i));
}

void ad_tensor_set_flat(ad_tensor *t, int64_t i, double v) {
    ad_assert(i >= 0 && i < t->numel && !t->storage->device);
    store(t->storage->data, t->dtype, flat_to_offset(t, i), v);
}

int ad_tensor_item(ad_state *S, const ad_tensor *t, double *out) {
    if (t->numel != 1)
        return ad_error(S, "a Tensor with %lld elements cannot be converted to Scalar",
                        (long long)t->numel);
    if (t->storage->device) {
        union { float f; double d; int64_t i; uint8_t b; } one;
        size_t sz = ad_dtype_size(t->dtype);
        int rc = ad_device_read(S, &one, (const char *)t->storage->data + (size_t)flat_to_offset(t, 0) * sz, sz);
        if (rc) return rc;
        *out = load(&one, t->dtype, 0);
        return AD_OK;
    }
    *out = ad_tensor_get_flat(t, 0);
    return AD_OK;
}

/* ---- strided copies ---- */

/* One inner-loop kernel per (dst, src) dtype pair: n elements, strides in elements. */
typedef void (*copy_fn)(char *d, int64_t ds, const char *s, int64_t ss, int64_t n);

#define CONV_F(v) (v)
#define CONV_I(v) to_i64((double)(v))
#define CONV_B(v) ((v) != 0)
/* The broadcast fill in blocks of 8: -O2 turns the fixed inner loop into vector
 * stores, where the plain loop stayed one scalar store per turn whose speed
 * moved by ~40% with its address (a 4-instruction loop across a 32-byte line). */
#define FILL_KERNEL(DN, DT)                                                          \
    static void fill_##DN(DT *dp, DT v, int64_t n) {                                 \
        int64_t i = 0;                                                               \
        for (; i + 8 <= n; i += 8) for (int j = 0; j < 8; j++) dp[i + j] = v;      \
        for (; i < n; i++) dp[i] = v;                                                \
    }
FILL_KERNEL(f32, float)
FILL_KERNEL(f64, double)
FILL_KERNEL(i64, int64_t)
FILL_KERNEL(b, uint8_t)

/* A broadcast source (stride 0) fills; the fill depends on the destination's type only. */
#define COPY_KERNEL(name, DN, DT, ST, CONV)                                          \
    static void name(char *d, int64_t ds, const char *s, int64_t ss, int64_t n) {    \
        DT *dp = (DT *)d; const ST *sp = (const ST *)s;                              \
        if (ds == 1 && ss == 1) { for (int64_t i = 0; i < n; i++) dp[i] = (DT)CONV(sp[i]); } \
        else if (ds == 1 && ss == 0) { DT v = (DT)CONV(sp[0]); fill_##DN(dp, v, n); } \
        else { for (int64_t i = 0; i < n; i++) dp[i * ds] = (DT)CONV(sp[i * ss]); }  \
    }

/* Integer copies stay exact; only float sources need the truncating cast. */
#define CONV_X(v) (v)
COPY_KERNEL(cp_f32_f32, f32, float, float, CONV_F)
COPY_KERNEL(cp_f32_f64, f32, float, double, CONV_F)
COPY_KERNEL(cp_f32_i64, f32, float, int64_t, CONV_F)
COPY_KERNEL(cp_f32_b, f32, float, uint8_t, CONV_F)
COPY_KERNEL(cp_f64_f32, f64, double, float, CONV_F)
COPY_KERNEL(cp_f64_f64, f64, double, double, CONV_F)
COPY_KERNEL(cp_f64_i64, f64, double, int64_t, CONV_F)
COPY_KERNEL(cp_f64_b, f64, double, uint8_t, CONV_F)
COPY_KERNEL(cp_i64_f32, i64, int64_t, float, CONV_I)
COPY_KERNEL(cp_i64_f64, i64, int64_t, double, CONV_I)
COPY_KERNEL(cp_i64_i64, i64, int64_t, int64_t, CONV_X)
COPY_KERNEL(cp_i64_b, i64, int64_t, uint8_t, CONV_X)
COPY_KERNEL(cp_b_f32, b, uint8_t, float, CONV_B)
COPY_KERNEL(cp_b_f64, b, uint8_t, double, CONV_B)
COPY_KERNEL(cp_b_i64, b, uint8_t, int64_t, CONV_B)
COPY_KERNEL(cp_b_b, b, uint8_t, uint8_t, CONV_B)

static const copy_fn copy_table[AD_NDTYPES][AD_NDTYPES] = {
    {cp_f32_f32, cp_f32_f64, cp_f32_i64, cp_f32_b},
    {cp_f64_f32, cp_f64_f64, cp_f64_i64, cp_f64_b},
    {cp_i64_f32, cp_i64_f64, cp_i64_i64, cp_i64_b},
    {cp_b_f32, cp_b_f64, cp_b_i64, cp_b_b},
};

/* Drops size-1 dims and merges dims that are contiguous with each other in
 * both operands, so most copies run as one long inner loop. */
static int coalesce(int n, int64_t *shape, int64_t *ds, int64_t *ss) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (shape[i] == 1) continue;
        if (k > 0 && ds[k - 1] == ds[i] * shape[i] && ss[k - 1] == ss[i] * shape[i]) {
            shape[k - 1] *= shape[i];
            ds[k - 1] = ds[i];
            ss[k - 1] = ss[i];
            continue;
        }
        shape[k] = shape[i]; ds[k] = ds[i]; ss[k] = ss[i];
        k++;
    }
    return k;
}

/* The N-d loop: an index counter over all dims but the last. */
static void strided_copy(copy_fn fn, char *d, size_t dsz, const char *s, size_t ssz, int n,
                         const int64_t *shape, const int64_t *ds, const int64_t *ss) {
    if (n == 0) { fn(d, 1, s, 1, 1); return; }
    int64_t idx[AD_MAX_DIMS] = {0};
    int64_t inner = shape[n - 1];
    int64_t dstep = ds[n - 1], sstep = ss[n - 1];
    for (;;) {
        fn(d, dstep, s, sstep, inner);
        int k = n - 2;
        for (; k >= 0; k--) {
            d += (ptrdiff_t)(ds[k] * (int64_t)dsz);
            s += (ptrdiff_t)(ss[k] * (int64_t)ssz);
            if (++idx[k] < shape[k]) break;
            d -= (ptrdiff_t)(ds[k] * shape[k] * (int64_t)dsz);
            s -= (ptrdiff_t)(ss[k] * shape[k] * (int64_t)ssz);
            idx[k] = 0;
        }
        if (k < 0) return;
    }
}

/* Writes PyTorch's message for a src that does not broadcast to dst. */
static int copy_shape_error(ad_state *S, const ad_tensor *dst, const ad_tensor *src) {
    int n;
    int64_t out[AD_MAX_DIMS];
    int rc = ad_broadcast_shapes(S, dst->ndim, dst->shape, src->ndim, src->shape, &n, out);
    if (rc) return rc;
    ad_buf m;
    ad_buf_init(&m, S);
    ad_buf_puts(&m, "output with shape ");
    ad_buf_shape(&m, dst->ndim, dst->shape);
    ad_buf_puts(&m, " doesn't match the broadcast shape ");
    ad_buf_shape(&m, n, out);
    rc = m.failed ? ad_nomem(S) : ad_error(S, "%s", m.data);
    ad_buf_free(&m);
    return rc;
}

static int copy_general(ad_state *S, ad_tensor *dst, const ad_tensor *src) {
    int n = dst->ndim;
    int64_t shape[AD_MAX_DIMS], ds[AD_MAX_DIMS], ss[AD_MAX_DIMS];
    if (src->ndim > n) return copy_shape_error(S, dst, src);
    for (int i = 0; i < n; i++) {
        int j = i - (n - src->ndim);
        int64_t sz = j >= 0 ? src->shape[j] : 1;
        if (sz != dst->shape[i] && sz != 1) return copy_shape_error(S, dst, src);
        shape[i] = dst->shape[i];
        ds[i] = dst->strides[i];
        ss[i] = (j >= 0 && sz != 1) ? src->strides[j] : 0;
    }
    if (dst->numel == 0) return AD_OK;
    ad_assert(ad_tensor_geometry_ok(dst) && ad_tensor_geometry_ok(src));
    ad_assert(dst->storage->device == src->storage->device);
    int k = coalesce(n, shape, ds, ss);
    if (dst->storage->device)
        return ad_device_copy(S, ad_tensor_data(dst), dst->dtype, ad_tensor_data(src), src->dtype, k, shape, ds, ss);
    strided_copy(copy_table[dst->dtype][src->dtype], ad_tensor_data(dst), ad_dtype_size(dst->dtype),
                 ad_tensor_data(src), ad_dtype_size(src->dtype), k, shape, ds, ss);
    return AD_OK;
}

int ad_tensor_copy_into(ad_state *S, ad_tensor *dst, const ad_tensor *src) {
    if (dst->storage->device != src->storage->device) {
        /* src moves to dst's device first; the copy then happens there */
        ad_tensor *moved = ad_tensor_to_device(S, (ad_tensor *)src, dst->storage->device);
        if (!moved) return S->errcode;
        int rc = ad_tensor_copy_into(S, dst, moved);
        ad_tensor_decref(S, moved);
        return rc;
    }
    if (!dst->storage->device && dst->dtype == src->dtype && ad_shape_equal(dst->ndim, dst->shape, src->ndim, src->shape) &&
        ad_tensor_is_contiguous(dst) && ad_tensor_is_contiguous(src)) {
        if (dst->numel)
            memmove(ad_tensor_data(dst), ad_tensor_data(src),
                    (size_t)dst->numel * ad_dtype_size(dst->dtype));
        return AD_OK;
    }
    /* Shared storage may overlap in any pattern; copy through a temporary. */
    if (dst->storage == src->storage) {
        ad_tensor *tmp = ad_tensor_clone(S, src);
        if (!tmp) return S->errcode;
        int rc = copy_general(S, dst, tmp);
        ad_tensor_decref(S, tmp);
        return rc;
    }
    return copy_general(S, dst, src);
}

ad_tensor *ad_tensor_clone(ad_state *S, const ad_tensor *t) {
    ad_tensor *c = ad_tensor_empty_on(S, t->dtype, t->ndim, t->shape, t->storage->device);
    if (!c) return NULL;
    if (ad_tensor_copy_into(S, c, t)) { ad_tensor_decref(S, c); return NULL; }
    return c;
}

ad_tensor *ad_tensor_contiguous(ad_state *S, ad_tensor *t) {
    if (ad_tensor_is_contiguous(t)) { ad_tensor_incref(t); return t; }
    return ad_tensor_clone(S, t);
}

ad_tensor *ad_tensor_to(ad_state *S, ad_tensor *t, ad_dtype dt) {
    if (t->dtype == dt) { ad_tensor_incref(t); return t; }
    ad_tensor *c = ad_tensor_empty_on(S, dt, t->ndim, t->shape, t->storage->device);
    if (!c) return NULL;
    if (ad_tensor_copy_into(S, c, t)) { ad_tensor_decref(S, c); return NULL; }
    return c;
}

int ad_tensor_fill(ad_state *S, ad_tensor *dst, double v) {
    if (dst->numel == 0) return AD_OK;
    ad_assert(ad_tensor_geometry_ok(dst));

    union { float f; double d; int64_t i; uint8_t b; } one;
    store(&one, dst->dtype, 0, v);
    int n = dst->ndim;
    int64_t shape[AD_MAX_DIMS], ds[AD_MAX_DIMS], ss[AD_MAX_DIMS];
    for (int i = 0; i < n; i++) { shape[i] = dst->shape[i]; ds[i] = dst->strides[i]; ss[i] = 0; }
    int k = coalesce(n, shape, ds, ss);
    if (dst->storage->device) return ad_device_fill(S, ad_tensor_data(dst), dst->dtype, k, shape, ds, v);
    size_t sz = ad_dtype_size(dst->dtype);
    /* zeros/ones/full and gradient seeds are contiguous: a plain loop (or memset for
     * all-zero bytes) instead of the strided copy's per-element call */
    if (k == 1 && ds[0] == 1) {
        char *d = ad_tensor_data(dst);
        static const char zero[8];
        if (memcmp(&one, zero, sz) == 0) {
            memset(d, 0, (size_t)shape[0] * sz);
        } else if (sz == 8) {
            uint64_t w;
            memcpy(&w, &one, 8);
            for (int64_t i = 0; i < shape[0]; i++) memcpy(d + i * 8, &w, 8);
        } else if (sz == 4) {
            uint32_t w;
            memcpy(&w, &one, 4);
            for (int64_t i = 0; i < shape[0]; i++) memcpy(d + i * 4, &w, 4);
        } else {
            memset(d, one.b, (size_t)shape[0]);
        }
        return AD_OK;
    }
    strided_copy(copy_table[dst->dtype][dst->dtype], ad_tensor_data(dst), sz, (const char *)&one, sz, k,
                 shape, ds, ss);
    return AD_OK;
}
