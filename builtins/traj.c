/* traj.c: CPU kernels of the trajectory integration steps and their exact
 * adjoints; the body below TRAJ_T is compiled once per float dtype. */
#ifndef TRAJ_T

#include <stddef.h>
#include <string.h>

#include "traj.h"

/* Below this many output elements per call a parallel region costs more
 * than it saves. */
#define TRAJ_OMP_MIN 32768

/* Central clique stencils over the window P[h .. h+4]. */
static const double CEN_V[5] = {1.0 / 12, -2.0 / 3, 0, 2.0 / 3, -1.0 / 12};
static const double CEN_A[5] = {-1.0 / 12, 4.0 / 3, -5.0 / 2, 4.0 / 3, -1.0 / 12};
static const double CEN_J[5] = {-0.5, 1, 0, -1, 0.5};
static const double CEN_P[5] = {0, 0, 1, 0, 0};
/* Backward clique stencils: weight of Q_{h-o} in output h, o = 0..3. */
static const double BWD_V[4] = {1, -1, 0, 0};
static const double BWD_A[4] = {1, -2, 1, 0};
static const double BWD_J[4] = {1, -3, 3, -1};
static const double BWD_P[4] = {1, 0, 0, 0};

#define TRAJ_T float
#define FN(n) n##_f32
#include "traj.c"
#undef TRAJ_T
#undef FN

#define TRAJ_T double
#define FN(n) n##_f64
#include "traj.c"
#undef TRAJ_T
#undef FN

#else /* the dtype-generic body */

typedef TRAJ_T FN(real);
#define T FN(real)

/* Row 0 of every step: the start state, jerk 0. */
static void FN(start_row)(const T *p0, const T *v0, const T *a0, int64_t d,
                          T *restrict pos, T *restrict vel, T *restrict acc, T *restrict jerk) {
    for (int64_t k = 0; k < d; k++) {
        pos[k] = p0[k];
        vel[k] = v0[k];
        acc[k] = a0[k];
        jerk[k] = 0;
    }
}

/* ---- acceleration step ---------------------------------------------------- */

static void FN(acc_fwd_one)(const T *u, const T *p0, const T *v0, const T *a0, const T *dt,
                            int64_t H, int64_t d, T *restrict pos, T *restrict vel,
                            T *restrict acc, T *restrict jerk) {
    FN(start_row)(p0, v0, a0, d, pos, vel, acc, jerk);
    for (int64_t h = 1; h < H; h++) {
        const T t = dt[h];
        const T *restrict a = u + (h - 1) * d;
        const int64_t r = h * d, q = r - d;
        for (int64_t k = 0; k < d; k++) {
            T ak = a[k], vk = vel[q + k] + ak * t;
            acc[r + k] = ak;
            jerk[r + k] = (ak - acc[q + k]) / t;
            vel[r + k] = vk;
            pos[r + k] = pos[q + k] + vk * t;
        }
    }
}

void FN(ad_traj_acc_fwd)(const T *u, const T *p0, const T *v0, const T *a0, const int64_t *sidx,
                         const T *dt, int64_t b, int64_t H, int64_t d, T *pos, T *vel, T *acc, T *jerk) {
    const int64_t n = H * d;
#pragma omp parallel for schedule(static) if (b * n >= TRAJ_OMP_MIN)
    for (int64_t i = 0; i < b; i++) {
        int64_t s = sidx ? sidx[i] : i;
        FN(acc_fwd_one)(u + i * n, p0 + s * d, v0 + s * d, a0 + s * d, dt, H, d,
                        pos + i * n, vel + i * n, acc + i * n, jerk + i * n);
    }
}

/* Reverse sweep; 'st' holds the running adjoints of p and v, then the
 * start adjoints [p0, v0, a0]. */
