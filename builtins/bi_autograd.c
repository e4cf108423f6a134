/* bi_autograd.c: autograd's user-facing builtins: backward, grad and jvp,
 * the op introspection (op_info, all_ops, ...), grad_fn.name(), and
 * indexing as ops (index_get, index_add_at and its gradient's helpers). The
 * engine they drive is vm/autograd/engine.c. */
#include <stdlib.h>
#include <string.h>

#include "builtins.h"
#include "buf.h"
#include "dict.h"
#include "autograd/gradfn.h"
#include "autograd/library.h"
#include "autograd/op.h"
#include "autograd/run.h"
#include "repl/help.h"
#include "state.h"
#include "tensor/device.h"
#include "tensor/tensor.h"
#include "trace/trace.h"
#include "vm.h"

/* ---- reverse and forward mode ---- */

/* A tensor or a list of tensors as an array (borrowed references). */
static int tensor_list(ad_state *S, ad_value v, const char *fn, const char *pname, ad_tensor ***out, int *n) {
    *out = NULL; *n = 0;
    if (v.t == AD_TNONE) return ADDSL_OK;
    int cnt = v.t == AD_TTENSOR ? 1 : ad_is_seq(v) ? (int)v.u.l->len : -1;
    if (cnt < 0) return ad_error(S, "%s(): argument '%s' must be a tensor or a list of tensors, not %s", fn, pname, ad_type_name(v));
    ad_tensor **arr = ad_calloc(S, (size_t)(cnt ? cnt : 1), sizeof *arr);
    if (!arr) return ADDSL_ENOMEM;
    for (int i = 0; i < cnt; i++) {
        ad_value e = v.t == AD_TTENSOR ? v : v.u.l->items[i];
        if (e.t != AD_TTENSOR) { ad_free(S, arr); return ad_error(S, "%s(): element %d of '%s' must be a tensor, not %s", fn, i, pname, ad_type_name(e)); }
        arr[i] = e.u.tensor;
    }
    *out = arr; *n = cnt;
    return ADDSL_OK;
}

/* Seeds: given gradients, or ones for scalar outputs. */
static int make_seeds(ad_state *S, const char *fn, ad_tensor **roots, int n, ad_value given, ad_value *seeds) {
    for (int i = 0; i < n; i++) seeds[i] = ad_none();
    for (int i = 0; i < n; i++) {
        ad_value g = given.t == AD_TNONE ? ad_none() : given.t == AD_TTENSOR ? (i == 0 ? given : ad_none())
                   : ad_is_seq(given) && i < given.u.l->len ? given.u.l->items[i] : ad_none();
        if (!roots[i]->requires_grad)
            return ad_error(S, "element %d of tensors does not require grad and does not have a grad_fn", i);
        if (g.t == AD_TNONE) {
            if (roots[i]->numel != 1) return ad_error(S, "grad can be implicitly created only for scalar outputs");
            ad_tensor *o = ad_tensor_full_like(S, roots[i], 1.0);
            if (!o) return S->errcode;
            seeds[i] = ad_tensor_value(o);
        } else {
            ad_tensor *t;
            int rc = ad_arg_tensor(S, g, fn, "grad_outputs", &t);
            if (rc) return rc;
            if (!ad_shape_equal(t->ndim, t->shape, roots[i]->ndim, roots[i]->shape)) {
                ad_buf b1, b2;
                ad_buf_init(&b1, S); ad_buf_init(&b2, S);
                ad_buf_shape(&b1, t->ndim, t->shape); ad_buf_shape(&b2, roots[i]->ndim, roots[i]->shape);
                rc = ad_error(S, "%s(): Mismatch in shape: grad_output[%d] has a shape of %s and output[%d] has a shape of %s",
                              fn, i, b1.data ? b1.data : "", i, b2.data ? b2.data : "");
                ad_buf_free(&b1); ad_buf_free(&b2);
                ad_tensor_decref(S, t);
                return rc;
            }
            seeds[i] = ad_tensor_value(t);
        }
    }
    return ADDSL_OK;
}

