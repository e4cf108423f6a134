/* rng.c: the per-state random generator behind rand, randn and randint.
 * xoshiro256** seeded through splitmix64; normals by Box-Muller with a spare. */
#include <math.h>

#include "state.h"

/* splitmix64 spreads one seed over the 256-bit state so that nearby seeds
 * (0, 1, 2...) still give unrelated streams and the state is never all zero. */
static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void ad_rng_seed(ad_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
    r->has_spare = 0;
    r->spare = 0.0;
}

uint64_t ad_rng_next(ad_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* The top 53 bits make every double in [0, 1) on a 2^-53 grid equally likely. */
double ad_rng_uniform(ad_rng *r) {
    return (double)(ad_rng_next(r) >> 11) * 0x1.0p-53;
}

double ad_rng_normal(ad_rng *r) {
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u1, u2;
    do u1 = ad_rng_uniform(r); while (u1 <= 0.0); /* log(0) would be -inf */
    u2 = ad_rng_uniform(r);
    double rad = sqrt(-2.0 * log(u1));
    double th = 2.0 * M_PI * u2;
    r->spare = rad * sin(th);
    r->has_spare = 1;
    return rad * cos(th);
}