static void FN(acc_bwd_one)(const T *gp, const T *gv, const T *ga, const T *gj, const T *dt,
                            int64_t H, int64_t d, T *restrict gu, T *restrict st) {
    T *restrict P = st, *restrict V = st + d, *restrict A = st + 2 * d;
    memset(st, 0, (size_t)(3 * d) * sizeof(T));
    memset(gu + (H - 1) * d, 0, (size_t)d * sizeof(T));
    for (int64_t h = H - 1; h >= 1; h--) {
        const T t = dt[h];
        const int64_t r = h * d;
        /* j_{h+1} = (a_{h+1} - a_h) / dt_{h+1} also depends on a_h */
        const T tn = h + 1 < H ? dt[h + 1] : (T)1;
        const T *restrict gjn = h + 1 < H ? gj + r + d : A; /* A is zero here */
        for (int64_t k = 0; k < d; k++) {
            T pk = P[k] + gp[r + k];
            T vk = V[k] + gv[r + k] + pk * t;
            P[k] = pk;
            V[k] = vk;
            gu[r - d + k] = ga[r + k] + gj[r + k] / t - gjn[k] / tn + vk * t;
        }
    }
    const T t1 = H > 1 ? dt[1] : (T)1;
    for (int64_t k = 0; k < d; k++) {
        P[k] += gp[k];
        V[k] += gv[k];
        A[k] = ga[k] - (H > 1 ? gj[d + k] / t1 : (T)0);
    }
}

void FN(ad_traj_acc_bwd)(const T *gp, const T *gv, const T *ga, const T *gj, const T *dt,
                         int64_t b, int64_t H, int64_t d, T *gu, T *gstart) {
    const int64_t n = H * d;
#pragma omp parallel for schedule(static) if (b * n >= TRAJ_OMP_MIN)
    for (int64_t i = 0; i < b; i++)
        FN(acc_bwd_one)(gp + i * n, gv + i * n, ga + i * n, gj + i * n, dt, H, d, gu + i * n,
                        gstart + i * 3 * d);
}

/* ---- jerk step ------------------------------------------------------------- */

static void FN(jerk_fwd_one)(const T *u, const T *p0, const T *v0, const T *a0, const T *dt,
                             int64_t H, int64_t d, T *restrict pos, T *restrict vel,
                             T *restrict acc, T *restrict jerk) {
    FN(start_row)(p0, v0, a0, d, pos, vel, acc, jerk);
    for (int64_t h = 1; h < H; h++) {
        const T t = dt[h];
        const T *restrict j = u + (h - 1) * d;
        const int64_t r = h * d, q = r - d;
        for (int64_t k = 0; k < d; k++) {
            T jk = j[k], ak = acc[q + k] + jk * t, vk = vel[q + k] + ak * t;
            jerk[r + k] = jk;
            acc[r + k] = ak;
            vel[r + k] = vk;
            pos[r + k] = pos[q + k] + vk * t;
        }
    }
}

void FN(ad_traj_jerk_fwd)(const T *u, const T *p0, const T *v0, const T *a0, const int64_t *sidx,
                          const T *dt, int64_t b, int64_t H, int64_t d, T *pos, T *vel, T *acc, T *jerk) {
    const int64_t n = H * d;
#pragma omp parallel for schedule(static) if (b * n >= TRAJ_OMP_MIN)
    for (int64_t i = 0; i < b; i++) {
        int64_t s = sidx ? sidx[i] : i;
        FN(jerk_fwd_one)(u + i * n, p0 + s * d, v0 + s * d, a0 + s * d, dt, H, d,
                         pos + i * n, vel + i * n, acc + i * n, jerk + i * n);
    }
}

static void FN(jerk_bwd_one)(const T *gp, const T *gv, const T *ga, const T *gj, const T *dt,
                             int64_t H, int64_t d, T *restrict gu, T *restrict st) {
    T *restrict P = st, *restrict V = st + d, *restrict A = st + 2 * d;
    memset(st, 0, (size_t)(3 * d) * sizeof(T));
    memset(gu + (H - 1) * d, 0, (size_t)d * sizeof(T));
    for (int64_t h = H - 1; h >= 1; h--) {
        const T t = dt[h];
        const int64_t r = h * d;
        for (int64_t k = 0; k < d; k++) {
            T pk = P[k] + gp[r + k];
            T vk = V[k] + gv[r + k] + pk * t;
            T ak = A[k] + ga[r + k] + vk * t;
            P[k] = pk;
            V[k] = vk;
            A[k] = ak;
            gu[r - d + k] = gj[r + k] + ak * t;
        }
    }
    for (int64_t k = 0; k < d; k++) {
        P[k] += gp[k];
        V[k] += gv[k];
        A[k] += ga[k];
    }
}

