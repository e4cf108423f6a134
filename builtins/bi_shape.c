/* bi_shape.c: shape and layout builtins: reshape/view, transpose, cat/stack,
 * split/chunk, flip/roll, tril/triu, diag, gather/scatter, repeat, masked_select. */
#include <stdio.h>
#include <string.h>

#include "builtins.h"
#include "tensor/device.h"
#include "state.h"
#include "buf.h"

#define FN_ARGS ad_state *S, ad_value *argv, int argc, ad_value *out

/* ---- helpers ---- */

/* Returns 'msg' + shape a + mid + shape b + tail as an error. */
static int shapes_error(ad_state *S, const char *msg, int na, const int64_t *a, const char *mid, int nb,
                        const int64_t *b, const char *tail) {
    ad_buf m;
    ad_buf_init(&m, S);
    ad_buf_puts(&m, msg);
    ad_buf_shape(&m, na, a);
    if (mid) { ad_buf_puts(&m, mid); ad_buf_shape(&m, nb, b); }
    ad_buf_puts(&m, tail);
    int rc = m.failed ? ad_nomem(S) : ad_error(S, "%s", m.data);
    ad_buf_free(&m);
    return rc;
}

/* Advances coordinates c over 'shape' in row-major order; false after the last. */
static bool next_coord(int n, const int64_t *shape, int64_t *c) {
    for (int d = n - 1; d >= 0; d--) {
        if (++c[d] < shape[d]) return true;
        c[d] = 0;
    }
    return false;
}

static int64_t offset_of(const ad_tensor *t, const int64_t *c) {
    int64_t off = t->offset;
    for (int d = 0; d < t->ndim; d++) off += c[d] * t->strides[d];
    return off;
}

/* Copies one element between storages of the same dtype (offsets in elements). */
static inline void copy_elem(ad_tensor *dst, int64_t doff, const ad_tensor *src, int64_t soff) {
    size_t sz = ad_dtype_size(dst->dtype);
    memcpy((char *)dst->storage->data + (size_t)doff * sz, (const char *)src->storage->data + (size_t)soff * sz, sz);
}

/* A tuple of tensors (references stolen; NULL entries mean failure). */
static int tuple_of(ad_state *S, int n, ad_tensor **ts, ad_value *out) {
    ad_list *l = ad_list_new(S, AD_TTUPLE, n);
    int rc = l ? AD_OK : S->errcode;
    for (int i = 0; i < n; i++) {
        if (!ts[i] && !rc) rc = S->errcode ? S->errcode : ADDSL_ENOMEM;
        if (l && ts[i]) l->items[i] = ad_tensor_value(ts[i]);
        else ad_tensor_decref(S, ts[i]);
    }
    if (rc) { if (l) ad_value_decref(S, ad_list_value(l, AD_TTUPLE)); return rc; }
    *out = ad_list_value(l, AD_TTUPLE);
    return AD_OK;
}

typedef struct tlist {
    int n;
    ad_tensor **t;
} tlist;

static void tlist_free(ad_state *S, tlist *tl) {
    for (int i = 0; i < tl->n; i++) ad_tensor_decref(S, tl->t[i]);
    ad_free(S, tl->t);
    tl->t = NULL;
    tl->n = 0;
}

static int tlist_get(ad_state *S, ad_value v, const char *fn, tlist *tl) {
    tl->n = 0;
    tl->t = NULL;
    if (!ad_is_seq(v))
        return ad_error(S, "%s(): argument 'tensors' must be a list of tensors, not %s", fn, ad_type_name(v));
    if (v.u.l->len > INT32_MAX) return ad_error(S, "%s(): too many tensors", fn);
    tl->t = ad_calloc(S, (size_t)v.u.l->len + 1, sizeof *tl->t);
    if (!tl->t) return ADDSL_ENOMEM;
    for (int64_t i = 0; i < v.u.l->len; i++) {
        int rc = ad_arg_tensor(S, v.u.l->items[i], fn, "tensors", &tl->t[i]);
        if (rc) { tlist_free(S, tl); return rc; }
        tl->n++;
    }
    return AD_OK;
}

static int64_t wrap_index(int64_t i, int64_t n) {
    int64_t r = n ? i % n : 0;
    return r < 0 ? r + n : r;
}

/* ---- reshape family ---- */

static int shape_op(ad_state *S, ad_value *argv, const char *fn, bool view, ad_value *out) {
    ad_tensor *t;
    int n;
    int64_t shape[AD_MAX_DIMS];
    int rc = ad_arg_shape(S, argv[1], fn, "shape", &n, shape);
    if (rc || (rc = ad_arg_tensor(S, argv[0], fn, "self", &t))) return rc;
    ad_tensor *r = view ? ad_tensor_view(S, t, n, shape) : ad_tensor_reshape(S, t, n, shape);
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, r, out);
}

static int bi_reshape(FN_ARGS) { (void)argc; return shape_op(S, argv, "reshape", false, out); }
static int bi_view(FN_ARGS) { (void)argc; return shape_op(S, argv, "view", true, out); }

/* view_as / reshape_as / expand_as: the shape comes from 'other'. */
static int as_other(ad_state *S, ad_value *argv, const char *fn, int kind, ad_value *out) {
    ad_tensor *t, *o, *r = NULL;
    int rc = ad_arg_tensor(S, argv[0], fn, "self", &t);
    if (rc) return rc;
    if ((rc = ad_arg_tensor(S, argv[1], fn, "other", &o))) { ad_tensor_decref(S, t); return rc; }
    if (kind == 0) r = ad_tensor_view(S, t, o->ndim, o->shape);
    else if (kind == 1) r = ad_tensor_reshape(S, t, o->ndim, o->shape);
    else r = ad_tensor_expand(S, t, o->ndim, o->shape);
    ad_tensor_decref(S, t);
    ad_tensor_decref(S, o);
    return ad_ret_tensor(S, r, out);
}

static int bi_view_as(FN_ARGS) { (void)argc; return as_other(S, argv, "view_as", 0, out); }
static int bi_reshape_as(FN_ARGS) { (void)argc; return as_other(S, argv, "reshape_as", 1, out); }
static int bi_expand_as(FN_ARGS) { (void)argc; return as_other(S, argv, "expand_as", 2, out); }

static int flatten_tensor(ad_state *S, ad_tensor *t, int64_t sd, int64_t ed, ad_tensor **out) {
    int a, b;
    if (ad_normalize_dim(S, sd, t->ndim, &a) || ad_normalize_dim(S, ed, t->ndim, &b)) return S->errcode;
    if (a > b) return ad_error(S, "flatten() has invalid args: start_dim cannot come after end_dim");
    int64_t shape[AD_MAX_DIMS];
    int n = 0;
    if (t->ndim == 0) shape[n++] = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (i != a) { shape[n++] = t->shape[i]; continue; }
        /* Checked: an empty [2^40, 2^40, 0] must not wrap while merging. */
        if (ad_shape_numel(S, b - a + 1, t->shape + a, &shape[n++])) return S->errcode;
        i = b;
    }
    *out = ad_tensor_reshape(S, t, n, shape);
    return *out ? AD_OK : S->errcode;
}

