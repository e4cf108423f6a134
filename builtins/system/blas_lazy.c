/* system/blas_lazy.c: OpenBLAS's functions resolved with dlsym on first use (see
 * system/blas_lazy.h), held by the state. */
#include "system/blas_lazy.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "system/dl_table.h"

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
/* The part system/dl_table.c fills, laid out as it writes it. */
_Static_assert(offsetof(ad_blas_api, dl) == 0 &&
                   offsetof(ad_blas_api, foreign_omp_set_num_threads) == sizeof(void *) * (1 + sizeof blas_names / sizeof *blas_names),
               "system/dl_table.c fills ad_blas_api as one pointer after another");

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

/* OpenBLAS's omp_set_num_threads when its OpenMP runtime is not ours, else
 * NULL: its omp_in_parallel() then answers for another runtime's teams,
 * never for ours. A build without OpenMP has no team for it to miss;
 * OpenBLAS's pthread build has no OpenMP functions at all. */
static void (*blas_foreign_omp(void *dl))(int) {
#ifdef _OPENMP
    void *theirs = dlsym(dl, "omp_in_parallel"), *ours, *set = dlsym(dl, "omp_set_num_threads");
    int (*fn)(void) = omp_in_parallel;
    memcpy(&ours, &fn, sizeof ours);
    void (*set_fn)(int) = NULL;
    if (theirs && set && theirs != ours) memcpy(&set_fn, &set, sizeof set_fn);
    return set_fn;
#else
    (void)dl;
    return NULL;
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
    memcpy(blas, fns, offsetof(ad_blas_api, foreign_omp_set_num_threads));
    ad_free(S, fns);
    blas->foreign_omp_set_num_threads = blas_foreign_omp(blas->dl);
    /* And OpenBLAS's own count, which releases that read it instead. */
    if (blas->foreign_omp_set_num_threads) {
        blas->foreign_omp_set_num_threads(1);
        blas->openblas_set_num_threads(1);
    }
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
