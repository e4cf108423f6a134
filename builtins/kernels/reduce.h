/* kernels/reduce.h: prototypes of the reduction, sort, matrix and loss kernels
 * (rows of kernels/reduce.def): plain C over pointers and sizes (the
 * builtins over them are builtins/bi_reduce.c, bi_linalg.c, bi_loss.c). */
#ifndef AD_KERNELS_REDUCE_H
#define AD_KERNELS_REDUCE_H

#include <stdbool.h>
#include <stdint.h>

/* Loss kinds of ad_loss_pointwise_*. */
enum { AD_LOSS_SQUARED, AD_LOSS_ABS, AD_LOSS_SMOOTH_L1, AD_LOSS_HUBER };

void ad_red_sum_f32(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_sum_f64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_sum_i64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_mean_f32(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_mean_f64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_prod_f32(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_prod_f64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_prod_i64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_amax_f32(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_amax_f64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_amax_i64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_amin_f32(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_amin_f64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_amin_i64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_all_b8(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_any_b8(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_logsumexp_f32(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_logsumexp_f64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);

void ad_red_norm_f32(const void *x, void *out, int64_t outer, int64_t n, int64_t inner, double ord);
void ad_red_norm_f64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner, double ord);

void ad_red_var_f32(const void *x, void *var, void *mean, int64_t outer, int64_t n,
                    int64_t inner, double correction, int32_t take_sqrt);
void ad_red_var_f64(const void *x, void *var, void *mean, int64_t outer, int64_t n,
                    int64_t inner, double correction, int32_t take_sqrt);

void ad_red_max_f32(const void *x, void *values, void *indices, int64_t outer, int64_t n,
                    int64_t inner);
void ad_red_max_f64(const void *x, void *values, void *indices, int64_t outer, int64_t n,
                    int64_t inner);
void ad_red_max_i64(const void *x, void *values, void *indices, int64_t outer, int64_t n,
                    int64_t inner);
void ad_red_min_f32(const void *x, void *values, void *indices, int64_t outer, int64_t n,
                    int64_t inner);
void ad_red_min_f64(const void *x, void *values, void *indices, int64_t outer, int64_t n,
                    int64_t inner);
void ad_red_min_i64(const void *x, void *values, void *indices, int64_t outer, int64_t n,
                    int64_t inner);

void ad_red_softmax_f32(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_softmax_f64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_logsoftmax_f32(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_logsoftmax_f64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_cumsum_f32(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_cumsum_f64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_cumsum_i64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_cumprod_f32(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_cumprod_f64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);
void ad_red_cumprod_i64(const void *x, void *out, int64_t outer, int64_t n, int64_t inner);

void ad_red_sort_f32(const void *x, void *values, void *indices, void *scratch, int64_t rows,
                     int64_t n, int32_t descending);
void ad_red_sort_f64(const void *x, void *values, void *indices, void *scratch, int64_t rows,
                     int64_t n, int32_t descending);
void ad_red_sort_i64(const void *x, void *values, void *indices, void *scratch, int64_t rows,
                     int64_t n, int32_t descending);

/* gemm and dot call BLAS through 'blas', the state's table (system/blas_lazy.h). */
struct ad_blas_api;
void ad_red_gemm_f32(const struct ad_blas_api *blas, const void *a, const void *b, void *c, int64_t m,
                     int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, int32_t trans_a,
                     int32_t trans_b, double alpha, double beta);
void ad_red_gemm_f64(const struct ad_blas_api *blas, const void *a, const void *b, void *c, int64_t m,
                     int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, int32_t trans_a,
                     int32_t trans_b, double alpha, double beta);
void ad_red_gemm_i64(const struct ad_blas_api *blas, const void *a, const void *b, void *c, int64_t m,
                     int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc, int32_t trans_a,
                     int32_t trans_b, double alpha, double beta);
/* Any of the three, as bi_linalg.c and vm/jit/plan_ops.c pick one by dtype. */
typedef void (*ad_red_gemm_fn)(const struct ad_blas_api *, const void *, const void *, void *, int64_t, int64_t,
                               int64_t, int64_t, int64_t, int64_t, int32_t, int32_t, double, double);

/* Batched small products (kernels/gemm_small.c); g = {nbatch, m, n, k, sa, ars, acs, sb, brs, bcs}. */
void ad_red_gemm_small_f32(const void *a, const void *b, void *c, const int64_t *g, double alpha,
                           double beta);
void ad_red_gemm_small_f64(const void *a, const void *b, void *c, const int64_t *g, double alpha,
                           double beta);

void ad_red_dot_f32(const struct ad_blas_api *blas, const void *a, int64_t stride_a, const void *b,
                    int64_t stride_b, int64_t n, void *out);
void ad_red_dot_f64(const struct ad_blas_api *blas, const void *a, int64_t stride_a, const void *b,
                    int64_t stride_b, int64_t n, void *out);
void ad_red_dot_i64(const struct ad_blas_api *blas, const void *a, int64_t stride_a, const void *b,
                    int64_t stride_b, int64_t n, void *out);

void ad_loss_pointwise_f32(const void *x, const void *t, void *out, int64_t n, int32_t kind,
                           double param);
void ad_loss_pointwise_f64(const void *x, const void *t, void *out, int64_t n, int32_t kind,
                           double param);

int64_t ad_loss_bce_f32(const void *x, const void *t, const void *weight, void *out, int64_t n);
int64_t ad_loss_bce_f64(const void *x, const void *t, const void *weight, void *out, int64_t n);

void ad_loss_bce_logits_f32(const void *x, const void *t, const void *weight,
                            const void *pos_weight, void *out, int64_t n);
void ad_loss_bce_logits_f64(const void *x, const void *t, const void *weight,
                            const void *pos_weight, void *out, int64_t n);

int64_t ad_loss_nll_f32(const void *logp, const void *target, const void *weight, void *loss,
                        void *wsum, int64_t nbatch, int64_t nclass, int64_t inner,
                        int64_t ignore_index);
int64_t ad_loss_nll_f64(const void *logp, const void *target, const void *weight, void *loss,
                        void *wsum, int64_t nbatch, int64_t nclass, int64_t inner,
                        int64_t ignore_index);

void ad_loss_smooth_f32(const void *logp, const void *target, const void *weight, void *loss,
                        int64_t nbatch, int64_t nclass, int64_t inner, int64_t ignore_index,
                        double smoothing);
void ad_loss_smooth_f64(const void *logp, const void *target, const void *weight, void *loss,
                        int64_t nbatch, int64_t nclass, int64_t inner, int64_t ignore_index,
                        double smoothing);

void ad_loss_soft_ce_f32(const void *logp, const void *target, const void *weight, void *loss,
                         int64_t nbatch, int64_t nclass, int64_t inner, double smoothing);
void ad_loss_soft_ce_f64(const void *logp, const void *target, const void *weight, void *loss,
                         int64_t nbatch, int64_t nclass, int64_t inner, double smoothing);

#endif
