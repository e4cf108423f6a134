/* bi_tensor.c: tensor methods that are not math: numel, item, tolist, size,
 * to/float/double, detach, clone, in-place fills and copies, comparisons of whole tensors. */
#include <math.h>
#include <string.h>

#include "builtins.h"
#include "tensor/device.h"
#include "state.h"
#include "buf.h"

/* The torch scalar type names used in its dtype-mismatch messages. */
static const char *torch_type_name(ad_dtype dt) {
    static const char *const names[] = {"Float", "Double", "Long", "Bool"};
    return (unsigned)dt < AD_NDTYPES ? names[dt] : "?";
}

/* Every method starts by turning argv[0] into a tensor (a new reference). */
static int self_arg(ad_state *S, ad_value *argv, const char *fn, ad_tensor **t) {
    return ad_arg_tensor(S, argv[0], fn, "self", t);
}

/* Returns t (stolen) as the result, or the pending error when t is NULL. */
static ad_value int_list_value(ad_state *S, int n, const int64_t *v) {
    ad_list *l = ad_list_new(S, AD_TLIST, n);
    if (!l) return ad_none();
    for (int i = 0; i < n; i++) l->items[i] = ad_int((double)v[i]);
    return ad_list_value(l, AD_TLIST);
}

static int bi_numel(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL;
    int rc = self_arg(S, argv, "numel", &t);
    if (rc) return rc;
    *out = ad_int((double)t->numel);
    ad_tensor_decref(S, t);
    return AD_OK;
}

static int bi_item(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL;
    double x;
    int rc = self_arg(S, argv, "item", &t);
    if (rc) return rc;
    rc = t->numel == 1 ? ad_tensor_item(S, t, &x)
                       : ad_error(S, "only one element tensors can be converted to Python scalars");
    if (!rc) *out = t->dtype == AD_BOOL ? ad_bool(x != 0.0) : t->dtype == AD_INT64 ? ad_int(x) : ad_num(x);
    ad_tensor_decref(S, t);
    return rc;
}

static int bi_tolist(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL;
    int rc = self_arg(S, argv, "tolist", &t);
    if (rc) return rc;
    rc = ad_tensor_to_value(S, t, out);
    ad_tensor_decref(S, t);
    return rc;
}

/* size(dim) / stride(dim): one entry, or the list of all when dim is none. */
static int dims_query(ad_state *S, ad_value *argv, const char *fn, bool strides, ad_value *out) {
    ad_tensor *t = NULL;
    int rc = self_arg(S, argv, fn, &t);
    if (rc) return rc;
    const int64_t *v = strides ? t->strides : t->shape;
    if (argv[1].t == AD_TNONE) {
        *out = int_list_value(S, t->ndim, v);
        rc = out->t == AD_TNONE ? S->errcode : AD_OK;
    } else {
        int64_t d;
        int nd;
        rc = ad_arg_int(S, argv[1], fn, "dim", &d);
        if (!rc && t->ndim == 0)
            rc = ad_error(S, "Dimension specified as %lld but tensor has no dimensions", (long long)d);
        if (!rc) rc = ad_normalize_dim(S, d, t->ndim, &nd);
        if (!rc) *out = ad_int((double)v[nd]);
    }
    ad_tensor_decref(S, t);
    return rc;
}

static int bi_size(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return dims_query(S, argv, "size", false, out);
}

static int bi_stride(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return dims_query(S, argv, "stride", true, out);
}

static int bi_dim(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL;
    int rc = self_arg(S, argv, "dim", &t);
    if (rc) return rc;
    *out = ad_int(t->ndim);
    ad_tensor_decref(S, t);
    return AD_OK;
}

static int bi_element_size(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL;
    int rc = self_arg(S, argv, "element_size", &t);
    if (rc) return rc;
    *out = ad_int((double)ad_dtype_size(t->dtype));
    ad_tensor_decref(S, t);
    return AD_OK;
}

static int bi_is_contiguous(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL;
    int rc = self_arg(S, argv, "is_contiguous", &t);
    if (rc) return rc;
    *out = ad_bool(ad_tensor_is_contiguous(t));
    ad_tensor_decref(S, t);
    return AD_OK;
}

static int bi_is_floating_point(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL;
    int rc = self_arg(S, argv, "is_floating_point", &t);
    if (rc) return rc;
    *out = ad_bool(ad_dtype_is_float(t->dtype));
    ad_tensor_decref(S, t);
    return AD_OK;
}

