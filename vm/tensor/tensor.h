/* tensor/tensor.h: tensors as shape/strides/offset views over refcounted storage,
 * dtypes, broadcasting, copies and conversions.
 * Convention: functions returning ad_tensor* give a new reference or NULL
 * after setting an error; ad_tensor* parameters are borrowed. */
#ifndef AD_TENSOR_H
#define AD_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ad_limits.h"

typedef struct addsl_state ad_state;
struct ad_buf;

typedef enum {
    AD_FLOAT32 = 0, AD_FLOAT64 = 1, AD_INT64 = 2, AD_BOOL = 3, AD_NDTYPES = 4
} ad_dtype;

/* 48 bytes, from the heap's header slabs. Small CPU data follows the header
 * (inline_data); host memory wrapped with a release callback has the
 * callback's user data after the header instead (ad_storage_release_ud). */
typedef struct ad_storage {
    int64_t refcount;
    void *data;
    size_t nbytes;         /* usable bytes */
    size_t granted;        /* bytes taken from the heap (0 when host memory) */
    void (*release)(void *ud, void *data); /* host memory: called on last unref */
    uint32_t version;      /* bumped by every in-place write (autograd checks it) */
    int16_t device;        /* 0: CPU */
    bool inline_data;      /* data lives right after this header (small CPU tensors) */
    const struct addsl_state *owner; /* the state whose heap holds it: the C API refuses
                                      * another state's tensor (states share nothing) */
} ad_storage;

/* Where a wrapped storage keeps its release callback's user data. */
static inline void **ad_storage_release_ud(ad_storage *st) { return (void **)(st + 1); }

/* A tensor's tangent at one forward-mode level (one active jvp() call). Nested
 * levels make a tensor a dual number in each: the tangent of level L may itself
 * carry tangents of the levels outside L (forward-over-forward). */
typedef struct ad_tangent {
    struct ad_tangent *next;  /* in increasing level order */
    struct ad_tensor *t;      /* owned */
    uint64_t level;           /* the level's id (vm/state.h: ad_fwlevel) */
} ad_tangent;

typedef struct ad_tensor {
    int64_t refcount;
    ad_storage *storage;
    int64_t offset;        /* in elements */
    int64_t numel;
    int ndim;
    ad_dtype dtype;
    bool requires_grad;
    bool grad_fn_weak;        /* grad_fn is not owned (a node's saved output) */
    int32_t output_nr;        /* which output of grad_fn this tensor is */
    struct ad_tensor *grad;   /* accumulated gradient of a leaf */
    struct ad_node *grad_fn;  /* autograd node that produced it (vm/autograd/engine.h) */
    struct ad_tangent *fw_grad;/* forward-mode tangents, one per jvp() level; NULL: none */
    struct ad_tensor *base;   /* a view: the tensor whose storage it shares (owned; never a view itself);
                                 an in-place write through the view rebases the base's graph */
    /* ndim sizes and ndim strides (in elements), stored right after the header, which is
     * allocated for its own rank: a [4] tensor's header is 104 bytes, not 360 for 16 dims.
     * A header's rank never changes; a reshaped tensor is a new header. */
    int64_t *shape;
    int64_t *strides;
} ad_tensor;

/* Bytes of a header of rank ndim, its geometry included. */
#define AD_TENSOR_HEADER_SIZE(ndim) (sizeof(ad_tensor) + 2 * (size_t)(ndim) * sizeof(int64_t))
/* Points shape and strides at the header's own trailing storage. */
static inline void ad_tensor_set_geometry_storage(ad_tensor *t, int ndim) {
    t->shape = (int64_t *)(t + 1);
    t->strides = t->shape + ndim;
}

size_t ad_dtype_size(ad_dtype dt);
const char *ad_dtype_name(ad_dtype dt);          /* "float32" ... */
bool ad_dtype_is_float(ad_dtype dt);
/* PyTorch's promotion of two tensor dtypes (bool < int64 < float32 < float64). */
ad_dtype ad_promote(ad_dtype a, ad_dtype b);

/* Creation. Shapes are checked: negative sizes and element-count overflow are errors. */
ad_tensor *ad_tensor_empty(ad_state *S, ad_dtype dt, int ndim, const int64_t *shape);
/* On 'device' (vm/tensor/device.h: AD_DEV_CPU, AD_DEV_CUDA). */
ad_tensor *ad_tensor_empty_on(ad_state *S, ad_dtype dt, int ndim, const int64_t *shape, int device);
ad_tensor *ad_tensor_full_on(ad_state *S, ad_dtype dt, int ndim, const int64_t *shape, double v, int device);
/* Same dtype, shape and device as t, every element v. */
ad_tensor *ad_tensor_full_like(ad_state *S, const ad_tensor *t, double v);
ad_tensor *ad_tensor_zeros(ad_state *S, ad_dtype dt, int ndim, const int64_t *shape);
ad_tensor *ad_tensor_full(ad_state *S, ad_dtype dt, int ndim, const int64_t *shape, double v);
ad_tensor *ad_tensor_scalar(ad_state *S, ad_dtype dt, double v); /* 0-d */
/* Wraps host memory (contiguous); 'release' (may be NULL) runs on the last unref. */
ad_tensor *ad_tensor_wrap(ad_state *S, ad_dtype dt, int ndim, const int64_t *shape,
                          void *data, void (*release)(void *, void *), void *ud);

void ad_tensor_incref(ad_tensor *t);
void ad_tensor_decref(ad_state *S, ad_tensor *t);   /* NULL is fine */

