/* blas_lazy.c: OpenBLAS's functions resolved with dlsym on first use (see
 * blas_lazy.h), held by the state. */
#include "blas_lazy.h"

#include <dlfcn.h>

const ad_blas_api *ad_blas_load(ad_state *S, const char *who) {
    ad_blas_api *t = ad_calloc(S, 1, sizeof *t);
    if (!t) { ad_nomem(S); return NULL; }
    t->dl = dlopen(AD_BLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
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