/* ---- conversions ---- */

static int convert(ad_state *S, ad_value *argv, const char *fn, int dt, ad_value *out) {
    ad_tensor *t = NULL;
    int rc = self_arg(S, argv, fn, &t);
    if (rc) return rc;
    ad_tensor *r = ad_tensor_to(S, t, (ad_dtype)dt);
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, r, out);
}

/* to(dtype), to(device) ("cpu", "cuda") or to(other_tensor): its dtype and device. */
static int bi_to(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL;
    int rc = self_arg(S, argv, "to", &t);
    if (rc) return rc;
    int dt = t->dtype, dev = ad_tensor_device(t);
    ad_value a = argv[1];
    if (a.t == AD_TSTR) {
        rc = ad_device_parse(S, a.u.s->data, &dev);
    } else if (a.t == AD_TTENSOR) {
        dt = a.u.tensor->dtype;
        dev = ad_tensor_device(a.u.tensor);
    } else {
        rc = ad_arg_dtype(S, a, "to", "dtype", &dt);
    }
    ad_tensor *m = rc ? NULL : ad_tensor_to_device(S, t, dev);
    ad_tensor_decref(S, t);
    if (!m) return S->errcode;
    ad_tensor *r = ad_tensor_to(S, m, (ad_dtype)dt);
    ad_tensor_decref(S, m);
    return ad_ret_tensor(S, r, out);
}

static int bi_double(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return convert(S, argv, "double", AD_FLOAT64, out);
}

static int bi_float(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    /* float("2.5") and float(3) are Python's; a tensor converts to float32 as t.float(). */
    if (argv[0].t != AD_TTENSOR && !ad_is_seq(argv[0])) return ad_bi_float_value(S, argv[0], out);
    return convert(S, argv, "float", AD_FLOAT32, out);
}

static int bi_long(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return convert(S, argv, "long", AD_INT64, out);
}

static int bi_type_as(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *o;
    int rc = ad_arg_tensor(S, argv[1], "type_as", "other", &o);
    if (rc) return rc;
    int dt = o->dtype;
    ad_tensor_decref(S, o);
    return convert(S, argv, "type_as", dt, out);
}


static int bi_contiguous(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL;
    int rc = self_arg(S, argv, "contiguous", &t);
    if (rc) return rc;
    ad_tensor *r = ad_tensor_contiguous(S, t);
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, r, out);
}

static int bi_clone(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL;
    int rc = self_arg(S, argv, "clone", &t);
    if (rc) return rc;
    ad_tensor *r = ad_tensor_clone(S, t);
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, r, out);
}

/* A new header over the same storage, outside any graph. */
static int bi_detach(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL;
    int rc = self_arg(S, argv, "detach", &t);
    if (rc) return rc;
    ad_tensor *r = ad_tensor_alias(S, t); /* shares the data and its version, not the graph */
    ad_tensor_decref(S, t);
    if (r) { r->requires_grad = false; r->grad_fn = NULL; }
    return ad_ret_tensor(S, r, out);
}

static int bi_requires_grad_(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    bool req;
    if (argv[0].t != AD_TTENSOR)
        return ad_error(S, "requires_grad_(): argument 'self' must be a tensor, not %s", ad_type_name(argv[0]));
    ad_tensor *t = argv[0].u.tensor;
    int rc = ad_arg_bool(S, argv[1], "requires_grad_", "requires_grad", &req);
    if (rc) return rc;
    if (req && !ad_dtype_is_float(t->dtype))
        return ad_error(S, "only Tensors of floating point dtype can require gradients");
    if (!req && t->grad_fn)
        return ad_error(S, "you can only change requires_grad flags of leaf variables. If you want to use "
                           "a computed variable in a subgraph that doesn't require differentiation use "
                           "var_no_grad = var.detach().");
    if (t->grad_fn == NULL) t->requires_grad = req;
    ad_tensor_incref(t);
    *out = ad_tensor_value(t);
    return AD_OK;
}

/* ---- in-place writes ---- */

static int inplace_self(ad_state *S, ad_value v, const char *fn, ad_tensor **t) {
    if (v.t != AD_TTENSOR)
        return ad_error(S, "%s(): argument 'self' must be a tensor, not %s", fn, ad_type_name(v));
    *t = v.u.tensor;
    return AD_OK;
}

