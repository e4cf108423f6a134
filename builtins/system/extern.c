/* system/extern.c: kernels as script values: 'extern' bindings (dlopen/dlsym),
 * kernel(NAME), call_kernel(NAME, ...) and the conversion of arguments. */
#include "system/extern.h"

#include <dlfcn.h>
#include <math.h>
#include <string.h>

#include "buf.h"
#include "kernel_registry.h"
#include "kernel_ids.h"
#include "state.h"
#include "tensor/tensor.h"
#include "vm.h"

/* A builtin does not receive itself, so a kernel's script value carries its
 * identity in hidden parameters: every parameter defaults to a 'token' string
 * (the kernel name) that only the registry's cached value holds. Arguments
 * fill the first slots; the first slot still holding the token counts them.
 * AD_EXTRA_SLOTS more slots than the kernel takes catch surplus arguments. */
#define AD_EXTRA_SLOTS 16

/* Dtype implied by a kernel name's suffix (_f32 _f64 _i64 _b8), or -1. */
static int name_dtype(const char *name) {
    static const struct { const char *sfx; int dt; } sfx[] = {
        {"_f32", AD_FLOAT32}, {"_f64", AD_FLOAT64}, {"_i64", AD_INT64}, {"_b8", AD_BOOL},
    };
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        size_t k = strlen(sfx[i].sfx);
        if (n > k && strcmp(name + n - k, sfx[i].sfx) == 0) return sfx[i].dt;
    }
    return -1;
}

static const char *ktype_text(ad_ktype t) {
    static const char *const names[] = {"v", "i32", "i64", "f32", "f64", "p"};
    return (unsigned)t < 6 ? names[t] : "?";
}

/* Tensors made contiguous for one call, released after it. */
typedef struct held { ad_tensor *t[AD_KERNEL_MAX_ARGS + 1]; int n; } held;

static void held_free(ad_state *S, held *h) {
    for (int i = 0; i < h->n; i++) ad_tensor_decref(S, h->t[i]);
    h->n = 0;
}

static int tensor_arg(ad_state *S, const char *fname, int i, ad_tensor *t, held *h, void **p) {
    if (t->storage->device != 0)
        return ad_error(S, "%s(): argument %d is not on the cpu; kernels take cpu tensors", fname, i + 1);
    int dt = name_dtype(fname);
    if (dt >= 0 && (int)t->dtype != dt)
        return ad_error(S, "%s(): expected a %s tensor for argument %d, got %s", fname,
                        ad_dtype_name((ad_dtype)dt), i + 1, ad_dtype_name(t->dtype));
    ad_tensor *c = ad_tensor_contiguous(S, t);
    if (!c) return S->errcode;
    h->t[h->n++] = c;
    *p = ad_tensor_data(c);
    return ADDSL_OK;
}

static int int_arg(ad_state *S, const char *fname, int i, ad_ktype kt, ad_value v, int64_t *out) {
    double x;
    if (v.t == AD_TBOOL) x = v.u.b;
    else if (ad_is_number(v)) x = v.u.n;
    else return ad_error(S, "%s(): argument %d must be an integer (%s), not %s", fname, i + 1, ktype_text(kt), ad_type_name(v));
    double lim = kt == AD_KT_I32 ? 2147483648.0 : 9223372036854775808.0;
    if (x != floor(x) || x < -lim || x >= lim)
        return ad_error(S, "%s(): argument %d must be an integer (%s), got %.17g", fname, i + 1, ktype_text(kt), x);
    *out = (int64_t)x;
    return ADDSL_OK;
}