void FN(ad_traj_jerk_bwd)(const T *gp, const T *gv, const T *ga, const T *gj, const T *dt,
                          int64_t b, int64_t H, int64_t d, T *gu, T *gstart) {
    const int64_t n = H * d;
#pragma omp parallel for schedule(static) if (b * n >= TRAJ_OMP_MIN)
    for (int64_t i = 0; i < b; i++)
        FN(jerk_bwd_one)(gp + i * n, gv + i * n, ga + i * n, gj + i * n, dt, H, d, gu + i * n,
                         gstart + i * 3 * d);
}

/* ---- position clique ------------------------------------------------------- */

/* Stencil weights scaled by powers of 1/dt: [pos, vel, acc, jerk][tap]. */
typedef struct FN(stencil) {
    T w[4][5];
    int taps;
} FN(stencil);

static void FN(stencil_init)(FN(stencil) *s, int central, T dt) {
    const T i1 = (T)1 / dt, i2 = i1 * i1, i3 = i2 * i1;
    s->taps = central ? 5 : 4;
    for (int j = 0; j < s->taps; j++) {
        s->w[0][j] = (T)(central ? CEN_P[j] : BWD_P[j]);
        s->w[1][j] = (T)(central ? CEN_V[j] : BWD_V[j]) * i1;
        s->w[2][j] = (T)(central ? CEN_A[j] : BWD_A[j]) * i2;
        s->w[3][j] = (T)(central ? CEN_J[j] : BWD_J[j]) * i3;
    }
}

/* Output row from the tap rows r[0..taps-1] (central: r[j] = P_{h+j};
 * backward: r[o] = Q_{h-o}). */
static void FN(clique_row)(const FN(stencil) *s, const T *const *r, int64_t d, T *restrict pos,
                           T *restrict vel, T *restrict acc, T *restrict jerk) {
    for (int64_t k = 0; k < d; k++) {
        T p = 0, v = 0, a = 0, j = 0;
        for (int t = 0; t < s->taps; t++) {
            T x = r[t][k];
            p += s->w[0][t] * x;
            v += s->w[1][t] * x;
            a += s->w[2][t] * x;
            j += s->w[3][t] * x;
        }
        pos[k] = p;
        vel[k] = v;
        acc[k] = a;
        jerk[k] = j;
    }
}

/* The start padding for dof k: central P_0..P_3, backward Q_{-2}..Q_0. */
static void FN(start_pad)(int central, T p0, T v0, T a0, T dt, T *out) {
    if (central) {
        const T dd = dt * dt;
        out[0] = p0 - 3 * dt * v0 - (T)1.5 * dd * a0;
        out[1] = p0 - 2 * dt * v0 - 2 * dd * a0;
        out[2] = p0 - dt * v0 - (T)1.5 * dd * a0;
        out[3] = p0;
    } else {
        const T vb = v0 - a0 * dt / 2;
        out[0] = p0 - 2 * dt * vb;
        out[1] = p0 - dt * vb;
        out[2] = p0;
    }
}

/* Rows whose taps reach into the start padding, done per dof: central
 * h = 0..3, backward h = 1..3 (h < H). */
static void FN(pos_fwd_head)(const FN(stencil) *s, int central, const T *u, const T *p0,
                             const T *v0, const T *a0, T dt, int64_t H, int64_t A, int64_t d,
                             T *pos, T *vel, T *acc, T *jerk) {
    const int npad = central ? 4 : 3, hlo = central ? 0 : 1;
    for (int64_t k = 0; k < d; k++) {
        T seq[8]; /* central: P_0..P_7; backward: Q_{-2}..Q_3 */
        FN(start_pad)(central, p0[k], v0[k], a0[k], dt, seq);
        for (int m = npad; m < 8; m++) {
            int64_t a = m - npad < A ? m - npad : A - 1;
            seq[m] = u[a * d + k];
        }
        for (int64_t h = hlo; h < 4 && h < H; h++) {
            T o[4] = {0, 0, 0, 0};
            for (int t = 0; t < s->taps; t++) {
                T x = central ? seq[h + t] : seq[h + 2 - t];
                for (int c = 0; c < 4; c++) o[c] += s->w[c][t] * x;
            }
            pos[h * d + k] = o[0];
            vel[h * d + k] = o[1];
            acc[h * d + k] = o[2];
            jerk[h * d + k] = o[3];
        }
    }
}

