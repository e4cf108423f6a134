/* tensor/view.c: views that share storage: as_strided, view/reshape,
 * transpose, permute, expand, (un)squeeze, slice, select, narrow, diagonal. */
#include "tensor/tensor.h"

#include <stdio.h>
#include <string.h>

#include "ad_assert.h"
#include "buf.h"
#include "tensor/heap.h"
#include "state.h"

/* A view as it is handed out: its elements inside its storage, its base
 * not a view itself (vm/ad_assert.h; compiled out of a release build). */
static ad_tensor *checked(ad_tensor *v) {
    ad_assert(!v || ad_tensor_geometry_ok(v));
    ad_assert(!v || !v->base || (!v->base->base && v->base->storage == v->storage));
    return v;
}

/* A new header over t's storage; the caller has checked the geometry. */
static ad_tensor *make_view(ad_state *S, ad_tensor *t, int ndim, const int64_t *shape,
                            const int64_t *strides, int64_t offset) {
    int64_t numel;
    /* Geometry checks do not bound the product: expand() can ask for [2^40, 2^40]. */
    if (ad_shape_numel(S, ndim, shape, &numel)) return NULL;
    ad_tensor *v = ad_heap_alloc_header(S, AD_TENSOR_HEADER_SIZE(ndim));
    if (!v) return NULL;
    ad_tensor_set_geometry_storage(v, ndim);
    v->refcount = 1;
    v->storage = t->storage;
    t->storage->refcount++;
    v->offset = offset;
    v->numel = numel;
    v->ndim = ndim;
    v->dtype = t->dtype;
    v->requires_grad = false;
    v->grad = NULL;
    v->grad_fn = NULL;
    v->grad_fn_weak = false;
    v->output_nr = 0;
    v->fw_grad = NULL;
    ad_assert(t->refcount > 0 && t->storage->refcount > 1);
    v->base = t->base ? t->base : t;
    ad_assert(!v->base->base);
    v->base->refcount++;
    memcpy(v->shape, shape, (size_t)ndim * sizeof *shape);
    memcpy(v->strides, strides, (size_t)ndim * sizeof *strides);
    return v;
}

ad_tensor *ad_tensor_alias(ad_state *S, ad_tensor *t) {
    ad_tensor *v = make_view(S, t, t->ndim, t->shape, t->strides, t->offset);
    if (v) { ad_tensor_decref(S, v->base); v->base = NULL; }
    return v;
}

/* "msg [a, b]..." built from pieces; returns the error code. */
static int shape_msg(ad_state *S, const char *pre, int n, const int64_t *shape, const char *post) {
    ad_buf b;
    ad_buf_init(&b, S);
    ad_buf_puts(&b, pre);
    ad_buf_shape(&b, n, shape);
    ad_buf_puts(&b, post);
    int rc = b.failed ? ad_nomem(S) : ad_error(S, "%s", b.data);
    ad_buf_free(&b);
    return rc;
}

ad_tensor *ad_tensor_as_strided(ad_state *S, ad_tensor *t, int ndim, const int64_t *shape,
                                const int64_t *strides, int64_t offset) {
    int64_t numel;
    if (ad_shape_numel(S, ndim, shape, &numel)) return NULL;
    for (int i = 0; i < ndim; i++)
        if (strides[i] < 0) {
            shape_msg(S, "as_strided: Negative strides are not supported at the moment, got strides: ",
                      ndim, strides, "");
            return NULL;
        }
    if (offset < 0) {
        ad_error(S, "Tensor: invalid storage offset %lld", (long long)offset);
        return NULL;
    }
    int64_t isz = (int64_t)ad_dtype_size(t->dtype), need = 0;
    if (numel > 0) {
        need = offset + 1;
        for (int i = 0; i < ndim; i++) need += (shape[i] - 1) * strides[i];
        need *= isz;
    }
    if (need > (int64_t)t->storage->nbytes) {
        ad_buf b;
        ad_buf_init(&b, S);
        ad_buf_puts(&b, "setStorage: sizes ");
        ad_buf_shape(&b, ndim, shape);
        ad_buf_puts(&b, ", strides ");
        ad_buf_shape(&b, ndim, strides);
        ad_buf_printf(&b, ", storage offset %lld, and itemsize %lld requiring a storage size of %lld "
                      "are out of bounds for storage of size %zu", (long long)offset, (long long)isz,
                      (long long)need, t->storage->nbytes);
        if (b.failed) ad_nomem(S); else ad_error(S, "%s", b.data);
        ad_buf_free(&b);
        return NULL;
    }
    return checked(make_view(S, t, ndim, shape, strides, offset));
}

