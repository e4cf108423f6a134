/* test_tensor.c: TAP tests of tensors: views and their strides, view vs
 * reshape, broadcasting, copies with conversion, and PyTorch's printing. */
#include "tap.h"

#include "buf.h"
#include "tensor/tensor.h"

/* A float32 tensor holding 0, 1, 2, ... in row-major order. */
static ad_tensor *arange_t(ad_state *S, int ndim, const int64_t *shape) {
    ad_tensor *t = ad_tensor_empty(S, AD_FLOAT32, ndim, shape);
    for (int64_t i = 0; t && i < t->numel; i++) ad_tensor_set_flat(t, i, (double)i);
    return t;
}

static int strides_are(const ad_tensor *t, int n, const int64_t *want) {
    return t && ad_shape_equal(t->ndim, t->strides, n, want);
}

static int shape_is(const ad_tensor *t, int n, const int64_t *want) {
    return t && ad_shape_equal(t->ndim, t->shape, n, want);
}

static void test_views(ad_state *S) {
    int64_t sh[3] = {2, 3, 4};
    ad_tensor *x = arange_t(S, 3, sh);
    ad_tensor *t = ad_tensor_transpose(S, x, 0, 2);
    ok(t->storage == x->storage && x->storage->refcount == 2, "transpose shares storage");
    ok(strides_are(t, 3, (int64_t[]){1, 4, 12}), "transpose strides");
    ok(!ad_tensor_is_contiguous(t), "transpose is not contiguous");
    ad_tensor *p = ad_tensor_permute(S, x, 3, (int64_t[]){2, 0, -2});
    ok(strides_are(p, 3, (int64_t[]){1, 12, 4}) && shape_is(p, 3, (int64_t[]){4, 2, 3}), "permute");
    ad_tensor *sl = ad_tensor_slice(S, x, 2, 0, 100, 2);
    ad_tensor *sl2 = ad_tensor_slice(S, sl, 1, 1, 3, 1);
    ok(strides_are(sl2, 3, (int64_t[]){12, 4, 2}) && sl2->offset == 4 &&
       shape_is(sl2, 3, (int64_t[]){2, 2, 2}), "slice strides and offset");
    ad_tensor *neg = ad_tensor_slice(S, x, 1, -10, 10, 2);
    ok(shape_is(neg, 3, (int64_t[]){2, 2, 4}), "slice clamps bounds");
    ad_tensor *empty = ad_tensor_slice(S, x, 1, 5, 1, 1);
    ok(shape_is(empty, 3, (int64_t[]){2, 0, 4}) && empty->numel == 0, "empty slice");
    ad_tensor *se = ad_tensor_select(S, x, 1, -1);
    ok(strides_are(se, 2, (int64_t[]){12, 1}) && se->offset == 8, "select");
    is_double(ad_tensor_get_flat(se, 5), 21, 0, "select reads the right element");
    ad_tensor *dg = ad_tensor_diagonal(S, x, 1, 1, 2);
    ok(strides_are(dg, 2, (int64_t[]){12, 5}) && dg->offset == 1 && shape_is(dg, 2, (int64_t[]){2, 3}),
       "diagonal offset=1");
    ad_tensor *dg2 = ad_tensor_diagonal(S, x, -1, 0, 2);
    ok(shape_is(dg2, 2, (int64_t[]){3, 1}) && dg2->offset == 12, "diagonal offset=-1");
    ad_tensor *nw = ad_tensor_narrow(S, x, 2, 1, 2);
    ok(strides_are(nw, 3, (int64_t[]){12, 4, 1}) && nw->offset == 1, "narrow");
    ad_tensor *u = ad_tensor_unsqueeze(S, x, 1);
    ad_tensor *u2 = ad_tensor_unsqueeze(S, x, -1);
    ok(strides_are(u, 4, (int64_t[]){12, 12, 4, 1}) && strides_are(u2, 4, (int64_t[]){12, 4, 1, 1}),
       "unsqueeze strides");
    ad_tensor *sq = ad_tensor_squeeze(S, u, -1, NULL);
    ok(shape_is(sq, 3, sh), "squeeze all");
    ad_tensor *tensors[] = {t, p, sl, sl2, neg, empty, se, dg, dg2, nw, u, u2, sq};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) ad_tensor_decref(S, tensors[i]);
    ok(x->storage->refcount == 1, "views release their storage reference");

    ad_tensor *one = ad_tensor_zeros(S, AD_FLOAT32, 1, (int64_t[]){3});
    ad_tensor *e = ad_tensor_expand(S, one, 2, (int64_t[]){2, -1});
    ok(strides_are(e, 2, (int64_t[]){0, 1}), "expand strides");
    ok(ad_tensor_expand(S, one, 2, (int64_t[]){2, 4}) == NULL, "bad expand fails");
    is_str(S->errmsg, "The expanded size of the tensor (4) must match the existing size (3) at "
                      "non-singleton dimension 1.  Target sizes: [2, 4].  Tensor sizes: [3]",
           "expand message");
    ok(ad_tensor_select(S, one, 0, 5) == NULL, "select out of range fails");
    is_str(S->errmsg, "index 5 is out of bounds for dimension 0 with size 3", "select message");
    ok(ad_tensor_transpose(S, x, 0, 3) == NULL, "bad dim fails");
    is_str(S->errmsg, "Dimension out of range (expected to be in range of [-3, 2], but got 3)",
           "dim message");
    ad_tensor_decref(S, e);
    ad_tensor_decref(S, one);
    ad_tensor_decref(S, x);
}