static int ret_self(ad_tensor *t, ad_value *out) {
    ad_tensor_bump_version(t);
    ad_tensor_incref(t);
    *out = ad_tensor_value(t);
    return AD_OK;
}

static int bi_copy_(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL, *src = NULL;
    int rc = inplace_self(S, argv[0], "copy_", &t);
    if (rc || (rc = ad_arg_tensor(S, argv[1], "copy_", "src", &src))) return rc;
    rc = ad_tensor_copy_into(S, t, src);
    ad_tensor_decref(S, src);
    return rc ? rc : ret_self(t, out);
}

/* A scalar for fill_/masked_fill: a number, bool or 0-d tensor. */
static int scalar_arg(ad_state *S, ad_value v, const char *fn, const char *what, double *x) {
    if (v.t == AD_TTENSOR && v.u.tensor->ndim != 0 && strcmp(fn, "fill_") == 0)
        return ad_error(S, "fill_ only supports 0-dimension value tensor but got tensor with %d dimensions.",
                        v.u.tensor->ndim);
    if (v.t == AD_TTENSOR && v.u.tensor->ndim != 0)
        return ad_error(S, "%s only supports a 0-dimensional value tensor, but got tensor with %d dimension(s).",
                        what, v.u.tensor->ndim);
    return ad_arg_double(S, v, fn, "value", x);
}

static int bi_fill_(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL;
    double x;
    int rc = inplace_self(S, argv[0], "fill_", &t);
    if (rc || (rc = scalar_arg(S, argv[1], "fill_", "fill_", &x))) return rc;
    if ((rc = ad_tensor_fill(S, t, x))) return rc;
    return ret_self(t, out);
}

static int bi_zero_(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL;
    int rc = inplace_self(S, argv[0], "zero_", &t);
    if (rc) return rc;
    if ((rc = ad_tensor_fill(S, t, 0.0))) return rc;
    return ret_self(t, out);
}

/* Writes x into dst wherever mask (broadcast to dst's shape) is true. */
static int masked_write(ad_state *S, ad_tensor *dst, ad_tensor *mask, double x) {
    if (mask->dtype != AD_BOOL)
        return ad_error(S, "masked_fill_ only supports boolean masks, but got mask with dtype %s",
                        mask->dtype == AD_INT64 ? "long" : ad_dtype_name(mask->dtype));
    ad_tensor *m = ad_tensor_expand(S, mask, dst->ndim, dst->shape);
    if (!m) return S->errcode;
    for (int64_t i = 0; i < dst->numel; i++)
        if (ad_tensor_get_flat(m, i) != 0.0) ad_tensor_set_flat(dst, i, x);
    ad_tensor_decref(S, m);
    return AD_OK;
}

static int bi_masked_fill_(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL, *mask = NULL;
    double x;
    int rc = inplace_self(S, argv[0], "masked_fill_", &t);
    if (rc || (rc = scalar_arg(S, argv[2], "masked_fill_", "masked_fill_", &x))) return rc;
    if ((rc = ad_arg_tensor(S, argv[1], "masked_fill_", "mask", &mask))) return rc;
    rc = masked_write(S, t, mask, x);
    ad_tensor_decref(S, mask);
    return rc ? rc : ret_self(t, out);
}

static int bi_masked_fill(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL, *mask = NULL, *r = NULL;
    double x;
    int n;
    int64_t shape[AD_MAX_DIMS];
    int rc = scalar_arg(S, argv[2], "masked_fill", "masked_fill_", &x);
    if (rc || (rc = self_arg(S, argv, "masked_fill", &t))) return rc;
    if ((rc = ad_arg_tensor(S, argv[1], "masked_fill", "mask", &mask))) { ad_tensor_decref(S, t); return rc; }
    rc = ad_broadcast_shapes(S, t->ndim, t->shape, mask->ndim, mask->shape, &n, shape);
    if (!rc) {
        r = ad_tensor_empty(S, t->dtype, n, shape);
        rc = r ? ad_tensor_copy_into(S, r, t) : S->errcode;
    }
    if (!rc) rc = masked_write(S, r, mask, x);
    ad_tensor_decref(S, t);
    ad_tensor_decref(S, mask);
    if (rc) { ad_tensor_decref(S, r); return rc; }
    return ad_ret_tensor(S, r, out);
}

