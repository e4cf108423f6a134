/* system/blas_lazy.h: OpenBLAS (CBLAS and LAPACK's Fortran entry points) opened with
 * dlopen on the first matrix product or factorisation instead of at start-up:
 * its ~16k relocations cost ~1.5 ms of every run, most of which never
 * multiply a matrix. */
#ifndef AD_BLAS_LAZY_H
#define AD_BLAS_LAZY_H

#include "kernels/blas_api.h"
#include "state.h"

/* configure.ac finds the library the build would have linked: the OpenMP
 * build's path when Debian's openblas-openmp is there, else the soname. */
#ifndef AD_BLAS_SONAME
#define AD_BLAS_SONAME "libopenblas.so.0"
#endif

/* Opens the library into S->blas; NULL with S's error set (naming 'who',
 * e.g. "matmul", and the package to install) when it or a function is missing. */
const ad_blas_api *ad_blas_load(ad_state *S, const char *who);
/* The functions, loaded on the first call; inline so that a product pays one
 * load and branch for them. */
static inline const ad_blas_api *ad_blas_api_get(ad_state *S, const char *who) {
    return S->blas ? S->blas : ad_blas_load(S, who);
}
/* Frees the table (addsl_close); the library stays loaded (see system/blas_lazy.c). */
void ad_blas_close(ad_state *S);

#endif
