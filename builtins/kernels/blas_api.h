/* kernels/blas_api.h: the table of BLAS and LAPACK entry points the kernels
 * call through (kernels/reduce.c's products) and the factorisations use. Its
 * type lives with the kernels, which may not include vm/ or system/; the
 * loader that fills it at run time is system/blas_lazy.c. */
#ifndef AD_KERNELS_BLAS_API_H
#define AD_KERNELS_BLAS_API_H

#include <cblas.h>

/* LAPACK's Fortran entry points, exported by OpenBLAS (no LAPACKE needed);
 * declared only for __typeof__ below: every call goes through the table. */
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info);
void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau, double *work,
             const int *lwork, int *info);
void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda, const double *tau,
             double *work, const int *lwork, int *info);
void dgesdd_(const char *jobz, const int *m, const int *n, double *a, const int *lda, double *s,
             double *u, const int *ldu, double *vt, const int *ldvt, double *work, const int *lwork,
             int *iwork, int *info);
void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
             double *work, const int *lwork, int *iwork, const int *liwork, int *info);
void dtrsm_(const char *side, const char *uplo, const char *transa, const char *diag, const int *m,
            const int *n, const double *alpha, const double *a, const int *lda, double *b,
            const int *ldb);
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void dgetrs_(const char *trans, const int *n, const int *nrhs, const double *a, const int *lda,
             const int *ipiv, double *b, const int *ldb, int *info);
void dgetri_(const int *n, double *a, const int *lda, const int *ipiv, double *work,
             const int *lwork, int *info);

/* Every BLAS and LAPACK function the interpreter calls (the generated C of
 * export_c links its own, vm/export/lower_blas.c). */
#define AD_BLAS_FUNCS(X) \
    X(cblas_sgemm) X(cblas_dgemm) X(cblas_sdot) X(cblas_ddot) \
    X(dpotrf_) X(dgeqrf_) X(dorgqr_) X(dgesdd_) X(dsyevd_) X(dtrsm_) X(dgetrf_) X(dgetrs_) X(dgetri_) \
    X(openblas_set_num_threads)

typedef struct ad_blas_api {
    struct { /* what ad_dl_table_load fills: the handle, then one pointer per name */
        void *dl;
#define AD_BLAS_MEMBER(name) __typeof__(name) *name;
        AD_BLAS_FUNCS(AD_BLAS_MEMBER)
#undef AD_BLAS_MEMBER
    };
    /* Set where OpenBLAS links another OpenMP runtime than ours (a clang
     * build's libomp beside openblas-openmp's libgomp): that runtime's
     * omp_set_num_threads. OpenBLAS asks its runtime how many threads the
     * calling thread may use (omp_get_max_threads) and whether it is in a
     * team (omp_in_parallel, never true of ours), so it would thread each of
     * our row pieces itself; kernels/reduce.c calls this with 1 in every
     * thread before a piece, and cuts every product it would have threaded. */
    void (*foreign_omp_set_num_threads)(int);
} ad_blas_api;

#endif
