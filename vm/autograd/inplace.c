/* autograd/inplace.c: in-place writes to tensors with PyTorch's autograd rules: the
 * trailing-underscore methods, augmented assignment and t[idx] = v.
 *
 * An in-place op runs its out-of-place op f(self, ...) (recording a node as
 * any op call does), writes the result into self's storage and bumps the
 * version counter that self shares with its views. When a graph was recorded,
 * self is rebased onto the new node; when self is a view, its base is rebased
 * too, onto a node that scatters the new values into the old base (torch's
 * CopySlices), and the view becomes a fresh view of the new base. Saved
 * tensors that the write would change are version-checked at backward. */
#include "autograd/inplace.h"

#include <string.h>

#include "../../builtins/builtins.h"
#include "autograd/engine.h"
#include "buf.h"
#include "tensor/device.h"
#include "autograd/library.h"
#include "autograd/op.h"
#include "state.h"
#include "tensor/tensor.h"
#include "vm.h"

static const char leaf_msg[] = "a leaf Variable that requires grad is being used in an in-place operation.";
static const char view_leaf_msg[] =
    "a view of a leaf Variable that requires grad is being used in an in-place operation.";

static int global_value(ad_state *S, const char *name, ad_value *out) {
    int slot = ad_global_slot(S, name, false);
    if (slot >= 0) {
        int rc = ad_library_resolve(S, slot);
        if (rc) return rc;
    }
    if (slot < 0 || !S->globals->defined[slot]) return ad_error(S, "in-place writes need the function '%s'", name);
    *out = S->globals->values[slot];
    return ADDSL_OK;
}

static int global_op(ad_state *S, const char *name, ad_opdef **op) {
    ad_value v;
    int rc = global_value(S, name, &v);
    if (rc) return rc;
    if (v.t != AD_TOP) return ad_error(S, "in-place writes need the op '%s'", name);
    *op = v.u.op;
    return ADDSL_OK;
}

/* An alias of t with t's place in the graph, for a node's saved value; a copy
 * of its data when 'copy' (the write is about to change the original). */
static ad_tensor *graph_alias(ad_state *S, ad_tensor *t, bool copy) {
    ad_tensor *a = copy ? ad_tensor_clone(S, t) : ad_tensor_alias(S, t);
    if (!a) return NULL;
    a->requires_grad = t->requires_grad;
    if (t->grad_fn && !t->grad_fn_weak) {
        a->grad_fn = t->grad_fn;
        t->grad_fn->refcount++;
        a->output_nr = t->output_nr;
    }
    /* forward-over-reverse reads the saved value's tangents */
    if (t->fw_grad && ad_tensor_copy_tangents(S, a, t, UINT64_MAX)) { ad_tensor_decref(S, a); return NULL; }
    return a;
}

/* The node n that computed the new value of t saved tensors over t's storage
 * (self itself, or a view of it): give it copies of what they hold now when
 * a formula reads them, plain aliases otherwise, so the write does not change
 * what backward reads and n never holds t (which will point back to n). */
static int protect_saved(ad_state *S, ad_node *n, const ad_tensor *t) {
    for (int i = 0; i < n->nargs; i++) {
        if (ad_node_args(n)[i].t != AD_TTENSOR) continue;
        ad_tensor *a = ad_node_args(n)[i].u.tensor;
        if (a->storage != t->storage) continue;
        bool read = false;
        for (int e = 0; e < n->op->nvjp; e++) read |= (n->op->vjp[e].reads >> i) & 1u;
        ad_tensor *c = graph_alias(S, a, read);
        if (!c) return S->errcode;
        ad_tensor_decref(S, a);
        ad_node_args(n)[i] = ad_tensor_value(c);
        ad_node_versions(n)[i] = c->storage->version;
    }
    return ADDSL_OK;
}

static void set_grad_fn(ad_state *S, ad_tensor *t, ad_node *n, int nr) {
    ad_node *old = t->grad_fn_weak ? NULL : t->grad_fn;
    if (n) n->refcount++;
    t->grad_fn = n;
    t->grad_fn_weak = false;
    t->output_nr = nr;
    t->requires_grad = n != NULL || (t->requires_grad && !old);
    if (old) ad_node_decref(S, old);
}

