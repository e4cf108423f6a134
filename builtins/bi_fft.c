/* bi_fft.c: the one transform kernel behind lib/fft.ad, a complex-to-complex
 * discrete Fourier transform over some dims of a [..., 2] (real, imaginary) tensor.
 *
 * The transform is a mixed-radix Cooley-Tukey FFT in double precision, with
 * Bluestein's chirp-z algorithm for lengths that have a large prime factor.
 * Debian's kissfft (libkissfft-dev) ships only a float build, which would give
 * float64 tensors float32 accuracy, so addsl computes every dtype in double
 * here and rounds once when it stores the result. */
#include <math.h>

#include "builtins.h"
#include "state.h"

#define FN_ARGS ad_state *S, ad_value *argv, int argc, ad_value *out

/* Prime factors above this use Bluestein: the generic radix-p butterfly costs
 * O(p) per output, Bluestein about three power-of-two FFTs of length >= 2n-1. */
#define FFT_BLUESTEIN_FACTOR 61
/* A length below 2^63 has fewer than 64 prime factors. */
#define FFT_MAX_FACTORS 64

enum { NORM_NONE, NORM_BY_ROOT_N, NORM_BY_N };

typedef struct cpx { double re, im; } cpx;

static inline cpx cmul(cpx a, cpx b) { return (cpx){a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }

/* A forward (e^{-2 pi i jk/n}) transform of one length. A Bluestein plan owns
 * the power-of-two plan of its convolution. */
typedef struct fft_plan {
    size_t n;
    int nfac;
    size_t fac[FFT_MAX_FACTORS];
    cpx *tw;                 /* tw[j] = e^{-2 pi i j/n}, j < n (direct plans) */
    cpx *scratch;            /* one butterfly's inputs (direct plans) */
    size_t m;                /* convolution length; 0 for a direct plan */
    struct fft_plan *sub;    /* the length-m plan */
    cpx *chirp;              /* chirp[k] = e^{-pi i k^2/n}, k < n */
    cpx *bhat;               /* the transform of the wrapped conjugate chirp */
    cpx *work, *work2;       /* m values each */
} fft_plan;

/* e^{-2 pi i j/n}, from the nearest quarter turn plus an angle within pi/4, so
 * the quarter points are exact (sin(pi) is not 0 in floating point) and
 * symmetric roots are exact conjugates. */
static cpx unit_root(size_t j, size_t n) {
    int64_t q = (int64_t)((4 * j + n / 2) / n);
    double phi = M_PI_2 * (double)((int64_t)(4 * j) - q * (int64_t)n) / (double)n;
    double c = cos(phi), s = sin(phi);
    switch (q & 3) {
    case 0: return (cpx){c, -s};
    case 1: return (cpx){-s, -c};
    case 2: return (cpx){-c, s};
    default: return (cpx){s, c};
    }
}

static void plan_free(ad_state *S, fft_plan *p) {
    if (!p) return;
    ad_free(S, p->tw);
    ad_free(S, p->scratch);
    plan_free(S, p->sub);
    ad_free(S, p->chirp);
    ad_free(S, p->bhat);
    ad_free(S, p->work);
    ad_free(S, p->work2);
    ad_free(S, p);
}

/* Radix 4 first keeps power-of-two lengths to few passes. */
static size_t factorize(size_t n, size_t *fac, int *nfac) {
    size_t largest = 1;
    *nfac = 0;
    while (n >= 4 && n % 4 == 0) { fac[(*nfac)++] = 4; n /= 4; largest = 4; }
    for (size_t p = 2; n > 1; p = p == 2 ? 3 : p + 2) {
        if (p * p > n) p = n;
        while (n % p == 0) {
            fac[(*nfac)++] = p;
            n /= p;
            if (p > largest) largest = p;
        }
    }
    return largest;
}

/* Decimation in time: out[q*m + k] holds the length-m transform of the q-th
 * subsequence, then radix-r butterflies combine them in place. 'out' and
 * 'in' do not overlap. */
static void direct_run(const fft_plan *p, cpx *out, const cpx *in, size_t n, size_t is, int f) {
    size_t r = p->fac[f], m = n / r, tws = p->n / n;
    if (m == 1)
        for (size_t q = 0; q < r; q++) out[q] = in[q * is];
    else
        for (size_t q = 0; q < r; q++) direct_run(p, out + q * m, in + q * is, m, is * r, f + 1);
    cpx *t = p->scratch;
    size_t root = m * tws;   /* tw[root * j] = e^{-2 pi i j/r} */
    for (size_t k = 0; k < m; k++) {
        t[0] = out[k];
        for (size_t q = 1; q < r; q++) t[q] = cmul(out[q * m + k], p->tw[q * k * tws]);
        if (r == 2) {
            out[k] = (cpx){t[0].re + t[1].re, t[0].im + t[1].im};
            out[m + k] = (cpx){t[0].re - t[1].re, t[0].im - t[1].im};
            continue;
        }
        if (r == 4) {   /* e^{-2 pi i/4} = -i, and -i (x + iy) = y - ix */
            cpx a0 = {t[0].re + t[2].re, t[0].im + t[2].im}, a1 = {t[0].re - t[2].re, t[0].im - t[2].im};
            cpx a2 = {t[1].re + t[3].re, t[1].im + t[3].im}, a3 = {t[1].im - t[3].im, t[3].re - t[1].re};
            out[k] = (cpx){a0.re + a2.re, a0.im + a2.im};
            out[m + k] = (cpx){a1.re + a3.re, a1.im + a3.im};
            out[2 * m + k] = (cpx){a0.re - a2.re, a0.im - a2.im};
            out[3 * m + k] = (cpx){a1.re - a3.re, a1.im - a3.im};
            continue;
        }
        for (size_t s = 0; s < r; s++) {
            cpx acc = t[0];
            for (size_t q = 1; q < r; q++) {
                cpx v = cmul(t[q], p->tw[(q * s % r) * root]);
                acc.re += v.re;
                acc.im += v.im;
            }
            out[s * m + k] = acc;
        }
    }
}

static void plan_run(const fft_plan *p, cpx *out, const cpx *in);

/* X[k] = chirp[k] * sum_j (x[j] chirp[j]) conj(chirp[k - j]) (as k^2 - 2jk + j^2
 * = (k - j)^2): a circular convolution of length m done by the power-of-two plan. */
static void bluestein_run(const fft_plan *p, cpx *out, const cpx *in) {
    size_t n = p->n, m = p->m;
    cpx *a = p->work, *b = p->work2;
    for (size_t j = 0; j < m; j++) a[j] = j < n ? cmul(in[j], p->chirp[j]) : (cpx){0.0, 0.0};
    plan_run(p->sub, b, a);
    /* The inverse transform as conj(F(conj(.))) / m. */
    for (size_t j = 0; j < m; j++) {
        cpx v = cmul(b[j], p->bhat[j]);
        b[j] = (cpx){v.re, -v.im};
    }
    plan_run(p->sub, a, b);
    for (size_t k = 0; k < n; k++) out[k] = cmul((cpx){a[k].re / (double)m, -a[k].im / (double)m}, p->chirp[k]);
}

static void plan_run(const fft_plan *p, cpx *out, const cpx *in) {
    if (p->n == 1) out[0] = in[0];
    else if (p->m == 0) direct_run(p, out, in, p->n, 1, 0);
    else bluestein_run(p, out, in);
}

static fft_plan *plan_new(ad_state *S, size_t n);

static int bluestein_init(ad_state *S, fft_plan *p) {
    size_t n = p->n, m = 1;
    while (m < 2 * n - 1) m <<= 1;
    p->m = m;
    p->sub = plan_new(S, m);
    p->chirp = ad_calloc(S, n, sizeof(cpx));
    p->bhat = ad_calloc(S, m, sizeof(cpx));
    p->work = ad_calloc(S, m, sizeof(cpx));
    p->work2 = ad_calloc(S, m, sizeof(cpx));
    if (!p->sub || !p->chirp || !p->bhat || !p->work || !p->work2) return ad_fail(S);
    /* k^2 mod 2n, kept exact by adding 2k - 1 at each step. */
    size_t sq = 0;
    for (size_t k = 0; k < n; k++) {
        if (k) sq = (sq + 2 * k - 1) % (2 * n);
        p->chirp[k] = unit_root(sq, 2 * n);
    }
    cpx *b = p->work;
    for (size_t j = 0; j < m; j++) b[j] = (cpx){0.0, 0.0};
    for (size_t j = 0; j < n; j++) {
        cpx c = {p->chirp[j].re, -p->chirp[j].im};
        b[j] = c;
        if (j) b[m - j] = c;
    }
    plan_run(p->sub, p->bhat, b);
    return ADDSL_OK;
}

static fft_plan *plan_new(ad_state *S, size_t n) {
    fft_plan *p = ad_calloc(S, 1, sizeof *p);
    if (!p) return NULL;
    p->n = n;
    size_t largest = factorize(n, p->fac, &p->nfac);
    if (largest > FFT_BLUESTEIN_FACTOR) {
        if (bluestein_init(S, p)) { plan_free(S, p); return NULL; }
        return p;
    }
    p->tw = ad_calloc(S, n, sizeof(cpx));
    p->scratch = ad_calloc(S, largest, sizeof(cpx));
    if (!p->tw || !p->scratch) { plan_free(S, p); return NULL; }
    for (size_t j = 0; j < n; j++) p->tw[j] = unit_root(j, n);
    return p;
}

/* Transforms every line of buf (the complex values of a tensor of complex
 * shape cshape, row-major) along dim d. */
static int transform_dim(ad_state *S, cpx *buf, int cnd, const int64_t *cshape, int d, bool forward) {
    size_t outer = 1, inner = 1, n = (size_t)cshape[d];
    for (int k = 0; k < cnd; k++) {
        if (k < d) outer *= (size_t)cshape[k];
        else if (k > d) inner *= (size_t)cshape[k];
    }
    if (n <= 1 || outer == 0 || inner == 0) return ADDSL_OK;
    fft_plan *p = plan_new(S, n);
    cpx *line = ad_calloc(S, 2 * n, sizeof(cpx));
    if (!p || !line) {
        plan_free(S, p);
        ad_free(S, line);
        return ad_fail(S);
    }
    double sign = forward ? 1.0 : -1.0;   /* the inverse is conj(F(conj(x))) */
    for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < inner; i++) {
            cpx *x = buf + o * n * inner + i;
            for (size_t k = 0; k < n; k++) line[k] = (cpx){x[k * inner].re, sign * x[k * inner].im};
            plan_run(p, line + n, line);
            for (size_t k = 0; k < n; k++) x[k * inner] = (cpx){line[n + k].re, sign * line[n + k].im};
        }
    plan_free(S, p);
    ad_free(S, line);
    return ADDSL_OK;
}