/* Rows whose taps are all unclamped actions, as one loop over the
 * flattened (row, dof) index: tap t of element e reads x[e + off[t]]. */
static void FN(clique_flat)(const FN(stencil) *s, const T *x, const int64_t *off, int64_t n,
                            T *restrict pos, T *restrict vel, T *restrict acc, T *restrict jerk) {
    const T *restrict x0 = x + off[0], *restrict x1 = x + off[1], *restrict x2 = x + off[2],
            *restrict x3 = x + off[3], *restrict x4 = x + off[s->taps == 5 ? 4 : 3];
    const T w4 = s->taps == 5 ? (T)1 : (T)0; /* the 4-tap stencil has no fifth sample */
    T c[4][5];
    for (int q = 0; q < 4; q++)
        for (int t = 0; t < 5; t++) c[q][t] = t < s->taps ? s->w[q][t] * (t == 4 ? w4 : (T)1) : 0;
    for (int64_t e = 0; e < n; e++) {
        T a = x0[e], b = x1[e], m = x2[e], f = x3[e], g = x4[e];
        pos[e] = c[0][0] * a + c[0][1] * b + c[0][2] * m + c[0][3] * f + c[0][4] * g;
        vel[e] = c[1][0] * a + c[1][1] * b + c[1][2] * m + c[1][3] * f + c[1][4] * g;
        acc[e] = c[2][0] * a + c[2][1] * b + c[2][2] * m + c[2][3] * f + c[2][4] * g;
        jerk[e] = c[3][0] * a + c[3][1] * b + c[3][2] * m + c[3][3] * f + c[3][4] * g;
    }
}

static void FN(pos_fwd_one)(const FN(stencil) *s, int central, const T *u, const T *p0,
                            const T *v0, const T *a0, T dt, int64_t H, int64_t d, T *pos,
                            T *vel, T *acc, T *jerk) {
    const int64_t A = central ? H - 4 : H; /* action rows */
    if (!central) FN(start_row)(p0, v0, a0, d, pos, vel, acc, jerk);
    FN(pos_fwd_head)(s, central, u, p0, v0, a0, dt, H, A, d, pos, vel, acc, jerk);
    /* central rows 4 .. H-5 read u rows h-4 .. h; backward rows 4 .. H-1 read u rows h-4 .. h-1 */
    int64_t hend = central ? H - 4 : H, o = 4 * d;
    int64_t off[5] = {0, d, 2 * d, 3 * d, 4 * d}, offb[4] = {3 * d, 2 * d, d, 0};
    if (hend > 4)
        FN(clique_flat)(s, u, central ? off : offb, (hend - 4) * d, pos + o, vel + o, acc + o, jerk + o);
    for (int64_t h = hend > 4 ? hend : 4; h < H; h++) {
        const T *r[5];
        for (int t = 0; t < s->taps; t++) {
            /* central: P_{h+t} = u_{h+t-4}, held at the last action; backward: Q_{h-t} = u_{h-t-1} */
            int64_t a = central ? h + t - 4 : h - t - 1;
            r[t] = u + (a < A ? a : A - 1) * d;
        }
        FN(clique_row)(s, r, d, pos + h * d, vel + h * d, acc + h * d, jerk + h * d);
    }
}

