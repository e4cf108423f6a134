/* autograd/op.c: op records, their construction from compiled templates, and the op
 * call: bind, run the forward (under no_grad when the op has formulas),
 * record one graph node, and propagate forward-mode tangents. */
#include "autograd/op.h"

#include "trace/op_ids.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../builtins/builtins.h"
#include "autograd/engine.h"
#include "autograd/library.h"
#include "state.h"
#include "repl/suggest.h"
#include "tensor/tensor.h"
#include "trace/trace.h"

int ad_op_formula_nargs(int nparams, int nout, bool named) {
    return nparams + 3 + nout + (named ? 2 * nout : 0) + 1;
}

static char *dupstr(ad_state *S, const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s);
    char *d = ad_malloc(S, n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

static void free_names(ad_state *S, char **names, int n) {
    if (!names) return;
    for (int i = 0; i < n; i++) ad_free(S, names[i]);
    ad_free(S, names);
}

static char **dup_names(ad_state *S, char *const *names, int n, bool *ok) {
    *ok = true;
    if (!names) return NULL;
    char **d = ad_calloc(S, (size_t)(n ? n : 1), sizeof *d);
    if (!d) { *ok = false; return NULL; }
    for (int i = 0; i < n; i++)
        if (!(d[i] = dupstr(S, names[i]))) { free_names(S, d, n); *ok = false; return NULL; }
    return d;
}

void ad_optemplate_free(ad_state *S, ad_optemplate *t) {
    if (!t) return;
    ad_free(S, t->name);
    free_names(S, t->pnames, t->nparams);
    free_names(S, t->outnames, t->nout);
    for (int i = 0; i < AD_OP_MAX_PARAMS; i++) ad_free(S, t->notimpl[i]);
    ad_free(S, t);
}

void ad_opdef_free(ad_state *S, ad_opdef *op) {
    ad_free(S, op->name);
    free_names(S, op->pnames, op->nparams);
    free_names(S, op->outnames, op->nout);
    for (int i = 0; i < AD_OP_MAX_PARAMS; i++) ad_free(S, op->notimpl[i]);
    if (op->defaults) for (int i = 0; i < op->ndefaults; i++) ad_value_decref(S, op->defaults[i]);
    ad_free(S, op->defaults);
    ad_value_decref(S, op->forward);
    if (op->vjp) for (int i = 0; i < op->nvjp; i++) ad_value_decref(S, op->vjp[i].fn);
    ad_free(S, op->vjp);
    for (int i = 0; i < AD_OP_MAX_OUTS; i++) ad_value_decref(S, op->jvp[i]);
    ad_value_decref(S, op->test_inputs);
    if (op->target) { ad_value t; t.t = AD_TOP; t.u.op = op->target; ad_value_decref(S, t); }
    if (op->result_names) ad_value_decref(S, ad_list_value(op->result_names, AD_TTUPLE));
    ad_free(S, op);
}

size_t ad_op_public_name(const ad_opdef *op, char *buf, size_t size) {
    if (op->target) op = op->target;
    size_t n = strlen(op->name);
    static const char *const forms[] = {"_dim", "_all"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        size_t k = strlen(forms[i]);
        if (n > k && strcmp(op->name + n - k, forms[i]) == 0) { n -= k; break; }
    }
    snprintf(buf, size, "%.*s", (int)n, op->name);
    return n < size ? n : size - 1;
}

static bool reads(const ad_proto *p, int i) {
    return i < p->nparams && strncmp(p->pnames[i], AD_FORMULA_UNUSED, strlen(AD_FORMULA_UNUSED)) != 0;
}

/* The AD_VJP_USES_* bits of a VJP closure, from the parameter names the
 * desugarer gave it (see ad_op_formula_nargs for their order). */
static unsigned vjp_uses(const ad_opdef *op, ad_value fn) {
    unsigned all = AD_VJP_USES_GRADS | AD_VJP_USES_GRADS_LIST | AD_VJP_USES_RESULT_TUPLE | AD_VJP_USES_MASK;
    if (fn.t != AD_TFUNC) return all;
    const ad_proto *p = fn.u.fn->p;
    int b = op->nparams, no = op->nout;
    if (p->nparams != ad_op_formula_nargs(b, no, op->outnames != NULL)) return all;
    unsigned u = 0;
    if (reads(p, b)) u |= AD_VJP_USES_GRADS;
    if (reads(p, b + 1)) u |= AD_VJP_USES_GRADS | AD_VJP_USES_GRADS_LIST;
    if (reads(p, b + 2) && no > 1) u |= AD_VJP_USES_RESULT_TUPLE;
    if (op->outnames)
        for (int k = 0; k < no; k++) if (reads(p, b + 3 + 2 * no + k)) u |= AD_VJP_USES_GRADS;
    if (reads(p, p->nparams - 1)) u |= AD_VJP_USES_MASK;
    return u;
}

/* Bit i: the VJP closure mentions parameter i (its values or only its
 * .shape); every bit when the closure's names do not tell. */
static uint32_t vjp_mentions(const ad_opdef *op, ad_value fn) {
    int b = op->nparams;
    uint32_t all = b >= 32 ? UINT32_MAX : ((uint32_t)1 << b) - 1;
    if (fn.t != AD_TFUNC) return all;
    const ad_proto *p = fn.u.fn->p;
    if (p->nparams != ad_op_formula_nargs(b, op->nout, op->outnames != NULL)) return all;
    uint32_t m = 0;
    for (int i = 0; i < b; i++) if (reads(p, i)) m |= (uint32_t)1 << i;
    return m;
}

int ad_op_new(ad_state *S, const ad_optemplate *t, const ad_value *regs, ad_value *out) {
    ad_opdef *op = ad_calloc(S, 1, sizeof *op);
    if (!op) return ADDSL_ENOMEM;
    op->hdr.refcount = 1;
    op->forward = ad_none();
    op->test_inputs = ad_none();
    for (int i = 0; i < AD_OP_MAX_OUTS; i++) op->jvp[i] = ad_none();
    ad_value v; v.t = AD_TOP; v.u.op = op;
    bool ok1, ok2;
    op->name = dupstr(S, t->name);
    op->id = op->name ? ad_op_id_of(op->name) : AD_OP__NONE;
    op->nparams = t->nparams;
    op->sizes_param = t->sizes_param;
    op->pnames = dup_names(S, t->pnames, t->nparams, &ok1);
    op->nout = t->nout;
    op->outnames = dup_names(S, t->outnames, t->nout, &ok2);
    if (!op->name || !ok1 || !ok2) { ad_value_decref(S, v); return ADDSL_ENOMEM; }
    if (op->outnames) {
        char type[128];
        ad_op_public_name(op, type, sizeof type);
        op->result_names = ad_names_new(S, type, op->nout, (const char *const *)op->outnames);
        if (!op->result_names) { ad_value_decref(S, v); return ADDSL_ENOMEM; }
    }
    memcpy(op->kind, t->kind, sizeof op->kind);
    for (int i = 0; i < t->nparams; i++)
        if (t->notimpl[i] && !(op->notimpl[i] = dupstr(S, t->notimpl[i]))) { ad_value_decref(S, v); return ADDSL_ENOMEM; }
    memcpy(op->out_diff, t->out_diff, sizeof op->out_diff);
    op->has_formulas = t->has_formulas;
    op->reads_result = t->vjp_reads_result != 0;
    op->jvp_kind = t->jvp_kind;
    int r = 0;
    op->forward = regs[r++];
    ad_value_incref(op->forward);
    op->nvjp = t->nvjp;
    if (t->nvjp) {
        op->vjp = ad_calloc(S, (size_t)t->nvjp, sizeof *op->vjp);
        if (!op->vjp) { ad_value_decref(S, v); return ADDSL_ENOMEM; }
        for (int i = 0; i < t->nvjp; i++) {
            op->vjp[i].nnames = t->vjp_nnames[i];
            memcpy(op->vjp[i].params, t->vjp_params[i], sizeof op->vjp[i].params);
            op->vjp[i].fn = regs[r++];
            ad_value_incref(op->vjp[i].fn);
            op->vjp[i].uses = vjp_uses(op, op->vjp[i].fn);
            if (op->vjp[i].fn.t == AD_TFUNC)
                ad_formula_fast_plan(op->vjp[i].fn.u.fn->p, ad_op_formula_nargs(op->nparams, op->nout, op->outnames != NULL),
                                     &op->vjp[i].fast);
            op->vjp[i].reads = t->vjp_reads[i];
            op->vjp[i].reads_result = (t->vjp_reads_result >> i) & 1u;
            op->reads_args |= op->vjp[i].reads;
            op->mentions_args |= vjp_mentions(op, op->vjp[i].fn);
        }
    }
    for (int i = 0; i < t->njvp; i++) { op->jvp[i] = regs[r++]; ad_value_incref(op->jvp[i]); }
    op->ndefaults = t->ndefaults;
    if (t->ndefaults) {
        op->defaults = ad_calloc(S, (size_t)t->ndefaults, sizeof(ad_value));
        if (!op->defaults) { op->ndefaults = 0; ad_value_decref(S, v); return ADDSL_ENOMEM; }
        for (int i = 0; i < t->ndefaults; i++) { op->defaults[i] = regs[r++]; ad_value_incref(op->defaults[i]); }
    }
    *out = v;
    return ADDSL_OK;
}

/* The copy holds its own names and references: freeing it is freeing any op. */
int ad_op_alias(ad_state *S, ad_opdef *op, const char *name, ad_value *out) {
    if (op->target) op = op->target;
    ad_opdef *a = ad_malloc(S, sizeof *a);
    if (!a) return ADDSL_ENOMEM;
    *a = *op;
    a->hdr.refcount = 1;
    a->target = op;
    op->hdr.refcount++;
    ad_value_incref(a->forward);
    for (int i = 0; i < AD_OP_MAX_OUTS; i++) ad_value_incref(a->jvp[i]);
    if (a->result_names) ad_value_incref(ad_list_value(a->result_names, AD_TTUPLE));
    a->test_inputs = ad_none();
    /* What failed to copy is NULL (or none), which ad_opdef_free skips. */
    a->name = NULL; a->pnames = NULL; a->outnames = NULL; a->defaults = NULL; a->vjp = NULL;
    int nvjp = a->nvjp, ndef = a->ndefaults;
    a->nvjp = 0; a->ndefaults = 0;
    for (int i = 0; i < AD_OP_MAX_PARAMS; i++) a->notimpl[i] = NULL;
    ad_value v; v.t = AD_TOP; v.u.op = a;
    bool ok1, ok2;
    a->name = dupstr(S, name);
    a->pnames = dup_names(S, op->pnames, op->nparams, &ok1);
    a->outnames = dup_names(S, op->outnames, op->nout, &ok2);
    if (!a->name || !ok1 || !ok2) { ad_value_decref(S, v); return ADDSL_ENOMEM; }
    for (int i = 0; i < op->nparams; i++)
        if (op->notimpl[i] && !(a->notimpl[i] = dupstr(S, op->notimpl[i]))) { ad_value_decref(S, v); return ADDSL_ENOMEM; }
    if (nvjp) {
        if (!(a->vjp = ad_calloc(S, (size_t)nvjp, sizeof *a->vjp))) { ad_value_decref(S, v); return ADDSL_ENOMEM; }
        memcpy(a->vjp, op->vjp, (size_t)nvjp * sizeof *a->vjp);
        for (int i = 0; i < nvjp; i++) ad_value_incref(a->vjp[i].fn);
        a->nvjp = nvjp;
    }
    if (ndef) {
        if (!(a->defaults = ad_calloc(S, (size_t)ndef, sizeof(ad_value)))) { ad_value_decref(S, v); return ADDSL_ENOMEM; }
        for (int i = 0; i < ndef; i++) { a->defaults[i] = op->defaults[i]; ad_value_incref(a->defaults[i]); }
        a->ndefaults = ndef;
    }
    *out = v;
    return ADDSL_OK;
}

/* ---- the call ---- */

/* gather(t, dim) without an index is what an MPI user writes for the
 * collective; torch.gather keeps the name, so point at the collective's. */
static const char *missing_hint(const char *op, const char *param) {
    if (!strcmp(op, "gather") && !strcmp(param, "index"))
        return " (to gather a tensor from every MPI rank, use all_gather(t, dim))";
    return "";
}

static int bind(ad_state *S, const ad_opdef *op, const ad_value *args, int nargs, const ad_list *kw, ad_value *slots) {
    int nkw = kw ? (int)kw->len : 0;
    int npos = nargs - nkw, np = op->nparams;
    if (npos > np) return ad_error(S, "%s() takes %d argument%s but %d were given", op->name, np, np == 1 ? "" : "s", npos);
    bool set[AD_OP_MAX_PARAMS];
    memset(set, 0, (size_t)np);
    for (int i = 0; i < npos; i++) { slots[i] = args[i]; set[i] = true; }
    for (int k = 0; k < nkw; k++) {
        const char *name = kw->items[k].u.s->data;
        int j = ad_param_find(np, (const char *const *)op->pnames, name);
        if (j < 0) return ad_error_unknown_kw(S, op->name, name, (const char *const *)op->pnames, np);
        if (set[j]) return ad_error(S, "%s() got multiple values for argument '%s'", op->name, name);
        slots[j] = args[npos + k];
        set[j] = true;
    }
    int first_def = np - op->ndefaults;
    for (int j = 0; j < np; j++) {
        if (set[j]) continue;
        if (j < first_def)
            return ad_error(S, "%s() missing required argument '%s'%s", op->name, op->pnames[j], missing_hint(op->name, op->pnames[j]));
        slots[j] = op->defaults[j - first_def];
    }
    return ADDSL_OK;
}

static bool is_tensor_param(const ad_opdef *op, int i) { return op->kind[i] != AD_PARAM_VALUE; }

static bool has_tangent(ad_value v) {
    if (v.t == AD_TTENSOR) return v.u.tensor->fw_grad != NULL;
    if (ad_is_seq(v))
        for (int64_t i = 0; i < v.u.l->len; i++)
            if (v.u.l->items[i].t == AD_TTENSOR && v.u.l->items[i].u.tensor->fw_grad) return true;
    return false;
}

static bool any_tangent(ad_state *S, const ad_opdef *op, const ad_value *slots) {
    if (S->fw_level == 0) return false;
    for (int i = 0; i < op->nparams; i++)
        if (is_tensor_param(op, i) && has_tangent(slots[i])) return true;
    return false;
}

/* The outputs as an array of tensors (a single output or a tuple of them). */
static int outputs_of(ad_state *S, const ad_opdef *op, ad_value out, ad_tensor **outs) {
    if (op->nout == 1) {
        if (out.t != AD_TTENSOR) return 0;
        outs[0] = out.u.tensor;
        return 1;
    }
    if (!ad_is_seq(out) || out.u.l->len != op->nout)
        return -ad_error(S, "op '%s' declares %d outputs but its forward returned %s", op->name, op->nout, ad_type_name(out));
    for (int i = 0; i < op->nout; i++) {
        if (out.u.l->items[i].t != AD_TTENSOR) { outs[i] = NULL; continue; }
        outs[i] = out.u.l->items[i].u.tensor;
    }
    return op->nout;
}

/* A tensor that no one else holds, so grad_fn and fw_grad can be set on it. */
static ad_tensor *own_header(ad_state *S, ad_tensor *t) {
    if (t->refcount == 1 && !t->grad_fn && !t->fw_grad && !t->requires_grad) { ad_tensor_incref(t); return t; }
    ad_tensor *a = ad_tensor_as_strided(S, t, t->ndim, t->shape, t->strides, t->offset);
    return a;
}

/* Replaces output tensors shared with others (e.g. an input returned as is)
 * by fresh headers, inside 'out'. */
static int privatize_outputs(ad_state *S, const ad_opdef *op, ad_value *out) {
    if (op->nout == 1) {
        if (out->t != AD_TTENSOR) return ADDSL_OK;
        ad_tensor *t = own_header(S, out->u.tensor);
        if (!t) return S->errcode;
        ad_value_decref(S, *out);
        *out = ad_tensor_value(t);
        return ADDSL_OK;
    }
    ad_list *l = out->u.l;
    if (l->hdr.refcount > 1) {
        ad_list *c = ad_list_copy(S, l, out->t);
        if (!c) return S->errcode;
        ad_value_decref(S, *out);
        *out = ad_list_value(c, out->t);
        l = c;
    }
    for (int64_t i = 0; i < l->len; i++) {
        if (l->items[i].t != AD_TTENSOR) continue;
        ad_tensor *t = own_header(S, l->items[i].u.tensor);
        if (!t) return S->errcode;
        ad_value_decref(S, l->items[i]);
        l->items[i] = ad_tensor_value(t);
    }
    return ADDSL_OK;
}

static int call_forward(ad_state *S, const ad_opdef *op, const ad_value *slots, ad_value *out) {
    return ad_vm_call_value(S, op->forward, op->nparams, slots, out);
}

/* The tangent of an argument at 'level' (zeros when it has none; a number's
 * is 0, a list argument of cat/stack gets a list of tangents). */
static int tangent_or_zeros(ad_state *S, ad_value v, uint64_t level, ad_value *out) {
    if (ad_is_seq(v)) {
        ad_list *l = ad_list_new(S, v.t, v.u.l->len);
        if (!l) return S->errcode;
        for (int64_t i = 0; i < v.u.l->len; i++) {
            int rc = tangent_or_zeros(S, v.u.l->items[i], level, &l->items[i]);
            if (rc) { ad_value_decref(S, ad_list_value(l, v.t)); return rc; }
        }
        *out = ad_list_value(l, v.t);
        return ADDSL_OK;
    }
    if (v.t != AD_TTENSOR) { *out = ad_num(0); return ADDSL_OK; }
    ad_tensor *t = v.u.tensor, *tan = ad_tensor_tangent(t, level);
    if (tan) { ad_tensor_incref(tan); *out = ad_tensor_value(tan); return ADDSL_OK; }
    ad_tensor *z = ad_tensor_full_like(S, t, 0.0);
    if (!z) return S->errcode;
    *out = ad_tensor_value(z);
    return ADDSL_OK;
}

static bool has_tangent_at(ad_value v, uint64_t level) {
    if (v.t == AD_TTENSOR) return ad_tensor_tangent(v.u.tensor, level) != NULL;
    if (ad_is_seq(v))
        for (int64_t i = 0; i < v.u.l->len; i++)
            if (v.u.l->items[i].t == AD_TTENSOR && ad_tensor_tangent(v.u.l->items[i].u.tensor, level)) return true;
    return false;
}

/* A copy of a dual tensor with no graph at any level, for a node's saved output:
 * the tangent's own graph may hold the output, and a graph-carrying tangent
 * there would close a reference cycle. */
static ad_tensor *detached_dual(ad_state *S, ad_tensor *t) {
    ad_tensor *d = ad_tensor_alias(S, t);
    if (!d) return NULL;
    for (const ad_tangent *e = t->fw_grad; e; e = e->next) {
        ad_tensor *dt = detached_dual(S, e->t);
        int rc = dt ? ad_tensor_set_tangent(S, d, e->level, dt) : S->errcode;
        ad_tensor_decref(S, dt);
        if (rc) { ad_tensor_decref(S, d); return NULL; }
    }
    return d;
}

/* A tangent of another shape or dtype than its output, converted. One that is
 * itself differentiable (outer levels, a graph) is broadcast by the 'add' op,
 * which keeps that. Returns a new reference or NULL. */
static ad_tensor *fit_tangent(ad_state *S, ad_tensor *t, const ad_tensor *out) {
    bool same_shape = ad_shape_equal(t->ndim, t->shape, out->ndim, out->shape);
    if (same_shape && t->dtype == out->dtype) { ad_tensor_incref(t); return t; }
    ad_tensor *z = ad_tensor_full_like(S, out, 0.0);
    if (!z) return NULL;
    ad_tensor *r = NULL;
    /* Traced, the broadcast is an op call too: a copy made here would be a constant of the program. */
    bool keep_graph = t->fw_grad || t->grad_fn || ad_trace_on(S);
    if (keep_graph && ad_library_ensure_operator(S, AD_OPER_ADD)) { ad_tensor_decref(S, z); return NULL; }
    if (keep_graph && S->op_add) {
        ad_value sum = ad_none();
        int rc = ad_op_call(S, S->op_add, (ad_value[]){ad_tensor_value(t), ad_tensor_value(z)}, 2, NULL, &sum);
        ad_tensor_decref(S, z);
        if (rc) return NULL;
        if (sum.t != AD_TTENSOR) { ad_value_decref(S, sum); ad_error(S, "jvp: a tangent must be a tensor"); return NULL; }
        r = sum.u.tensor;
    } else {
        int rc = ad_tensor_copy_into(S, z, t); /* broadcasts and converts */
        if (rc) { ad_tensor_decref(S, z); return NULL; }
        r = z;
    }
    if (r->dtype == out->dtype) return r;
    if (ad_trace_outside_seam(S, r, "a tangent converted to its output's dtype")) { ad_tensor_decref(S, r); return NULL; }
    ad_tensor *c = ad_tensor_to(S, r, out->dtype);
    ad_tensor_decref(S, r);
    return c;
}

static int set_tangent(ad_state *S, ad_tensor *out, uint64_t level, ad_value tan) {
    if (tan.t == AD_TNONE) return ADDSL_OK;
    ad_tensor *t0 = NULL;
    int rc = ad_arg_tensor(S, tan, "jvp", "tangent", &t0);
    if (rc) return rc;
    ad_tensor *t = fit_tangent(S, t0, out);
    ad_tensor_decref(S, t0);
    if (!t) return S->errcode;
    rc = ad_tensor_set_tangent(S, out, level, t);
    /* The node's saved copy of this output ('result' in formulas) carries
     * the tangent too, so forward-over-reverse differentiates through it. */
    if (!rc && out->grad_fn && !out->grad_fn_weak && out->grad_fn->saves_outs && !out->grad_fn->released) {
        ad_tensor *saved = ad_node_out(out->grad_fn, out->output_nr);
        if (saved) {
            ad_tensor *d = detached_dual(S, t);
            rc = d ? ad_tensor_set_tangent(S, saved, level, d) : S->errcode;
            ad_tensor_decref(S, d);
        }
    }
    ad_tensor_decref(S, t);
    return rc;
}

/* An output as a JVP formula of 'level' sees it: an alias in the output's
 * graph (reverse over forward differentiates through it), with its tangents
 * of the outer levels. An alias, not the output, since the tangent computed
 * from it is stored on the output; it links to the output's node, which does
 * not hold the output, so no reference cycle forms. */
static ad_value plain_output(ad_state *S, ad_tensor *o, uint64_t level, int *rc) {
    if (!o || *rc) return ad_none();
    ad_tensor *a = ad_tensor_alias(S, o);
    if (!a) { *rc = S->errcode; return ad_none(); }
    if (o->grad_fn && !o->grad_fn_weak) {
        a->grad_fn = o->grad_fn; a->grad_fn->refcount++; a->output_nr = o->output_nr;
        a->requires_grad = o->requires_grad;
    }
    int r = ad_tensor_copy_tangents(S, a, o, level);
    if (r) { ad_tensor_decref(S, a); *rc = r; return ad_none(); }
    return ad_tensor_value(a);
}

static void set_all_tangents(ad_state *S, const ad_opdef *op, ad_tensor **outs, int n, uint64_t level, ad_value tan, int *rc) {
    ad_tensor *touts[AD_OP_MAX_OUTS];
    int m = outputs_of(S, op, tan, touts);
    if (m < 0) { *rc = -m; return; }
    for (int k = 0; k < n && k < m && !*rc; k++)
        if (outs[k] && touts[k]) *rc = set_tangent(S, outs[k], level, ad_tensor_value(touts[k]));
}

static bool same_default(ad_value a, ad_value b) {
    if (a.t != b.t) return false;
    switch (a.t) {
    case AD_TNONE: return true;
    case AD_TBOOL: return a.u.b == b.u.b;
    case AD_TINT: case AD_TNUM: return a.u.n == b.u.n;
    default: return false;
    }
}

/* The bound arguments less the trailing ones that hold their defaults: the
 * call a linear JVP makes reads as the forward's (a whole-tensor sum stays
 * sum(t), which the compiled program's plan fuses). */
static int given_params(const ad_opdef *op, const ad_value *args) {
    int n = op->nparams, first_def = op->nparams - op->ndefaults;
    while (n > first_def && n > 0 && same_default(args[n - 1], op->defaults[n - 1 - first_def])) n--;
    return n;
}

/* The JVP of one level. The primals passed to the formula keep their
 * tangents: only the outer levels are active while it runs, so its own ops
 * carry those (the mixed terms of forward-over-forward) and this level's
 * tangents are ignored there. Returns the number of arguments to release. */
static int jvp_of_level(ad_state *S, ad_opdef *op, const ad_value *slots, ad_tensor **outs, int n,
                        uint64_t level, ad_value *args, int *rc) {
    int na = 0;
    switch (op->jvp_kind) {
    case AD_JVP_NONE:
        *rc = ad_error(S, "op '%s' has no forward-mode formula (result: ...)", op->name);
        return 0;
    case AD_JVP_LINEAR: {
        /* Linear in the differentiable inputs only: indices and other
         * non-differentiable tensors keep their primal values. The op itself
         * (not its bare forward) so that outer levels and the graph follow. */
        for (int i = 0; i < op->nparams && !*rc; i++) {
            if (op->kind[i] == AD_PARAM_DIFF) *rc = tangent_or_zeros(S, slots[i], level, &args[na++]);
            else { args[na++] = slots[i]; ad_value_incref(slots[i]); }
        }
        ad_value tan = ad_none();
        if (!*rc) *rc = ad_op_call(S, op, args, given_params(op, args), NULL, &tan);
        if (!*rc) set_all_tangents(S, op, outs, n, level, tan, rc);
        ad_value_decref(S, tan);
        return na;
    }
    case AD_JVP_ELEMENTWISE: {
        /* The VJP of an element-wise op applied to the tangent is its JVP. */
        int p = -1, e = -1;
        for (int i = 0; i < op->nparams; i++) if (op->kind[i] == AD_PARAM_DIFF) p = i;
        for (int i = 0; i < op->nvjp; i++) if (op->vjp[i].params[0] == p) e = i;
        if (e < 0) { *rc = ad_error(S, "op '%s': auto_element_wise needs a VJP formula", op->name); return 0; }
        int total = ad_op_formula_nargs(op->nparams, op->nout, op->outnames != NULL);
        for (int i = 0; i < total; i++) args[i] = ad_none();
        for (int i = 0; i < op->nparams; i++) { args[i] = slots[i]; ad_value_incref(slots[i]); }
        *rc = tangent_or_zeros(S, slots[p], level, &args[op->nparams]);          /* grad */
        if (!*rc) args[op->nparams + 2] = plain_output(S, outs[0], level, rc); /* result */
        ad_value tan = ad_none();
        if (!*rc) *rc = ad_vm_call_value(S, op->vjp[e].fn, total, args, &tan);
        if (!*rc && outs[0]) *rc = set_tangent(S, outs[0], level, tan);
        ad_value_decref(S, tan);
        return total;
    }
    case AD_JVP_FORMULA: {
        for (int i = 0; i < op->nparams && !*rc; i++) {
            args[na++] = slots[i]; ad_value_incref(slots[i]);   /* P_p, or a plain parameter */
            if (is_tensor_param(op, i)) *rc = tangent_or_zeros(S, slots[i], level, &args[na++]);
        }
        if (*rc) return na;
        int rbase = na;
        args[na++] = op->nout == 1 ? plain_output(S, outs[0], level, rc) : ad_none();
        for (int k = 0; k < op->nout; k++) args[na++] = plain_output(S, outs[k], level, rc);
        if (op->outnames)
            for (int k = 0; k < op->nout; k++) { args[na] = args[rbase + 1 + k]; ad_value_incref(args[na]); na++; }
        for (int k = 0; k < op->nout && !*rc; k++) {
            if (!outs[k] || op->jvp[k].t == AD_TNONE) continue;
            ad_value tan = ad_none();
            *rc = ad_vm_call_value(S, op->jvp[k], na, args, &tan);
            if (!*rc) *rc = set_tangent(S, outs[k], level, tan);
            ad_value_decref(S, tan);
        }
        return na;
    }
    }
    return 0;
}

/* The levels from 'lv' outwards, outermost first: a formula of level L sees
 * the output ('result') with its tangents of the levels outside L already
 * set. While it runs only those outer levels are active, so the formula's
 * own ops carry them (the mixed terms of forward-over-forward) and ignore
 * this level's tangents. */
static int propagate_from(ad_state *S, ad_opdef *op, const ad_value *slots, ad_tensor **outs, int n,
                          const ad_fwlevel *lv) {
    if (!lv) return ADDSL_OK;
    int rc = propagate_from(S, op, slots, outs, n, lv->outer);
    bool needed = false;
    for (int i = 0; i < op->nparams && !needed && !rc; i++)
        needed = is_tensor_param(op, i) && has_tangent_at(slots[i], lv->id);
    if (!needed) return rc;
    /* A tangent on a not_implemented input has no formula to go through:
     * an error, as the reverse mode gives, not a silent zero. */
    for (int i = 0; i < op->nparams; i++)
        if (op->kind[i] == AD_PARAM_NOTIMPL && has_tangent_at(slots[i], lv->id))
            return ad_error(S, "the derivative of op '%s' for input '%s' is not implemented: %s", op->name,
                            op->pnames[i], op->notimpl[i] ? op->notimpl[i] : "");
    const ad_fwlevel *top = S->fw_top;
    int level = S->fw_level;
    S->fw_top = lv->outer;
    S->fw_level = lv->outer ? lv->outer->depth : 0;
    ad_value args[AD_OP_MAX_PARAMS * 2 + AD_OP_MAX_OUTS * 3 + 4];
    int na = jvp_of_level(S, op, slots, outs, n, lv->id, args, &rc);
    for (int i = 0; i < na; i++) ad_value_decref(S, args[i]);
    S->fw_top = top;
    S->fw_level = level;
    return rc;
}

/* Forward mode: the outputs' tangents at each active level whose tangents
 * the inputs carry. */
static int propagate_tangents(ad_state *S, ad_opdef *op, const ad_value *slots, ad_value out) {
    ad_tensor *outs[AD_OP_MAX_OUTS];
    int n = outputs_of(S, op, out, outs);
    if (n <= 0) return n < 0 ? -n : ADDSL_OK;
    return propagate_from(S, op, slots, outs, n, S->fw_top);
}

static int op_call(ad_state *S, ad_opdef *op, const ad_value *args, int nargs, const ad_list *kw, ad_value *out) {
    ad_value slots[AD_OP_MAX_PARAMS];
    *out = ad_none();
    int rc = bind(S, op, args, nargs, kw, slots);
    if (rc) return rc;
    if (!op->has_formulas) return call_forward(S, op, slots, out);
    bool record = ad_autograd_needs_record(S, op, slots);
    bool tangents = any_tangent(S, op, slots);
    /* A trace that records the JVP formulas itself (vm/trace/trace.c) runs this
     * call one level down: the tangents are its records, not this call's. */
    bool deferred = S->trace && S->trace->defer_tangents;
    if (deferred) S->trace->defer_tangents = false;
    bool grad = S->grad_enabled;
    int level = S->fw_level;
    S->grad_enabled = false;
    S->fw_level = 0;
    rc = call_forward(S, op, slots, out);
    S->grad_enabled = grad;
    S->fw_level = level;
    if (rc) return rc;
    /* The op seam does not trust its forward: an op with several outputs must
     * get a list or tuple of that many (a builtin given unexpected arguments
     * may return one tensor), else the op's own error, never a crash later. */
    if (op->nout > 1 && (!ad_is_seq(*out) || out->u.l->len != op->nout)) {
        rc = ad_error(S, "op '%s' declares %d outputs but its forward returned %s", op->name, op->nout,
                      ad_type_name(*out));
        ad_value_decref(S, *out);
        *out = ad_none();
        return rc;
    }
    if (!record && !tangents) return ADDSL_OK;
    /* ... and outputs that carry a derivative must be tensors: a number there
     * would silently drop the gradient. */
    for (int i = 0; i < op->nout; i++) {
        ad_value o = op->nout == 1 ? *out : out->u.l->items[i];
        if (o.t == AD_TTENSOR) continue;
        if (op->nout == 1) rc = ad_error(S, "op '%s': its forward returned %s where a tensor was expected", op->name, ad_type_name(o));
        else rc = ad_error(S, "op '%s': output %d of its forward is %s where a tensor was expected", op->name, i, ad_type_name(o));
        ad_value_decref(S, *out);
        *out = ad_none();
        return rc;
    }
    if ((rc = privatize_outputs(S, op, out))) { ad_value_decref(S, *out); *out = ad_none(); return rc; }
    if (record) {
        ad_tensor *outs[AD_OP_MAX_OUTS];
        int n = outputs_of(S, op, *out, outs);
        if (n < 0) rc = -n;
        else if (n > 0) rc = ad_autograd_record(S, op, slots, n, outs);
    }
    if (!rc && tangents && !deferred) rc = propagate_tangents(S, op, slots, *out);
    if (rc) { ad_value_decref(S, *out); *out = ad_none(); }
    return rc;
}

int ad_op_tangents(ad_state *S, ad_opdef *op, const ad_value *args, int nargs, const ad_list *kw, ad_value out) {
    if (!op->has_formulas || S->fw_level == 0) return ADDSL_OK;
    ad_value buf[AD_MAX_CALL_ARGS], packed = ad_none();
    const ad_value *bound = args;
    int nbound = nargs, rc = ADDSL_OK;
    if (op->sizes_param) {
        if (nargs > AD_MAX_CALL_ARGS) return ad_error(S, "%s(): too many arguments", op->name);
        rc = ad_args_pack_sizes(S, op->name, op->pnames[op->sizes_param - 1], op->sizes_param - 1,
                                args, nargs, kw ? (int)kw->len : 0, buf, &bound, &nbound, &packed);
        if (rc) return rc;
    }
    ad_value slots[AD_OP_MAX_PARAMS];
    rc = bind(S, op, bound, nbound, kw, slots);
    if (!rc && any_tangent(S, op, slots)) rc = propagate_tangents(S, op, slots, out);
    ad_value_decref(S, packed);
    return rc;
}

bool ad_op_any_tangent(ad_state *S, const ad_value *args, int nargs) {
    if (S->fw_level == 0) return false;
    for (int i = 0; i < nargs; i++)
        if (has_tangent(args[i])) return true;
    return false;
}

/* An op with a '*NAME' parameter: the sizes given as separate numbers are
 * packed into one list, which lives until the call returns (a recorded node
 * holds its own reference). Apart so that other calls keep a small frame. */
static int op_call_sizes(ad_state *S, ad_opdef *op, const ad_value *args, int nargs, const ad_list *kw, ad_value *out) {
    ad_value buf[AD_MAX_CALL_ARGS], packed;
    const ad_value *bound;
    int nbound;
    if (nargs > AD_MAX_CALL_ARGS) return ad_error(S, "%s(): too many arguments", op->name);
    int rc = ad_args_pack_sizes(S, op->name, op->pnames[op->sizes_param - 1], op->sizes_param - 1,
                                args, nargs, kw ? (int)kw->len : 0, buf, &bound, &nbound, &packed);
    if (rc) return rc;
    rc = op_call(S, op, bound, nbound, kw, out);
    ad_value_decref(S, packed);
    return rc;
}

/* Python's abs() and round() of a plain number give a number (a script reads
 * them as Python, not as torch.abs of a 0-d tensor): round half to even, and
 * with ndigits the correctly rounded decimal, as printf gives it. */
static bool number_builtin(ad_opdef *op, const ad_value *args, int nargs, const ad_list *kw, ad_value *out) {
    bool is_abs = op->id == AD_OP_abs, is_round = op->id == AD_OP_round;
    if ((!is_abs && !is_round) || nargs < 1 || (args[0].t != AD_TINT && args[0].t != AD_TNUM)) return false;
    double x = args[0].u.n;
    if (is_abs) {
        if (nargs != 1) return false;
        out->t = args[0].t;
        out->u.n = fabs(x);
        return true;
    }
    if (nargs > 2 || (kw && kw->len > 0 && strcmp(kw->items[0].u.s->data, "decimals") && strcmp(kw->items[0].u.s->data, "ndigits"))) return false;
    if (nargs == 1 || args[1].t == AD_TNONE) { *out = ad_int(nearbyint(x)); return true; }
    if (args[1].t != AD_TINT || !isfinite(x)) return false;
    double n = args[1].u.n;
    if (n >= 0) {
        char buf[400];
        snprintf(buf, sizeof buf, "%.*f", (int)fmin(n, 340), x);
        x = strtod(buf, NULL);
    } else {
        double p = pow(10.0, -n);
        x = isfinite(p) ? nearbyint(x / p) * p : 0.0 * x;
    }
    out->t = args[0].t;
    out->u.n = x;
    return true;
}

int ad_op_call(ad_state *S, ad_opdef *op, const ad_value *args, int nargs, const ad_list *kw, ad_value *out) {
    *out = ad_none();
    if (number_builtin(op, args, nargs, kw, out)) return ADDSL_OK;
    if (ad_trace_on(S)) return ad_trace_op(S, op, args, nargs, kw, out);
    return ad_op_call_direct(S, op, args, nargs, kw, out);
}

int ad_op_call_direct(ad_state *S, ad_opdef *op, const ad_value *args, int nargs, const ad_list *kw, ad_value *out) {
    *out = ad_none();
    int rc = op->sizes_param ? op_call_sizes(S, op, args, nargs, kw, out) : op_call(S, op, args, nargs, kw, out);
    /* Outputs with names make a named tuple, as torch.return_types.max. */
    if (!rc && op->result_names && out->t == AD_TTUPLE && out->u.l->hdr.refcount == 1)
        ad_tuple_share_names(out->u.l, op->result_names);
    return rc;
}

/* The operators (+ - * / % ** @, unary -, t[...]) dispatch to these ops when
 * the library defines them, so they record graph nodes like any op call. */
int ad_ops_bind_operators(ad_state *S) {
    static const struct { const char *name; size_t off; } table[] = {
        {"add", offsetof(ad_state, op_add)}, {"sub", offsetof(ad_state, op_sub)},
        {"mul", offsetof(ad_state, op_mul)}, {"div", offsetof(ad_state, op_div)},
        {"remainder", offsetof(ad_state, op_rem)}, {"pow", offsetof(ad_state, op_pow)},
        {"neg", offsetof(ad_state, op_neg)}, {"matmul", offsetof(ad_state, op_matmul)},
        {"index_get", offsetof(ad_state, op_index)}, {"sum", offsetof(ad_state, op_sum)},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        ad_opdef **slot = (ad_opdef **)((char *)S + table[i].off);
        int g = ad_global_slot(S, table[i].name, false);
        ad_opdef *op = g >= 0 && S->globals->defined[g] && S->globals->values[g].t == AD_TOP ? S->globals->values[g].u.op : NULL;
        if (op) op->hdr.refcount++;
        if (*slot) { ad_value v; v.t = AD_TOP; v.u.op = *slot; ad_value_decref(S, v); }
        *slot = op;
    }
    return ADDSL_OK;
}

void ad_ops_unbind_operators(ad_state *S) {
    ad_opdef **slots[] = {&S->op_add, &S->op_sub, &S->op_mul, &S->op_div, &S->op_rem, &S->op_pow,
                          &S->op_neg, &S->op_matmul, &S->op_index, &S->op_sum};
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        if (!*slots[i]) continue;
        ad_value v; v.t = AD_TOP; v.u.op = *slots[i];
        *slots[i] = NULL;
        ad_value_decref(S, v);
    }
}