/* The checked arguments of _fft_c2c: a contiguous float tensor [..., 2] and
 * its transform dims, made non-negative against the complex rank. */
static int c2c_args(ad_state *S, ad_value *argv, ad_tensor **out, int *ndims, int *dims, int64_t *norm, bool *fwd) {
    static const char fn[] = "_fft_c2c";
    int64_t raw[AD_MAX_DIMS];
    int rc = ad_arg_dims(S, argv[1], fn, "dim", ndims, raw);
    if (!rc) rc = ad_arg_int(S, argv[2], fn, "normalization", norm);
    if (!rc) rc = ad_arg_bool(S, argv[3], fn, "forward", fwd);
    if (rc) return rc;
    if (*norm < NORM_NONE || *norm > NORM_BY_N) return ad_error(S, "%s: normalization must be 0, 1 or 2, got %lld", fn, (long long)*norm);
    ad_tensor *t = NULL;
    if ((rc = ad_arg_tensor(S, argv[0], fn, "self", &t))) return rc;
    if (t->dtype != AD_FLOAT32 && t->dtype != AD_FLOAT64)
        rc = ad_error(S, "Unsupported dtype %s", ad_torch_dtype_name(t->dtype));
    else if (t->ndim == 0 || t->shape[t->ndim - 1] != 2)
        rc = ad_error(S, "%s: expected a complex tensor in the [..., 2] (real, imaginary) layout", fn);
    for (int k = 0; !rc && k < (*ndims < 0 ? 0 : *ndims); k++)
        rc = ad_normalize_dim(S, raw[k], t->ndim - 1, &dims[k]);
    ad_tensor *c = rc ? NULL : ad_tensor_contiguous(S, t);
    ad_tensor_decref(S, t);
    if (rc) return rc;
    if (!c) return ad_fail(S);
    *out = c;
    return ADDSL_OK;
}

