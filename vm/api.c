/* api.c: the public C API of include/addsl.h on top of the compiler and VM.
 * Every entry point checks its arguments and returns a status; none exits. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addsl.h"
#include "tensor/device.h"
#include "autograd/gradfn.h"
#include "dict.h"
#include "../builtins/builtins.h"
#include "../builtins/system/blas_lazy.h"
#include "../builtins/system/cairo_lazy.h"
#include "../builtins/system/zip_lazy.h"
#include "../builtins/system/extern.h"
#include "../builtins/kernel_registry.h"
#include "buf.h"
#include "c_locale.h"
#include "codegen.h"
#include "autograd/engine.h"
#include "autograd/inplace.h"
#include "tensor/heap.h"
#include "autograd/library.h"
#include "import.h"
#include "source.h"
#include "autograd/op.h"
#include "jit/compiled.h"
#include "export/export_c.h"
#include "repl/help.h"
#include "state.h"
#include "tensor/tensor.h"
#include "vm.h"

static void *default_alloc(void *ud, void *ptr, size_t size) {
    (void)ud;
    if (size == 0) { free(ptr); return NULL; }
    return realloc(ptr, size);
}

static void default_write(void *ud, const char *text, size_t len, int is_err) {
    (void)ud;
    FILE *f = is_err ? stderr : stdout;
    fwrite(text, 1, len, f);
    if (is_err || len == 0) fflush(f); /* an empty write asks for a flush (print(flush=true)) */
}

void addsl_config_init(addsl_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->alloc = default_alloc;
    cfg->memory_limit = AD_DEFAULT_MEMORY_LIMIT;
    cfg->max_depth = AD_DEFAULT_MAX_DEPTH;
    cfg->write = default_write;
    cfg->interrupt_every = 4096;
}

static const ad_builtin_def *const builtin_tables[] = {
    ad_bi_core_defs, ad_bi_elementwise_defs, ad_bi_reduce_defs, ad_bi_linalg_defs, ad_bi_lapack_defs,
    ad_bi_loss_defs, ad_bi_shape_defs, ad_bi_create_defs, ad_bi_tensor_defs, ad_bi_io_defs, ad_bi_format_defs, ad_bi_string_defs,
    ad_bi_autograd_defs, ad_bi_autograd_index_defs, ad_bi_extern_defs, ad_bi_traj_defs, ad_bi_device_defs,
    ad_inplace_defs,
    ad_bi_dict_defs, ad_bi_gc_defs,
    ad_bi_gradfn_defs,
    ad_help_defs,
    ad_bi_progress_defs, ad_bi_plot_defs, ad_bi_fs_defs,
    ad_bi_index_ops_defs, ad_bi_random_defs,
    ad_bi_nn_defs,
    ad_bi_fft_defs,
    ad_bi_mpi_defs,
    ad_compiled_defs,
    ad_export_c_defs,
};

extern const char *const ad_lib_names[];
extern const char *const ad_lib_sources[];
extern const size_t ad_lib_count;

/* The embedded op library is loaded lazily (vm/autograd/library.c). */
static int load_library(ad_state *S) {
    return ad_library_init(S);
}

static int define_constants(ad_state *S) {
    for (int dt = 0; dt < AD_NDTYPES; dt++) {
        int rc = ad_global_set(S, ad_dtype_name((ad_dtype)dt), ad_dtype_value(dt));
        if (rc) return rc;
    }
    static const char *const float_alias[] = {"float", "double", "long"};
    (void)float_alias;
    int rc = ad_global_set(S, "inf", ad_num(__builtin_inf()));
    if (!rc) rc = ad_global_set(S, "nan", ad_num(__builtin_nan("")));
    if (!rc) rc = ad_global_set(S, "pi", ad_num(3.14159265358979323846));
    if (!rc) rc = ad_global_set(S, "e", ad_num(2.71828182845904523536));
    return rc;
}

