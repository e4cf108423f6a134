/* blas_lazy.c: OpenBLAS's functions resolved with dlsym on first use (see
 * blas_lazy.h), held by the state. */
#include "blas_lazy.h"

#include <dlfcn.h>

/* RTLD_DEEPBIND: OpenBLAS's own ~14k symbol relocations (DYNAMIC_ARCH's kernel
 * tables) are looked up in its scope first, not after every library already
 * loaded: 19M instructions for a first product instead of 34M (21M when it was
 * linked), and its LAPACK keeps calling its own BLAS when a host has another
 * loaded. Lazy binding as when it was linked. The sanitizers refuse DEEPBIND. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BLAS_DL_FLAGS (RTLD_LAZY | RTLD_LOCAL)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define BLAS_DL_FLAGS (RTLD_LAZY | RTLD_LOCAL)
#endif
#endif
#ifndef BLAS_DL_FLAGS
#define BLAS_DL_FLAGS (RTLD_LAZY | RTLD_LOCAL | RTLD_DEEPBIND)
#endif

const ad_blas_api *ad_blas_load(ad_state *S, const char *who) {
    ad_blas_api *t = ad_calloc(S, 1, sizeof *t);
    if (!t) { ad_nomem(S); return NULL; }
    t->dl = dlopen(AD_BLAS_SONAME, BLAS_DL_FLAGS);
    if (!t->dl) {
        const char *why = dlerror();
        /* dlerror names the file */
        ad_error(S, "%s(): matrix products and factorisations need OpenBLAS, which cannot be loaded: %s "
                 "(apt-get install libopenblas0-openmp)", who, why ? why : AD_BLAS_SONAME);
        ad_free(S, t);
        return NULL;
    }
    /* dlsym returns void *; POSIX guarantees it converts to a function pointer. */
#define AD_BLAS_LOAD(name) \
    if (!(*(void **)&t->name = dlsym(t->dl, #name))) { \
        ad_error(S, "%s(): %s lacks the function %s", who, AD_BLAS_SONAME, #name); \
        ad_free(S, t); return NULL; \
    }
    AD_BLAS_FUNCS(AD_BLAS_LOAD)
#undef AD_BLAS_LOAD
    S->blas = t;
    return t;
}

/* The library stays loaded: a host that opens states one after another pays
 * the load once, and OpenBLAS's destructor runs at exit as when it was linked.
 * dlopen of a loaded library only counts up. */
void ad_blas_close(ad_state *S) {
    if (!S->blas) return;
    ad_free(S, S->blas);
    S->blas = NULL;
}