static int bi_flatten(FN_ARGS) {
    (void)argc;
    ad_tensor *t, *r = NULL;
    int64_t sd, ed;
    int rc = ad_arg_int(S, argv[1], "flatten", "start_dim", &sd);
    if (rc || (rc = ad_arg_int(S, argv[2], "flatten", "end_dim", &ed))) return rc;
    if ((rc = ad_arg_tensor(S, argv[0], "flatten", "self", &t))) return rc;
    rc = flatten_tensor(S, t, sd, ed, &r);
    ad_tensor_decref(S, t);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

static int bi_ravel(FN_ARGS) {
    (void)argc;
    ad_tensor *t, *r = NULL;
    int rc = ad_arg_tensor(S, argv[0], "ravel", "self", &t);
    if (rc) return rc;
    rc = flatten_tensor(S, t, 0, -1, &r);
    ad_tensor_decref(S, t);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

static int unflatten_shape(ad_state *S, const ad_tensor *t, int d, int ns, int64_t *sizes, int *n,
                           int64_t *shape) {
    int64_t prod = 1;
    int infer = -1;
    for (int i = 0; i < ns; i++) {
        if (sizes[i] == -1 && infer < 0) infer = i;
        else prod *= sizes[i];
    }
    if (infer >= 0 && prod != 0 && t->shape[d] % prod == 0) sizes[infer] = t->shape[d] / prod;
    else if (infer >= 0 || prod != t->shape[d]) {
        char tail[96];
        snprintf(tail, sizeof tail, " don't multiply up to the size of dim %d (%lld) in the input tensor", d,
                 (long long)t->shape[d]);
        return shapes_error(S, "unflatten: Provided sizes ", ns, sizes, NULL, 0, NULL, tail);
    }
    if (t->ndim - 1 + ns > AD_MAX_DIMS)
        return ad_error(S, "unflatten: at most %d dimensions are supported", AD_MAX_DIMS);
    *n = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i != d) { shape[(*n)++] = t->shape[i]; continue; }
        for (int j = 0; j < ns; j++) shape[(*n)++] = sizes[j];
    }
    return AD_OK;
}

static int bi_unflatten(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int64_t dim, sizes[AD_MAX_DIMS], shape[AD_MAX_DIMS];
    int ns = 0, n = 0, d = 0;
    int rc = ad_arg_int(S, argv[1], "unflatten", "dim", &dim);
    if (rc || (rc = ad_arg_shape(S, argv[2], "unflatten", "sizes", &ns, sizes))) return rc;
    if ((rc = ad_arg_tensor(S, argv[0], "unflatten", "self", &t))) return rc;
    rc = ad_normalize_dim(S, dim, t->ndim, &d);
    if (!rc && t->ndim == 0) rc = ad_error(S, "unflatten: Dimension size must be non-zero");
    if (!rc) rc = unflatten_shape(S, t, d, ns, sizes, &n, shape);
    ad_tensor *r = rc ? NULL : ad_tensor_reshape(S, t, n, shape);
    ad_tensor_decref(S, t);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

/* ---- axis permutations ---- */

static int two_dims_op(ad_state *S, ad_value *argv, const char *fn, ad_value *out) {
    ad_tensor *t;
    int64_t a, b;
    int rc = ad_arg_int(S, argv[1], fn, "dim0", &a);
    if (rc || (rc = ad_arg_int(S, argv[2], fn, "dim1", &b))) return rc;
    if ((rc = ad_arg_tensor(S, argv[0], fn, "self", &t))) return rc;
    ad_tensor *r = ad_tensor_transpose(S, t, a, b);
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, r, out);
}

static int bi_transpose(FN_ARGS) { (void)argc; return two_dims_op(S, argv, "transpose", out); }
static int bi_swapaxes(FN_ARGS) { (void)argc; return two_dims_op(S, argv, "swapaxes", out); }

static int bi_t(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int rc = ad_arg_tensor(S, argv[0], "t", "self", &t);
    if (rc) return rc;
    ad_tensor *r = NULL;
    if (t->ndim > 2) rc = ad_error(S, "t() expects a tensor with <= 2 dimensions, but self is %dD", t->ndim);
    else r = ad_tensor_transpose(S, t, 0, t->ndim == 2 ? 1 : 0);
    ad_tensor_decref(S, t);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

static int bi_permute(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int n;
    int64_t dims[AD_MAX_DIMS];
    int rc = ad_arg_shape(S, argv[1], "permute", "dims", &n, dims);
    if (rc || (rc = ad_arg_tensor(S, argv[0], "permute", "self", &t))) return rc;
    ad_tensor *r = ad_tensor_permute(S, t, n, dims);
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, r, out);
}

/* Normalized, duplicate-free dims for movedim's source or destination. */
static int movedim_dims(ad_state *S, ad_value v, const char *pname, int ndim, int *n, int *dims) {
    int64_t raw[AD_MAX_DIMS];
    bool seen[AD_MAX_DIMS] = {false};
    int rc = ad_arg_shape(S, v, "movedim", pname, n, raw);
    for (int i = 0; !rc && i < *n; i++) {
        rc = ad_normalize_dim(S, raw[i], ndim, &dims[i]);
        if (rc) break;
        if (seen[dims[i]]) {
            char pre[48];
            snprintf(pre, sizeof pre, "movedim: repeated dim in `%s` (", pname);
            return shapes_error(S, pre, *n, raw, NULL, 0, NULL, ")");
        }
        seen[dims[i]] = true;
    }
    return rc;
}

static int bi_movedim(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int ns, nd, src[AD_MAX_DIMS], dst[AD_MAX_DIMS];
    int rc = ad_arg_tensor(S, argv[0], "movedim", "self", &t);
    if (rc) return rc;
    rc = movedim_dims(S, argv[1], "source", t->ndim, &ns, src);
    if (!rc) rc = movedim_dims(S, argv[2], "destination", t->ndim, &nd, dst);
    if (!rc && ns != nd)
        rc = ad_error(S, "movedim: Invalid source or destination dims: source (%d dims) should contain the "
                         "same number of dims as destination (%d dims)", ns, nd);
    ad_tensor *r = NULL;
    if (!rc) {
        int64_t perm[AD_MAX_DIMS];
        bool used_src[AD_MAX_DIMS] = {false}, used_dst[AD_MAX_DIMS] = {false};
        for (int i = 0; i < ns; i++) { perm[dst[i]] = src[i]; used_src[src[i]] = used_dst[dst[i]] = true; }
        for (int i = 0, s = 0; i < t->ndim; i++) {
            if (used_dst[i]) continue;
            while (used_src[s]) s++;
            perm[i] = s++;
        }
        r = ad_tensor_permute(S, t, t->ndim, perm);
    }
    ad_tensor_decref(S, t);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

static int bi_unsqueeze(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int64_t d;
    int rc = ad_arg_int(S, argv[1], "unsqueeze", "dim", &d);
    if (rc || (rc = ad_arg_tensor(S, argv[0], "unsqueeze", "self", &t))) return rc;
    ad_tensor *r = ad_tensor_unsqueeze(S, t, d);
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, r, out);
}

static int bi_squeeze(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int n;
    int64_t dims[AD_MAX_DIMS];
    int rc = ad_arg_dims(S, argv[1], "squeeze", "dim", &n, dims);
    if (rc || (rc = ad_arg_tensor(S, argv[0], "squeeze", "self", &t))) return rc;
    ad_tensor *r = ad_tensor_squeeze(S, t, n, dims);
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, r, out);
}

static int expand_op(ad_state *S, ad_value *argv, const char *fn, ad_value *out) {
    ad_tensor *t;
    int n;
    int64_t shape[AD_MAX_DIMS];
    int rc = ad_arg_shape(S, argv[1], fn, "size", &n, shape);
    if (rc || (rc = ad_arg_tensor(S, argv[0], fn, "self", &t))) return rc;
    ad_tensor *r = ad_tensor_expand(S, t, n, shape);
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, r, out);
}