static void test_view_reshape(ad_state *S) {
    int64_t sh[3] = {2, 3, 4};
    ad_tensor *x = arange_t(S, 3, sh);
    ad_tensor *v = ad_tensor_view(S, x, 2, (int64_t[]){-1, 4});
    ok(shape_is(v, 2, (int64_t[]){6, 4}) && v->storage == x->storage, "view with -1");
    ad_tensor *y = ad_tensor_transpose(S, x, 1, 2);
    ad_tensor *v2 = ad_tensor_view(S, y, 3, (int64_t[]){2, 4, 3});
    ok(strides_are(v2, 3, (int64_t[]){12, 1, 4}), "view of a transpose keeping dims");
    ok(ad_tensor_view(S, y, 2, (int64_t[]){2, 12}) == NULL, "incompatible view fails");
    is_str(S->errmsg, "view size is not compatible with input tensor's size and stride (at least one "
                      "dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
           "view message");
    ad_tensor *r = ad_tensor_reshape(S, y, 2, (int64_t[]){2, 12});
    ok(r && r->storage != x->storage && ad_tensor_is_contiguous(r), "reshape copies when needed");
    is_double(ad_tensor_get_flat(r, 1), 4, 0, "reshape copy has the transposed order");
    ad_tensor *pm = ad_tensor_permute(S, x, 3, (int64_t[]){1, 0, 2});
    ad_tensor *v3 = ad_tensor_view(S, pm, 4, (int64_t[]){3, 2, 2, 2});
    ok(strides_are(v3, 4, (int64_t[]){4, 12, 2, 1}), "view splits a permuted dim");
    ok(ad_tensor_view(S, x, 2, (int64_t[]){5, -1}) == NULL, "bad -1 fails");
    is_str(S->errmsg, "shape '[5, -1]' is invalid for input of size 24", "infer message");
    ad_tensor *r2 = ad_tensor_reshape(S, x, 1, (int64_t[]){24});
    ok(r2 && r2->storage == x->storage, "reshape of contiguous is a view");
    ad_tensor *tensors[] = {v, y, v2, r, pm, v3, r2};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) ad_tensor_decref(S, tensors[i]);
    ad_tensor_decref(S, x);
}

