/* bi_random.c: the samplers that need more than uniform or normal draws
 * (poisson, multinomial), from the state's generator that manual_seed sets. */
#include <math.h>

#include "builtins.h"
#include "state.h"

#define FN_ARGS ad_state *S, ad_value *argv, int argc, ad_value *out

/* Below this rate a product of uniforms (Knuth) is cheap; above it the
 * transformed rejection of Hoermann (PTRS, as numpy) keeps the cost flat. */
#define POISSON_PTRS_MIN_RATE 10.0

static double poisson_small(ad_rng *r, double lam) {
    double limit = exp(-lam), p = 1.0;
    double k = 0.0;
    for (;;) {
        p *= ad_rng_uniform(r);
        if (p <= limit) return k;
        k += 1.0;
    }
}

static double poisson_ptrs(ad_rng *r, double lam) {
    double slam = sqrt(lam), loglam = log(lam);
    double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
    double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
    for (;;) {
        double u = ad_rng_uniform(r) - 0.5, v = ad_rng_uniform(r);
        double us = 0.5 - fabs(u);
        double k = floor((2 * a / us + b) * u + lam + 0.43);
        if (us >= 0.07 && v <= vr) return k;
        if (k < 0 || (us < 0.013 && v > us)) continue;
        if (log(v) + log(invalpha) - log(a / (us * us) + b) <= -lam + k * loglam - lgamma(k + 1)) return k;
    }
}

/* poisson(self): one Poisson draw per rate, in the rates' dtype. */
static int bi_poisson(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int rc = ad_arg_tensor(S, argv[0], "poisson", "self", &t);
    if (rc) return rc;
    if (!ad_dtype_is_float(t->dtype))
        rc = ad_error(S, "\"poisson_cpu\" not implemented for '%s'", ad_torch_dtype_name(t->dtype));
    for (int64_t i = 0; !rc && i < t->numel; i++) {
        double lam = ad_tensor_get_flat(t, i);
        if (!(lam >= 0) || isinf(lam)) rc = ad_error(S, "invalid Poisson rate, expected rate to be non-negative");
    }
    ad_tensor *r = rc ? NULL : ad_tensor_empty(S, t->dtype, t->ndim, t->shape);
    for (int64_t i = 0; r && i < t->numel; i++) {
        double lam = ad_tensor_get_flat(t, i);
        double k = lam == 0 ? 0.0 : lam < POISSON_PTRS_MIN_RATE ? poisson_small(&S->rng, lam) : poisson_ptrs(&S->rng, lam);
        ad_tensor_set_flat(r, i, k);
    }
    ad_tensor_decref(S, t);
    if (rc) return rc;
    return ad_ret_tensor(S, r, out);
}

/* ---- multinomial ---- */

static int multinomial_check(ad_state *S, const ad_tensor *t, int64_t k, bool replacement) {
    if (!ad_dtype_is_float(t->dtype))
        return ad_error(S, "multinomial only supports floating-point dtypes for input, got: %s",
                        ad_torch_dtype_name(t->dtype));
    if (t->ndim != 1 && t->ndim != 2) return ad_error(S, "prob_dist must be 1 or 2 dim");
    int64_t n = t->shape[t->ndim - 1];
    if (k <= 0) return ad_error(S, "cannot sample n_sample <= 0 samples");
    if (!replacement && k > n)
        return ad_error(S, "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
    return ADDSL_OK;
}

/* One row's weights (copied, checked) and how many of them are positive. */
static int multinomial_row(ad_state *S, const ad_tensor *t, int64_t row, int64_t n, double *w, int64_t *npos) {
    double total = 0;
    *npos = 0;
    for (int64_t j = 0; j < n; j++) {
        double x = ad_tensor_get_flat(t, row * n + j);
        if (!(x >= 0) || isinf(x)) return ad_error(S, "probability tensor contains either `inf`, `nan` or element < 0");
        w[j] = x;
        total += x;
        *npos += x > 0;
    }
    if (!(total > 0)) return ad_error(S, "invalid multinomial distribution (sum of probabilities <= 0)");
    return ADDSL_OK;
}

/* A category drawn with probability w[j] / sum(w). */
static int64_t draw_category(ad_rng *r, const double *w, int64_t n) {
    double total = 0;
    for (int64_t j = 0; j < n; j++) total += w[j];
    double u = ad_rng_uniform(r) * total, acc = 0;
    int64_t last = 0;
    for (int64_t j = 0; j < n; j++) {
        if (w[j] <= 0) continue;
        last = j;
        acc += w[j];
        if (u < acc) return j;
    }
    return last; /* rounding left u just above the running sum */
}

/* multinomial(self, num_samples, replacement=false) */
static int bi_multinomial(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int64_t k;
    bool replacement;
    int rc = ad_arg_int(S, argv[1], "multinomial", "num_samples", &k);
    if (!rc) rc = ad_arg_bool(S, argv[2], "multinomial", "replacement", &replacement);
    if (rc || (rc = ad_arg_tensor(S, argv[0], "multinomial", "self", &t))) return rc;
    rc = multinomial_check(S, t, k, replacement);
    int64_t n = t->ndim ? t->shape[t->ndim - 1] : 1, rows = t->ndim == 2 ? t->shape[0] : 1;
    int64_t oshape[2] = {rows, k};
    ad_tensor *r = rc ? NULL : ad_tensor_empty(S, AD_INT64, t->ndim, t->ndim == 2 ? oshape : &k);
    double *w = r ? ad_malloc(S, (size_t)(n ? n : 1) * sizeof *w) : NULL;
    if (!rc && !w) rc = ad_fail(S);
    for (int64_t row = 0; !rc && row < rows; row++) {
        int64_t npos;
        rc = multinomial_row(S, t, row, n, w, &npos);
        if (!rc && !replacement && npos < k)
            rc = ad_error(S, "invalid multinomial distribution (with replacement=False, not enough non-negative "
                             "category to sample)");
        int64_t *o = rc ? NULL : (int64_t *)ad_tensor_data(r) + row * k;
        for (int64_t s = 0; o && s < k; s++) {
            o[s] = draw_category(&S->rng, w, n);
            if (!replacement) w[o[s]] = 0;
        }
    }
    ad_free(S, w);
    ad_tensor_decref(S, t);
    if (rc) { ad_tensor_decref(S, r); return rc; }
    return ad_ret_tensor(S, r, out);
}

const ad_builtin_def ad_bi_random_defs[] = {
    {"poisson", bi_poisson, "self"},
    {"multinomial", bi_multinomial, "self, num_samples, replacement=false",
         "num_samples indices drawn from the categories whose (unnormalised) probabilities are the "
         "last dim of self, with or without replacement (torch.multinomial); int64."
         "\nExample: manual_seed(0); multinomial(tensor([0.2, 0.8]), 4, replacement=true)"},
    {NULL, NULL, NULL},
};
