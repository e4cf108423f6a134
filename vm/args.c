/* args.c: argument checking and conversion helpers shared by all builtins.
 * Each failure names the function and the parameter, as PyTorch does. */
#include <math.h>
#include <string.h>

#include "../builtins/builtins.h"
#include "state.h"
#include "tensor/tensor.h"
#include "value.h"

static int bad_arg(ad_state *S, const char *fn, const char *pname, const char *want, ad_value v) {
    return ad_error(S, "%s(): argument '%s' must be %s, not %s", fn, pname, want, ad_type_name(v));
}

int ad_arg_tensor(ad_state *S, ad_value v, const char *fn, const char *pname, ad_tensor **out) {
    if (v.t == AD_TTENSOR) { ad_tensor_incref(v.u.tensor); *out = v.u.tensor; return ADDSL_OK; }
    if (ad_is_number(v) || v.t == AD_TBOOL || ad_is_seq(v)) return ad_tensor_from_value(S, v, -1, out);
    return bad_arg(S, fn, pname, "a tensor", v);
}

int ad_arg_int(ad_state *S, ad_value v, const char *fn, const char *pname, int64_t *out) {
    double x;
    if (v.t == AD_TBOOL) { *out = v.u.b; return ADDSL_OK; }
    if (v.t == AD_TTENSOR && v.u.tensor->numel == 1 && !ad_dtype_is_float(v.u.tensor->dtype)) {
        int rc = ad_tensor_item(S, v.u.tensor, &x);
        if (rc) return rc;
        *out = (int64_t)x;
        return ADDSL_OK;
    }
    if (!ad_is_number(v) || v.u.n != floor(v.u.n) || fabs(v.u.n) > 9007199254740992.0)
        return bad_arg(S, fn, pname, "an integer", v);
    *out = (int64_t)v.u.n;
    return ADDSL_OK;
}

int ad_arg_double(ad_state *S, ad_value v, const char *fn, const char *pname, double *out) {
    if (ad_is_number(v)) { *out = v.u.n; return ADDSL_OK; }
    if (v.t == AD_TBOOL) { *out = v.u.b; return ADDSL_OK; }
    if (v.t == AD_TTENSOR && v.u.tensor->numel == 1) return ad_tensor_item(S, v.u.tensor, out);
    return bad_arg(S, fn, pname, "a number", v);
}

int ad_arg_bool(ad_state *S, ad_value v, const char *fn, const char *pname, bool *out) {
    if (v.t == AD_TBOOL) { *out = v.u.b; return ADDSL_OK; }
    if (ad_is_number(v)) { *out = v.u.n != 0; return ADDSL_OK; }
    return bad_arg(S, fn, pname, "a bool", v);
}

int ad_arg_dtype(ad_state *S, ad_value v, const char *fn, const char *pname, int *out) {
    if (v.t == AD_TNONE) return ADDSL_OK;
    if (v.t == AD_TDTYPE) { *out = v.u.dtype; return ADDSL_OK; }
    return bad_arg(S, fn, pname, "a dtype (float32, float64, int64, bool)", v);
}

int ad_arg_shape(ad_state *S, ad_value v, const char *fn, const char *pname, int *ndim, int64_t *shape) {
    if (ad_is_number(v)) {
        *ndim = 1;
        return ad_arg_int(S, v, fn, pname, &shape[0]);
    }
    if (v.t == AD_TTENSOR && v.u.tensor->ndim <= 1 && !ad_dtype_is_float(v.u.tensor->dtype)) {
        if (v.u.tensor->numel > AD_MAX_DIMS) return ad_error(S, "%s(): too many dimensions %lld (the limit is %d)", fn, (long long)v.u.tensor->numel, AD_MAX_DIMS);
        *ndim = (int)v.u.tensor->numel;
        for (int i = 0; i < *ndim; i++) shape[i] = (int64_t)ad_tensor_get_flat(v.u.tensor, i);
        return ADDSL_OK;
    }
    if (!ad_is_seq(v)) return bad_arg(S, fn, pname, "a list of sizes", v);
    if (v.u.l->len > AD_MAX_DIMS)
        return ad_error(S, "%s(): too many dimensions %lld (the limit is %d)", fn, (long long)v.u.l->len, AD_MAX_DIMS);
    *ndim = (int)v.u.l->len;
    for (int i = 0; i < *ndim; i++) {
        int rc = ad_arg_int(S, v.u.l->items[i], fn, pname, &shape[i]);
        if (rc) return rc;
    }
    return ADDSL_OK;
}