static int bi_backward(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor **roots = NULL, **inputs = NULL;
    int nroots, ninputs, rc;
    bool retain = false, create = false;
    *out = ad_none();
    if ((rc = ad_arg_bool(S, argv[3], "backward", "create_graph", &create))) return rc;
    if (argv[2].t != AD_TNONE && (rc = ad_arg_bool(S, argv[2], "backward", "retain_graph", &retain))) return rc;
    if (argv[2].t == AD_TNONE) retain = create;
    if ((rc = tensor_list(S, argv[0], "backward", "tensors", &roots, &nroots))) return rc;
    if ((rc = tensor_list(S, argv[4], "backward", "inputs", &inputs, &ninputs))) { ad_free(S, roots); return rc; }
    ad_value seeds[64];
    if (nroots > 64) rc = ad_error(S, "backward(): too many tensors");
    if (!rc) rc = make_seeds(S, "backward", roots, nroots, argv[1], seeds);
    ad_engine E;
    memset(&E, 0, sizeof E);
    E.S = S; E.create_graph = create; E.retain = retain;
    if (!rc) rc = ad_autograd_run(&E, nroots, roots, seeds);
    for (int i = 0; !rc && i < E.nleaves; i++) {
        ad_tensor *leaf = E.leaves[i].leaf;
        if (ninputs) {
            bool wanted = false;
            for (int j = 0; j < ninputs; j++) if (inputs[j] == leaf) wanted = true;
            if (!wanted) continue;
        }
        ad_value g = E.leaves[i].g;
        E.leaves[i].g = ad_none();
        if (g.t != AD_TTENSOR) { ad_value_decref(S, g); continue; }
        if (ad_trace_on(S)) {
            rc = ad_trace_accum_grad(S, leaf, g, create);
            ad_value_decref(S, g);
        } else {
            rc = ad_autograd_accum_leaf(S, leaf, g.u.tensor, create);
        }
        if (rc) break;
    }
    for (int i = 0; i < nroots; i++) ad_value_decref(S, seeds[i]);
    ad_autograd_run_free(&E);
    ad_free(S, roots); ad_free(S, inputs);
    return rc;
}

static int bi_grad(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor **roots = NULL, **inputs = NULL;
    int nroots, ninputs, rc;
    bool retain = false, create = false, allow_unused = false, materialize = false;
    *out = ad_none();
    if ((rc = ad_arg_bool(S, argv[4], "grad", "create_graph", &create))) return rc;
    if (argv[3].t != AD_TNONE && (rc = ad_arg_bool(S, argv[3], "grad", "retain_graph", &retain))) return rc;
    if (argv[3].t == AD_TNONE) retain = create;
    if ((rc = ad_arg_bool(S, argv[5], "grad", "allow_unused", &allow_unused))) return rc;
    if ((rc = ad_arg_bool(S, argv[6], "grad", "materialize_grads", &materialize))) return rc;
    if (materialize && !allow_unused)
        return ad_error(S, "grad(): materialize_grads=true needs allow_unused=true");
    if ((rc = tensor_list(S, argv[0], "grad", "outputs", &roots, &nroots))) return rc;
    if ((rc = tensor_list(S, argv[1], "grad", "inputs", &inputs, &ninputs))) { ad_free(S, roots); return rc; }
    for (int i = 0; i < ninputs && !rc; i++)
        if (!inputs[i]->requires_grad) rc = ad_error(S, "One of the differentiated Tensors does not require grad");
    ad_value seeds[64], captured[64];
    if (!rc && (nroots > 64 || ninputs > 64)) rc = ad_error(S, "grad(): too many tensors");
    if (!rc) rc = make_seeds(S, "grad", roots, nroots, argv[2], seeds);
    else nroots = 0;
    for (int i = 0; i < ninputs && i < 64; i++) captured[i] = ad_none();
    ad_engine E;
    memset(&E, 0, sizeof E);
    E.S = S; E.create_graph = create; E.retain = retain;
    E.ninputs = ninputs; E.inputs = inputs; E.captured = captured; E.only_inputs = true;
    if (!rc) rc = ad_autograd_run(&E, nroots, roots, seeds);
    ad_list *res = NULL;
    if (!rc) res = ad_list_new(S, AD_TLIST, ninputs);
    if (!rc && !res) rc = S->errcode;
    for (int i = 0; !rc && i < ninputs; i++) {
        ad_value g = captured[i];
        captured[i] = ad_none();
        if (g.t == AD_TNONE && !inputs[i]->grad_fn)
            for (int j = 0; j < E.nleaves; j++)
                if (E.leaves[j].leaf == inputs[i]) { g = E.leaves[j].g; ad_value_incref(g); }
        if (g.t == AD_TNONE) {
            if (!allow_unused) {
                rc = ad_error(S, "One of the differentiated Tensors appears to not have been used in the graph. "
                              "Set allow_unused=true if this is the desired behavior.");
                break;
            }
            if (materialize) {
                ad_tensor *z = ad_tensor_full_like(S, inputs[i], 0.0);
                if (!z) { rc = S->errcode; break; }
                g = ad_tensor_value(z);
            }
        }
        res->items[i] = g;
    }
    for (int i = 0; i < ninputs && i < 64; i++) ad_value_decref(S, captured[i]);
    for (int i = 0; i < nroots; i++) ad_value_decref(S, seeds[i]);
    ad_autograd_run_free(&E);
    ad_free(S, roots); ad_free(S, inputs);
    if (rc) { if (res) ad_value_decref(S, ad_list_value(res, AD_TLIST)); return rc; }
    *out = ad_list_value(res, AD_TLIST);
    return ADDSL_OK;
}

/* An alias of t in t's graph, with t's tangents of the levels below 'below'. */
static ad_tensor *jvp_alias(ad_state *S, ad_tensor *t, uint64_t below) {
    ad_tensor *a = ad_tensor_alias(S, t);
    if (!a) return NULL;
    a->requires_grad = t->requires_grad;
    if (t->grad_fn) { a->grad_fn = t->grad_fn; t->grad_fn->refcount++; a->output_nr = t->output_nr; }
    if (ad_tensor_copy_tangents(S, a, t, below)) { ad_tensor_decref(S, a); return NULL; }
    return a;
}