addsl_state *addsl_open(const addsl_config *cfg) {
    addsl_config c;
    if (cfg) c = *cfg; else addsl_config_init(&c);
    if (!c.alloc) c.alloc = default_alloc;
    if (!c.write) c.write = default_write;
    if (c.max_depth <= 0) c.max_depth = AD_DEFAULT_MAX_DEPTH;
    if (!c.interrupt_every) c.interrupt_every = 4096;
    ad_state *S = c.alloc(c.alloc_ud, NULL, sizeof *S);
    if (!S) return NULL;
    memset(S, 0, sizeof *S);
    ad_gc_init(&S->gc);
    S->cfg = c;
    S->c_locale = ad_c_locale_new();
    if (!S->c_locale) { c.alloc(c.alloc_ud, S, 0); return NULL; }
    /* Loading the op library lexes its numbers. */
    ad_c_scope sc = ad_c_locale_enter(S);
    S->grad_enabled = true;
    ad_rng_seed(&S->rng, 0);
    S->heap = ad_heap_new(S);
    if (!S->heap || ad_globals_init(S) || ad_vm_open(S) || ad_mpi_open(S)) goto fail;
    S->kernels = ad_kreg_new(S);
    if (!S->kernels || ad_kernels_register_builtin(S)) goto fail;
    for (size_t i = 0; i < sizeof builtin_tables / sizeof builtin_tables[0]; i++)
        if (ad_vm_register(S, builtin_tables[i])) goto fail;
    if (define_constants(S)) goto fail;
    if (load_library(S)) goto fail;
    ad_globals_seal(S);
    if (addsl_set_args(S, 0, NULL)) goto fail;
    ad_clear_error(S);
    ad_c_locale_leave(S, sc);
    return S;
fail:
    ad_c_locale_leave(S, sc);
    addsl_close(S);
    return NULL;
}

void addsl_close(addsl_state *S) {
    if (!S) return;
    ad_ops_unbind_operators(S);
    ad_library_free(S);
    ad_gc_close(S);
    ad_modules_close(S);
    ad_vm_close(S);
    ad_globals_free(S);
    ad_device_close(S);
    ad_mpi_close(S);
    ad_cairo_close(S);
    ad_zip_close(S);
    ad_blas_close(S);
    if (S->kernels) ad_kreg_free(S, S->kernels);
    if (S->heap) ad_heap_free(S, S->heap);
    ad_c_locale_free(S->c_locale);
    S->cfg.alloc(S->cfg.alloc_ud, S, 0);
}

/* Entry points that compile, run or resolve (load) script code hold a C-locale
 * scope: the lexer, print, str(), f-strings, load() and export_c then parse and
 * print numbers with a '.' whatever the host's setlocale said. */

static int run_code(addsl_state *S, const char *code, size_t len, const char *name, bool repl) {
    S->interrupted = 0;
    ad_proto *p = ad_compile(S, code, len, name, repl);
    if (!p) return S->errcode ? S->errcode : ADDSL_ECOMPILE;
    int rc = ad_vm_run_main(S, p);
    ad_proto_decref(S, p);
    return rc;
}

static int run(addsl_state *S, const char *code, size_t len, const char *name, bool repl) {
    if (!S || !code || !name) return ADDSL_EARG;
    ad_clear_error(S);
    ad_c_scope sc = ad_c_locale_enter(S);
    int rc = run_code(S, code, len, name, repl);
    ad_c_locale_leave(S, sc);
    return rc;
}

int addsl_dostring(addsl_state *S, const char *code, const char *name) {
    if (!code) return ADDSL_EARG;
    return run(S, code, strlen(code), name ? name : "<string>", false);
}

int addsl_dorepl(addsl_state *S, const char *code, const char *name) {
    if (!code) return ADDSL_EARG;
    return run(S, code, strlen(code), name ? name : "<stdin>", true);
}

int addsl_dofile(addsl_state *S, const char *path) {
    if (!S || !path) return ADDSL_EARG;
    ad_clear_error(S);
    ad_c_scope sc = ad_c_locale_enter(S);
    char *src;
    size_t len;
    int rc = ad_source_read(S, path, NULL, false, &src, &len);
    if (!rc) {
        rc = run_code(S, src, len, path, false);
        ad_free(S, src);
    }
    ad_c_locale_leave(S, sc);
    return rc;
}

int addsl_incomplete(addsl_state *S, const char *code) {
    (void)S;
    if (!code) return 0;
    return ad_compile_incomplete(code, strlen(code));
}

