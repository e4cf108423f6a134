/* autograd/library.c: lazy loading of the embedded op library. Each library name
 * is a global slot marked with the file that defines it; the first read of
 * such a slot compiles and runs that file. A file's test_inputs statements
 * are a separate text (tools/embed_lib.sh), run only once something asks
 * for test inputs. */
#include "autograd/library.h"

#include <string.h>

#include "c_locale.h"
#include "codegen.h"
#include "autograd/op.h"
#include "state.h"
#include "vm.h"


/* Indexed by AD_OPER_* (vm/autograd/library.h). */
static const char *const operator_names[AD_OPER__COUNT] = {"add", "sub", "mul", "div", "remainder", "pow", "neg", "matmul", "index_get", "sum"};

int ad_library_init(ad_state *S) {
    S->lib_loaded = ad_calloc(S, ad_lib_count ? ad_lib_count : 1, sizeof(bool));
    if (!S->lib_loaded) return ADDSL_ENOMEM;
    S->lib_tested = ad_calloc(S, ad_lib_count ? ad_lib_count : 1, sizeof(bool));
    if (!S->lib_tested) return ADDSL_ENOMEM;
    ad_globals *G = S->globals;
    for (size_t i = 0; i < ad_lib_ndefs; i++) {
        int slot = ad_global_slot(S, ad_lib_defs[i].name, true);
        if (slot < 0) return ADDSL_ENOMEM;
        if (G->defined[slot]) {
            /* The library's op replaces the raw builtin (still reachable as ad_NAME). */
            ad_value old = G->values[slot];
            G->values[slot] = ad_none();
            G->defined[slot] = false;
            ad_value_decref(S, old);
        }
        G->lazy[slot] = ad_lib_defs[i].file + 1;
        G->declared[slot] = true;
    }
    return ADDSL_OK;
}

void ad_library_free(ad_state *S) {
    ad_free(S, S->lib_loaded);
    S->lib_loaded = NULL;
    ad_free(S, S->lib_tested);
    S->lib_tested = NULL;
}

static int run_text_c(ad_state *S, const char *src, const char *name) {
    ad_proto *p = ad_compile_library(S, src, strlen(src), name);
    if (!p) return S->errcode ? S->errcode : ADDSL_ECOMPILE;
    /* Library code runs with grad mode on and no anomaly mode, whatever the
     * caller's, and outside any trace (a file loads once, on first use). */
    bool grad = S->grad_enabled;
    int level = S->fw_level;
    struct ad_trace *trace = S->trace;
    S->grad_enabled = true;
    S->fw_level = 0;
    S->trace = NULL;
    int rc = ad_vm_run_main(S, p);
    S->grad_enabled = grad;
    S->fw_level = level;
    S->trace = trace;
    ad_proto_decref(S, p);
    return rc;
}

/* A library file lexes its numbers in the C locale even when the load comes from
 * a call that holds no C-locale scope of its own (addsl_complete's x.<Tab>). */
static int run_text(ad_state *S, const char *src, const char *name) {
    ad_c_scope sc = ad_c_locale_enter(S);
    int rc = run_text_c(S, src, name);
    ad_c_locale_leave(S, sc);
    return rc;
}

static int load_file(ad_state *S, int file) {
    if (S->lib_loaded[file]) return ADDSL_OK;
    S->lib_loaded[file] = true;
    int rc = run_text(S, ad_lib_sources[file], ad_lib_names[file]);
    if (rc) return rc;
    return ad_ops_bind_operators(S);
}

int ad_library_load_tests(ad_state *S) {
    /* Running a tests text could load another file (a test_inputs naming
     * an op of it), so sweep until every loaded file has its tests. */
    bool again = true;
    while (again) {
        again = false;
        for (size_t f = 0; f < ad_lib_count; f++) {
            if (!S->lib_loaded[f] || S->lib_tested[f]) continue;
            S->lib_tested[f] = true;
            again = true;
            if (!ad_lib_tests[f]) continue;
            int rc = run_text(S, ad_lib_tests[f], ad_lib_names[f]);
            if (rc) return rc;
        }
    }
    return ADDSL_OK;
}

int ad_library_resolve(ad_state *S, int slot) {
    ad_globals *G = S->globals;
    if (G->defined[slot] || !G->lazy[slot]) return ADDSL_OK;
    int file = G->lazy[slot] - 1;
    G->lazy[slot] = 0;
    return load_file(S, file);
}

int ad_global_resolve(ad_state *S, int *slot) {
    ad_globals *G = S->globals;
    if (!G->defined[*slot] && G->base[*slot]) *slot = G->base[*slot] - 1;
    return ad_library_resolve(S, *slot);
}

int ad_library_ensure_operators(ad_state *S) {
    if (S->ops_ready) return ADDSL_OK;
    S->ops_ready = true;
    S->ops_loaded = (1u << AD_OPER__COUNT) - 1;
    for (size_t i = 0; i < sizeof operator_names / sizeof operator_names[0]; i++) {
        int slot = ad_global_slot(S, operator_names[i], false);
        if (slot < 0) continue;
        int rc = ad_library_resolve(S, slot);
        if (rc) return rc;
    }
    return ad_ops_bind_operators(S);
}

int ad_library_ensure_operator(ad_state *S, int which) {
    unsigned bit = 1u << which;
    if (S->ops_ready || (S->ops_loaded & bit)) return ADDSL_OK;
    S->ops_loaded |= bit;
    int slot = ad_global_slot(S, operator_names[which], false);
    if (slot >= 0) {
        int rc = ad_library_resolve(S, slot);
        if (rc) return rc;
    }
    return ad_ops_bind_operators(S);
}

int ad_library_load_all(ad_state *S) {
    for (size_t f = 0; f < ad_lib_count; f++) {
        int rc = load_file(S, (int)f);
        if (rc) return rc;
    }
    return ADDSL_OK;
}