void FN(ad_traj_pos_fwd)(const T *u, const T *p0, const T *v0, const T *a0, const int64_t *sidx,
                         T dt, int central, int64_t b, int64_t H, int64_t d, T *pos, T *vel,
                         T *acc, T *jerk) {
    FN(stencil) s;
    FN(stencil_init)(&s, central, dt);
    const int64_t n = H * d, nu = (central ? H - 4 : H) * d;
#pragma omp parallel for schedule(static) if (b * n >= TRAJ_OMP_MIN)
    for (int64_t i = 0; i < b; i++) {
        int64_t st = sidx ? sidx[i] : i;
        FN(pos_fwd_one)(&s, central, u + i * nu, p0 + st * d, v0 + st * d, a0 + st * d, dt, H, d,
                        pos + i * n, vel + i * n, acc + i * n, jerk + i * n);
    }
}

/* The output row that tap t of padded sample m feeds, or -1 when none:
 * central h = m - t (0 <= h < H); backward h = m + t (1 <= h < H). */
static int64_t FN(tap_row)(int central, int64_t m, int t, int64_t H) {
    int64_t h = central ? m - t : m + t;
    return (h >= (central ? 0 : 1) && h < H) ? h : -1;
}

/* dst[k] += adjoint of padded sample m (central P_m, backward Q_m). */
static void FN(pad_adjoint_add)(const FN(stencil) *s, int central, int64_t m, const T *gp,
                                const T *gv, const T *ga, const T *gj, int64_t H, int64_t d,
                                T *restrict dst) {
    for (int t = 0; t < s->taps; t++) {
        int64_t h = FN(tap_row)(central, m, t, H);
        if (h < 0) continue;
        const T wp = s->w[0][t], wv = s->w[1][t], wa = s->w[2][t], wj = s->w[3][t];
        const T *restrict P = gp + h * d, *restrict V = gv + h * d, *restrict A = ga + h * d,
                *restrict J = gj + h * d;
        for (int64_t k = 0; k < d; k++) dst[k] += wp * P[k] + wv * V[k] + wa * A[k] + wj * J[k];
    }
}

/* One adjoint of padded sample m for dof k (the start padding). */
static T FN(pad_adjoint_at)(const FN(stencil) *s, int central, int64_t m, const T *gp,
                            const T *gv, const T *ga, const T *gj, int64_t H, int64_t d, int64_t k) {
    T acc = 0;
    for (int t = 0; t < s->taps; t++) {
        int64_t h = FN(tap_row)(central, m, t, H);
        if (h < 0) continue;
        int64_t e = h * d + k;
        acc += s->w[0][t] * gp[e] + s->w[1][t] * gv[e] + s->w[2][t] * ga[e] + s->w[3][t] * gj[e];
    }
    return acc;
}

/* Start adjoints through the padding formulas of FN(start_pad). */
static void FN(pos_bwd_start)(const FN(stencil) *s, int central, const T *gp, const T *gv,
                              const T *ga, const T *gj, T dt, int64_t H, int64_t d, T *st) {
    const T dd = dt * dt;
    for (int64_t k = 0; k < d; k++) {
        if (central) {
            T b0 = FN(pad_adjoint_at)(s, 1, 0, gp, gv, ga, gj, H, d, k);
            T b1 = FN(pad_adjoint_at)(s, 1, 1, gp, gv, ga, gj, H, d, k);
            T b2 = FN(pad_adjoint_at)(s, 1, 2, gp, gv, ga, gj, H, d, k);
            T b3 = FN(pad_adjoint_at)(s, 1, 3, gp, gv, ga, gj, H, d, k);
            st[k] = b0 + b1 + b2 + b3;
            st[d + k] = -dt * (3 * b0 + 2 * b1 + b2);
            st[2 * d + k] = -dd * ((T)1.5 * b0 + 2 * b1 + (T)1.5 * b2);
        } else {
            T qm2 = FN(pad_adjoint_at)(s, 0, -2, gp, gv, ga, gj, H, d, k);
            T qm1 = FN(pad_adjoint_at)(s, 0, -1, gp, gv, ga, gj, H, d, k);
            T q0 = FN(pad_adjoint_at)(s, 0, 0, gp, gv, ga, gj, H, d, k);
            T vb = -dt * qm1 - 2 * dt * qm2;
            st[k] = gp[k] + q0 + qm1 + qm2;
            st[d + k] = gv[k] + vb;
            st[2 * d + k] = ga[k] - dt / 2 * vb;
        }
    }
}