static int shape_list(ad_state *S, int n, const int64_t *v, ad_value *out) {
    ad_list *l = ad_list_new(S, AD_TLIST, n);
    if (!l) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    for (int i = 0; i < n; i++) l->items[i] = ad_int((double)v[i]);
    *out = ad_list_value(l, AD_TLIST);
    return ADDSL_OK;
}

/* View t of base b was written with r (recorded): b's graph becomes
 * as_strided_scatter(old b, r, t's geometry) and t's as_strided(new b). */
static int rebase_view(ad_state *S, ad_tensor *t, ad_tensor *b, ad_tensor *r) {
    if (!ad_tensor_is_contiguous(b))
        return ad_error(S, "an in-place operation on a view of a non-contiguous tensor cannot be recorded for "
                           "autograd; clone() the tensor first");
    ad_opdef *scatter = NULL, *view = NULL;
    int rc = global_op(S, "as_strided_scatter", &scatter);
    if (!rc) rc = global_op(S, "as_strided", &view);
    if (rc) return rc;
    ad_value size = ad_none(), stride = ad_none(), off = ad_int((double)(t->offset - b->offset));
    if ((rc = shape_list(S, t->ndim, t->shape, &size)) || (rc = shape_list(S, t->ndim, t->strides, &stride))) {
        ad_value_decref(S, size);
        return rc;
    }
    ad_tensor *old = graph_alias(S, b, false);
    if (!old) rc = S->errcode;
    if (!rc) {
        ad_value args[5] = {ad_tensor_value(old), ad_tensor_value(r), size, stride, off};
        set_grad_fn(S, b, NULL, 0);
        rc = ad_autograd_record(S, scatter, args, 1, &b);
    }
    if (!rc) {
        ad_value args[4] = {ad_tensor_value(b), size, stride, off};
        set_grad_fn(S, t, NULL, 0);
        rc = ad_autograd_record(S, view, args, 1, &t);
    }
    ad_tensor_decref(S, old);
    ad_value_decref(S, size);
    ad_value_decref(S, stride);
    return rc;
}

static int check_writable(ad_state *S, const ad_tensor *t) {
    if (S->grad_enabled && t->requires_grad && !t->grad_fn)
        return ad_error(S, "%s", leaf_msg);
    if (S->grad_enabled && t->base && t->base->requires_grad && !t->base->grad_fn)
        return ad_error(S, "%s", view_leaf_msg);
    for (int d = 0; d < t->ndim; d++)
        if (t->strides[d] == 0 && t->shape[d] > 1)
            return ad_error(S, "unsupported operation: more than one element of the written-to tensor refers to a "
                               "single memory location. Please clone() the tensor before performing the operation.");
    return ADDSL_OK;
}

static int check_result(ad_state *S, const ad_tensor *t, ad_value rv, const char *name) {
    if (rv.t != AD_TTENSOR)
        return ad_error(S, "%s(): the out-of-place op returned %s, not a tensor", name, ad_type_name(rv));
    const ad_tensor *r = rv.u.tensor;
    bool narrows = (ad_dtype_is_float(r->dtype) && !ad_dtype_is_float(t->dtype))
                || (r->dtype == AD_INT64 && t->dtype == AD_BOOL);
    if (narrows)
        return ad_error(S, "result type %s can't be cast to the desired output type %s",
                        r->dtype == AD_FLOAT64 ? "Double" : r->dtype == AD_FLOAT32 ? "Float" : "Long",
                        t->dtype == AD_INT64 ? "Long" : "Bool");
    if (ad_shape_equal(r->ndim, r->shape, t->ndim, t->shape)) return ADDSL_OK;
    ad_buf b;
    ad_buf_init(&b, S);
    ad_buf_printf(&b, "%s(): output with shape ", name);
    ad_buf_shape(&b, t->ndim, t->shape);
    ad_buf_puts(&b, " doesn't match the broadcast shape ");
    ad_buf_shape(&b, r->ndim, r->shape);
    int rc = b.failed ? ad_nomem(S) : ad_error(S, "%s", b.data);
    ad_buf_free(&b);
    return rc;
}

/* The base b of view t gets tangent 'tan' (level) in t's region, as torch's
 * forward gradients of views are views of their base's. */