static int bi_expand(FN_ARGS) { (void)argc; return expand_op(S, argv, "expand", out); }
static int bi_broadcast_to(FN_ARGS) { (void)argc; return expand_op(S, argv, "broadcast_to", out); }

/* ---- joining ---- */

static bool cat_skipped(const ad_tensor *t) { return t->ndim == 1 && t->numel == 0; }

/* Checks cat's inputs; *ref is the first tensor not skipped (-1: all skipped). */
static int cat_check(ad_state *S, const tlist *tl, int64_t dim, int *d, int *ref, ad_dtype *dt) {
    if (tl->n == 0) return ad_error(S, "torch.cat(): expected a non-empty list of Tensors");
    *ref = -1;
    *dt = tl->t[0]->dtype;
    for (int i = 0; i < tl->n; i++) {
        if (tl->t[i]->ndim == 0)
            return ad_error(S, "zero-dimensional tensor (at position %d) cannot be concatenated", i);
        *dt = ad_promote(*dt, tl->t[i]->dtype);
        if (*ref < 0 && !cat_skipped(tl->t[i])) *ref = i;
    }
    if (*ref < 0) return AD_OK;
    const ad_tensor *r = tl->t[*ref];
    int rc = ad_normalize_dim(S, dim, r->ndim, d);
    for (int i = 0; !rc && i < tl->n; i++) {
        const ad_tensor *t = tl->t[i];
        if (cat_skipped(t)) continue;
        if (t->ndim != r->ndim)
            return ad_error(S, "Tensors must have same number of dimensions: got %d and %d", r->ndim, t->ndim);
        for (int k = 0; k < t->ndim; k++)
            if (k != *d && t->shape[k] != r->shape[k])
                return ad_error(S, "Sizes of tensors must match except in dimension %d. Expected size %lld but "
                                   "got size %lld for tensor number %d in the list.",
                                *d, (long long)r->shape[k], (long long)t->shape[k], i);
    }
    return rc;
}

static int cat_tensors(ad_state *S, const tlist *tl, int64_t dim, ad_tensor **out) {
    int d = 0, ref = -1;
    ad_dtype dt = AD_FLOAT32;
    int rc = cat_check(S, tl, dim, &d, &ref, &dt);
    if (rc) return rc;
    if (ref < 0) {
        int64_t zero = 0;
        *out = ad_tensor_empty(S, dt, 1, &zero);
        return *out ? AD_OK : S->errcode;
    }
    int64_t shape[AD_MAX_DIMS], total = 0;
    memcpy(shape, tl->t[ref]->shape, sizeof(int64_t) * (size_t)tl->t[ref]->ndim);   /* the header holds ndim sizes only */
    for (int i = 0; i < tl->n; i++)
        if (!cat_skipped(tl->t[i])) total += tl->t[i]->shape[d];
    shape[d] = total;
    ad_tensor *r = ad_tensor_empty_on(S, dt, tl->t[ref]->ndim, shape, ad_tensor_device(tl->t[ref]));
    if (!r) return S->errcode;
    int64_t at = 0;
    for (int i = 0; !rc && i < tl->n; i++) {
        if (cat_skipped(tl->t[i])) continue;
        ad_tensor *part = ad_tensor_narrow(S, r, d, at, tl->t[i]->shape[d]);
        rc = part ? ad_tensor_copy_into(S, part, tl->t[i]) : S->errcode;
        ad_tensor_decref(S, part);
        at += tl->t[i]->shape[d];
    }
    if (rc) { ad_tensor_decref(S, r); return rc; }
    *out = r;
    return AD_OK;
}