/* dst[e] = adjoint of the interior padded samples, flattened: tap t of
 * element e reads the output gradients at e + off[t]. */
static void FN(adjoint_flat)(const FN(stencil) *s, const T *gp, const T *gv, const T *ga,
                             const T *gj, const int64_t *off, int64_t n, T *restrict dst) {
    for (int64_t e = 0; e < n; e++) dst[e] = 0;
    for (int t = 0; t < s->taps; t++) {
        const T wp = s->w[0][t], wv = s->w[1][t], wa = s->w[2][t], wj = s->w[3][t];
        const T *restrict P = gp + off[t], *restrict V = gv + off[t], *restrict A = ga + off[t],
                *restrict J = gj + off[t];
        for (int64_t e = 0; e < n; e++) dst[e] += wp * P[e] + wv * V[e] + wa * A[e] + wj * J[e];
    }
}

static void FN(pos_bwd_one)(const FN(stencil) *s, int central, const T *gp, const T *gv,
                            const T *ga, const T *gj, T dt, int64_t H, int64_t d, T *gu, T *st) {
    const int64_t A = central ? H - 4 : H, off = central ? 4 : 1; /* u_a is sample a + off */
    /* interior samples: central m = 4 .. H-2 (outputs m-4 .. m), backward
     * m = 1 .. H-4 (outputs m .. m+3) */
    int64_t mlo = off, mend = central ? H - 1 : H - 3;
    int64_t offc[5] = {4 * d, 3 * d, 2 * d, d, 0}, offb[4] = {d, 2 * d, 3 * d, 4 * d};
    if (mend > mlo)
        FN(adjoint_flat)(s, gp, gv, ga, gj, central ? offc : offb, (mend - mlo) * d, gu);
    else
        mend = mlo;
    memset(gu + (mend - off) * d, 0, (size_t)((A - (mend - off)) * d) * sizeof(T));
    /* central: the last action is held over P_{H-1} .. P_{H+3}; backward:
     * u_{H-1} feeds nothing */
    int64_t last = central ? H + 3 : H - 1;
    for (int64_t m = mend; m <= last; m++) {
        int64_t a = m - off < A ? m - off : A - 1;
        FN(pad_adjoint_add)(s, central, m, gp, gv, ga, gj, H, d, gu + a * d);
    }
    FN(pos_bwd_start)(s, central, gp, gv, ga, gj, dt, H, d, st);
}

void FN(ad_traj_pos_bwd)(const T *gp, const T *gv, const T *ga, const T *gj, T dt, int central,
                         int64_t b, int64_t H, int64_t d, T *gu, T *gstart) {
    FN(stencil) s;
    FN(stencil_init)(&s, central, dt);
    const int64_t n = H * d, nu = (central ? H - 4 : H) * d;
#pragma omp parallel for schedule(static) if (b * n >= TRAJ_OMP_MIN)
    for (int64_t i = 0; i < b; i++)
        FN(pos_bwd_one)(&s, central, gp + i * n, gv + i * n, ga + i * n, gj + i * n, dt, H, d,
                        gu + i * nu, gstart + i * 3 * d);
}

void FN(ad_traj_scatter_start)(const T *gstart, const int64_t *sidx, int64_t b, int64_t B0,
                               int64_t d, T *gsp, T *gsv, T *gsa) {
    T *dst[3] = {gsp, gsv, gsa};
    for (int c = 0; c < 3; c++) memset(dst[c], 0, (size_t)(B0 * d) * sizeof(T));
    /* serial: several trajectories may share a start row */
    for (int64_t i = 0; i < b; i++) {
        int64_t s = sidx ? sidx[i] : i;
        for (int c = 0; c < 3; c++) {
            const T *restrict src = gstart + (i * 3 + c) * d;
            T *restrict o = dst[c] + s * d;
            for (int64_t k = 0; k < d; k++) o[k] += src[k];
        }
    }
}

#undef T
#endif