/* Whether no two indices of t reach the same element (no expanded dim, no
 * overlapping as_strided windows): the layout a copy can take. */
static bool layout_non_overlapping(const ad_tensor *t) {
    int order[AD_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] > 1) order[n++] = d;
    for (int i = 1; i < n; i++)   /* by increasing stride */
        for (int j = i; j > 0 && t->strides[order[j]] < t->strides[order[j - 1]]; j--) {
            int k = order[j]; order[j] = order[j - 1]; order[j - 1] = k;
        }
    int64_t span = 1;   /* elements a block of the smaller dims covers */
    for (int i = 0; i < n; i++) {
        int64_t st = t->strides[order[i]];
        if (st < span) return false;
        span = st * (t->shape[order[i]] - 1) + span;
    }
    return true;
}

/* The tangent in its primal's layout, as torch's set_fw_grad makes it: a
 * view op (view, as_strided) then applies to the tangent as to the primal;
 * a tangent in another layout made view() fail on a transposed tangent. An
 * overlapping primal (expanded) gets a contiguous tangent. */
static bool tangent_like_copies(const ad_tensor *tan, const ad_tensor *p) {
    bool same = tan->ndim == p->ndim && ad_tensor_device(tan) == ad_tensor_device(p);
    for (int d = 0; same && d < p->ndim; d++)
        if (p->shape[d] > 1 && tan->strides[d] != p->strides[d]) same = false;
    return !(same || ad_tensor_device(tan) != ad_tensor_device(p) || tan->numel == 0);
}

static ad_tensor *tangent_like(ad_state *S, ad_tensor *tan, const ad_tensor *p) {
    if (!tangent_like_copies(tan, p)) { ad_tensor_incref(tan); return tan; }
    if (ad_tensor_is_contiguous(p) || !layout_non_overlapping(p)) return ad_tensor_contiguous(S, tan);
    int64_t span = 1;
    for (int d = 0; d < p->ndim; d++) span += (p->shape[d] - 1) * p->strides[d];
    ad_tensor *buf = ad_tensor_full_on(S, tan->dtype, 1, &span, 0.0, ad_tensor_device(p));
    ad_tensor *v = buf ? ad_tensor_as_strided(S, buf, p->ndim, p->shape, p->strides, 0) : NULL;
    ad_tensor_decref(S, buf);
    if (v && ad_tensor_copy_into(S, v, tan)) { ad_tensor_decref(S, v); v = NULL; }
    return v;
}

/* The dual of primal p at a new level: p to reverse mode and to the outer
 * levels, 'tan' at this one. A leaf requiring grad is seen through the
 * view_as op, so that gradients reach it through the jvp (reverse over
 * forward); otherwise an alias sharing p's graph node. */
static int jvp_dual(ad_state *S, ad_tensor *p, ad_tensor *tan, uint64_t level, ad_value *out) {
    ad_tensor *d = NULL;
    if (p->requires_grad && !p->grad_fn && S->grad_enabled) {
        ad_value v = ad_none();
        int rc = ad_autograd_call_global(S, "view_as", 2, (ad_value[]){ad_tensor_value(p), ad_tensor_value(p)}, &v);
        if (rc) return rc;
        if (v.t != AD_TTENSOR) { ad_value_decref(S, v); return ad_error(S, "jvp(): view_as must return a tensor"); }
        d = v.u.tensor;
    } else if (!(d = jvp_alias(S, p, level))) {
        return S->errcode;
    }
    ad_tensor *tc0 = NULL, *tc = NULL;
    if (tan->dtype != p->dtype && ad_trace_outside_seam(S, tan, "a tangent converted to its primal's dtype")) {
        ad_tensor_decref(S, d);
        return S->errcode;
    }
    tc0 = ad_tensor_to(S, tan, p->dtype);
    if (tc0 && tangent_like_copies(tc0, p) && ad_trace_outside_seam(S, tc0, "a tangent laid out as its primal")) {
        ad_tensor_decref(S, tc0);
        ad_tensor_decref(S, d);
        return S->errcode;
    }
    tc = tc0 ? tangent_like(S, tc0, p) : NULL;
    ad_tensor_decref(S, tc0);
    int rc = tc ? ad_tensor_set_tangent(S, d, level, tc) : S->errcode;
    ad_tensor_decref(S, tc);
    if (rc) { ad_tensor_decref(S, d); return rc; }
    *out = ad_tensor_value(d);
    return ADDSL_OK;
}

/* The primal (without this level's tangent) and the tangent at 'level' of
 * each output. Both keep their graph and the outer levels' tangents, so a
 * jvp nests in another (forward over forward) and in grad (reverse over
 * forward), as torch.func.jvp does. Outputs that do not depend on the
 * primals get zeros. */