static void test_broadcast(ad_state *S) {
    int n;
    int64_t out[AD_MAX_DIMS];
    int rc = ad_broadcast_shapes(S, 2, (int64_t[]){2, 1}, 3, (int64_t[]){4, 1, 3}, &n, out);
    ok(rc == 0 && ad_shape_equal(n, out, 3, (int64_t[]){4, 2, 3}), "broadcast [2, 1] with [4, 1, 3]");
    rc = ad_broadcast_shapes(S, 2, (int64_t[]){2, 3}, 2, (int64_t[]){2, 4}, &n, out);
    ok(rc == ADDSL_ERUNTIME, "incompatible shapes fail");
    is_str(S->errmsg, "The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
                      "dimension 1 (shapes [2, 3] and [2, 4])", "broadcast message");
    int64_t numel;
    ok(ad_shape_numel(S, 2, (int64_t[]){2, -3}, &numel) != 0, "negative size fails");
    is_str(S->errmsg, "Trying to create tensor with negative dimension -3: [2, -3]", "negative message");
    ok(ad_shape_numel(S, 3, (int64_t[]){INT64_MAX, 4, 0}, &numel) == 0 && numel == 0,
       "zero size wins over overflow");
    ok(ad_shape_numel(S, 2, (int64_t[]){INT64_MAX, 4}, &numel) != 0, "overflow fails");
}

static void test_copies(ad_state *S) {
    ad_tensor *dst = ad_tensor_zeros(S, AD_INT64, 2, (int64_t[]){2, 3});
    ad_tensor *src = ad_tensor_empty(S, AD_FLOAT64, 1, (int64_t[]){3});
    ad_tensor_set_flat(src, 0, 1.7);
    ad_tensor_set_flat(src, 1, -2.7);
    ad_tensor_set_flat(src, 2, 3.0);
    ok(ad_tensor_copy_into(S, dst, src) == 0, "broadcasting converting copy");
    const int64_t *d = ad_tensor_data(dst);
    ok(d[0] == 1 && d[1] == -2 && d[2] == 3 && d[3] == 1 && d[4] == -2 && d[5] == 3,
       "float to int64 truncates toward zero, rows repeated");
    ad_tensor *bad = ad_tensor_zeros(S, AD_FLOAT32, 1, (int64_t[]){4});
    ok(ad_tensor_copy_into(S, dst, bad) != 0, "non-broadcastable copy fails");
    ad_tensor *b = ad_tensor_to(S, src, AD_BOOL);
    ok(b && ((uint8_t *)ad_tensor_data(b))[0] == 1 && b->dtype == AD_BOOL, "to bool");
    ad_tensor *same = ad_tensor_to(S, src, AD_FLOAT64);
    ok(same == src, "to the same dtype is the same tensor");
    ad_tensor_decref(S, same);

    ad_tensor *m = arange_t(S, 2, (int64_t[]){3, 4});
    ad_tensor *mt = ad_tensor_transpose(S, m, 0, 1);
    ad_tensor *c = ad_tensor_contiguous(S, mt);
    ok(c != mt && ad_tensor_is_contiguous(c), "contiguous copies a transpose");
    is_double(ad_tensor_get_flat(c, 1), 4, 0, "contiguous element order");
    ad_tensor *c2 = ad_tensor_contiguous(S, m);
    ok(c2 == m, "contiguous of contiguous is the same tensor");
    /* Overlapping copy within one storage: row 1 <- row 0, row 2 <- row 1. */
    ad_tensor *lo = ad_tensor_slice(S, m, 0, 0, 2, 1), *hi = ad_tensor_slice(S, m, 0, 1, 3, 1);
    ok(ad_tensor_copy_into(S, hi, lo) == 0, "overlapping copy");
    is_double(ad_tensor_get_flat(m, 8), 4, 0, "overlapping copy used the old values");
    ad_tensor_fill(S, mt, -1);
    is_double(ad_tensor_get_flat(m, 11), -1, 0, "fill through a strided view");
    double item;
    ok(ad_tensor_item(S, m, &item) != 0, "item of many elements fails");
    ad_tensor *tensors[] = {dst, src, bad, b, m, mt, c, c2, lo, hi};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) ad_tensor_decref(S, tensors[i]);
}

static void check_print(ad_state *S, ad_tensor *t, const char *want, const char *name) {
    ad_buf b;
    ad_buf_init(&b, S);
    ad_tensor_format(S, t, &b);
    is_str(b.data, want, name);
    ad_buf_free(&b);
    ad_tensor_decref(S, t);
}