/* Resolves one -1 against 'numel' (PyTorch's infer_size). */
static int infer_shape(ad_state *S, int ndim, const int64_t *shape, int64_t numel, int64_t *out) {
    if (ndim < 0 || ndim > AD_MAX_DIMS)
        return ad_error(S, "tensor has %d dimensions, but at most %d are supported", ndim, AD_MAX_DIMS);
    int infer = -1;
    int64_t prod = 1;
    for (int i = 0; i < ndim; i++) {
        out[i] = shape[i];
        if (shape[i] == -1) {
            if (infer >= 0) return ad_error(S, "only one dimension can be inferred");
            infer = i;
        } else if (shape[i] < 0) {
            return ad_error(S, "invalid shape dimension %lld", (long long)shape[i]);
        } else if (!ad_mul_ok(prod, shape[i], &prod)) {
            return shape_msg(S, "tensor too large: too many elements for shape ", ndim, shape, "");
        }
    }
    bool ok = infer >= 0 ? (prod != 0 && numel % prod == 0) : numel == prod;
    if (!ok) {
        char post[64];
        snprintf(post, sizeof post, "' is invalid for input of size %lld", (long long)numel);
        return shape_msg(S, "shape '", ndim, shape, post);
    }
    if (infer >= 0) out[infer] = numel / prod;
    return AD_OK;
}

/* PyTorch's computeStride: strides for viewing t as 'shape' without a copy,
 * or false when some new dim would span two non-contiguous chunks. */