static int disasm(addsl_state *S, const char *code, const char *name) {
    ad_proto *p = ad_compile(S, code, strlen(code), name ? name : "<string>", false);
    if (!p) return S->errcode ? S->errcode : ADDSL_ECOMPILE;
    ad_buf b;
    ad_buf_init(&b, S);
    int rc = ad_vm_disasm(S, p, &b);
    if (!rc && b.data) ad_write(S, b.data, b.len, 0);
    ad_buf_free(&b);
    ad_proto_decref(S, p);
    return rc;
}

int addsl_disasm(addsl_state *S, const char *code, const char *name) {
    if (!S || !code) return ADDSL_EARG;
    ad_clear_error(S);
    ad_c_scope sc = ad_c_locale_enter(S);
    int rc = disasm(S, code, name);
    ad_c_locale_leave(S, sc);
    return rc;
}

int addsl_set_args(addsl_state *S, int argc, const char *const *argv) {
    if (!S || argc < 0 || (argc > 0 && !argv)) return ADDSL_EARG;
    ad_list *l = ad_list_new(S, AD_TLIST, argc);
    if (!l) return S->errcode;
    for (int i = 0; i < argc; i++) {
        if (ad_string_value(S, argv[i], strlen(argv[i]), &l->items[i])) {
            ad_value_decref(S, ad_list_value(l, AD_TLIST));
            return S->errcode;
        }
    }
    return ad_global_set(S, "args", ad_list_value(l, AD_TLIST));
}

const char *addsl_errmsg(addsl_state *S) {
    if (!S) return "no state";
    if (S->errcode == ADDSL_OK) return "";
    /* The VM's long message stays allocated after the error it formatted; it
     * is current only while S->errmsg (its truncated copy) is a prefix of it. */
    const char *m = ad_vm_errmsg(S);
    if (m != S->errmsg && strncmp(m, S->errmsg, strlen(S->errmsg)) != 0) return S->errmsg;
    return m;
}

int addsl_exit_code(addsl_state *S) { return S ? S->exit_code : 0; }

void addsl_interrupt(addsl_state *S) { if (S) S->interrupted = 1; }

addsl_tensor *addsl_tensor_new(addsl_state *S, addsl_dtype dtype, int ndim, const int64_t *shape) {
    if (!S || (int)dtype < 0 || (int)dtype >= AD_NDTYPES || ndim < 0 || ndim > AD_MAX_DIMS || (ndim > 0 && !shape)) {
        if (S) ad_error_code(S, ADDSL_EARG, "addsl_tensor_new: bad arguments");
        return NULL;
    }
    return ad_tensor_zeros(S, (ad_dtype)dtype, ndim, shape);
}

void *addsl_tensor_data(addsl_tensor *t) { return t ? ad_tensor_data(t) : NULL; }
int addsl_tensor_ndim(const addsl_tensor *t) { return t ? t->ndim : -1; }
const int64_t *addsl_tensor_shape(const addsl_tensor *t) { return t ? t->shape : NULL; }
addsl_dtype addsl_tensor_dtype(const addsl_tensor *t) { return t ? (addsl_dtype)t->dtype : ADDSL_FLOAT32; }
/* ADDSL_EARG when 't' was made by another state: its memory is in that
 * state's heap, so using it here (or freeing it here) would corrupt both. */
static int foreign(ad_state *S, const ad_tensor *t, const char *fn) {
    if (!t || t->storage->owner == S) return ADDSL_OK;
    return ad_error_code(S, ADDSL_EARG, "%s: the tensor belongs to another addsl_state (states share nothing)", fn);
}

int addsl_tensor_release(addsl_state *S, addsl_tensor *t) {
    if (!S) return ADDSL_EARG;
    if (!t) return ADDSL_OK;
    int rc = foreign(S, t, "addsl_tensor_release");
    if (!rc) ad_tensor_decref(S, t);
    return rc;
}

static int global_value(ad_state *S, const char *name, const char *what, bool user, ad_value *v);

int addsl_set_global(addsl_state *S, const char *name, addsl_tensor *t) {
    if (!S || !name || !t) return ADDSL_EARG;
    int rc = foreign(S, t, "addsl_set_global");
    if (rc) return rc;
    ad_tensor_incref(t);
    return ad_global_set(S, name, ad_tensor_value(t));
}