/* Forward-mode tangents by level (jvp). The tangent at 'level' or NULL (borrowed). */
ad_tensor *ad_tensor_tangent(const ad_tensor *t, uint64_t level);
/* Sets (or replaces) t's tangent at 'level'; takes its own reference to 'tan'. */
int ad_tensor_set_tangent(ad_state *S, ad_tensor *t, uint64_t level, ad_tensor *tan);
/* Gives dst the tangents of src at levels below 'below' (dst has none yet). */
int ad_tensor_copy_tangents(ad_state *S, ad_tensor *dst, const ad_tensor *src, uint64_t below);
void ad_tensor_clear_tangents(ad_state *S, ad_tensor *t);

static inline void *ad_tensor_data(const ad_tensor *t) {
    return (char *)t->storage->data + (size_t)t->offset * ((t->dtype == AD_FLOAT32) ? 4 : (t->dtype == AD_BOOL) ? 1 : 8);
}
bool ad_tensor_is_contiguous(const ad_tensor *t);
/* The header's invariants (vm/ad_assert.h checks them): a live refcount, a
 * known dtype, a rank within AD_MAX_DIMS, numel the product of the sizes,
 * geometry in its own trailing storage, and every element it addresses,
 * offset and strides together, inside its storage. */
bool ad_tensor_geometry_ok(const ad_tensor *t);

/* Element at a flat (row-major logical) index, as a double; any layout; CPU only. */
double ad_tensor_get_flat(const ad_tensor *t, int64_t i);
void ad_tensor_set_flat(ad_tensor *t, int64_t i, double v);
/* Value of a one-element tensor. */
int ad_tensor_item(ad_state *S, const ad_tensor *t, double *out);

/* Copies. */
ad_tensor *ad_tensor_contiguous(ad_state *S, ad_tensor *t); /* incref if already contiguous */
ad_tensor *ad_tensor_clone(ad_state *S, const ad_tensor *t); /* always a new contiguous tensor */
ad_tensor *ad_tensor_to(ad_state *S, ad_tensor *t, ad_dtype dt); /* incref if same dtype */
/* dst[...] = src, broadcasting src to dst's shape and converting dtype; any layouts. */
int ad_tensor_copy_into(ad_state *S, ad_tensor *dst, const ad_tensor *src);
/* Fills every element of dst (any layout, any device) with v. */
int ad_tensor_fill(ad_state *S, ad_tensor *dst, double v);

/* Views (share storage). Dims may be negative; errors say what was expected. */
/* A second header over t's storage and geometry that is not a view in
 * autograd's sense (no base): the engine's saved values and detached copies. */
ad_tensor *ad_tensor_alias(ad_state *S, ad_tensor *t);
ad_tensor *ad_tensor_as_strided(ad_state *S, ad_tensor *t, int ndim, const int64_t *shape,
                                const int64_t *strides, int64_t offset);
ad_tensor *ad_tensor_view(ad_state *S, ad_tensor *t, int ndim, const int64_t *shape); /* one -1 allowed */
ad_tensor *ad_tensor_reshape(ad_state *S, ad_tensor *t, int ndim, const int64_t *shape); /* view or copy */
ad_tensor *ad_tensor_transpose(ad_state *S, ad_tensor *t, int64_t d0, int64_t d1);
ad_tensor *ad_tensor_permute(ad_state *S, ad_tensor *t, int n, const int64_t *dims);
ad_tensor *ad_tensor_expand(ad_state *S, ad_tensor *t, int ndim, const int64_t *shape); /* -1 keeps */
ad_tensor *ad_tensor_unsqueeze(ad_state *S, ad_tensor *t, int64_t dim);
ad_tensor *ad_tensor_squeeze(ad_state *S, ad_tensor *t, int n, const int64_t *dims); /* n < 0: all size-1 dims */
/* Python slice semantics on one dim: start/stop clamped, step > 0. */
ad_tensor *ad_tensor_slice(ad_state *S, ad_tensor *t, int64_t dim, int64_t start, int64_t stop, int64_t step);
/* Python's start:stop:step (step > 0) over a dim of 'size', bounds clamped:
 * the number of indices taken, the first in *first. */
int64_t ad_slice_span(int64_t size, int64_t start, int64_t stop, int64_t step, int64_t *first);
ad_tensor *ad_tensor_select(ad_state *S, ad_tensor *t, int64_t dim, int64_t index); /* negative index ok */
ad_tensor *ad_tensor_narrow(ad_state *S, ad_tensor *t, int64_t dim, int64_t start, int64_t length);
ad_tensor *ad_tensor_diagonal(ad_state *S, ad_tensor *t, int64_t offset, int64_t d1, int64_t d2);

/* Broadcasting: out shape of a and b, or an error naming both shapes. */
int ad_broadcast_shapes(ad_state *S, int na, const int64_t *sa, int nb, const int64_t *sb,
                        int *nout, int64_t *out);
/* Normalizes 'dim' against 'ndim' (0-d tensors accept -1 and 0), or raises
 * "Dimension out of range (expected to be in range of [-N, N-1], but got D)". */
int ad_normalize_dim(ad_state *S, int64_t dim, int ndim, int *out);
bool ad_shape_equal(int na, const int64_t *a, int nb, const int64_t *b);
/* Product of sizes with overflow check (error "tensor too large"). */
int ad_shape_numel(ad_state *S, int ndim, const int64_t *shape, int64_t *out);

/* Bumps the version counter of t's storage (call after every in-place write). */
static inline void ad_tensor_bump_version(ad_tensor *t) { t->storage->version++; }

/* PyTorch-style text: "tensor([1., 2.])", "tensor([[1, 2],\n        [3, 4]])",
 * ", dtype=float64)" suffix for non-default float dtypes, ", requires_grad=True". */
int ad_tensor_format(ad_state *S, const ad_tensor *t, struct ad_buf *b);

#endif