/* Converts argv[i] to the kernel's type 'kt' in *a. */
static int convert(ad_state *S, const char *fname, int i, ad_ktype kt, ad_value v, held *h, ad_karg *a) {
    int64_t n;
    int rc;
    switch (kt) {
    case AD_KT_I32:
        if ((rc = int_arg(S, fname, i, kt, v, &n))) return rc;
        a->i32 = (int32_t)n;
        return ADDSL_OK;
    case AD_KT_I64:
        if ((rc = int_arg(S, fname, i, kt, v, &n))) return rc;
        a->i64 = n;
        return ADDSL_OK;
    case AD_KT_F32: case AD_KT_F64: {
        double x;
        if (v.t == AD_TBOOL) x = v.u.b;
        else if (ad_is_number(v)) x = v.u.n;
        else return ad_error(S, "%s(): argument %d must be a number (%s), not %s", fname, i + 1, ktype_text(kt), ad_type_name(v));
        if (kt == AD_KT_F32) a->f32 = (float)x; else a->f64 = x;
        return ADDSL_OK;
    }
    case AD_KT_PTR:
        if (v.t == AD_TTENSOR) return tensor_arg(S, fname, i, v.u.tensor, h, &a->p);
        if (v.t == AD_TNONE) { a->p = NULL; return ADDSL_OK; }
        if (v.t == AD_TSTR) { a->p = v.u.s->data; return ADDSL_OK; }
        return ad_error(S, "%s(): argument %d must be a tensor (p), not %s", fname, i + 1, ad_type_name(v));
    default:
        return ad_error(S, "%s(): bad kernel signature", fname);
    }
}

static ad_value ret_value(ad_ktype t, ad_karg r) {
    switch (t) {
    case AD_KT_I32: return ad_int(r.i32);
    case AD_KT_I64: return ad_int((double)r.i64);
    case AD_KT_F32: return ad_num(r.f32);
    case AD_KT_F64: return ad_num(r.f64);
    default: return ad_none();
    }
}

/* Whether kernel 'kid' has the out-of-place shape v(p, p..., i64): called
 * without its first (output) and last (count) arguments. */
static bool out_of_place(ad_state *S, int kid) {
    int n = ad_kreg_nargs(S, kid);
    if (n < 3 || ad_kreg_argtype(S, kid, -1) != AD_KT_VOID || ad_kreg_argtype(S, kid, n - 1) != AD_KT_I64) return false;
    for (int i = 0; i < n - 1; i++) if (ad_kreg_argtype(S, kid, i) != AD_KT_PTR) return false;
    return true;
}

static int shape_mismatch(ad_state *S, const char *fname, int i, const ad_tensor *a, const ad_tensor *b) {
    ad_buf sa, sb;
    ad_buf_init(&sa, S); ad_buf_init(&sb, S);
    ad_buf_shape(&sa, a->ndim, a->shape);
    ad_buf_shape(&sb, b->ndim, b->shape);
    int rc = (sa.failed || sb.failed) ? ad_nomem(S)
        : ad_error(S, "%s(): argument %d has shape %s and dtype %s, expected %s and %s like argument 1", fname, i + 1,
                   sb.data, ad_dtype_name(b->dtype), sa.data, ad_dtype_name(a->dtype));
    ad_buf_free(&sa); ad_buf_free(&sb);
    return rc;
}

/* The out-of-place call: out = new tensor like argv[0]; kernel(out, args..., numel). */
static int invoke_out(ad_state *S, int kid, const char *fname, const ad_value *argv, int argc, ad_value *out) {
    ad_karg a[AD_KERNEL_MAX_ARGS];
    held h = {.n = 0};
    for (int i = 0; i < argc; i++) {
        if (argv[i].t != AD_TTENSOR)
            return ad_error(S, "%s(): argument %d must be a tensor, not %s", fname, i + 1, ad_type_name(argv[i]));
        const ad_tensor *t0 = argv[0].u.tensor, *t = argv[i].u.tensor;
        if (t->dtype != t0->dtype || t->ndim != t0->ndim || memcmp(t->shape, t0->shape, sizeof(int64_t) * (size_t)t->ndim))
            return shape_mismatch(S, fname, i, t0, t);
    }
    const ad_tensor *t0 = argv[0].u.tensor;
    ad_tensor *o = ad_tensor_empty(S, t0->dtype, t0->ndim, t0->shape);
    if (!o) return S->errcode;
    a[0].p = ad_tensor_data(o);
    for (int i = 0; i < argc; i++) {
        int rc = tensor_arg(S, fname, i, argv[i].u.tensor, &h, &a[i + 1].p);
        if (rc) { held_free(S, &h); ad_tensor_decref(S, o); return rc; }
    }
    a[argc + 1].i64 = o->numel;
    ad_kreg_call(S, kid, a, NULL);
    held_free(S, &h);
    *out = ad_tensor_value(o);
    return ADDSL_OK;
}