static int api_get_tensor(addsl_state *S, const char *name, addsl_tensor **out) {
    if (!S || !name || !out) return ADDSL_EARG;
    *out = NULL;
    ad_value v;
    int rc = global_value(S, name, "global", true, &v);
    if (rc) return rc;
    if (v.t != AD_TTENSOR) return ad_error_code(S, ADDSL_EARG, "global '%s' is a %s, not a tensor", name, ad_type_name(v));
    ad_tensor_incref(v.u.tensor);
    *out = v.u.tensor;
    return ADDSL_OK;
}

int addsl_get_tensor(addsl_state *S, const char *name, addsl_tensor **out) {
    if (!S) return ADDSL_EARG;
    ad_c_scope sc = ad_c_locale_enter(S);
    int rc = api_get_tensor(S, name, out);
    ad_c_locale_leave(S, sc);
    return rc;
}

static int api_call(addsl_state *S, const char *fname, int nargs, addsl_tensor **args, addsl_tensor **result) {
    if (!S || !fname || nargs < 0 || nargs > 255 || (nargs && !args)) return ADDSL_EARG;
    if (result) *result = NULL;
    ad_clear_error(S);
    ad_value fn;
    int rc = global_value(S, fname, "function", true, &fn);
    if (rc) return rc;
    ad_value argv[255];
    for (int i = 0; i < nargs; i++) {
        if (!args[i]) return ad_error_code(S, ADDSL_EARG, "addsl_call: argument %d is NULL", i);
        if ((rc = foreign(S, args[i], "addsl_call"))) return rc;
        argv[i] = ad_tensor_value(args[i]);
    }
    ad_value_incref(fn);
    ad_value out;
    rc = ad_vm_call_value(S, fn, nargs, argv, &out);
    ad_value_decref(S, fn);
    if (rc) return rc;
    if (result) {
        if (out.t == AD_TTENSOR) { *result = out.u.tensor; return ADDSL_OK; }
        if (out.t != AD_TNONE) {
            ad_tensor *t = NULL;
            rc = ad_tensor_from_value(S, out, -1, &t);
            ad_value_decref(S, out);
            if (rc) return rc;
            *result = t;
            return ADDSL_OK;
        }
    }
    ad_value_decref(S, out);
    return ADDSL_OK;
}

int addsl_call(addsl_state *S, const char *fname, int nargs, addsl_tensor **args, addsl_tensor **result) {
    if (!S) return ADDSL_EARG;
    ad_c_scope sc = ad_c_locale_enter(S);
    int rc = api_call(S, fname, nargs, args, result);
    ad_c_locale_leave(S, sc);
    return rc;
}

int addsl_register_kernel(addsl_state *S, const char *name, void (*fn)(void), const char *sig) {
    if (!S) return ADDSL_EARG;
    ad_clear_error(S);
    if (!name || !fn || !sig) return ad_error_code(S, ADDSL_EARG, "addsl_register_kernel: NULL argument");
    int id = ad_kreg_add(S, name, fn, sig);
    if (id >= 0) return ADDSL_OK;
    if (-id == ADDSL_ENOMEM) return ADDSL_ENOMEM;
    S->errcode = ADDSL_EARG;
    return ADDSL_EARG;
}

const char *addsl_version(void) { return ADDSL_VERSION; }

/* ---- tensors ---- */

addsl_tensor *addsl_tensor_retain(addsl_tensor *t) { if (t) ad_tensor_incref(t); return t; }
int64_t addsl_tensor_numel(const addsl_tensor *t) { return t ? t->numel : 0; }
const int64_t *addsl_tensor_strides(const addsl_tensor *t) { return t ? t->strides : NULL; }
int addsl_tensor_is_contiguous(const addsl_tensor *t) { return t && ad_tensor_is_contiguous(t); }
int addsl_tensor_requires_grad(const addsl_tensor *t) { return t && t->requires_grad; }

addsl_tensor *addsl_tensor_contiguous(addsl_state *S, addsl_tensor *t) {
    if (!S) return NULL;
    ad_clear_error(S);
    if (!t) { ad_error_code(S, ADDSL_EARG, "addsl_tensor_contiguous: NULL tensor"); return NULL; }
    if (foreign(S, t, "addsl_tensor_contiguous")) return NULL;
    return ad_tensor_contiguous(S, t);
}