static int bi_cat(FN_ARGS) {
    (void)argc;
    tlist tl;
    int64_t dim;
    ad_tensor *r = NULL;
    int rc = ad_arg_int(S, argv[1], "cat", "dim", &dim);
    if (rc || (rc = tlist_get(S, argv[0], "cat", &tl))) return rc;
    rc = cat_tensors(S, &tl, dim, &r);
    tlist_free(S, &tl);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

static int stack_tensors(ad_state *S, const tlist *tl, int64_t dim, ad_tensor **out) {
    if (tl->n == 0) return ad_error(S, "stack expects a non-empty TensorList");
    const ad_tensor *f = tl->t[0];
    ad_dtype dt = f->dtype;
    for (int i = 1; i < tl->n; i++) {
        if (!ad_shape_equal(f->ndim, f->shape, tl->t[i]->ndim, tl->t[i]->shape)) {
            char mid[48];
            snprintf(mid, sizeof mid, " at entry 0 and ");
            char tail[32];
            snprintf(tail, sizeof tail, " at entry %d", i);
            return shapes_error(S, "stack expects each tensor to be equal size, but got ", f->ndim, f->shape,
                                mid, tl->t[i]->ndim, tl->t[i]->shape, tail);
        }
        dt = ad_promote(dt, tl->t[i]->dtype);
    }
    int d;
    if (f->ndim >= AD_MAX_DIMS) return ad_error(S, "stack: at most %d dimensions are supported", AD_MAX_DIMS);
    int rc = ad_normalize_dim(S, dim, f->ndim + 1, &d);
    if (rc) return rc;
    int64_t shape[AD_MAX_DIMS];
    for (int i = 0, j = 0; i <= f->ndim; i++) shape[i] = i == d ? tl->n : f->shape[j++];
    ad_tensor *r = ad_tensor_empty_on(S, dt, f->ndim + 1, shape, ad_tensor_device(f));
    if (!r) return S->errcode;
    for (int i = 0; !rc && i < tl->n; i++) {
        ad_tensor *part = ad_tensor_select(S, r, d, i);
        rc = part ? ad_tensor_copy_into(S, part, tl->t[i]) : S->errcode;
        ad_tensor_decref(S, part);
    }
    if (rc) { ad_tensor_decref(S, r); return rc; }
    *out = r;
    return AD_OK;
}

static int bi_stack(FN_ARGS) {
    (void)argc;
    tlist tl;
    int64_t dim;
    ad_tensor *r = NULL;
    int rc = ad_arg_int(S, argv[1], "stack", "dim", &dim);
    if (rc || (rc = tlist_get(S, argv[0], "stack", &tl))) return rc;
    rc = stack_tensors(S, &tl, dim, &r);
    tlist_free(S, &tl);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

/* hstack/vstack: lift each input to at least 'rank' dims, then cat. */
static int hvstack(ad_state *S, ad_value *argv, const char *fn, bool vertical, ad_value *out) {
    tlist tl;
    ad_tensor *r = NULL;
    int rc = tlist_get(S, argv[0], fn, &tl);
    if (rc) return rc;
    int rank = vertical ? 2 : 1;
    for (int i = 0; !rc && i < tl.n; i++) {
        ad_tensor *t = tl.t[i];
        if (t->ndim >= rank) continue;
        int64_t shape[2] = {1, t->numel};
        ad_tensor *v = ad_tensor_reshape(S, t, rank, rank == 2 ? shape : shape + 1);
        if (!v) { rc = S->errcode; break; }
        ad_tensor_decref(S, t);
        tl.t[i] = v;
    }
    int64_t dim = (!vertical && tl.n > 0 && tl.t[0]->ndim == 1) ? 0 : (vertical ? 0 : 1);
    if (!rc) rc = cat_tensors(S, &tl, dim, &r);
    tlist_free(S, &tl);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

static int bi_hstack(FN_ARGS) { (void)argc; return hvstack(S, argv, "hstack", false, out); }
static int bi_vstack(FN_ARGS) { (void)argc; return hvstack(S, argv, "vstack", true, out); }

/* ---- splitting ---- */

static int split_sizes(ad_state *S, ad_tensor *t, int d, int n, const int64_t *sizes, ad_value *out) {
    ad_tensor *parts[1024];
    ad_tensor **ps = n <= 1024 ? parts : ad_calloc(S, (size_t)n, sizeof *ps);
    if (!ps) return ADDSL_ENOMEM;
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        ps[i] = ad_tensor_narrow(S, t, d, at, sizes[i]);
        at += sizes[i];
    }
    int rc = tuple_of(S, n, ps, out);
    if (ps != parts) ad_free(S, ps);
    return rc;
}

/* Splits dim d into pieces of 'size' (the last may be smaller). */
static int split_even(ad_state *S, ad_tensor *t, int d, int64_t size, ad_value *out) {
    int64_t len = t->ndim ? t->shape[d] : 1;
    if (size < 0) return ad_error(S, "split expects split_size be non-negative, but got split_size=%lld", (long long)size);
    if (size == 0 && len != 0)
        return ad_error(S, "split_size can only be 0 if dimension size is 0, but got dimension size of %lld",
                        (long long)len);
    int64_t n = size == 0 ? 1 : (len + size - 1) / size;
    if (n == 0) n = 1;
    if (n > AD_MAX_LIST) return ad_error(S, "split: too many pieces");
    int64_t *sizes = ad_malloc(S, (size_t)n * sizeof *sizes);
    if (!sizes) return ADDSL_ENOMEM;
    for (int64_t i = 0; i < n; i++) sizes[i] = (i + 1) * size <= len ? size : len - i * size;
    int rc = split_sizes(S, t, d, (int)n, sizes, out);
    ad_free(S, sizes);
    return rc;
}

static int split_list(ad_state *S, ad_tensor *t, int d, ad_value v, ad_value *out) {
    int64_t len = t->shape[d], sum = 0, *sizes = ad_malloc(S, (size_t)(v.u.l->len + 1) * sizeof *sizes);
    if (!sizes) return ADDSL_ENOMEM;
    int rc = AD_OK;
    for (int64_t i = 0; !rc && i < v.u.l->len; i++) {
        rc = ad_arg_int(S, v.u.l->items[i], "split", "split_size_or_sections", &sizes[i]);
        if (!rc && sizes[i] < 0)
            rc = ad_error(S, "split_with_sizes expects split_sizes have only non-negative entries, but got "
                             "split_sizes=%lld", (long long)sizes[i]);
        sum += rc ? 0 : sizes[i];
    }
    if (!rc && sum != len) {
        ad_buf m;
        ad_buf_init(&m, S);
        ad_buf_printf(&m, "split_with_sizes expects split_sizes to sum exactly to %lld (input tensor's size at "
                      "dimension %d), but got split_sizes=", (long long)len, d);
        ad_buf_shape(&m, (int)v.u.l->len, sizes);
        rc = m.failed ? ad_nomem(S) : ad_error(S, "%s", m.data);
        ad_buf_free(&m);
    }
    if (!rc) rc = split_sizes(S, t, d, (int)v.u.l->len, sizes, out);
    ad_free(S, sizes);
    return rc;
}

static int bi_split(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int64_t dim, size;
    int d;
    int rc = ad_arg_int(S, argv[2], "split", "dim", &dim);
    if (rc || (rc = ad_arg_tensor(S, argv[0], "split", "self", &t))) return rc;
    if (t->ndim == 0) rc = ad_error(S, "split expects at least a 1-dimensional tensor");
    if (!rc) rc = ad_normalize_dim(S, dim, t->ndim, &d);
    if (!rc && ad_is_seq(argv[1])) rc = split_list(S, t, d, argv[1], out);
    else if (!rc && !(rc = ad_arg_int(S, argv[1], "split", "split_size_or_sections", &size)))
        rc = split_even(S, t, d, size, out);
    ad_tensor_decref(S, t);
    return rc;
}

static int bi_chunk(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int64_t chunks, dim;
    int d;
    int rc = ad_arg_int(S, argv[1], "chunk", "chunks", &chunks);
    if (rc || (rc = ad_arg_int(S, argv[2], "chunk", "dim", &dim))) return rc;
    if (chunks <= 0) return ad_error(S, "chunk expects `chunks` to be greater than 0, got: %lld", (long long)chunks);
    if ((rc = ad_arg_tensor(S, argv[0], "chunk", "self", &t))) return rc;
    if (t->ndim == 0) rc = ad_error(S, "chunk expects at least a 1-dimensional tensor");
    if (!rc) rc = ad_normalize_dim(S, dim, t->ndim, &d);
    if (!rc) {
        int64_t len = t->shape[d], size = (len + chunks - 1) / chunks;
        if (len == 0) { /* torch gives 'chunks' empty pieces here */
            int64_t *sizes = chunks <= AD_MAX_LIST ? ad_calloc(S, (size_t)chunks, sizeof *sizes) : NULL;
            rc = sizes ? split_sizes(S, t, d, (int)chunks, sizes, out) : ad_error(S, "chunk: too many chunks");
            ad_free(S, sizes);
        } else {
            rc = split_even(S, t, d, size, out);
        }
    }
    ad_tensor_decref(S, t);
    return rc;
}

static int bi_unbind(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int64_t dim;
    int d;
    int rc = ad_arg_int(S, argv[1], "unbind", "dim", &dim);
    if (rc || (rc = ad_arg_tensor(S, argv[0], "unbind", "self", &t))) return rc;
    if (t->ndim == 0) rc = ad_error(S, "Dimension specified as 0 but tensor has no dimensions");
    if (!rc) rc = ad_normalize_dim(S, dim, t->ndim, &d);
    if (!rc && t->shape[d] > AD_MAX_LIST) rc = ad_error(S, "unbind: too many pieces");
    if (!rc) {
        int n = (int)t->shape[d];
        ad_tensor **ps = ad_calloc(S, (size_t)n + 1, sizeof *ps);
        if (!ps) rc = ADDSL_ENOMEM;
        for (int i = 0; ps && i < n; i++) ps[i] = ad_tensor_select(S, t, d, i);
        if (ps) rc = tuple_of(S, n, ps, out);
        ad_free(S, ps);
    }
    ad_tensor_decref(S, t);
    return rc;
}

static int bi_narrow(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int64_t dim, start, len;
    int rc = ad_arg_int(S, argv[1], "narrow", "dim", &dim);
    if (rc || (rc = ad_arg_int(S, argv[2], "narrow", "start", &start))) return rc;
    if ((rc = ad_arg_int(S, argv[3], "narrow", "length", &len))) return rc;
    if ((rc = ad_arg_tensor(S, argv[0], "narrow", "self", &t))) return rc;
    ad_tensor *r = ad_tensor_narrow(S, t, dim, start, len);
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, r, out);
}

static int bi_select(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int64_t dim, index;
    int rc = ad_arg_int(S, argv[1], "select", "dim", &dim);
    if (rc || (rc = ad_arg_int(S, argv[2], "select", "index", &index))) return rc;
    if ((rc = ad_arg_tensor(S, argv[0], "select", "self", &t))) return rc;
    ad_tensor *r = ad_tensor_select(S, t, dim, index);
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, r, out);
}

/* ---- element rearrangements (copies) ---- */

/* Source coordinates for destination coordinates, per op. */
typedef struct remap {
    int kind; /* REMAP_* */
    int ndim;
    bool flip[AD_MAX_DIMS];
    int64_t shift[AD_MAX_DIMS];
    int pad; /* repeat: leading dims the source lacks */
} remap;