static int jvp_results(ad_state *S, ad_value res, uint64_t level, ad_value *out) {
    int nout = res.t == AD_TTENSOR ? 1 : ad_is_seq(res) ? (int)res.u.l->len : -1;
    if (nout < 0) return ad_error(S, "jvp(): the function must return a tensor or a list of tensors");
    ad_list *prim = ad_list_new(S, AD_TTUPLE, nout), *tans = ad_list_new(S, AD_TTUPLE, nout);
    int rc = prim && tans ? ADDSL_OK : S->errcode;
    for (int k = 0; !rc && k < nout; k++) {
        ad_value o = res.t == AD_TTENSOR ? res : res.u.l->items[k];
        if (o.t != AD_TTENSOR) { rc = ad_error(S, "jvp(): output %d is not a tensor", k); break; }
        ad_tensor *ot = o.u.tensor, *tan = ad_tensor_tangent(ot, level);
        tan = tan ? jvp_alias(S, tan, level) : ad_tensor_full_like(S, ot, 0.0);
        if (!tan) { rc = S->errcode; break; }
        tans->items[k] = ad_tensor_value(tan);
        ad_tensor *po = jvp_alias(S, ot, level);
        if (!po) { rc = S->errcode; break; }
        prim->items[k] = ad_tensor_value(po);
    }
    ad_list *pair = rc ? NULL : ad_list_new(S, AD_TTUPLE, 2);
    if (!rc && !pair) rc = S->errcode;
    if (!rc && nout == 1) {
        pair->items[0] = prim->items[0]; ad_value_incref(pair->items[0]);
        pair->items[1] = tans->items[0]; ad_value_incref(pair->items[1]);
    } else if (!rc) {
        pair->items[0] = ad_list_value(prim, AD_TTUPLE); prim = NULL;
        pair->items[1] = ad_list_value(tans, AD_TTUPLE); tans = NULL;
    }
    if (prim) ad_value_decref(S, ad_list_value(prim, AD_TTUPLE));
    if (tans) ad_value_decref(S, ad_list_value(tans, AD_TTUPLE));
    if (!rc) *out = ad_list_value(pair, AD_TTUPLE);
    return rc;
}

/* jvp(f, primals, tangents): forward mode through dual tensors. Each call is
 * a level of its own, with a fresh id, so nested calls keep their tangents
 * apart (no perturbation confusion). */
static int bi_jvp(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_value f = argv[0], primals = argv[1], tangents = argv[2];
    *out = ad_none();
    bool single = primals.t == AD_TTENSOR;
    int n = single ? 1 : ad_is_seq(primals) ? (int)primals.u.l->len : -1;
    if (n < 0 || n > 64) return ad_error(S, "jvp(): 'primals' must be a tensor or a list of tensors");
    int nt = tangents.t == AD_TTENSOR ? 1 : ad_is_seq(tangents) ? (int)tangents.u.l->len : -1;
    if (nt != n) return ad_error(S, "jvp(): expected %d tangents (one per primal), got %d", n, nt < 0 ? 0 : nt);
    ad_fwlevel lv = {S->fw_ids + 1, S->fw_level + 1, S->fw_level ? S->fw_top : NULL};
    S->fw_ids++;
    ad_value duals[64] = {{0}};
    int rc = ADDSL_OK, made = 0;
    for (int i = 0; i < n && !rc; i++) {
        ad_value p = single ? primals : primals.u.l->items[i];
        ad_value tv = tangents.t == AD_TTENSOR ? tangents : tangents.u.l->items[i];
        if (p.t != AD_TTENSOR || tv.t != AD_TTENSOR) { rc = ad_error(S, "jvp(): primals and tangents must be tensors"); break; }
        ad_tensor *pt = p.u.tensor, *tt = tv.u.tensor;
        if (!ad_shape_equal(pt->ndim, pt->shape, tt->ndim, tt->shape)) { rc = ad_error(S, "jvp(): tangent %d has a different shape from its primal", i); break; }
        if (!(rc = jvp_dual(S, pt, tt, lv.id, &duals[made]))) made++;
    }
    ad_value res = ad_none();
    if (!rc) {
        const ad_fwlevel *top = S->fw_top;
        int level = S->fw_level;
        S->fw_top = &lv;
        S->fw_level = lv.depth;
        rc = ad_vm_call_value(S, f, made, duals, &res);
        S->fw_top = top;
        S->fw_level = level;
    }
    for (int i = 0; i < made; i++) ad_value_decref(S, duals[i]);
    if (!rc) rc = jvp_results(S, res, lv.id, out);
    ad_value_decref(S, res);
    return rc;
}

static int arg_op(ad_state *S, ad_value v, const char *fn, ad_opdef **op) {
    if (v.t != AD_TOP) return ad_error(S, "%s(): argument 'op' must be an op, not %s", fn, ad_type_name(v));
    *op = v.u.op;
    return ADDSL_OK;
}