int addsl_tensor_item(addsl_state *S, const addsl_tensor *t, double *out) {
    if (!S) return ADDSL_EARG;
    ad_clear_error(S);
    if (!t || !out) return ad_error_code(S, ADDSL_EARG, "addsl_tensor_item: NULL argument");
    if (foreign(S, t, "addsl_tensor_item")) return ADDSL_EARG;
    int rc = ad_tensor_item(S, t, out);
    if (rc && S->errcode != ADDSL_ENOMEM) S->errcode = rc = ADDSL_EARG;
    return rc;
}

addsl_tensor *addsl_tensor_wrap(addsl_state *S, addsl_dtype dtype, int ndim, const int64_t *shape,
                                void *data, addsl_release_fn release, void *ud) {
    if (!S) return NULL;
    ad_clear_error(S);
    if ((int)dtype < 0 || (int)dtype >= AD_NDTYPES || ndim < 0 || ndim > AD_MAX_DIMS || (ndim > 0 && !shape) || !data) {
        ad_error_code(S, ADDSL_EARG, "addsl_tensor_wrap: bad arguments");
        return NULL;
    }
    return ad_tensor_wrap(S, (ad_dtype)dtype, ndim, shape, data, release, ud);
}

int addsl_tensor_set_requires_grad(addsl_state *S, addsl_tensor *t, int requires_grad) {
    if (!S) return ADDSL_EARG;
    ad_clear_error(S);
    if (!t) return ad_error_code(S, ADDSL_EARG, "addsl_tensor_set_requires_grad: NULL tensor");
    if (foreign(S, t, "addsl_tensor_set_requires_grad")) return ADDSL_EARG;
    if (requires_grad && !ad_dtype_is_float(t->dtype))
        return ad_error_code(S, ADDSL_EARG, "only Tensors of floating point dtype can require gradients");
    if (t->grad_fn)
        return ad_error_code(S, ADDSL_EARG, "you can only change requires_grad flags of leaf variables");
    t->requires_grad = requires_grad != 0;
    return ADDSL_OK;
}

int addsl_tensor_grad(addsl_state *S, addsl_tensor *t, addsl_tensor **grad) {
    if (!S) return ADDSL_EARG;
    ad_clear_error(S);
    if (!t || !grad) return ad_error_code(S, ADDSL_EARG, "addsl_tensor_grad: NULL argument");
    *grad = NULL;
    if (foreign(S, t, "addsl_tensor_grad")) return ADDSL_EARG;
    *grad = t->grad;
    if (t->grad) ad_tensor_incref(t->grad);
    return ADDSL_OK;
}

int addsl_tensor_zero_grad(addsl_state *S, addsl_tensor *t) {
    if (!S) return ADDSL_EARG;
    ad_clear_error(S);
    if (!t) return ad_error_code(S, ADDSL_EARG, "addsl_tensor_zero_grad: NULL tensor");
    if (foreign(S, t, "addsl_tensor_zero_grad")) return ADDSL_EARG;
    ad_tensor *g = t->grad;
    t->grad = NULL;
    ad_tensor_decref(S, g);
    return ADDSL_OK;
}

/* The value (borrowed) of global 'name' as scripts see it ('user': a script's
 * own binding of a library name first) or as the library does; an error naming
 * 'what' it should be. A library name is loaded on first use. */
static int global_value(ad_state *S, const char *name, const char *what, bool user, ad_value *v) {
    int slot = user ? ad_global_user_slot(S, name, false, false) : ad_global_slot(S, name, false);
    int rc = slot >= 0 ? ad_global_resolve(S, &slot) : ADDSL_OK;
    if (rc) return rc;
    if (slot < 0 || !S->globals->defined[slot]) return ad_error_code(S, ADDSL_EARG, "no %s named '%s'", what, name);
    *v = S->globals->values[slot];
    return ADDSL_OK;
}

/* Calls the library's builtin 'name' ("ad_backward"), whatever a script bound. */
static int call_global(ad_state *S, const char *name, int argc, const ad_value *argv, ad_value *out) {
    ad_value fn;
    int rc = global_value(S, name, "function", false, &fn);
    if (rc) return rc;
    ad_value_incref(fn);
    rc = ad_vm_call_value(S, fn, argc, argv, out);
    ad_value_decref(S, fn);
    return rc;
}