static ad_tensor *from(ad_state *S, ad_dtype dt, int ndim, const int64_t *shape, const double *v) {
    ad_tensor *t = ad_tensor_empty(S, dt, ndim, shape);
    for (int64_t i = 0; i < t->numel; i++) ad_tensor_set_flat(t, i, v[i]);
    return t;
}

/* Expected strings are PyTorch 1.13 output ("torch." dropped from dtypes). */
static void test_print(ad_state *S) {
    check_print(S, from(S, AD_FLOAT32, 1, (int64_t[]){3}, (double[]){1, 2, 3}), "tensor([1., 2., 3.])", "floats");
    check_print(S, from(S, AD_INT64, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4}),
                "tensor([[1, 2],\n        [3, 4]])", "int matrix");
    check_print(S, from(S, AD_FLOAT32, 2, (int64_t[]){2, 2}, (double[]){1.5, 2, 3, 4}),
                "tensor([[1.5000, 2.0000],\n        [3.0000, 4.0000]])", "fixed point matrix");
    check_print(S, from(S, AD_BOOL, 1, (int64_t[]){2}, (double[]){1, 0}), "tensor([ True, False])", "bools");
    check_print(S, ad_tensor_scalar(S, AD_FLOAT32, 3.5), "tensor(3.5000)", "0-d");
    check_print(S, from(S, AD_FLOAT32, 1, (int64_t[]){2}, (double[]){1e5, 1}),
                "tensor([1.0000e+05, 1.0000e+00])", "scientific");
    check_print(S, ad_tensor_zeros(S, AD_FLOAT32, 2, (int64_t[]){0, 3}), "tensor([], size=(0, 3))", "empty 2-d");
    check_print(S, ad_tensor_zeros(S, AD_INT64, 1, (int64_t[]){0}), "tensor([], dtype=int64)", "empty int64");
    check_print(S, from(S, AD_FLOAT64, 1, (int64_t[]){2}, (double[]){0.5, -1.0 / 0.0}),
                "tensor([0.5000,   -inf], dtype=float64)", "float64 with inf");
    ad_tensor *rg = from(S, AD_FLOAT32, 1, (int64_t[]){2}, (double[]){1, 2});
    rg->requires_grad = true;
    check_print(S, rg, "tensor([1., 2.], requires_grad=true)", "requires_grad");
    ad_tensor *big = ad_tensor_zeros(S, AD_INT64, 1, (int64_t[]){2000});
    for (int64_t i = 0; i < 2000; i++) ad_tensor_set_flat(big, i, (double)i);
    check_print(S, big, "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])", "summarized");
    ad_tensor *wide = ad_tensor_zeros(S, AD_FLOAT32, 1, (int64_t[]){12});
    for (int64_t i = 0; i < 12; i++) ad_tensor_set_flat(wide, i, i * 0.25 - 1);
    check_print(S, wide,
                "tensor([-1.0000, -0.7500, -0.5000, -0.2500,  0.0000,  0.2500,  0.5000,  0.7500,\n"
                "         1.0000,  1.2500,  1.5000,  1.7500])", "wrapped row");
    ad_tensor *cube = arange_t(S, 3, (int64_t[]){2, 2, 2});
    check_print(S, cube, "tensor([[[0., 1.],\n         [2., 3.]],\n\n        [[4., 5.],\n         [6., 7.]]])", "3-d");
    check_print(S, from(S, AD_FLOAT32, 1, (int64_t[]){3}, (double[]){0.0 / 0.0, 1, 1e-5}),
                "tensor([       nan, 1.0000e+00, 1.0000e-05])", "nan in scientific");
}

int main(void) {
    plan(66);
    ad_state *S = test_state(0);
    test_views(S);
    test_view_reshape(S);
    test_broadcast(S);
    test_copies(S);
    test_print(S);
    ad_heap_stats st;
    ad_heap_stats_get(S, &st);
    ok(st.live_bytes == 0, "every tensor was released (%zu live bytes)", st.live_bytes);
    test_state_close(S);
    return done_testing();
}