static int bi_test_inputs(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_opdef *op = NULL;
    int rc = arg_op(S, argv[0], "test_inputs", &op);
    if (rc) return rc;
    if (op->target) op = op->target; /* an alias is its op: one set of inputs */
    /* Each call adds one input set: an op is checked on every shape family
     * its file lists, not only the last one. */
    if (op->test_inputs.t != AD_TLIST) {
        ad_list *sets = ad_list_new(S, AD_TLIST, 0);
        if (!sets) return ad_fail(S);
        ad_value_decref(S, op->test_inputs);
        op->test_inputs = ad_list_value(sets, AD_TLIST);
    }
    ad_value_incref(argv[1]);
    if (ad_list_push(S, op->test_inputs.u.l, argv[1])) return ad_fail(S);
    *out = ad_none();
    return ADDSL_OK;
}

static int bi_op_test_inputs(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_opdef *op = NULL;
    int rc = arg_op(S, argv[0], "op_test_inputs", &op);
    if (rc) return rc;
    if (op->target) op = op->target;
    rc = ad_library_load_tests(S);
    if (rc) return rc;
    *out = op->test_inputs;
    ad_value_incref(*out);
    return ADDSL_OK;
}

static int bi_op_params(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_opdef *op = NULL;
    int rc = arg_op(S, argv[0], "op_params", &op);
    if (rc) return rc;
    ad_list *l = ad_list_new(S, AD_TLIST, op->nparams);
    if (!l) return S->errcode;
    for (int i = 0; i < op->nparams; i++)
        if ((rc = ad_string_value(S, op->pnames[i], strlen(op->pnames[i]), &l->items[i]))) {
            ad_value_decref(S, ad_list_value(l, AD_TLIST));
            return rc;
        }
    *out = ad_list_value(l, AD_TLIST);
    return ADDSL_OK;
}

/* op_alias(op, name): what 'op NAME = OTHER' runs (grammar.y). */
static int bi_op_alias(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_opdef *op = NULL;
    int rc = arg_op(S, argv[0], "op_alias", &op);
    if (rc) return rc;
    if (argv[1].t != AD_TSTR) return ad_error(S, "op_alias(): argument 'name' must be a string, not %s", ad_type_name(argv[1]));
    rc = ad_op_alias(S, op, argv[1].u.s->data, out);
    return rc ? ad_fail(S) : ADDSL_OK;
}

static int bi_op_name(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_opdef *op = NULL;
    int rc = arg_op(S, argv[0], "op_name", &op);
    if (rc) return rc;
    return ad_string_value(S, op->name, strlen(op->name), out);
}

/* Whether the op has derivative formulas (as opposed to a composite body). */
static int bi_op_differentiable(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_opdef *op = NULL;
    int rc = arg_op(S, argv[0], "op_differentiable", &op);
    if (rc) return rc;
    bool any = false;
    for (int i = 0; i < op->nparams; i++) if (op->kind[i] == AD_PARAM_DIFF) any = true;
    *out = ad_bool(any);
    return ADDSL_OK;
}

/* op_info(op): what docs/ops.md and help() say of an op, read from its
 * definition so the table cannot drift from the library. */
static int info_str(ad_state *S, ad_dict *d, const char *key, const char *text) {
    ad_value v;
    int rc = ad_string_value(S, text, strlen(text), &v);
    if (rc) return rc;
    return ad_dict_set_str(S, d, key, v);
}

static int info_names(ad_state *S, ad_dict *d, const char *key, const ad_opdef *op, ad_param_kind kind) {
    ad_list *l = ad_list_new(S, AD_TLIST, 0);
    if (!l) return S->errcode;
    int rc = ad_dict_set_str(S, d, key, ad_list_value(l, AD_TLIST));
    for (int i = 0; !rc && i < op->nparams; i++) {
        if (op->kind[i] != (uint8_t)kind) continue;
        ad_value v;
        rc = ad_string_value(S, op->pnames[i], strlen(op->pnames[i]), &v);
        if (!rc) rc = ad_list_push(S, l, v);
    }
    return rc;
}

static int info_signature(ad_state *S, const ad_opdef *op, ad_buf *b) {
    int rc = ad_buf_printf(b, "%s(", op->name);
    int first_def = op->nparams - op->ndefaults;
    for (int i = 0; !rc && i < op->nparams; i++) {
        rc = ad_buf_printf(b, "%s%s%s", i ? ", " : "", op->sizes_param == i + 1 ? "*" : "", op->pnames[i]);
        if (!rc && i >= first_def) {
            rc = ad_buf_printf(b, "=");
            if (!rc) rc = ad_value_format(S, op->defaults[i - first_def], b, true);
        }
    }
    if (!rc) rc = ad_buf_printf(b, ")");
    return rc;
}

/* "alias_of": the name of the op an alias stands for, or none; "aliases": the
 * library's other names for this op (trace/op_ids.h), which docs/ops.md lists. */