static int scatter_tangent(ad_state *S, ad_tensor *b, const ad_tensor *t, uint64_t level, ad_tensor *tan) {
    ad_tensor *old = ad_tensor_tangent(b, level);
    ad_tensor *nb = old ? ad_tensor_clone(S, old) : ad_tensor_full_like(S, b, 0.0);
    if (!nb) return S->errcode;
    int rc = ADDSL_OK;
    if (!ad_tensor_is_contiguous(b)) {
        rc = ad_error(S, "an in-place operation on a view of a non-contiguous tensor cannot carry forward-mode "
                         "tangents; clone() the tensor first");
    } else {
        ad_tensor *region = ad_tensor_as_strided(S, nb, t->ndim, t->shape, t->strides, t->offset - b->offset);
        rc = region ? ad_tensor_copy_into(S, region, tan) : S->errcode;
        ad_tensor_decref(S, region);
    }
    if (!rc) rc = ad_tensor_set_tangent(S, b, level, nb);
    ad_tensor_decref(S, nb);
    return rc;
}

/* Moves r's tangents onto t (forward mode: the written value's tangent), and
 * into t's region of its base's tangents when t is a view. */
static int take_tangents(ad_state *S, ad_tensor *t, const ad_tensor *r) {
    if (!r->fw_grad && !t->fw_grad) return ADDSL_OK;
    ad_tensor_clear_tangents(S, t);
    int rc = r->fw_grad ? ad_tensor_copy_tangents(S, t, r, UINT64_MAX) : ADDSL_OK;
    for (const ad_tangent *e = r->fw_grad; !rc && t->base && e; e = e->next)
        rc = scatter_tangent(S, t->base, t, e->level, e->t);
    return rc;
}

int ad_inplace_apply(ad_state *S, ad_value self, ad_value f, int argc, const ad_value *argv, const char *name,
                     ad_value *out) {
    if (self.t != AD_TTENSOR)
        return ad_error(S, "%s(): argument 'self' must be a tensor, not %s", name, ad_type_name(self));
    ad_tensor *t = self.u.tensor;
    int rc = check_writable(S, t);
    if (rc) return rc;
    ad_value cargs[AD_OP_MAX_PARAMS];
    if (argc + 1 > AD_OP_MAX_PARAMS) return ad_error(S, "%s(): too many arguments", name);
    /* With tangents, f's JVP formulas record nodes that save self; they get
     * a copy of self's old value (torch's original_self), so the write does
     * not change what they read and t's new tangent never reaches t itself. */
    ad_tensor *orig = NULL;
    if (S->fw_level > 0 && t->fw_grad && !(orig = graph_alias(S, t, true))) return S->errcode;
    cargs[0] = orig ? ad_tensor_value(orig) : self;
    for (int i = 0; i < argc; i++) cargs[i + 1] = argv[i];
    ad_value rv = ad_none();
    rc = ad_vm_call_value(S, f, argc + 1, cargs, &rv);
    ad_tensor_decref(S, orig);
    if (rc) return rc;
    rc = ad_inplace_commit(S, self, rv, name, out);
    ad_value_decref(S, rv);
    return rc;
}

int ad_inplace_commit(ad_state *S, ad_value self, ad_value rv, const char *name, ad_value *out) {
    if (self.t != AD_TTENSOR)
        return ad_error(S, "%s(): argument 'self' must be a tensor, not %s", name, ad_type_name(self));
    ad_tensor *t = self.u.tensor;
    int rc = check_result(S, t, rv, name);
    if (rc) return rc;
    ad_tensor *r = rv.u.tensor;
    ad_node *n = S->grad_enabled && r->grad_fn && !r->grad_fn_weak ? r->grad_fn : NULL;
    if (n) rc = protect_saved(S, n, t);
    if (!rc && r->storage != t->storage) rc = ad_tensor_copy_into(S, t, r);
    if (!rc) {
        ad_tensor_bump_version(t);
        if (n && t->base) rc = rebase_view(S, t, t->base, r);
        else if (n) set_grad_fn(S, t, n, r->output_nr);
        else if (S->grad_enabled && t->grad_fn) set_grad_fn(S, t, NULL, 0); /* the new value has no graph */
    }
    if (!rc) rc = take_tangents(S, t, r);
    if (rc) return rc;
    ad_tensor_incref(t);
    *out = self;
    return ADDSL_OK;
}