int ad_arg_dims(ad_state *S, ad_value v, const char *fn, const char *pname, int *n, int64_t *dims) {
    if (v.t == AD_TNONE) { *n = -1; return ADDSL_OK; }
    return ad_arg_shape(S, v, fn, pname, n, dims);
}

int ad_arg_str(ad_state *S, ad_value v, const char *fn, const char *pname, const char **out) {
    if (v.t != AD_TSTR) return bad_arg(S, fn, pname, "a string", v);
    *out = v.u.s->data;
    return ADDSL_OK;
}

int ad_fail(ad_state *S) { return S->errcode ? S->errcode : ADDSL_ERUNTIME; }

int ad_ret_tensor(ad_state *S, ad_tensor *t, ad_value *out) {
    if (!t) return ad_fail(S);
    *out = ad_tensor_value(t);
    return ADDSL_OK;
}

int ad_ret_pair(ad_state *S, ad_tensor *a, ad_tensor *b, ad_value *out) {
    ad_list *l = (a && b) ? ad_list_new(S, AD_TTUPLE, 2) : NULL;
    if (!l) {
        ad_tensor_decref(S, a);
        ad_tensor_decref(S, b);
        return ad_fail(S);
    }
    l->items[0] = ad_tensor_value(a);
    l->items[1] = ad_tensor_value(b);
    *out = ad_list_value(l, AD_TTUPLE);
    return ADDSL_OK;
}

const char *ad_torch_dtype_name(ad_dtype dt) {
    static const char *const names[] = {"Float", "Double", "Long", "Bool"};
    return dt < AD_NDTYPES ? names[dt] : "?";
}

/* ---- binding helpers shared by builtins, script functions and ops ---- */

/* torch's spellings that name the same parameter: numpy's 'axis' for 'dim',
 * 'keepdims' for 'keepdim' (torch.sum(x, axis=0) works), and the functional
 * form's 'input' for the 'self' the formulas name (torch.sum(input=x)). */
static const char *const kw_aliases[][2] = {{"axis", "dim"}, {"keepdims", "keepdim"}, {"input", "self"}};

int ad_param_find(int np, const char *const *pnames, const char *kw) {
    for (int j = 0; j < np; j++)
        if (strcmp(pnames[j], kw) == 0) return j;
    for (size_t a = 0; a < sizeof kw_aliases / sizeof kw_aliases[0]; a++)
        if (strcmp(kw, kw_aliases[a][0]) == 0) return ad_param_find(np, pnames, kw_aliases[a][1]);
    return -1;
}

/* What may stand for one size: a number, or a one-element integer tensor. */
static bool size_like(ad_value v) {
    if (ad_is_number(v)) return true;
    return v.t == AD_TTENSOR && v.u.tensor->ndim == 0 && !ad_dtype_is_float(v.u.tensor->dtype);
}

int ad_args_pack_sizes(ad_state *S, const char *fn, const char *pname, int star,
                       const ad_value *args, int nargs, int nkw, ad_value *buf,
                       const ad_value **bound, int *nbound, ad_value *packed) {
    int npos = nargs - nkw;
    *bound = args; *nbound = nargs; *packed = ad_none();
    /* One list, tuple or shape tensor (or nothing) is the sizes as before. */
    if (star < 0 || npos <= star || !size_like(args[star])) return ADDSL_OK;
    for (int i = star + 1; i < npos; i++)
        if (!size_like(args[i]))
            return ad_error(S, "%s(): argument '%s' must be a list of ints or ints given separately, but element %d is a %s",
                            fn, pname, i - star, ad_type_name(args[i]));
    ad_list *l = ad_list_new(S, AD_TLIST, npos - star);
    if (!l) return ad_fail(S);
    for (int i = star; i < npos; i++) { l->items[i - star] = args[i]; ad_value_incref(args[i]); }
    *packed = ad_list_value(l, AD_TLIST);
    for (int i = 0; i < star; i++) buf[i] = args[i];
    buf[star] = *packed;
    for (int k = 0; k < nkw; k++) buf[star + 1 + k] = args[npos + k];
    *bound = buf;
    *nbound = star + 1 + nkw;
    return ADDSL_OK;
}