/* ---- whole-tensor queries ---- */

static int bi_nonzero(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL;
    int rc = self_arg(S, argv, "nonzero", &t);
    if (rc) return rc;
    int64_t count = 0;
    for (int64_t i = 0; i < t->numel; i++) count += ad_tensor_get_flat(t, i) != 0.0;
    int64_t shape[2] = {count, t->ndim};
    ad_tensor *r = ad_tensor_empty(S, AD_INT64, 2, shape);
    if (r) {
        int64_t *p = ad_tensor_data(r);
        for (int64_t i = 0; i < t->numel; i++) {
            if (ad_tensor_get_flat(t, i) == 0.0) continue;
            int64_t rem = i;
            for (int d = t->ndim - 1; d >= 0; d--) { p[d] = rem % t->shape[d]; rem /= t->shape[d]; }
            p += t->ndim;
        }
    }
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, r, out);
}

static int two_tensors(ad_state *S, ad_value *argv, const char *fn, ad_tensor **a, ad_tensor **b) {
    int rc = self_arg(S, argv, fn, a);
    if (rc) return rc;
    if ((rc = ad_arg_tensor(S, argv[1], fn, "other", b))) { ad_tensor_decref(S, *a); return rc; }
    return AD_OK;
}

static int bi_equal(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *a, *b;
    int rc = two_tensors(S, argv, "equal", &a, &b);
    if (rc) return rc;
    bool eq = ad_shape_equal(a->ndim, a->shape, b->ndim, b->shape);
    for (int64_t i = 0; eq && i < a->numel; i++) eq = ad_tensor_get_flat(a, i) == ad_tensor_get_flat(b, i);
    ad_tensor_decref(S, a);
    ad_tensor_decref(S, b);
    *out = ad_bool(eq);
    return AD_OK;
}

typedef struct close_opts {
    double rtol, atol;
    bool equal_nan;
} close_opts;

static bool close_one(double x, double y, const close_opts *o) {
    if (x == y) return true;
    if (isnan(x) || isnan(y)) return o->equal_nan && isnan(x) && isnan(y);
    if (isinf(x) || isinf(y)) return false;
    return fabs(x - y) <= o->atol + o->rtol * fabs(y);
}

/* isclose into a new bool tensor of the broadcast shape. */
static int isclose_tensor(ad_state *S, ad_value *argv, const char *fn, ad_tensor **out) {
    close_opts o;
    ad_tensor *a, *b, *r = NULL, *ea = NULL, *eb = NULL;
    int n;
    int64_t shape[AD_MAX_DIMS];
    int rc = ad_arg_double(S, argv[2], fn, "rtol", &o.rtol);
    if (rc || (rc = ad_arg_double(S, argv[3], fn, "atol", &o.atol))) return rc;
    if ((rc = ad_arg_bool(S, argv[4], fn, "equal_nan", &o.equal_nan))) return rc;
    if ((rc = two_tensors(S, argv, fn, &a, &b))) return rc;
    if (a->dtype != b->dtype)
        rc = ad_error(S, "%s did not match %s", torch_type_name(a->dtype), torch_type_name(b->dtype));
    if (!rc) rc = ad_broadcast_shapes(S, a->ndim, a->shape, b->ndim, b->shape, &n, shape);
    if (!rc && (!(ea = ad_tensor_expand(S, a, n, shape)) || !(eb = ad_tensor_expand(S, b, n, shape))))
        rc = S->errcode;
    if (!rc && !(r = ad_tensor_empty(S, AD_BOOL, n, shape))) rc = S->errcode;
    if (!rc) {
        uint8_t *p = ad_tensor_data(r);
        for (int64_t i = 0; i < r->numel; i++)
            p[i] = close_one(ad_tensor_get_flat(ea, i), ad_tensor_get_flat(eb, i), &o);
    }
    ad_tensor_decref(S, ea);
    ad_tensor_decref(S, eb);
    ad_tensor_decref(S, a);
    ad_tensor_decref(S, b);
    *out = r;
    return rc;
}

static int bi_isclose(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *r;
    int rc = isclose_tensor(S, argv, "isclose", &r);
    return rc ? rc : ad_ret_tensor(S, r, out);
}