int ad_kernel_invoke(ad_state *S, int kid, const char *fname, const ad_value *argv, int argc, ad_value *out) {
    int n = ad_kreg_nargs(S, kid);
    *out = ad_none();
    if (n < 0) return ad_error(S, "%s(): no such kernel", fname);
    if (argc == n - 2 && out_of_place(S, kid)) return invoke_out(S, kid, fname, argv, argc, out);
    /* The explicit form hands the script's pointers and counts to C as they
     * are: a door to native memory, opened only for kernels the host chose
     * (registered or bound with extern), never for the shipped ones. */
    if (kid < AD_K_COUNT)
        return ad_error(S, "%s(): shipped kernels take only their tensor inputs (the output is allocated for them)", fname);
    if (argc != n)
        return ad_error(S, "%s() takes %d argument%s but %d %s given", fname, n, n == 1 ? "" : "s", argc, argc == 1 ? "was" : "were");
    ad_karg a[AD_KERNEL_MAX_ARGS], r;
    held h = {.n = 0};
    for (int i = 0; i < n; i++) {
        int rc = convert(S, fname, i, ad_kreg_argtype(S, kid, i), argv[i], &h, &a[i]);
        if (rc) { held_free(S, &h); return rc; }
    }
    memset(&r, 0, sizeof r);
    ad_kreg_call(S, kid, a, &r);
    held_free(S, &h);
    *out = ret_value(ad_kreg_argtype(S, kid, -1), r);
    return ADDSL_OK;
}

/* ---- the script value of a kernel ---- */

/* Whether 'v' is the token of a live kernel value, giving its id. */
static bool token_kernel(ad_state *S, ad_value v, int *kid) {
    if (v.t != AD_TSTR) return false;
    int id = ad_kreg_find(S, v.u.s->data);
    ad_builtin *b = id >= 0 ? ad_kreg_callable(S, id) : NULL;
    if (!b || b->nparams < 1 || b->defaults[b->nparams - 1].u.s != v.u.s) return false;
    *kid = id;
    return true;
}

static int kernel_entry(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    int kid;
    if (argc < 1 || !token_kernel(S, argv[argc - 1], &kid))
        return ad_error(S, "kernel function called with too many arguments");
    const ad_str *tok = argv[argc - 1].u.s;
    int given = 0;
    while (given < argc - 1 && !(argv[given].t == AD_TSTR && argv[given].u.s == tok)) given++;
    if (given == argc - 1) {
        int n = ad_kreg_nargs(S, kid);
        return ad_error(S, "%s() takes %d argument%s but more were given", tok->data, n, n == 1 ? "" : "s");
    }
    return ad_kernel_invoke(S, kid, tok->data, argv, given, out);
}

static int make_callable(ad_state *S, int kid, ad_builtin **out) {
    const char *name = ad_kreg_name(S, kid);
    int np = ad_kreg_nargs(S, kid) + 1 + AD_EXTRA_SLOTS;
    ad_builtin *b = ad_calloc(S, 1, sizeof *b);
    if (!b) return ADDSL_ENOMEM;
    b->hdr.refcount = 1;
    b->fn = kernel_entry;
    b->kid = kid;
    b->pnames = ad_calloc(S, (size_t)np, sizeof(char *));
    b->defaults = ad_calloc(S, (size_t)np, sizeof(ad_value));
    b->required = ad_calloc(S, (size_t)np, sizeof(bool));
    if (b->pnames && b->defaults && b->required) b->nparams = np;
    ad_str *tok = b->nparams ? ad_str_new(S, name, strlen(name)) : NULL;
    if (!tok) { ad_vm_builtin_free(S, b); return ADDSL_ENOMEM; }
    b->name = tok->data; /* lives as long as the defaults hold the token */
    for (int i = 0; i < np; i++) {
        /* Empty names: no keyword can reach these parameters. */
        char *pn = ad_calloc(S, 1, 1);
        if (!pn) { b->nparams = i; ad_value_decref(S, (ad_value){.t = AD_TSTR, .u.s = tok}); ad_vm_builtin_free(S, b); return ADDSL_ENOMEM; }
        b->pnames[i] = pn;
        tok->hdr.refcount++;
        b->defaults[i].t = AD_TSTR;
        b->defaults[i].u.s = tok;
    }
    ad_value_decref(S, (ad_value){.t = AD_TSTR, .u.s = tok});
    *out = b;
    return ADDSL_OK;
}