int ad_inplace_check(ad_state *S, const ad_tensor *t) { return check_writable(S, t); }

static bool differentiable(ad_state *S, const ad_tensor *t) {
    return (S->grad_enabled && t->requires_grad) || (S->fw_level > 0 && t->fw_grad);
}

bool ad_inplace_needs_graph(ad_state *S, const ad_tensor *t, ad_value v) {
    if (!S->grad_enabled && S->fw_level == 0) return false;
    if (differentiable(S, t) || (t->base && differentiable(S, t->base))) return true;
    if (v.t == AD_TTENSOR) return differentiable(S, v.u.tensor);
    if (ad_is_seq(v))
        for (int64_t i = 0; i < v.u.l->len; i++)
            if (v.u.l->items[i].t == AD_TTENSOR && differentiable(S, v.u.l->items[i].u.tensor)) return true;
    return false;
}

int ad_inplace_setindex(ad_state *S, ad_tensor *t, int n, const ad_value *idx, ad_value v) {
    if (!ad_inplace_needs_graph(S, t, v)) return ad_bi_index_set(S, t, n, idx, v);
    ad_value f;
    int rc = global_value(S, "index_put", &f);
    if (rc) return rc;
    ad_list *l = ad_list_new(S, AD_TLIST, n);
    if (!l) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    for (int i = 0; i < n; i++) { l->items[i] = idx[i]; ad_value_incref(idx[i]); }
    ad_value args[2] = {ad_list_value(l, AD_TLIST), v}, out = ad_none();
    rc = ad_inplace_apply(S, ad_tensor_value(t), f, 2, args, "setitem", &out);
    ad_value_decref(S, args[0]);
    ad_value_decref(S, out);
    return rc;
}

/* x OP= y on a tensor x: the in-place method of the operator. */
int ad_inplace_binop(ad_state *S, const char *method, ad_value a, ad_value b, ad_value *out) {
    ad_value f;
    int rc = global_value(S, method, &f);
    if (rc) return rc;
    return ad_vm_call_value(S, f, 2, (ad_value[]){a, b}, out);
}

/* _inplace(self, f, args, name): the library's in-place methods, as
 * ad_inplace_apply of their out-of-place op. */
static int bi_inplace(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    if (!ad_is_seq(argv[2])) return ad_error(S, "_inplace(): argument 'args' must be a list");
    const char *name = argv[3].t == AD_TSTR ? argv[3].u.s->data : "in-place op";
    return ad_inplace_apply(S, argv[0], argv[1], (int)argv[2].u.l->len, argv[2].u.l->items, name, out);
}

/* _inplace_write(self, r, name): the write of an in-place method whose
 * out-of-place op compile() recorded on its own (vm/trace/trace.c). */
static int bi_inplace_write(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *name = argv[2].t == AD_TSTR ? argv[2].u.s->data : "in-place op";
    return ad_inplace_commit(S, argv[0], argv[1], name, out);
}

static int size_arg(ad_state *S, ad_value v, const char *what, int *n, int64_t *out) {
    if (!ad_is_seq(v) || v.u.l->len > AD_MAX_DIMS)
        return ad_error(S, "as_strided(): argument '%s' must be a list of at most %d integers", what, AD_MAX_DIMS);
    *n = (int)v.u.l->len;
    for (int i = 0; i < *n; i++) {
        int rc = ad_arg_int(S, v.u.l->items[i], "as_strided", what, &out[i]);
        if (rc) return rc;
    }
    return ADDSL_OK;
}

/* The geometry argv[k..k+2] (size, stride, storage_offset) over a contiguous
 * tensor of numel elements, checked to stay inside it. */