static int api_backward(addsl_state *S, addsl_tensor *t, addsl_tensor *grad_output) {
    if (!S) return ADDSL_EARG;
    ad_clear_error(S);
    if (!t) return ad_error_code(S, ADDSL_EARG, "addsl_backward: NULL tensor");
    if (foreign(S, t, "addsl_backward") || foreign(S, grad_output, "addsl_backward")) return ADDSL_EARG;
    ad_value argv[2] = {ad_tensor_value(t), grad_output ? ad_tensor_value(grad_output) : ad_none()};
    ad_value out;
    int rc = call_global(S, "ad_backward", 2, argv, &out);
    if (!rc) ad_value_decref(S, out);
    return rc;
}

int addsl_backward(addsl_state *S, addsl_tensor *t, addsl_tensor *grad_output) {
    if (!S) return ADDSL_EARG;
    ad_c_scope sc = ad_c_locale_enter(S);
    int rc = api_backward(S, t, grad_output);
    ad_c_locale_leave(S, sc);
    return rc;
}

static int api_grad(addsl_state *S, addsl_tensor *output, int ninputs, addsl_tensor **inputs, addsl_tensor **grads) {
    if (!S) return ADDSL_EARG;
    ad_clear_error(S);
    if (!output || ninputs < 1 || !inputs || !grads) return ad_error_code(S, ADDSL_EARG, "addsl_grad: bad arguments");
    for (int i = 0; i < ninputs; i++) {
        grads[i] = NULL;
        if (!inputs[i]) return ad_error_code(S, ADDSL_EARG, "addsl_grad: input %d is NULL", i);
        if (foreign(S, inputs[i], "addsl_grad")) return ADDSL_EARG;
    }
    if (foreign(S, output, "addsl_grad")) return ADDSL_EARG;
    ad_list *l = ad_list_new(S, AD_TLIST, ninputs);
    if (!l) return S->errcode;
    for (int i = 0; i < ninputs; i++) { ad_tensor_incref(inputs[i]); l->items[i] = ad_tensor_value(inputs[i]); }
    /* grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused) */
    ad_value argv[6] = {ad_tensor_value(output), ad_list_value(l, AD_TLIST), ad_none(), ad_none(), ad_bool(false), ad_bool(true)};
    ad_value out;
    int rc = call_global(S, "ad_grad", 6, argv, &out);
    ad_value_decref(S, argv[1]);
    if (rc) return rc;
    for (int i = 0; ad_is_seq(out) && i < ninputs && i < out.u.l->len; i++) {
        ad_value g = out.u.l->items[i];
        if (g.t == AD_TTENSOR) { ad_tensor_incref(g.u.tensor); grads[i] = g.u.tensor; }
    }
    ad_value_decref(S, out);
    return ADDSL_OK;
}

int addsl_grad(addsl_state *S, addsl_tensor *output, int ninputs, addsl_tensor **inputs, addsl_tensor **grads) {
    if (!S) return ADDSL_EARG;
    ad_c_scope sc = ad_c_locale_enter(S);
    int rc = api_grad(S, output, ninputs, inputs, grads);
    ad_c_locale_leave(S, sc);
    return rc;
}

/* ---- numbers and mixed calls ---- */

int addsl_set_number(addsl_state *S, const char *name, double x) {
    if (!S) return ADDSL_EARG;
    ad_clear_error(S);
    if (!name) return ad_error_code(S, ADDSL_EARG, "addsl_set_number: NULL name");
    bool is_int = x > -9007199254740992.0 && x < 9007199254740992.0 && x == floor(x);
    return ad_global_set(S, name, is_int ? ad_int(x) : ad_num(x));
}

static int api_get_number(addsl_state *S, const char *name, double *out) {
    if (!S) return ADDSL_EARG;
    ad_clear_error(S);
    if (!name || !out) return ad_error_code(S, ADDSL_EARG, "addsl_get_number: NULL argument");
    ad_value v;
    int rc = global_value(S, name, "global", true, &v);
    if (rc) return rc;
    if (v.t == AD_TBOOL) { *out = v.u.b; return ADDSL_OK; }
    if (ad_is_number(v)) { *out = v.u.n; return ADDSL_OK; }
    if (v.t == AD_TTENSOR && v.u.tensor->numel == 1) return ad_tensor_item(S, v.u.tensor, out);
    return ad_error_code(S, ADDSL_EARG, "global '%s' is a %s, not a number", name, ad_type_name(v));
}