int ad_kernel_callable(ad_state *S, int kid, ad_value *out) {
    ad_builtin *b = ad_kreg_callable(S, kid);
    if (!b) {
        int rc = make_callable(S, kid, &b);
        if (rc) return rc;
        ad_kreg_set_callable(S, kid, b);
    }
    b->hdr.refcount++;
    out->t = AD_TBUILTIN;
    out->u.bi = b;
    return ADDSL_OK;
}

/* ---- builtins ---- */

static int bi_extern_fn(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *lib, *name, *sig;
    int rc = ad_arg_str(S, argv[0], "extern_fn", "lib", &lib);
    if (!rc) rc = ad_arg_str(S, argv[1], "extern_fn", "name", &name);
    if (!rc) rc = ad_arg_str(S, argv[2], "extern_fn", "sig", &sig);
    if (rc) return rc;
    void *h = ad_kreg_dlopen(S, lib, name);
    if (!h) return S->errcode ? S->errcode : ADDSL_ERUNTIME;
    dlerror();
    void *sym = dlsym(h, name);
    if (!sym) return ad_error(S, "extern %s: undefined symbol '%s' in '%s'", name, name, lib);
    void (*fn)(void);
    memcpy(&fn, &sym, sizeof fn);
    int kid = ad_kreg_add(S, name, fn, sig);
    if (kid < 0) return -kid;
    return ad_kernel_callable(S, kid, out);
}

static int bi_kernel(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *name;
    int rc = ad_arg_str(S, argv[0], "kernel", "name", &name);
    if (rc) return rc;
    int kid = ad_kreg_find(S, name);
    if (kid >= 0) return ad_kernel_callable(S, kid, out);
    /* The raw builtins of shipped ops ("ad_sin") serve as kernels too. */
    int slot = ad_global_slot(S, name, false);
    if (slot < 0 || !S->globals->defined[slot] || S->globals->values[slot].t != AD_TBUILTIN)
        return ad_error(S, "kernel(): no kernel named '%s'", name);
    *out = S->globals->values[slot];
    ad_value_incref(*out);
    return ADDSL_OK;
}

static int bi_call_kernel(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    if (argc < 1) return ad_error(S, "call_kernel() missing required argument 'name'");
    const char *name;
    int rc = ad_arg_str(S, argv[0], "call_kernel", "name", &name);
    if (rc) return rc;
    int kid = ad_kreg_find(S, name);
    if (kid < 0) return ad_error(S, "call_kernel(): no kernel named '%s'", name);
    return ad_kernel_invoke(S, kid, name, argv + 1, argc - 1, out);
}

const ad_builtin_def ad_bi_extern_defs[] = {
    {"extern_fn", bi_extern_fn, "lib, name, sig",
         "Binds the C function name from the shared library lib with the signature sig "
         "(\"RET(ARGS)\" of f32, f64, i32, i64, p, v) and returns it as a callable kernel; the "
         "extern declaration compiles to it. Hosts may forbid it (ADDSL_DENY_EXTERN)."
         "\nExample: let cbrt = extern_fn(\"libm.so.6\", \"cbrt\", \"f64(f64)\"); cbrt(27.0)"},
    {"kernel", bi_kernel, "name",
         "The registered kernel name (shipped, registered by the host, or bound by extern) as a "
         "callable value; an op's forward: kernel(\"name\") uses it."
         "\nExample: extern_fn(\"libm.so.6\", \"cbrt\", \"f64(f64)\"); kernel(\"cbrt\")(8.0)"},
    {"call_kernel", bi_call_kernel, "*",
         "call_kernel(name, args...) calls the registered kernel name with args."
         "\nExample: extern_fn(\"libm.so.6\", \"cbrt\", \"f64(f64)\"); call_kernel(\"cbrt\", 8.0)"},
    {NULL, NULL, NULL}
};