static int geometry(ad_state *S, const ad_value *argv, int64_t numel, int *nd, int64_t *size, int64_t *stride,
                    int64_t *off) {
    int ns = 0;
    int rc = size_arg(S, argv[0], "size", nd, size);
    if (!rc) rc = size_arg(S, argv[1], "stride", &ns, stride);
    if (!rc) rc = ad_arg_int(S, argv[2], "as_strided", "storage_offset", off);
    if (rc) return rc;
    if (ns != *nd) return ad_error(S, "mismatch in length of strides and shape");
    int64_t last = *off, count = 1;
    for (int i = 0; i < *nd; i++) {
        if (size[i] < 0 || stride[i] < 0) return ad_error(S, "as_strided(): negative sizes or strides");
        count *= size[i];
        last += (size[i] - 1) * stride[i];
    }
    if (*off < 0 || (count > 0 && last >= numel))
        return ad_error(S, "as_strided(): the view is out of bounds for a tensor of %lld elements", (long long)numel);
    return ADDSL_OK;
}

/* as_strided(self, size, stride, storage_offset=0): a view over self's
 * elements in row-major order (self itself when contiguous, else a copy). */
static int bi_as_strided(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL;
    int rc = ad_arg_tensor(S, argv[0], "as_strided", "self", &t);
    if (rc) return rc;
    ad_tensor *c = ad_tensor_contiguous(S, t);
    ad_tensor_decref(S, t);
    if (!c) return S->errcode;
    int nd = 0;
    int64_t size[AD_MAX_DIMS], stride[AD_MAX_DIMS], off = 0;
    rc = geometry(S, argv + 1, c->numel, &nd, size, stride, &off);
    ad_tensor *v = rc ? NULL : ad_tensor_as_strided(S, c, nd, size, stride, c->offset + off);
    ad_tensor_decref(S, c);
    if (!v) return S->errcode;
    *out = ad_tensor_value(v);
    return ADDSL_OK;
}

/* as_strided_scatter(self, src, size, stride, storage_offset=0): a copy of
 * self with src written into as_strided(self, size, stride, storage_offset). */
static int bi_as_strided_scatter(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL, *src = NULL;
    int rc = ad_arg_tensor(S, argv[0], "as_strided_scatter", "self", &t);
    if (rc) return rc;
    if ((rc = ad_arg_tensor(S, argv[1], "as_strided_scatter", "src", &src))) { ad_tensor_decref(S, t); return rc; }
    ad_tensor *c = ad_tensor_clone(S, t);
    int nd = 0;
    int64_t size[AD_MAX_DIMS], stride[AD_MAX_DIMS], off = 0;
    if (!c) rc = S->errcode;
    if (!rc) rc = geometry(S, argv + 2, c->numel, &nd, size, stride, &off);
    ad_tensor *v = rc ? NULL : ad_tensor_as_strided(S, c, nd, size, stride, off);
    if (!rc && !v) rc = S->errcode;
    if (!rc) rc = ad_tensor_copy_into(S, v, src);
    ad_tensor_decref(S, v);
    ad_tensor_decref(S, t);
    ad_tensor_decref(S, src);
    if (rc) { ad_tensor_decref(S, c); return rc; }
    *out = ad_tensor_value(c);
    return ADDSL_OK;
}

/* index_put(self, idx, value): a copy of self with self[idx...] = value. */
static int bi_index_put(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t = NULL;
    int rc = ad_arg_tensor(S, argv[0], "index_put", "self", &t);
    if (rc) return rc;
    if (!ad_is_seq(argv[1])) {
        ad_tensor_decref(S, t);
        return ad_error(S, "index_put(): argument 'idx' must be a list of indices, not %s", ad_type_name(argv[1]));
    }
    ad_tensor *c = ad_tensor_clone(S, t);
    ad_tensor_decref(S, t);
    if (!c) return S->errcode;
    if ((rc = ad_bi_index_set(S, c, (int)argv[1].u.l->len, argv[1].u.l->items, argv[2]))) {
        ad_tensor_decref(S, c);
        return rc;
    }
    *out = ad_tensor_value(c);
    return ADDSL_OK;
}

const ad_builtin_def ad_inplace_defs[] = {
    {"_inplace", bi_inplace, "self, f, args, name=none"},
    {"_inplace_write", bi_inplace_write, "self, r, name=none"},
    {"as_strided", bi_as_strided, "self, size, stride, storage_offset=0"},
    {"as_strided_scatter", bi_as_strided_scatter, "self, src, size, stride, storage_offset=0"},
    {"index_put", bi_index_put, "self, idx, value"},
    {NULL, NULL, NULL}
};
