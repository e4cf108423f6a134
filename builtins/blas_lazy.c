/* blas_lazy.c: OpenBLAS's functions resolved with dlsym on first use (see
 * blas_lazy.h), held by the state. */
#include "blas_lazy.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "dl_table.h"

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

static const char *const blas_names[] = {AD_BLAS_FUNCS(AD_DL_NAME)};
/* The part dl_table.c fills, laid out as it writes it. */
_Static_assert(offsetof(ad_blas_api, dl) == 0 &&
                   offsetof(ad_blas_api, one_thread) == sizeof(void *) * (1 + sizeof blas_names / sizeof *blas_names),
               "dl_table.c fills ad_blas_api as one pointer after another");

static const ad_dl_table blas_table = {
    .soname = AD_BLAS_SONAME,
    .flags = BLAS_DL_FLAGS,
    .names = blas_names,
    .count = sizeof blas_names / sizeof *blas_names,
    /* dlerror names the file */
    .cannot_open = "matrix products and factorisations need OpenBLAS, which cannot be loaded: ",
    .no_reason = AD_BLAS_SONAME,
    .hint = " (apt-get install libopenblas0-openmp)",
};

/* Whether OpenBLAS's OpenMP functions are not ours: its omp_in_parallel()
 * would then answer for another runtime's teams, never for ours. A build
 * without OpenMP has no team for it to miss; OpenBLAS's pthread build has no
 * omp_in_parallel at all. */
static int blas_runtime_foreign(void *dl) {
#ifdef _OPENMP
    void *theirs = dlsym(dl, "omp_in_parallel"), *ours;
    int (*fn)(void) = omp_in_parallel;
    memcpy(&ours, &fn, sizeof ours);
    return theirs && theirs != ours;
#else
    (void)dl;
    return 0;
#endif
}

const ad_blas_api *ad_blas_load(ad_state *S, const char *who) {
    void *fns = ad_dl_table_load(S, &blas_table, who);
    if (!fns) return NULL;
    ad_blas_api *blas = ad_calloc(S, 1, sizeof *blas);
    if (!blas) {
        ad_free(S, fns);
        ad_nomem(S);
        return NULL;
    }
    memcpy(blas, fns, offsetof(ad_blas_api, one_thread));
    ad_free(S, fns);
    /* Process-wide, as OpenBLAS's thread count is: every state agrees. */
    blas->one_thread = blas_runtime_foreign(blas->dl);
    if (blas->one_thread) blas->openblas_set_num_threads(1);
    S->blas = blas;
    return blas;
}

/* The library stays loaded: a host that opens states one after another pays
 * the load once, and OpenBLAS's destructor runs at exit as when it was linked.
 * dlopen of a loaded library only counts up. */
void ad_blas_close(ad_state *S) {
    if (!S->blas) return;
    ad_free(S, S->blas);
    S->blas = NULL;
}