enum { REMAP_FLIP, REMAP_ROLL, REMAP_REPEAT };

static void remap_coord(const remap *m, const ad_tensor *src, const int64_t *c, int64_t *sc) {
    for (int d = 0; d < src->ndim; d++) {
        int64_t n = src->shape[d], x = c[d + m->pad];
        if (m->kind == REMAP_FLIP) sc[d] = m->flip[d] ? n - 1 - x : x;
        else if (m->kind == REMAP_ROLL) sc[d] = wrap_index(x - m->shift[d], n);
        else sc[d] = x % n;
    }
}

/* A new contiguous tensor of 'shape' whose elements come from src through m. */
static ad_tensor *remap_copy(ad_state *S, ad_tensor *src, int ndim, const int64_t *shape, const remap *m) {
    ad_tensor *r = ad_tensor_empty(S, src->dtype, ndim, shape);
    if (!r || r->numel == 0) return r;
    int64_t c[AD_MAX_DIMS] = {0}, sc[AD_MAX_DIMS] = {0}, i = 0;
    do {
        remap_coord(m, src, c, sc);
        copy_elem(r, i++, src, offset_of(src, sc));
    } while (next_coord(ndim, shape, c));
    return r;
}

static int bi_flip(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int n;
    int64_t dims[AD_MAX_DIMS];
    remap m = {.kind = REMAP_FLIP};
    int rc = ad_arg_shape(S, argv[1], "flip", "dims", &n, dims);
    if (rc || (rc = ad_arg_tensor(S, argv[0], "flip", "self", &t))) return rc;
    for (int i = 0; !rc && i < n; i++) {
        int d;
        rc = ad_normalize_dim(S, dims[i], t->ndim, &d);
        if (!rc && m.flip[d]) rc = ad_error(S, "dim %d appears multiple times in the list of dims", d);
        if (!rc) m.flip[d] = t->ndim > 0;
    }
    ad_tensor *r = rc ? NULL : remap_copy(S, t, t->ndim, t->shape, &m);
    ad_tensor_decref(S, t);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

static int roll_setup(ad_state *S, ad_value *argv, ad_tensor *t, remap *m, bool *flat) {
    int ns, nd;
    int64_t shifts[AD_MAX_DIMS], dims[AD_MAX_DIMS];
    int rc = ad_arg_shape(S, argv[1], "roll", "shifts", &ns, shifts);
    if (rc || (rc = ad_arg_dims(S, argv[2], "roll", "dims", &nd, dims))) return rc;
    *flat = nd < 0;
    if (nd < 0) {
        if (ns != 1) return ad_error(S, "shifts and dimensions must align. shifts: %d, dims:0", ns);
        m->shift[0] = shifts[0];
        return AD_OK;
    }
    if (ns != nd) return ad_error(S, "shifts and dimensions must align. shifts: %d, dims:%d", ns, nd);
    for (int i = 0; i < nd; i++) {
        int d;
        if ((rc = ad_normalize_dim(S, dims[i], t->ndim, &d))) return rc;
        if (t->ndim > 0) m->shift[d] += shifts[i];
    }
    return AD_OK;
}

static int bi_roll(FN_ARGS) {
    (void)argc;
    ad_tensor *t, *src = NULL, *r = NULL;
    remap m = {.kind = REMAP_ROLL};
    bool flat;
    int rc = ad_arg_tensor(S, argv[0], "roll", "self", &t);
    if (rc) return rc;
    rc = roll_setup(S, argv, t, &m, &flat);
    if (!rc && flat) {
        int64_t n = t->numel;
        src = ad_tensor_reshape(S, t, 1, &n);
        ad_tensor *f = src ? remap_copy(S, src, 1, &n, &m) : NULL;
        r = f ? ad_tensor_view(S, f, t->ndim, t->shape) : NULL;
        ad_tensor_decref(S, f);
        if (!r) rc = S->errcode;
    } else if (!rc) {
        r = remap_copy(S, t, t->ndim, t->shape, &m);
        if (!r) rc = S->errcode;
    }
    ad_tensor_decref(S, src);
    ad_tensor_decref(S, t);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

/* repeat(sizes), or tile(dims) when 'tile' pads short dims with ones. */
static int repeat_op(ad_state *S, ad_value *argv, const char *fn, bool tile, ad_value *out) {
    ad_tensor *t;
    int n;
    int64_t reps[AD_MAX_DIMS], shape[AD_MAX_DIMS];
    int rc = ad_arg_shape(S, argv[1], fn, tile ? "dims" : "repeats", &n, reps);
    if (rc || (rc = ad_arg_tensor(S, argv[0], fn, "self", &t))) return rc;
    if (tile && n < t->ndim) {
        int k = t->ndim - n;
        memmove(reps + k, reps, (size_t)n * sizeof *reps);
        for (int i = 0; i < k; i++) reps[i] = 1;
        n = t->ndim;
    }
    if (n < t->ndim)
        rc = ad_error(S, "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
    remap m = {.kind = REMAP_REPEAT, .pad = n - t->ndim};
    for (int i = 0; !rc && i < n; i++) {
        int d = i - m.pad;
        if (reps[i] < 0) rc = ad_error(S, "Trying to create tensor with negative dimension %lld", (long long)reps[i]);
        else if (!ad_mul_ok(reps[i], d >= 0 ? t->shape[d] : 1, &shape[i])) rc = ad_error(S, "%s(): too large", fn);
    }
    ad_tensor *r = rc ? NULL : remap_copy(S, t, n, shape, &m);
    ad_tensor_decref(S, t);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

static int bi_repeat(FN_ARGS) { (void)argc; return repeat_op(S, argv, "repeat", false, out); }
static int bi_tile(FN_ARGS) { (void)argc; return repeat_op(S, argv, "tile", true, out); }

/* tril/triu: a copy with the elements off the kept triangle zeroed. */
static int tri_op(ad_state *S, ad_value *argv, const char *fn, bool lower, ad_value *out) {
    ad_tensor *t;
    int64_t k;
    int rc = ad_arg_int(S, argv[1], fn, "diagonal", &k);
    if (rc || (rc = ad_arg_tensor(S, argv[0], fn, "self", &t))) return rc;
    if (t->ndim < 2) { /* torch reports the missing row dim as out of range */
        int d;
        rc = ad_normalize_dim(S, -2, t->ndim, &d);
        ad_tensor_decref(S, t);
        return rc ? rc : ad_error(S, "%s: input tensor must have at least 2 dimensions", fn);
    }
    ad_tensor *r = ad_tensor_clone(S, t);
    ad_tensor_decref(S, t);
    if (!r) return S->errcode;
    int64_t rows = r->shape[r->ndim - 2], cols = r->shape[r->ndim - 1];
    for (int64_t i = 0; i < r->numel; i++) {
        int64_t col = i % cols, row = (i / cols) % rows;
        if (lower ? col - row > k : col - row < k) ad_tensor_set_flat(r, i, 0.0);
    }
    return ad_ret_tensor(S, r, out);
}

static int bi_tril(FN_ARGS) { (void)argc; return tri_op(S, argv, "tril", true, out); }
static int bi_triu(FN_ARGS) { (void)argc; return tri_op(S, argv, "triu", false, out); }

static int bi_diagonal(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int64_t off, d1, d2;
    int rc = ad_arg_int(S, argv[1], "diagonal", "offset", &off);
    if (rc || (rc = ad_arg_int(S, argv[2], "diagonal", "dim1", &d1))) return rc;
    if ((rc = ad_arg_int(S, argv[3], "diagonal", "dim2", &d2))) return rc;
    if ((rc = ad_arg_tensor(S, argv[0], "diagonal", "self", &t))) return rc;
    ad_tensor *r = ad_tensor_diagonal(S, t, off, d1, d2);
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, r, out);
}

/* Zeros of t's batch shape plus two dims of size n+|off| at d1, d2, with t's
 * last dim written along their diagonal. */
static ad_tensor *embed_diag(ad_state *S, ad_tensor *t, int64_t off, int64_t d1, int64_t d2) {
    int n = t->ndim + 1, a, b;
    if (n > AD_MAX_DIMS) { ad_error(S, "diag_embed: at most %d dimensions are supported", AD_MAX_DIMS); return NULL; }
    if (ad_normalize_dim(S, d1, n, &a) || ad_normalize_dim(S, d2, n, &b)) return NULL;
    if (a == b) { ad_error(S, "diagonal dimensions cannot be identical %lld, %lld", (long long)d1, (long long)d2); return NULL; }
    int64_t len = (t->ndim ? t->shape[t->ndim - 1] : 1) + (off < 0 ? -off : off), shape[AD_MAX_DIMS];
    for (int i = 0, j = 0; i < n; i++) shape[i] = (i == a || i == b) ? len : t->shape[j++];
    ad_tensor *r = ad_tensor_zeros(S, t->dtype, n, shape);
    ad_tensor *dv = r ? ad_tensor_diagonal(S, r, off, a, b) : NULL;
    int rc = dv ? ad_tensor_copy_into(S, dv, t) : S->errcode;
    ad_tensor_decref(S, dv);
    if (rc) { ad_tensor_decref(S, r); return NULL; }
    return r;
}

static int bi_diag_embed(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int64_t off, d1, d2;
    int rc = ad_arg_int(S, argv[1], "diag_embed", "offset", &off);
    if (rc || (rc = ad_arg_int(S, argv[2], "diag_embed", "dim1", &d1))) return rc;
    if ((rc = ad_arg_int(S, argv[3], "diag_embed", "dim2", &d2))) return rc;
    if ((rc = ad_arg_tensor(S, argv[0], "diag_embed", "self", &t))) return rc;
    if (t->ndim == 0) { ad_tensor_decref(S, t); return ad_error(S, "diag_embed(): input must have at least 1 dimension"); }
    ad_tensor *r = embed_diag(S, t, off, d1, d2);
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, r, out);
}

static int bi_diag(FN_ARGS) {
    (void)argc;
    ad_tensor *t, *r = NULL;
    int64_t k;
    int rc = ad_arg_int(S, argv[1], "diag", "diagonal", &k);
    if (rc || (rc = ad_arg_tensor(S, argv[0], "diag", "self", &t))) return rc;
    if (t->ndim == 1) {
        r = embed_diag(S, t, k, 0, 1);
    } else if (t->ndim == 2) {
        ad_tensor *dv = ad_tensor_diagonal(S, t, k, 0, 1);
        r = dv ? ad_tensor_clone(S, dv) : NULL;
        ad_tensor_decref(S, dv);
    } else {
        rc = ad_error(S, "matrix or a vector expected");
    }
    ad_tensor_decref(S, t);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

/* ---- indexed gathers and scatters ---- */

static int index_dtype_check(ad_state *S, const ad_tensor *idx, const char *fn) {
    if (idx->dtype != AD_INT64) return ad_error(S, "%s(): Expected dtype int64 for index", fn);
    return AD_OK;
}

/* out = self.index_select(d, idx) for a 0-d or 1-d int64 idx (checked). */
static int index_select_tensor(ad_state *S, ad_tensor *t, int d, ad_tensor *idx, ad_tensor **out) {
    int64_t shape[AD_MAX_DIMS], n = idx->numel, size = t->ndim ? t->shape[d] : 1;
    memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);   /* the header holds ndim sizes only */
    if (t->ndim) shape[d] = n;
    for (int64_t k = 0; k < n; k++) {
        double v = ad_tensor_get_flat(idx, k);
        if (v < 0 || v >= (double)size) return ad_error(S, "index out of range in self");
    }
    ad_tensor *r = ad_tensor_empty(S, t->dtype, t->ndim, shape);
    if (!r) return S->errcode;
    int rc = AD_OK;
    for (int64_t k = 0; !rc && k < n; k++) {
        int64_t i = (int64_t)ad_tensor_get_flat(idx, k);
        if (t->ndim == 0) { rc = ad_tensor_copy_into(S, r, t); break; }
        ad_tensor *src = ad_tensor_select(S, t, d, i), *dst = ad_tensor_select(S, r, d, k);
        rc = src && dst ? ad_tensor_copy_into(S, dst, src) : S->errcode;
        ad_tensor_decref(S, src);
        ad_tensor_decref(S, dst);
    }
    if (rc) { ad_tensor_decref(S, r); return rc; }
    *out = r;
    return AD_OK;
}

static int bi_index_select(FN_ARGS) {
    (void)argc;
    ad_tensor *t, *idx, *r = NULL;
    int64_t dim;
    int d;
    int rc = ad_arg_int(S, argv[1], "index_select", "dim", &dim);
    if (rc || (rc = ad_arg_tensor(S, argv[0], "index_select", "self", &t))) return rc;
    if ((rc = ad_arg_tensor(S, argv[2], "index_select", "index", &idx))) { ad_tensor_decref(S, t); return rc; }
    rc = ad_normalize_dim(S, dim, t->ndim, &d);
    if (!rc && idx->dtype != AD_INT64) rc = ad_error(S, "index_select(): Expected dtype int32 or int64 for index");
    if (!rc && idx->ndim > 1) rc = ad_error(S, "index_select(): Index is supposed to be a vector");
    if (!rc) rc = index_select_tensor(S, t, d, idx, &r);
    ad_tensor_decref(S, t);
    ad_tensor_decref(S, idx);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

static int gather_msg(ad_state *S, const ad_tensor *t, int d, const ad_tensor *idx) {
    for (int k = 0; k < idx->ndim && k < t->ndim; k++) {
        if (k == d || idx->shape[k] <= t->shape[k]) continue;
        char pre[64], tail[64];
        snprintf(pre, sizeof pre, "Size does not match at dimension %d expected index ", k);
        snprintf(tail, sizeof tail, " apart from dimension %d", d);
        return shapes_error(S, pre, idx->ndim, idx->shape, " to be smaller than self ", t->ndim, t->shape, tail);
    }
    return AD_OK;
}

/* Every index value must address dim d of a tensor with "size" entries there (no wrapping, as in torch). */
static int index_walk_check(ad_state *S, const ad_tensor *idx, int d, int64_t size) {
    for (int64_t i = 0; i < idx->numel; i++) {
        double v = ad_tensor_get_flat(idx, i);
        if (v < 0 || v >= (double)size)
            return ad_error(S, "index %lld is out of bounds for dimension %d with size %lld", (long long)v, d,
                            (long long)size);
    }
    return AD_OK;
}

static int gather_tensor(ad_state *S, ad_tensor *t, int d, ad_tensor *idx, ad_tensor **out) {
    int rc = index_dtype_check(S, idx, "gather");
    if (!rc && idx->ndim != t->ndim && !(idx->ndim <= 1 && t->ndim <= 1))
        rc = ad_error(S, "Index tensor must have the same number of dimensions as input tensor");
    if (!rc) rc = gather_msg(S, t, d, idx);
    if (!rc) rc = index_walk_check(S, idx, d, t->ndim ? t->shape[d] : 1);
    if (rc) return rc;
    ad_tensor *r = ad_tensor_empty(S, t->dtype, idx->ndim, idx->shape);
    if (!r) return S->errcode;
    int64_t c[AD_MAX_DIMS] = {0}, i = 0;
    if (r->numel) do {
        int64_t sc[AD_MAX_DIMS];
        memcpy(sc, c, sizeof sc);
        if (t->ndim) sc[d] = (int64_t)ad_tensor_get_flat(idx, i);
        copy_elem(r, i, t, offset_of(t, sc));
        i++;
    } while (next_coord(idx->ndim, idx->shape, c));
    *out = r;
    return AD_OK;
}

static int bi_gather(FN_ARGS) {
    (void)argc;
    ad_tensor *t, *idx, *r = NULL;
    int64_t dim;
    int d;
    int rc = ad_arg_int(S, argv[1], "gather", "dim", &dim);
    if (rc || (rc = ad_arg_tensor(S, argv[0], "gather", "self", &t))) return rc;
    if ((rc = ad_arg_tensor(S, argv[2], "gather", "index", &idx))) { ad_tensor_decref(S, t); return rc; }
    rc = ad_normalize_dim(S, dim, t->ndim, &d);
    if (!rc) rc = gather_tensor(S, t, d, idx, &r);
    ad_tensor_decref(S, t);
    ad_tensor_decref(S, idx);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

static void add_elem(ad_tensor *dst, int64_t doff, const ad_tensor *src, int64_t soff) {
    char *d = dst->storage->data;
    const char *s = src->storage->data;
    switch (dst->dtype) {
    case AD_FLOAT32: ((float *)d)[doff] += ((const float *)s)[soff]; break;
    case AD_FLOAT64: ((double *)d)[doff] += ((const double *)s)[soff]; break;
    case AD_INT64:
        ((int64_t *)d)[doff] = (int64_t)((uint64_t)((int64_t *)d)[doff] + (uint64_t)((const int64_t *)s)[soff]);
        break;
    default: d[doff] = d[doff] || s[soff]; break;
    }
}

/* dst[..idx..] (op)= src[..], in place on dst; src already has dst's dtype. */
static void scatter_into(ad_tensor *dst, int d, const ad_tensor *idx, const ad_tensor *src, bool add) {
    int64_t c[AD_MAX_DIMS] = {0}, i = 0;
    if (idx->numel == 0) return;
    do {
        int64_t dc[AD_MAX_DIMS], soff = src->ndim ? offset_of(src, c) : src->offset;
        memcpy(dc, c, sizeof dc);
        if (dst->ndim) dc[d] = (int64_t)ad_tensor_get_flat(idx, i);
        if (add) add_elem(dst, offset_of(dst, dc), src, soff);
        else copy_elem(dst, offset_of(dst, dc), src, soff);
        i++;
    } while (next_coord(idx->ndim, idx->shape, c));
}

/* Checks scatter's arguments; *src becomes a tensor of self's dtype. */
static int scatter_prepare(ad_state *S, ad_tensor *t, int d, ad_tensor *idx, ad_value v, const char *fn,
                           ad_tensor **src) {
    int rc = index_dtype_check(S, idx, fn);
    if (rc) return rc;
    if (v.t == AD_TTENSOR) {
        if (v.u.tensor->dtype != t->dtype)
            return ad_error(S, "%s(): Expected self.dtype to be equal to src.dtype", fn);
        ad_tensor_incref(v.u.tensor);
        *src = v.u.tensor;
    } else {
        double x;
        if ((rc = ad_arg_double(S, v, fn, "src", &x))) return rc;
        ad_tensor *s = ad_tensor_scalar(S, t->dtype, x);
        if (!s) return S->errcode;
        int64_t ones[AD_MAX_DIMS];
        for (int i = 0; i < idx->ndim; i++) ones[i] = 1;
        ad_tensor *v1 = ad_tensor_view(S, s, idx->ndim, ones);
        ad_tensor_decref(S, s);
        *src = v1 ? ad_tensor_expand(S, v1, idx->ndim, idx->shape) : NULL;
        ad_tensor_decref(S, v1);
        if (!*src) return S->errcode;
    }
    if (idx->ndim != t->ndim && !(idx->ndim <= 1 && t->ndim <= 1))
        rc = ad_error(S, "Index tensor must have the same number of dimensions as self tensor");
    if (!rc && (*src)->ndim != idx->ndim && !((*src)->ndim <= 1 && idx->ndim <= 1))
        rc = ad_error(S, "Index tensor must have the same number of dimensions as src tensor");
    for (int k = 0; !rc && k < idx->ndim && k < t->ndim; k++) {
        if ((k == d || idx->shape[k] <= t->shape[k]) && idx->shape[k] <= (*src)->shape[k]) continue;
        char tail[96];
        snprintf(tail, sizeof tail, " apart from dimension %d and to be smaller size than src ", d);
        rc = shapes_error(S, "Expected index ", idx->ndim, idx->shape, " to be smaller than self ", t->ndim, t->shape,
                          tail);
    }
    if (!rc) rc = index_walk_check(S, idx, d, t->ndim ? t->shape[d] : 1);
    if (rc) { ad_tensor_decref(S, *src); *src = NULL; }
    return rc;
}

/* scatter / scatter_add, in place (scatter_, scatter_add_) or on a clone. */
static int scatter_op(ad_state *S, ad_value *argv, const char *fn, bool add, bool inplace, ad_value *out) {
    ad_tensor *t, *idx, *src = NULL, *dst = NULL;
    int64_t dim;
    int d;
    int rc = ad_arg_int(S, argv[1], fn, "dim", &dim);
    if (rc) return rc;
    if (inplace && argv[0].t != AD_TTENSOR)
        return ad_error(S, "%s(): argument 'self' must be a tensor, not %s", fn, ad_type_name(argv[0]));
    if ((rc = ad_arg_tensor(S, argv[0], fn, "self", &t))) return rc;
    if ((rc = ad_arg_tensor(S, argv[2], fn, "index", &idx))) { ad_tensor_decref(S, t); return rc; }
    rc = ad_normalize_dim(S, dim, t->ndim, &d);
    if (!rc) rc = scatter_prepare(S, t, d, idx, argv[3], fn, &src);
    if (!rc) {
        dst = inplace ? t : ad_tensor_clone(S, t);
        if (inplace) ad_tensor_incref(t);
        if (!dst) rc = S->errcode;
    }
    if (!rc) {
        scatter_into(dst, d, idx, src, add);
        if (inplace) ad_tensor_bump_version(dst);
    }
    ad_tensor_decref(S, src);
    ad_tensor_decref(S, idx);
    ad_tensor_decref(S, t);
    return rc ? rc : ad_ret_tensor(S, dst, out);
}

static int bi_scatter(FN_ARGS) { (void)argc; return scatter_op(S, argv, "scatter", false, false, out); }
static int bi_scatter_(FN_ARGS) { (void)argc; return scatter_op(S, argv, "scatter_", false, true, out); }
static int bi_scatter_add(FN_ARGS) { (void)argc; return scatter_op(S, argv, "scatter_add", true, false, out); }
static int bi_scatter_add_(FN_ARGS) { (void)argc; return scatter_op(S, argv, "scatter_add_", true, true, out); }

static int bi_masked_select(FN_ARGS) {
    (void)argc;
    ad_tensor *t, *mask, *et = NULL, *em = NULL, *r = NULL;
    int n;
    int64_t shape[AD_MAX_DIMS];
    int rc = ad_arg_tensor(S, argv[0], "masked_select", "self", &t);
    if (rc) return rc;
    if ((rc = ad_arg_tensor(S, argv[1], "masked_select", "mask", &mask))) { ad_tensor_decref(S, t); return rc; }
    if (mask->dtype != AD_BOOL) rc = ad_error(S, "masked_select: expected BoolTensor or ByteTensor for mask");
    if (!rc) rc = ad_broadcast_shapes(S, t->ndim, t->shape, mask->ndim, mask->shape, &n, shape);
    if (!rc && (!(et = ad_tensor_expand(S, t, n, shape)) || !(em = ad_tensor_expand(S, mask, n, shape))))
        rc = S->errcode;
    if (!rc) {
        int64_t count = 0;
        for (int64_t i = 0; i < em->numel; i++) count += ad_tensor_get_flat(em, i) != 0.0;
        r = ad_tensor_empty(S, t->dtype, 1, &count);
        if (!r) rc = S->errcode;
        for (int64_t i = 0, k = 0; r && i < em->numel; i++)
            if (ad_tensor_get_flat(em, i) != 0.0) ad_tensor_set_flat(r, k++, ad_tensor_get_flat(et, i));
    }
    ad_tensor_decref(S, et);
    ad_tensor_decref(S, em);
    ad_tensor_decref(S, t);
    ad_tensor_decref(S, mask);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

/* The index that repeats each position i of a dim of 'size' reps[i] times. */
static int interleave_index(ad_state *S, ad_value rv, int64_t size, ad_tensor **out) {
    ad_tensor *reps = NULL;
    int rc = AD_OK;
    if (rv.t == AD_TTENSOR || ad_is_seq(rv)) rc = ad_arg_tensor(S, rv, "repeat_interleave", "repeats", &reps);
    if (rc) return rc;
    int64_t total = 0, one = 0;
    if (!reps && (rc = ad_arg_int(S, rv, "repeat_interleave", "repeats", &one))) return rc;
    if (reps && reps->dtype != AD_INT64)
        rc = ad_error(S, "repeats has to be Long tensor");
    else if (reps && reps->numel != 1 && reps->numel != size)
        rc = ad_error(S, "repeats must have the same size as input along dim, but got repeats.size(0) = %lld and "
                         "input.size(%d) = %lld", (long long)reps->numel, 0, (long long)size);
    for (int64_t i = 0; !rc && i < size; i++) {
        int64_t k = reps ? (int64_t)ad_tensor_get_flat(reps, reps->numel == 1 ? 0 : i) : one;
        if (k < 0) rc = ad_error(S, "repeats can not be negative");
        else if (k > INT64_MAX - total) rc = ad_error(S, "repeat_interleave: the output would have more than 2^63 elements");
        else total += k;
    }
    ad_tensor *idx = rc ? NULL : ad_tensor_empty(S, AD_INT64, 1, &total);
    if (!rc && !idx) rc = S->errcode;
    for (int64_t i = 0, at = 0; !rc && i < size; i++) {
        int64_t k = reps ? (int64_t)ad_tensor_get_flat(reps, reps->numel == 1 ? 0 : i) : one;
        for (int64_t j = 0; j < k; j++) ((int64_t *)ad_tensor_data(idx))[at++] = i;
    }
    ad_tensor_decref(S, reps);
    *out = idx;
    return rc;
}

static int bi_repeat_interleave(FN_ARGS) {
    (void)argc;
    ad_tensor *t, *src = NULL, *idx = NULL, *r = NULL;
    int64_t dim = 0;
    int d = 0;
    int rc = ad_arg_tensor(S, argv[0], "repeat_interleave", "self", &t);
    if (rc) return rc;
    if (argv[2].t == AD_TNONE) {
        int64_t n = t->numel;
        src = ad_tensor_reshape(S, t, 1, &n);
        if (!src) rc = S->errcode;
    } else {
        rc = ad_arg_int(S, argv[2], "repeat_interleave", "dim", &dim);
        if (!rc) rc = ad_normalize_dim(S, dim, t->ndim, &d);
        if (!rc) { src = t; ad_tensor_incref(t); }
    }
    if (!rc) rc = interleave_index(S, argv[1], src->ndim ? src->shape[d] : 1, &idx);
    if (!rc) rc = index_select_tensor(S, src, d, idx, &r);
    ad_tensor_decref(S, idx);
    ad_tensor_decref(S, src);
    ad_tensor_decref(S, t);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

const ad_builtin_def ad_bi_shape_defs[] = {
    {"reshape", bi_reshape, "self, *shape"},
    {"view", bi_view, "self, *shape"},
    {"view_as", bi_view_as, "self, other"},
    {"reshape_as", bi_reshape_as, "self, other"},
    {"flatten", bi_flatten, "self, start_dim=0, end_dim=-1"},
    {"ravel", bi_ravel, "self"},
    {"unflatten", bi_unflatten, "self, dim, sizes"},
    {"transpose", bi_transpose, "self, dim0, dim1"},
    {"swapaxes", bi_swapaxes, "self, dim0, dim1"},
    {"swapdims", bi_swapaxes, "self, dim0, dim1"},
    {"t", bi_t, "self"},
    {"permute", bi_permute, "self, *dims"},
    {"movedim", bi_movedim, "self, source, destination"},
    {"moveaxis", bi_movedim, "self, source, destination"},
    {"unsqueeze", bi_unsqueeze, "self, dim"},
    {"squeeze", bi_squeeze, "self, dim=none"},
    {"expand", bi_expand, "self, *size"},
    {"expand_as", bi_expand_as, "self, other"},
    {"broadcast_to", bi_broadcast_to, "self, size"},
    {"cat", bi_cat, "tensors, dim=0"},
    {"concat", bi_cat, "tensors, dim=0"},
    {"concatenate", bi_cat, "tensors, dim=0"},
    {"stack", bi_stack, "tensors, dim=0"},
    {"hstack", bi_hstack, "tensors"},
    {"vstack", bi_vstack, "tensors"},
    {"split", bi_split, "self, split_size_or_sections, dim=0"},
    {"chunk", bi_chunk, "self, chunks, dim=0"},
    {"unbind", bi_unbind, "self, dim=0"},
    {"narrow", bi_narrow, "self, dim, start, length"},
    {"select", bi_select, "self, dim, index"},
    {"flip", bi_flip, "self, *dims"},
    {"roll", bi_roll, "self, shifts, dims=none"},
    {"repeat", bi_repeat, "self, *repeats"},
    {"tile", bi_tile, "self, *dims"},
    {"repeat_interleave", bi_repeat_interleave, "self, repeats, dim=none"},
    {"tril", bi_tril, "self, diagonal=0"},
    {"triu", bi_triu, "self, diagonal=0"},
    {"diagonal", bi_diagonal, "self, offset=0, dim1=0, dim2=1"},
    {"diag", bi_diag, "self, diagonal=0"},
    {"diag_embed", bi_diag_embed, "self, offset=0, dim1=-2, dim2=-1"},
    {"index_select", bi_index_select, "self, dim, index"},
    {"gather", bi_gather, "self, dim, index"},
    {"scatter", bi_scatter, "self, dim, index, src"},
    {"scatter_", bi_scatter_, "self, dim, index, src"},
    {"scatter_add", bi_scatter_add, "self, dim, index, src"},
    {"scatter_add_", bi_scatter_add_, "self, dim, index, src"},
    {"masked_select", bi_masked_select, "self, mask"},
    {NULL, NULL, NULL},
};