static int info_aliases(ad_state *S, ad_dict *d, const ad_opdef *op) {
    ad_value of = ad_none();
    int rc = op->target ? ad_string_value(S, op->target->name, strlen(op->target->name), &of) : ADDSL_OK;
    if (!rc) rc = ad_dict_set_str(S, d, "alias_of", of);
    ad_list *l = rc ? NULL : ad_list_new(S, AD_TLIST, 0);
    if (!rc && !l) rc = S->errcode;
    if (!rc) rc = ad_dict_set_str(S, d, "aliases", ad_list_value(l, AD_TLIST));
    for (int i = 0, id; !rc && !op->target && op->id != AD_OP__NONE && i < ad_op_id_alias_count(); i++) {
        const char *a = ad_op_id_alias(i, &id);
        if (id != op->id) continue;
        ad_value v;
        rc = ad_string_value(S, a, strlen(a), &v);
        if (!rc) rc = ad_list_push(S, l, v);
    }
    return rc;
}

static int bi_op_info(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_opdef *op = NULL;
    int rc = arg_op(S, argv[0], "op_info", &op);
    if (rc) return rc;
    ad_dict *d = ad_dict_new(S);
    if (!d) return S->errcode;
    ad_buf b;
    ad_buf_init(&b, S);
    rc = info_signature(S, op, &b);
    if (!rc) rc = info_str(S, d, "name", op->name);
    if (!rc) rc = info_str(S, d, "signature", b.data ? b.data : "");
    ad_buf_free(&b);
    if (!rc) rc = info_names(S, d, "differentiable", op, AD_PARAM_DIFF);
    if (!rc) rc = info_names(S, d, "non_differentiable", op, AD_PARAM_NONDIFF);
    if (!rc) rc = info_names(S, d, "not_implemented", op, AD_PARAM_NOTIMPL);
    if (!rc) rc = ad_dict_set_str(S, d, "formulas", ad_bool(op->has_formulas));
    static const char *const jvp_names[] = {"none", "formula", "auto_element_wise", "auto_linear"};
    if (!rc) rc = info_str(S, d, "jvp", op->has_formulas ? jvp_names[op->jvp_kind] : "body");
    if (!rc) rc = ad_dict_set_str(S, d, "outputs", ad_int(op->nout));
    const char *file = "";
    for (size_t i = 0; i < ad_lib_ndefs; i++)
        if (strcmp(ad_lib_defs[i].name, op->name) == 0) file = ad_lib_names[ad_lib_defs[i].file];
    if (!rc) rc = info_str(S, d, "file", file);
    if (!rc) rc = info_aliases(S, d, op);
    /* A kernel forward states its device support; a composite runs where its parts run. */
    ad_value gpu = ad_none();
    if (op->forward.t == AD_TBUILTIN) gpu = ad_bool(op->forward.u.bi->on_device);
    if (!rc) rc = ad_dict_set_str(S, d, "gpu", gpu);
    if (rc) { ad_value_decref(S, ad_dict_value(d)); return rc; }
    *out = ad_dict_value(d);
    return ADDSL_OK;
}

static int cmp_op_names(const void *a, const void *b) {
    return strcmp(((const ad_value *)a)->u.op->name, ((const ad_value *)b)->u.op->name);
}

/* Every op bound to a global name, sorted by name; the library's internal
 * ones (formula helpers such as sigmoid_backward, index_get) only with internal=true. */
static int bi_all_ops(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    bool internal = false;
    int arc = ad_arg_bool(S, argv[0], "all_ops", "internal", &internal);
    if (arc) return arc;
    int lrc = ad_library_load_all(S);
    if (lrc) return lrc;
    ad_list *l = ad_list_new(S, AD_TLIST, 0);
    if (!l) return S->errcode;
    ad_globals *G = S->globals;
    for (int i = 0; i < G->n; i++) {
        if (!G->defined[i] || G->values[i].t != AD_TOP) continue;
        /* aliases: a second global for one op, or 'op NAME = OTHER' */
        if (strcmp(G->values[i].u.op->name, G->names[i]) != 0 || G->values[i].u.op->target) continue;
        if (!internal && ad_help_internal(G->names[i])) continue;
        ad_value_incref(G->values[i]);
        int rc = ad_list_push(S, l, G->values[i]);
        if (rc) { ad_value_decref(S, ad_list_value(l, AD_TLIST)); return rc; }
    }
    if (l->len > 1) qsort(l->items, (size_t)l->len, sizeof *l->items, cmp_op_names);
    *out = ad_list_value(l, AD_TLIST);
    return ADDSL_OK;
}

