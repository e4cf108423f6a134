/* softplus.c: the user's own kernel for samples/ffi: softplus over a
 * contiguous float32 array, log(1 + exp(x)) computed without overflow. */
#include <math.h>
#include <stdint.h>

void mysoftplus_f32(float *out, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        out[i] = v > 0 ? v + log1pf(expf(-v)) : log1pf(expf(v));
    }
}

double scaled_sum(const double *x, int64_t n, double k) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    return s * k;
}