static int bi_allclose(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *r;
    int rc = isclose_tensor(S, argv, "allclose", &r);
    if (rc) return rc;
    const uint8_t *p = ad_tensor_data(r);
    bool all = true;
    for (int64_t i = 0; all && i < r->numel; i++) all = p[i] != 0;
    ad_tensor_decref(S, r);
    *out = ad_bool(all);
    return AD_OK;
}

const ad_builtin_def ad_bi_tensor_defs[] = {
    {"numel", bi_numel, "self",
         "The number of elements of a tensor (the product of its sizes)."
         "\nExample: numel(zeros(2, 3))   # 6"},
    {"item", bi_item, "self",
         "The value of a one-element tensor as a number (or bool)."
         "\nExample: tensor([2.5]).item()"},
    {"tolist", bi_tolist, "self",
         "The elements of a tensor as nested lists of numbers (a number for a 0-d tensor)."
         "\nExample: tensor([[1, 2], [3, 4]]).tolist()"},
    {"size", bi_size, "self, dim=none",
         "The sizes of a tensor as a list, or the size of dimension dim (negative counts from the "
         "end)."
         "\nExample: zeros(2, 3).size(-1)   # 3"},
    {"stride", bi_stride, "self, dim=none",
         "The strides of a tensor in elements, as a list, or the stride of dimension dim."
         "\nExample: zeros(2, 3).stride()   # [3, 1]"},
    {"dim", bi_dim, "self",
         "The number of dimensions of a tensor (x.ndim)."
         "\nExample: zeros(2, 3).dim()   # 2"},
    {"element_size", bi_element_size, "self",
         "The size of one element in bytes (4 for float32, 8 for float64 and int64, 1 for bool)."
         "\nExample: zeros(2, dtype=float64).element_size()   # 8"},
    {"is_contiguous", bi_is_contiguous, "self",
         "True when the tensor's elements lie in memory in row-major order without gaps (a "
         "transposed view is not)."
         "\nExample: zeros(2, 3).t().is_contiguous()   # false"},
    {"is_floating_point", bi_is_floating_point, "self",
         "True for float32 and float64 tensors."
         "\nExample: zeros(2).is_floating_point()   # true"},
    {"to", bi_to, "self, dtype"},
    {"double", bi_double, "self"},
    {"float", bi_float, "self"},
    {"long", bi_long, "self",
         "self converted to int64 (Tensor.long()); floats are truncated toward zero. Not "
         "differentiable."
         "\nExample: tensor([1.7, -1.7]).long()"},
    {"type_as", bi_type_as, "self, other"},
    {"contiguous", bi_contiguous, "self"},
    {"clone", bi_clone, "self"},
    {"detach", bi_detach, "self",
         "A tensor sharing self's data but outside the autograd graph (requires_grad false): "
         "gradients do not flow through it."
         "\nExample: let w = randn(3, requires_grad=true); w.detach().requires_grad"},
    {"requires_grad_", bi_requires_grad_, "self, requires_grad=true",
         "Sets self.requires_grad in place (only on leaves) and returns self, as torch's "
         "Tensor.requires_grad_."
         "\nExample: let w = zeros(3).requires_grad_(); w.requires_grad"},
    {"copy_", bi_copy_, "self, src"},
    {"fill_", bi_fill_, "self, value"},
    {"zero_", bi_zero_, "self"},
    {"masked_fill", bi_masked_fill, "self, mask, value"},
    {"masked_fill_", bi_masked_fill_, "self, mask, value"},
    {"nonzero", bi_nonzero, "self"},
    {"equal", bi_equal, "self, other",
         "True when self and other have the same shape and the same elements."
         "\nExample: equal(tensor([1, 2]), tensor([1, 2]))   # true"},
    {"isclose", bi_isclose, "self, other, rtol=1e-05, atol=1e-08, equal_nan=false",
         "Element-wise closeness |self - other| <= atol + rtol * |other| as a bool tensor (nan "
         "equal to nan only with equal_nan=true)."
         "\nExample: isclose(tensor([1.0, 2.0]), tensor([1.0, 2.1]))"},
    {"allclose", bi_allclose, "self, other, rtol=1e-05, atol=1e-08, equal_nan=false",
         "True when every element of self is close to other: |self - other| <= atol + rtol * "
         "|other| (nan equal to nan only with equal_nan=true)."
         "\nExample: allclose(tensor([1.0, 2.0]), tensor([1.0, 2.0000001]))"},
    {NULL, NULL, NULL},
};