const ad_builtin_def ad_bi_autograd_defs[] = {
    {"backward", bi_backward, "tensors, grad_tensors=none, retain_graph=none, create_graph=false, inputs=none",
         "Accumulates the gradient of tensors into the .grad of the leaves it depends on "
         "(x.backward() for one). grad_tensors weights non-scalar outputs; retain_graph keeps the "
         "graph for a second call; create_graph records the backward pass for higher derivatives."
         "\nExample: let x = tensor(2.0, requires_grad=true); (x * x).backward(); x.grad"},
    {"grad", bi_grad, "outputs, inputs, grad_outputs=none, retain_graph=none, create_graph=false, allow_unused=false, materialize_grads=false",
         "The gradients of outputs with respect to inputs, returned as a list instead of "
         "accumulated (torch.autograd.grad); create_graph=true makes them differentiable again."
         "\nExample: let x = tensor(3.0, requires_grad=true); grad(x * x, [x])"},
    {"jvp", bi_jvp, "func, primals, tangents",
         "Forward mode: calls func(*primals) and returns (outputs, the Jacobian-vector product "
         "with tangents), through the ops' JVP formulas."
         "\nExample: jvp(fn(x) => x * x, [tensor(3.0)], [tensor(1.0)])"},
    {"test_inputs", bi_test_inputs, "op, fn"},
    {"op_test_inputs", bi_op_test_inputs, "op"},
    {"op_alias", bi_op_alias, "op, name",
         "The op under another name, as 'op NAME = OTHER' defines it: the same parameters, forward "
         "and derivatives, and the same grad_fn (torch's concat gives CatBackward0); its errors say name."
         "\nExample: let join = op_alias(cat, \"join\"); join([ones(1), zeros(1)])"},
    {"op_name", bi_op_name, "op",
         "The name of an op value."
         "\nExample: op_name(relu)   # \"relu\""},
    {"op_params", bi_op_params, "op",
         "The parameter names of an op, as a list."
         "\nExample: op_params(add)"},
    {"op_differentiable", bi_op_differentiable, "op",
         "True when some input of the op has a derivative (a VJP formula or a differentiable "
         "body)."
         "\nExample: op_differentiable(relu)"},
    {"op_info", bi_op_info, "op",
         "What addsl knows of an op as a dict: signature, differentiable inputs, JVP kind, "
         "formulas or body, outputs, GPU support."
         "\nExample: op_info(relu)[\"jvp\"]"},
    {"all_ops", bi_all_ops, "internal=false",
         "Every differentiable op, sorted by name; internal=true adds the library's internal "
         "helper ops (formula helpers such as sigmoid_backward)."
         "\nExample: len(all_ops())"},
    {NULL, NULL, NULL}
};

/* ---- grad_fn nodes ---- */

/* g.name(): a builtin because a method call is a call of the name in scope. */
static int bi_name(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    if (argv[0].t != AD_TGRADFN)
        return ad_error(S, "name(): argument 'self' must be a grad_fn (t.grad_fn), not %s", ad_type_name(argv[0]));
    char name[160];
    size_t n = ad_gradfn_name(argv[0].u.gf, name, sizeof name);
    return ad_string_value(S, name, n < sizeof name ? n : sizeof name - 1, out);
}

const ad_builtin_def ad_bi_gradfn_defs[] = {
    {"name", bi_name, "self",
         "The name of a grad_fn node (as torch's grad_fn.name()), e.g. MulBackward0."
         "\nExample: (tensor(2.0, requires_grad=true) * 3).grad_fn.name()"},
    {NULL, NULL, NULL}
};

/* ---- indexing as ops: t[...] and the accumulation its gradient needs ---- */

static int idx_list(ad_state *S, ad_value v, const char *fn, int *n, const ad_value **items) {
    if (!ad_is_seq(v)) return ad_error(S, "%s(): argument 'idx' must be a list of indices, not %s", fn, ad_type_name(v));
    *n = (int)v.u.l->len;
    *items = v.u.l->items;
    return ADDSL_OK;
}

static int bi_index_get(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    if (argv[0].t != AD_TTENSOR) return ad_error(S, "index_get(): argument 'self' must be a tensor, not %s", ad_type_name(argv[0]));
    int n = 0;
    const ad_value *items = NULL;
    int rc = idx_list(S, argv[1], "index_get", &n, &items);
    if (rc) return rc;
    return ad_bi_index_get(S, argv[0].u.tensor, n, items, out);
}

/* res[idx...] += value in place, for basic indices: they select a view
 * without repeated positions, so the addition goes through it. */
static int add_at_basic(ad_state *S, ad_tensor *res, int n, const ad_value *items, ad_value value) {
    ad_value view = ad_none(), sum = ad_none();
    int rc = ad_bi_index_get(S, res, n, items, &view);
    if (!rc && !ad_autograd_add_into_view(view, value)) {
        rc = ad_bi_add(S, view, value, &sum);
        if (!rc) rc = ad_tensor_copy_into(S, view.u.tensor, sum.u.tensor);
    }
    ad_value_decref(S, view);
    ad_value_decref(S, sum);
    return rc;
}

/* index_add_at(self, idx, value): a copy of self with value added at
 * self[idx...], accumulating where an advanced index repeats a position
 * (the gradient of indexing). */