/* _fft_c2c(self, dim, normalization, forward): the transform of the complex
 * tensor self ([..., 2]) over dims 'dim' (of its complex shape, self.shape[:-1]),
 * forward (e^{-2 pi i}) or inverse (e^{+2 pi i}), multiplied by 1, 1/sqrt(n) or
 * 1/n for normalization 0, 1, 2 (n the product of the transformed sizes):
 * torch's _fft_c2c with the complex dtype spelled as a trailing dim. */
static int bi_fft_c2c(FN_ARGS) {
    (void)argc;
    ad_tensor *t = NULL;
    int ndims, dims[AD_MAX_DIMS];
    int64_t norm;
    bool fwd;
    int rc = c2c_args(S, argv, &t, &ndims, dims, &norm, &fwd);
    if (rc) return rc;
    if (ndims < 0) {
        ndims = t->ndim - 1;
        for (int k = 0; k < ndims; k++) dims[k] = k;
    }
    int64_t count = t->numel / 2;
    cpx *buf = ad_calloc(S, count ? (size_t)count : 1, sizeof(cpx));
    ad_tensor *r = buf ? ad_tensor_empty(S, t->dtype, t->ndim, t->shape) : NULL;
    if (!r) {
        ad_free(S, buf);
        ad_tensor_decref(S, t);
        return ad_fail(S);
    }
    /* t is contiguous (c2c_args) and r fresh, so their data are plain arrays. */
    const float *tf = ad_tensor_data(t);
    const double *td = ad_tensor_data(t);
    for (int64_t j = 0; j < count; j++)
        buf[j] = t->dtype == AD_FLOAT64 ? (cpx){td[2 * j], td[2 * j + 1]} : (cpx){tf[2 * j], tf[2 * j + 1]};
    double size = 1.0;
    for (int k = 0; k < ndims && !rc; k++) {
        size *= (double)t->shape[dims[k]];
        rc = transform_dim(S, buf, t->ndim - 1, t->shape, dims[k], fwd);
    }
    double scale = norm == NORM_BY_N ? 1.0 / size : norm == NORM_BY_ROOT_N ? 1.0 / sqrt(size) : 1.0;
    float *rf = ad_tensor_data(r);
    double *rd = ad_tensor_data(r);
    for (int64_t j = 0; !rc && j < count; j++) {
        if (r->dtype == AD_FLOAT64) {
            rd[2 * j] = buf[j].re * scale;
            rd[2 * j + 1] = buf[j].im * scale;
        } else {
            rf[2 * j] = (float)(buf[j].re * scale);
            rf[2 * j + 1] = (float)(buf[j].im * scale);
        }
    }
    ad_free(S, buf);
    ad_tensor_decref(S, t);
    if (rc) {
        ad_tensor_decref(S, r);
        return rc;
    }
    return ad_ret_tensor(S, r, out);
}

const ad_builtin_def ad_bi_fft_defs[] = {
    {"_fft_c2c", bi_fft_c2c, "self, dim, normalization, forward"},
    {NULL, NULL, NULL},
};