int addsl_get_number(addsl_state *S, const char *name, double *out) {
    if (!S) return ADDSL_EARG;
    ad_c_scope sc = ad_c_locale_enter(S);
    int rc = api_get_number(S, name, out);
    ad_c_locale_leave(S, sc);
    return rc;
}

static int from_c(ad_state *S, const addsl_value *a, int i, ad_value *v) {
    switch (a->type) {
    case ADDSL_TNONE: *v = ad_none(); return ADDSL_OK;
    case ADDSL_TBOOL: *v = ad_bool(a->as.boolean != 0); return ADDSL_OK;
    case ADDSL_TNUMBER: *v = ad_num(a->as.number); return ADDSL_OK;
    case ADDSL_TTENSOR:
        if (!a->as.tensor) break;
        if (foreign(S, a->as.tensor, "addsl_callv")) return ADDSL_EARG;
        ad_tensor_incref(a->as.tensor);
        *v = ad_tensor_value(a->as.tensor);
        return ADDSL_OK;
    case ADDSL_TSTRING:
        if (!a->as.string) break;
        return ad_string_value(S, a->as.string, strlen(a->as.string), v);
    default: break;
    }
    return ad_error_code(S, ADDSL_EARG, "addsl_callv: argument %d is not a valid value", i);
}

static void to_c(ad_value v, addsl_value *r) {
    memset(r, 0, sizeof *r);
    switch (v.t) {
    case AD_TNONE: r->type = ADDSL_TNONE; break;
    case AD_TBOOL: r->type = ADDSL_TBOOL; r->as.boolean = v.u.b; break;
    case AD_TINT: case AD_TNUM: r->type = ADDSL_TNUMBER; r->as.number = v.u.n; break;
    case AD_TTENSOR: r->type = ADDSL_TTENSOR; ad_tensor_incref(v.u.tensor); r->as.tensor = v.u.tensor; break;
    default: r->type = ADDSL_TOTHER; break;
    }
}

static int api_callv(addsl_state *S, const char *fname, int nargs, const addsl_value *args, int nres, addsl_value *results) {
    if (!S) return ADDSL_EARG;
    ad_clear_error(S);
    for (int i = 0; results && i < nres; i++) memset(&results[i], 0, sizeof results[i]);
    if (!fname || nargs < 0 || nargs > 255 || (nargs && !args) || nres < 0 || (nres && !results))
        return ad_error_code(S, ADDSL_EARG, "addsl_callv: bad arguments");
    ad_value fn;
    int rc = global_value(S, fname, "function", true, &fn);
    if (rc) return rc;
    ad_value argv[255];
    int n = 0;
    for (; n < nargs && !rc; n++) rc = from_c(S, &args[n], n, &argv[n]);
    if (rc) n--;
    ad_value out = ad_none();
    if (!rc) {
        ad_value_incref(fn);
        rc = ad_vm_call_value(S, fn, nargs, argv, &out);
        ad_value_decref(S, fn);
    }
    for (int i = 0; i < n; i++) ad_value_decref(S, argv[i]);
    if (rc) return rc;
    if (out.t == AD_TTUPLE && nres > 0)
        for (int i = 0; i < nres && i < out.u.l->len; i++) to_c(out.u.l->items[i], &results[i]);
    else if (nres > 0)
        to_c(out, &results[0]);
    ad_value_decref(S, out);
    return ADDSL_OK;
}

int addsl_callv(addsl_state *S, const char *fname, int nargs, const addsl_value *args, int nres, addsl_value *results) {
    if (!S) return ADDSL_EARG;
    ad_c_scope sc = ad_c_locale_enter(S);
    int rc = api_callv(S, fname, nargs, args, nres, results);
    ad_c_locale_leave(S, sc);
    return rc;
}

int addsl_value_release(addsl_state *S, addsl_value *v) {
    if (!v) return ADDSL_OK;
    int rc = ADDSL_OK;
    if (v->type == ADDSL_TTENSOR && v->as.tensor) rc = addsl_tensor_release(S, v->as.tensor);
    if (!rc) memset(v, 0, sizeof *v);
    return rc;
}