static int bi_index_add_at(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    if (argv[0].t != AD_TTENSOR) return ad_error(S, "index_add_at(): argument 'self' must be a tensor, not %s", ad_type_name(argv[0]));
    ad_tensor *self = argv[0].u.tensor;
    int n = 0;
    const ad_value *items = NULL;
    int rc = idx_list(S, argv[1], "index_add_at", &n, &items);
    if (rc) return rc;
    if (ad_autograd_basic_index(n, items)) {
        ad_tensor *res = ad_tensor_clone(S, self);
        if (!res) return S->errcode;
        if ((rc = add_at_basic(S, res, n, items, argv[2]))) { ad_tensor_decref(S, res); return rc; }
        *out = ad_tensor_value(res);
        return ADDSL_OK;
    }
    if (ad_tensor_device(self) != AD_DEV_CPU || (argv[2].t == AD_TTENSOR && ad_tensor_device(argv[2].u.tensor)))
        return ad_error(S, "index_add_at(): indexing with tensors or lists is not implemented for CUDA tensors");
    /* Linear positions of the selected elements, by indexing an arange. */
    ad_tensor *lin = ad_tensor_empty(S, AD_INT64, self->ndim, self->shape);
    if (!lin) return S->errcode;
    int64_t *lp = ad_tensor_data(lin);
    for (int64_t i = 0; i < self->numel; i++) lp[i] = i;
    ad_value sel = ad_none();
    rc = ad_bi_index_get(S, lin, n, items, &sel);
    ad_tensor_decref(S, lin);
    if (rc) return rc;
    ad_tensor *pos = NULL, *val = NULL, *res = NULL, *e = NULL, *vc = NULL;
    rc = ad_arg_tensor(S, sel, "index_add_at", "idx", &pos);
    ad_value_decref(S, sel);
    if (!rc) rc = ad_arg_tensor(S, argv[2], "index_add_at", "value", &val);
    if (!rc && !(e = ad_tensor_expand(S, val, pos->ndim, pos->shape))) rc = S->errcode;
    if (!rc && !(vc = ad_tensor_contiguous(S, e))) rc = S->errcode;
    ad_tensor *pc = NULL;
    if (!rc && !(pc = ad_tensor_contiguous(S, pos))) rc = S->errcode;
    if (!rc) {
        ad_dtype dt = ad_promote(self->dtype, val->dtype);
        ad_tensor *base = ad_tensor_to(S, self, dt);
        if (!base || !(res = ad_tensor_clone(S, base))) rc = S->errcode;
        ad_tensor_decref(S, base);
    }
    if (!rc) {
        const int64_t *pp = ad_tensor_data(pc);
        for (int64_t i = 0; i < pc->numel; i++)
            ad_tensor_set_flat(res, pp[i], ad_tensor_get_flat(res, pp[i]) + ad_tensor_get_flat(vc, i));
    }
    ad_tensor_decref(S, pos); ad_tensor_decref(S, val); ad_tensor_decref(S, e);
    ad_tensor_decref(S, vc); ad_tensor_decref(S, pc);
    if (rc) { ad_tensor_decref(S, res); return rc; }
    *out = ad_tensor_value(res);
    return ADDSL_OK;
}

/* rs_index_backward_zeros(grad, shape, dtype, idx): zeros of 'shape' with grad added at
 * [idx...], the gradient of indexing on the CPU (lib/helpers_rs.ad index_backward). For
 * basic indices with no graph to build, grad is added into the fresh zeros in place:
 * index_add_at would clone them first (a slice of an LSTM's gate product took 10% of its
 * backward this way). Otherwise it is index_add_at on the zeros, recorded as usual. */
static int bi_index_backward_zeros(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int ndim = 0, dt = AD_FLOAT32, n = 0;
    int64_t shape[AD_MAX_DIMS];
    const ad_value *items = NULL;
    int rc = ad_arg_shape(S, argv[1], "rs_index_backward_zeros", "shape", &ndim, shape);
    if (!rc) rc = ad_arg_dtype(S, argv[2], "rs_index_backward_zeros", "dtype", &dt);
    if (!rc) rc = idx_list(S, argv[3], "rs_index_backward_zeros", &n, &items);
    if (rc) return rc;
    ad_tensor *res = ad_tensor_zeros(S, (ad_dtype)dt, ndim, shape);
    if (!res) return S->errcode;
    if (!S->grad_enabled && ad_autograd_basic_index(n, items)) {
        if ((rc = add_at_basic(S, res, n, items, argv[0]))) { ad_tensor_decref(S, res); return rc; }
        *out = ad_tensor_value(res);
        return ADDSL_OK;
    }
    ad_value args[3] = {ad_tensor_value(res), argv[3], argv[0]};
    rc = ad_autograd_call_global(S, "index_add_at", 3, args, out);
    ad_tensor_decref(S, res);
    return rc;
}

/* rs_tracing(): whether compile() or export_c is tracing, so that a formula takes the
 * path of ops the tracer records (index_add_at) over a builtin it would keep whole. */
static int bi_tracing(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argv; (void)argc;
    *out = ad_bool(S->trace != NULL);
    return ADDSL_OK;
}

const ad_builtin_def ad_bi_autograd_index_defs[] = {
    {"index_get", bi_index_get, "self, idx"},
    {"index_add_at", bi_index_add_at, "self, idx, value"},
    {"rs_index_backward_zeros", bi_index_backward_zeros, "grad, shape, dtype, idx"},
    {"rs_tracing", bi_tracing, ""},
    {NULL, NULL, NULL}
};