static bool compute_stride(const ad_tensor *t, int nn, const int64_t *ns, int64_t *out) {
    int on = t->ndim;
    const int64_t *os = t->shape, *ost = t->strides;
    if (on == 0) {
        for (int i = 0; i < nn; i++) out[i] = 1;
        return true;
    }
    if (t->numel == 0) {
        if (ad_shape_equal(on, os, nn, ns)) { memcpy(out, ost, (size_t)nn * sizeof *out); return true; }
        int64_t s = 1;
        for (int d = nn - 1; d >= 0; d--) { /* saturates: only an empty view can overflow */
            out[d] = s;
            if (__builtin_mul_overflow(s, ns[d] > 1 ? ns[d] : 1, &s)) s = INT64_MAX;
        }
        return true;
    }
    int view_d = nn - 1;
    int64_t chunk_base = ost[on - 1], tensor_numel = 1, view_numel = 1;
    for (int td = on - 1; td >= 0; td--) {
        tensor_numel *= os[td];
        if (td == 0 || (os[td - 1] != 1 && ost[td - 1] != tensor_numel * chunk_base)) {
            while (view_d >= 0 && (view_numel < tensor_numel || ns[view_d] == 1)) {
                out[view_d] = view_numel * chunk_base;
                view_numel *= ns[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (td > 0) { chunk_base = ost[td - 1]; tensor_numel = 1; view_numel = 1; }
        }
    }
    return view_d == -1;
}

ad_tensor *ad_tensor_view(ad_state *S, ad_tensor *t, int ndim, const int64_t *shape) {
    int64_t ns[AD_MAX_DIMS], st[AD_MAX_DIMS];
    if (infer_shape(S, ndim, shape, t->numel, ns)) return NULL;
    if (!compute_stride(t, ndim, ns, st)) {
        ad_error(S, "view size is not compatible with input tensor's size and stride (at least one "
                    "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
        return NULL;
    }
    return checked(make_view(S, t, ndim, ns, st, t->offset));
}

ad_tensor *ad_tensor_reshape(ad_state *S, ad_tensor *t, int ndim, const int64_t *shape) {
    int64_t ns[AD_MAX_DIMS], st[AD_MAX_DIMS];
    if (infer_shape(S, ndim, shape, t->numel, ns)) return NULL;
    if (compute_stride(t, ndim, ns, st)) return checked(make_view(S, t, ndim, ns, st, t->offset));
    ad_tensor *c = ad_tensor_clone(S, t);
    if (!c) return NULL;
    ad_tensor *v = ad_tensor_view(S, c, ndim, ns);
    ad_tensor_decref(S, c);
    return v;
}

ad_tensor *ad_tensor_transpose(ad_state *S, ad_tensor *t, int64_t d0, int64_t d1) {
    int a, b;
    if (ad_normalize_dim(S, d0, t->ndim, &a) || ad_normalize_dim(S, d1, t->ndim, &b)) return NULL;
    ad_tensor *v = make_view(S, t, t->ndim, t->shape, t->strides, t->offset);
    if (!v || a == b || t->ndim == 0) return v;
    v->shape[a] = t->shape[b]; v->shape[b] = t->shape[a];
    v->strides[a] = t->strides[b]; v->strides[b] = t->strides[a];
    return checked(v);

}

ad_tensor *ad_tensor_permute(ad_state *S, ad_tensor *t, int n, const int64_t *dims) {
    if (n != t->ndim) {
        ad_error(S, "permute(sparse_coo): number of dimensions in the tensor input does not match the "
                    "length of the desired ordering of dimensions i.e. input.dim() = %d is not equal "
                    "to len(dims) = %d", t->ndim, n);
        return NULL;
    }
    int64_t shape[AD_MAX_DIMS], strides[AD_MAX_DIMS];
    bool seen[AD_MAX_DIMS] = {false};
    for (int i = 0; i < n; i++) {
        int d;
        if (ad_normalize_dim(S, dims[i], t->ndim, &d)) return NULL;
        if (seen[d]) { ad_error(S, "permute(): duplicate dims are not allowed."); return NULL; }
        seen[d] = true;
        shape[i] = t->shape[d];
        strides[i] = t->strides[d];
    }
    return checked(make_view(S, t, n, shape, strides, t->offset));
}

static int expand_error(ad_state *S, const ad_tensor *t, int ndim, const int64_t *shape,
                        int64_t target, int64_t size, int i) {
    char pre[160];
    snprintf(pre, sizeof pre, "The expanded size of the tensor (%lld) must match the existing size "
             "(%lld) at non-singleton dimension %d.  Target sizes: ", (long long)target, (long long)size, i);
    ad_buf b;
    ad_buf_init(&b, S);
    ad_buf_puts(&b, pre);
    ad_buf_shape(&b, ndim, shape);
    ad_buf_puts(&b, ".  Tensor sizes: ");
    ad_buf_shape(&b, t->ndim, t->shape);
    int rc = b.failed ? ad_nomem(S) : ad_error(S, "%s", b.data);
    ad_buf_free(&b);
    return rc;
}

ad_tensor *ad_tensor_expand(ad_state *S, ad_tensor *t, int ndim, const int64_t *shape) {
    if (ndim > AD_MAX_DIMS) {
        ad_error(S, "tensor has %d dimensions, but at most %d are supported", ndim, AD_MAX_DIMS);
        return NULL;
    }
    if (ndim < t->ndim) {
        ad_error(S, "expand: the number of sizes provided (%d) must be greater or equal to the "
                    "number of dimensions in the tensor (%d)", ndim, t->ndim);
        return NULL;
    }
    int64_t es[AD_MAX_DIMS], est[AD_MAX_DIMS];
    for (int i = ndim - 1; i >= 0; i--) {
        int d = t->ndim - ndim + i;
        int64_t size = d >= 0 ? t->shape[d] : 1;
        int64_t stride = d >= 0 ? t->strides[d] : (i + 1 < ndim ? es[i + 1] * est[i + 1] : 1);
        int64_t target = shape[i];
        if (target == -1) {
            if (d < 0) {
                ad_error(S, "The expanded size of the tensor (-1) isn't allowed in a leading, "
                            "non-existing dimension %d", i);
                return NULL;
            }
            target = size;
        }
        if (target < 0) {
            shape_msg(S, "Trying to create tensor with negative dimension: ", ndim, shape, "");
            return NULL;
        }
        if (size != target) {
            if (size != 1) { expand_error(S, t, ndim, shape, target, size, i); return NULL; }
            size = target;
            stride = 0;
        }
        es[i] = size;
        est[i] = stride;
    }
    int64_t numel;
    if (ad_shape_numel(S, ndim, es, &numel)) return NULL;
    return checked(make_view(S, t, ndim, es, est, t->offset));
}

ad_tensor *ad_tensor_unsqueeze(ad_state *S, ad_tensor *t, int64_t dim) {
    int d;
    if (t->ndim >= AD_MAX_DIMS) {
        ad_error(S, "tensor has %d dimensions, but at most %d are supported", t->ndim + 1, AD_MAX_DIMS);
        return NULL;
    }
    if (ad_normalize_dim(S, dim, t->ndim + 1, &d)) return NULL;
    int64_t shape[AD_MAX_DIMS], strides[AD_MAX_DIMS];
    for (int i = 0, j = 0; i <= t->ndim; i++) {
        if (i == d) {
            shape[i] = 1;
            strides[i] = d < t->ndim ? t->shape[d] * t->strides[d] : 1;
        } else {
            shape[i] = t->shape[j];
            strides[i] = t->strides[j];
            j++;
        }
    }
    return checked(make_view(S, t, t->ndim + 1, shape, strides, t->offset));
}

ad_tensor *ad_tensor_squeeze(ad_state *S, ad_tensor *t, int n, const int64_t *dims) {
    bool drop[AD_MAX_DIMS] = {false};
    for (int i = 0; i < t->ndim; i++) drop[i] = n < 0 && t->shape[i] == 1;
    for (int i = 0; i < n; i++) {
        int d;
        if (ad_normalize_dim(S, dims[i], t->ndim, &d)) return NULL;
        if (t->ndim > 0 && t->shape[d] == 1) drop[d] = true;
    }
    int64_t shape[AD_MAX_DIMS], strides[AD_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < t->ndim; i++)
        if (!drop[i]) { shape[k] = t->shape[i]; strides[k] = t->strides[i]; k++; }
    return checked(make_view(S, t, k, shape, strides, t->offset));
}

/* Clamps a Python-style bound into [0, size]. */
static int64_t clamp_bound(int64_t v, int64_t size) {
    if (v < 0) v += size;
    if (v < 0) return 0;
    return v > size ? size : v;
}

int64_t ad_slice_span(int64_t size, int64_t start, int64_t stop, int64_t step, int64_t *first) {
    int64_t a = clamp_bound(start, size), b = clamp_bound(stop, size);
    *first = a;
    return b > a ? (b - a + step - 1) / step : 0;
}

ad_tensor *ad_tensor_slice(ad_state *S, ad_tensor *t, int64_t dim, int64_t start, int64_t stop,
                           int64_t step) {
    int d;
    if (t->ndim == 0) { ad_error(S, "slice() cannot be applied to a 0-dim tensor."); return NULL; }
    if (ad_normalize_dim(S, dim, t->ndim, &d)) return NULL;
    if (step <= 0) { ad_error(S, "step must be greater than zero"); return NULL; }
    int64_t size = t->shape[d];
    int64_t a, len = ad_slice_span(size, start, stop, step, &a);
    ad_tensor *v = make_view(S, t, t->ndim, t->shape, t->strides, t->offset + (len ? a * t->strides[d] : 0));
    if (!v) return NULL;
    v->shape[d] = len;
    v->strides[d] = t->strides[d] * step;
    v->numel = len ? t->numel / size * len : 0;
    return checked(v);
}

ad_tensor *ad_tensor_select(ad_state *S, ad_tensor *t, int64_t dim, int64_t index) {
    int d;
    if (t->ndim == 0) { ad_error(S, "select() cannot be applied to a 0-dim tensor."); return NULL; }
    if (ad_normalize_dim(S, dim, t->ndim, &d)) return NULL;
    int64_t size = t->shape[d];
    if (index < -size || index >= size) {
        ad_error(S, "index %lld is out of bounds for dimension %d with size %lld", (long long)index, d,
                 (long long)size);
        return NULL;
    }
    if (index < 0) index += size;
    int64_t shape[AD_MAX_DIMS], strides[AD_MAX_DIMS];
    for (int i = 0, k = 0; i < t->ndim; i++)
        if (i != d) { shape[k] = t->shape[i]; strides[k] = t->strides[i]; k++; }
    return checked(make_view(S, t, t->ndim - 1, shape, strides, t->offset + index * t->strides[d]));
}

ad_tensor *ad_tensor_narrow(ad_state *S, ad_tensor *t, int64_t dim, int64_t start, int64_t length) {
    int d;
    if (t->ndim == 0) { ad_error(S, "narrow() cannot be applied to a 0-dim tensor."); return NULL; }
    if (ad_normalize_dim(S, dim, t->ndim, &d)) return NULL;
    int64_t size = t->shape[d];
    if (length < 0) { ad_error(S, "narrow(): length must be non-negative."); return NULL; }
    if (start < -size || start > size) {
        ad_error(S, "start out of range (expected to be in range of [%lld, %lld], but got %lld)",
                 (long long)-size, (long long)size, (long long)start);
        return NULL;
    }
    if (start < 0) start += size;
    if (start > size - length) {
        ad_error(S, "start (%lld) + length (%lld) exceeds dimension size (%lld).", (long long)start,
                 (long long)length, (long long)size);
        return NULL;
    }
    return ad_tensor_slice(S, t, d, start, start + length, 1);
}

ad_tensor *ad_tensor_diagonal(ad_state *S, ad_tensor *t, int64_t offset, int64_t d1, int64_t d2) {
    int a, b;
    if (ad_normalize_dim(S, d1, t->ndim, &a) || ad_normalize_dim(S, d2, t->ndim, &b)) return NULL;
    if (a == b) { ad_error(S, "diagonal dimensions cannot be identical %lld, %lld", (long long)d1, (long long)d2); return NULL; }
    if (t->ndim < 2) {
        ad_error(S, "diagonal(): input must have at least 2 dimensions, but got %d", t->ndim);
        return NULL;
    }
    int64_t len, off = t->offset;
    if (offset >= 0) {
        len = t->shape[a] < t->shape[b] - offset ? t->shape[a] : t->shape[b] - offset;
    } else {
        len = t->shape[a] + offset < t->shape[b] ? t->shape[a] + offset : t->shape[b];
    }
    if (len < 0) len = 0;
    if (len > 0) off += offset >= 0 ? offset * t->strides[b] : -offset * t->strides[a];
    int64_t shape[AD_MAX_DIMS], strides[AD_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < t->ndim; i++)
        if (i != a && i != b) { shape[k] = t->shape[i]; strides[k] = t->strides[i]; k++; }
    shape[k] = len;
    strides[k] = t->strides[a] + t->strides[b];
    return checked(make_view(S, t, k + 1, shape, strides, off));
}
