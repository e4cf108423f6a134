/* traj_kernels.h: one trajectory of the integration steps (acceleration,
 * jerk, position clique) and its exact adjoint, as static inline C99.
 *
 * builtins/kernels/traj.c runs these over a batch (in parallel); export_c embeds
 * this text verbatim in the C files it writes (vm/export/lower_traj.c), so an
 * exported step is the library's step. Keep it plain C99 with nothing but
 * <stdint.h>: no allocation, no libc calls, no file-scope objects.
 *
 * No include guard: include it once per element type, with TRAJ_T (float
 * or double) and TRAJ_FN(name) (a name with the type's suffix) defined.
 *
 * Layout (docs/trajectory.md): one trajectory is [H, d] contiguous; its
 * start rows p0, v0, a0 are [d]; dt has H entries (dt[h] ends at row h;
 * dt[0] unused). The adjoints take the four output gradients [H, d] and
 * write the action gradient and 'st' [3, d]: the start adjoints of
 * position, velocity and acceleration. */

/* TRAJ_SIMD before a loop whose iterations are independent: the library
 * defines it as an OpenMP simd pragma (each element computed as written, the
 * same bits); empty otherwise, as in exported files. */
#ifndef TRAJ_SIMD
#define TRAJ_SIMD
#endif

/* Row 0 of every step: the start state, jerk 0. */
static inline void TRAJ_FN(traj_start_row)(const TRAJ_T *p0, const TRAJ_T *v0, const TRAJ_T *a0, int64_t d,
                                           TRAJ_T *pos, TRAJ_T *vel, TRAJ_T *acc, TRAJ_T *jerk) {
    for (int64_t k = 0; k < d; k++) {
        pos[k] = p0[k];
        vel[k] = v0[k];
        acc[k] = a0[k];
        jerk[k] = 0;
    }
}

static inline void TRAJ_FN(traj_zero)(TRAJ_T *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = 0;
}

/* ---- acceleration step: a_h = u_{h-1} ---- */

static inline void TRAJ_FN(traj_acc_fwd_one)(const TRAJ_T *u, const TRAJ_T *p0, const TRAJ_T *v0, const TRAJ_T *a0,
                                             const TRAJ_T *dt, int64_t H, int64_t d, TRAJ_T *restrict pos,
                                             TRAJ_T *restrict vel, TRAJ_T *restrict acc, TRAJ_T *restrict jerk) {
    TRAJ_FN(traj_start_row)(p0, v0, a0, d, pos, vel, acc, jerk);
    for (int64_t h = 1; h < H; h++) {
        const TRAJ_T t = dt[h];
        const TRAJ_T *restrict a = u + (h - 1) * d;
        const int64_t r = h * d, q = r - d;
        for (int64_t k = 0; k < d; k++) {
            TRAJ_T ak = a[k], vk = vel[q + k] + ak * t;
            acc[r + k] = ak;
            jerk[r + k] = (ak - acc[q + k]) / t;
            vel[r + k] = vk;
            pos[r + k] = pos[q + k] + vk * t;
        }
    }
}

/* Reverse sweep; 'st' holds the running adjoints of p and v, then the
 * start adjoints [p0, v0, a0]. */
static inline void TRAJ_FN(traj_acc_bwd_one)(const TRAJ_T *gp, const TRAJ_T *gv, const TRAJ_T *ga, const TRAJ_T *gj,
                                             const TRAJ_T *dt, int64_t H, int64_t d, TRAJ_T *restrict gu,
                                             TRAJ_T *restrict st) {
    TRAJ_T *restrict P = st, *restrict V = st + d, *restrict A = st + 2 * d;
    TRAJ_FN(traj_zero)(st, 3 * d);
    TRAJ_FN(traj_zero)(gu + (H - 1) * d, d);
    for (int64_t h = H - 1; h >= 1; h--) {
        const TRAJ_T t = dt[h];
        const int64_t r = h * d;
        /* j_{h+1} = (a_{h+1} - a_h) / dt_{h+1} also depends on a_h */
        const TRAJ_T tn = h + 1 < H ? dt[h + 1] : (TRAJ_T)1;
        const TRAJ_T *restrict gjn = h + 1 < H ? gj + r + d : A; /* A is zero here */
        for (int64_t k = 0; k < d; k++) {
            TRAJ_T pk = P[k] + gp[r + k];
            TRAJ_T vk = V[k] + gv[r + k] + pk * t;
            P[k] = pk;
            V[k] = vk;
            gu[r - d + k] = ga[r + k] + gj[r + k] / t - gjn[k] / tn + vk * t;
        }
    }
    const TRAJ_T t1 = H > 1 ? dt[1] : (TRAJ_T)1;
    for (int64_t k = 0; k < d; k++) {
        P[k] += gp[k];
        V[k] += gv[k];
        A[k] = ga[k] - (H > 1 ? gj[d + k] / t1 : (TRAJ_T)0);
    }
}

/* ---- jerk step: j_h = u_{h-1} ---- */

static inline void TRAJ_FN(traj_jerk_fwd_one)(const TRAJ_T *u, const TRAJ_T *p0, const TRAJ_T *v0, const TRAJ_T *a0,
                                              const TRAJ_T *dt, int64_t H, int64_t d, TRAJ_T *restrict pos,
                                              TRAJ_T *restrict vel, TRAJ_T *restrict acc, TRAJ_T *restrict jerk) {
    TRAJ_FN(traj_start_row)(p0, v0, a0, d, pos, vel, acc, jerk);
    for (int64_t h = 1; h < H; h++) {
        const TRAJ_T t = dt[h];
        const TRAJ_T *restrict j = u + (h - 1) * d;
        const int64_t r = h * d, q = r - d;
        for (int64_t k = 0; k < d; k++) {
            TRAJ_T jk = j[k], ak = acc[q + k] + jk * t, vk = vel[q + k] + ak * t;
            jerk[r + k] = jk;
            acc[r + k] = ak;
            vel[r + k] = vk;
            pos[r + k] = pos[q + k] + vk * t;
        }
    }
}

static inline void TRAJ_FN(traj_jerk_bwd_one)(const TRAJ_T *gp, const TRAJ_T *gv, const TRAJ_T *ga, const TRAJ_T *gj,
                                              const TRAJ_T *dt, int64_t H, int64_t d, TRAJ_T *restrict gu,
                                              TRAJ_T *restrict st) {
    TRAJ_T *restrict P = st, *restrict V = st + d, *restrict A = st + 2 * d;
    TRAJ_FN(traj_zero)(st, 3 * d);
    TRAJ_FN(traj_zero)(gu + (H - 1) * d, d);
    for (int64_t h = H - 1; h >= 1; h--) {
        const TRAJ_T t = dt[h];
        const int64_t r = h * d;
        for (int64_t k = 0; k < d; k++) {
            TRAJ_T pk = P[k] + gp[r + k];
            TRAJ_T vk = V[k] + gv[r + k] + pk * t;
            TRAJ_T ak = A[k] + ga[r + k] + vk * t;
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

/* ---- position clique: u holds positions; central u [H-4, d] (H >= 8),
 * backward u [H, d] (H >= 4); scalar dt ---- */

/* Stencil weights scaled by powers of 1/dt: [pos, vel, acc, jerk][tap]. */
typedef struct TRAJ_FN(traj_stencil) {
    TRAJ_T w[4][5];
    int taps;
} TRAJ_FN(traj_stencil);

static inline void TRAJ_FN(traj_stencil_init)(TRAJ_FN(traj_stencil) *s, int central, TRAJ_T dt) {
    /* central clique over the window P[h .. h+4]; backward: weight of Q_{h-o}, o = 0..3 */
    static const double cen[4][5] = {{0, 0, 1, 0, 0},
                                     {1.0 / 12, -2.0 / 3, 0, 2.0 / 3, -1.0 / 12},
                                     {-1.0 / 12, 4.0 / 3, -5.0 / 2, 4.0 / 3, -1.0 / 12},
                                     {-0.5, 1, 0, -1, 0.5}};
    static const double bwd[4][4] = {{1, 0, 0, 0}, {1, -1, 0, 0}, {1, -2, 1, 0}, {1, -3, 3, -1}};
    const TRAJ_T i1 = (TRAJ_T)1 / dt, i2 = i1 * i1, i3 = i2 * i1;
    s->taps = central ? 5 : 4;
    for (int j = 0; j < s->taps; j++) {
        s->w[0][j] = (TRAJ_T)(central ? cen[0][j] : bwd[0][j]);
        s->w[1][j] = (TRAJ_T)(central ? cen[1][j] : bwd[1][j]) * i1;
        s->w[2][j] = (TRAJ_T)(central ? cen[2][j] : bwd[2][j]) * i2;
        s->w[3][j] = (TRAJ_T)(central ? cen[3][j] : bwd[3][j]) * i3;
    }
}

/* Output row from the tap rows r[0..taps-1] (central: r[j] = P_{h+j};
 * backward: r[o] = Q_{h-o}). */
static inline void TRAJ_FN(traj_clique_row)(const TRAJ_FN(traj_stencil) *s, const TRAJ_T *const *r, int64_t d,
                                            TRAJ_T *restrict pos, TRAJ_T *restrict vel, TRAJ_T *restrict acc,
                                            TRAJ_T *restrict jerk) {
    /* per element 0 + w0 x0 + w1 x1 + ... in tap order, the dofs the inner loop */
    TRAJ_SIMD for (int64_t k = 0; k < d; k++) {
        pos[k] = 0;
        vel[k] = 0;
        acc[k] = 0;
        jerk[k] = 0;
    }
    for (int t = 0; t < s->taps; t++) {
        const TRAJ_T wp = s->w[0][t], wv = s->w[1][t], wa = s->w[2][t], wj = s->w[3][t];
        const TRAJ_T *restrict x = r[t];
        TRAJ_SIMD for (int64_t k = 0; k < d; k++) {
            pos[k] += wp * x[k];
            vel[k] += wv * x[k];
            acc[k] += wa * x[k];
            jerk[k] += wj * x[k];
        }
    }
}

/* The start padding for dof k: central P_0..P_3, backward Q_{-2}..Q_0. */
static inline void TRAJ_FN(traj_start_pad)(int central, TRAJ_T p0, TRAJ_T v0, TRAJ_T a0, TRAJ_T dt, TRAJ_T *out) {
    if (central) {
        const TRAJ_T dd = dt * dt;
        out[0] = p0 - 3 * dt * v0 - (TRAJ_T)1.5 * dd * a0;
        out[1] = p0 - 2 * dt * v0 - 2 * dd * a0;
        out[2] = p0 - dt * v0 - (TRAJ_T)1.5 * dd * a0;
        out[3] = p0;
    } else {
        const TRAJ_T vb = v0 - a0 * dt / 2;
        out[0] = p0 - 2 * dt * vb;
        out[1] = p0 - dt * vb;
        out[2] = p0;
    }
}

/* Rows whose taps reach into the start padding, done per dof: central
 * h = 0..3, backward h = 1..3 (h < H). */
static inline void TRAJ_FN(traj_pos_fwd_head)(const TRAJ_FN(traj_stencil) *s, int central, const TRAJ_T *u,
                                              const TRAJ_T *p0, const TRAJ_T *v0, const TRAJ_T *a0, TRAJ_T dt,
                                              int64_t H, int64_t A, int64_t d, TRAJ_T *pos, TRAJ_T *vel,
                                              TRAJ_T *acc, TRAJ_T *jerk) {
    const int npad = central ? 4 : 3, hlo = central ? 0 : 1;
    for (int64_t k = 0; k < d; k++) {
        TRAJ_T seq[8]; /* central: P_0..P_7; backward: Q_{-2}..Q_3 */
        TRAJ_FN(traj_start_pad)(central, p0[k], v0[k], a0[k], dt, seq);
        for (int m = npad; m < 8; m++) {
            int64_t a = m - npad < A ? m - npad : A - 1;
            seq[m] = u[a * d + k];
        }
        for (int64_t h = hlo; h < 4 && h < H; h++) {
            TRAJ_T o[4] = {0, 0, 0, 0};
            for (int t = 0; t < s->taps; t++) {
                TRAJ_T x = central ? seq[h + t] : seq[h + 2 - t];
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
static inline void TRAJ_FN(traj_clique_flat)(const TRAJ_FN(traj_stencil) *s, const TRAJ_T *x, const int64_t *off,
                                             int64_t n, TRAJ_T *restrict pos, TRAJ_T *restrict vel,
                                             TRAJ_T *restrict acc, TRAJ_T *restrict jerk) {
    const TRAJ_T *restrict x0 = x + off[0], *restrict x1 = x + off[1], *restrict x2 = x + off[2],
                 *restrict x3 = x + off[3], *restrict x4 = x + off[s->taps == 5 ? 4 : 3];
    const TRAJ_T w4 = s->taps == 5 ? (TRAJ_T)1 : (TRAJ_T)0; /* the 4-tap stencil has no fifth sample */
    TRAJ_T c[4][5];
    for (int q = 0; q < 4; q++)
        for (int t = 0; t < 5; t++) c[q][t] = t < s->taps ? s->w[q][t] * (t == 4 ? w4 : (TRAJ_T)1) : 0;
    TRAJ_SIMD for (int64_t e = 0; e < n; e++) {
        TRAJ_T a = x0[e], b = x1[e], m = x2[e], f = x3[e], g = x4[e];
        pos[e] = c[0][0] * a + c[0][1] * b + c[0][2] * m + c[0][3] * f + c[0][4] * g;
        vel[e] = c[1][0] * a + c[1][1] * b + c[1][2] * m + c[1][3] * f + c[1][4] * g;
        acc[e] = c[2][0] * a + c[2][1] * b + c[2][2] * m + c[2][3] * f + c[2][4] * g;
        jerk[e] = c[3][0] * a + c[3][1] * b + c[3][2] * m + c[3][3] * f + c[3][4] * g;
    }
}

static inline void TRAJ_FN(traj_pos_fwd_one)(const TRAJ_FN(traj_stencil) *s, int central, const TRAJ_T *u,
                                             const TRAJ_T *p0, const TRAJ_T *v0, const TRAJ_T *a0, TRAJ_T dt,
                                             int64_t H, int64_t d, TRAJ_T *pos, TRAJ_T *vel, TRAJ_T *acc,
                                             TRAJ_T *jerk) {
    const int64_t A = central ? H - 4 : H; /* action rows */
    if (!central) TRAJ_FN(traj_start_row)(p0, v0, a0, d, pos, vel, acc, jerk);
    TRAJ_FN(traj_pos_fwd_head)(s, central, u, p0, v0, a0, dt, H, A, d, pos, vel, acc, jerk);
    /* central rows 4 .. H-5 read u rows h-4 .. h; backward rows 4 .. H-1 read u rows h-4 .. h-1 */
    int64_t hend = central ? H - 4 : H, o = 4 * d;
    int64_t off[5] = {0, d, 2 * d, 3 * d, 4 * d}, offb[4] = {3 * d, 2 * d, d, 0};
    if (hend > 4)
        TRAJ_FN(traj_clique_flat)(s, u, central ? off : offb, (hend - 4) * d, pos + o, vel + o, acc + o, jerk + o);
    for (int64_t h = hend > 4 ? hend : 4; h < H; h++) {
        const TRAJ_T *r[5];
        for (int t = 0; t < s->taps; t++) {
            /* central: P_{h+t} = u_{h+t-4}, held at the last action; backward: Q_{h-t} = u_{h-t-1} */
            int64_t a = central ? h + t - 4 : h - t - 1;
            r[t] = u + (a < A ? a : A - 1) * d;
        }
        TRAJ_FN(traj_clique_row)(s, r, d, pos + h * d, vel + h * d, acc + h * d, jerk + h * d);
    }
}

/* The output row that tap t of padded sample m feeds, or -1 when none:
 * central h = m - t (0 <= h < H); backward h = m + t (1 <= h < H). */
static inline int64_t TRAJ_FN(traj_tap_row)(int central, int64_t m, int t, int64_t H) {
    int64_t h = central ? m - t : m + t;
    return (h >= (central ? 0 : 1) && h < H) ? h : -1;
}

/* dst[k] += adjoint of padded sample m (central P_m, backward Q_m). */
static inline void TRAJ_FN(traj_pad_adjoint_add)(const TRAJ_FN(traj_stencil) *s, int central, int64_t m,
                                                 const TRAJ_T *gp, const TRAJ_T *gv, const TRAJ_T *ga,
                                                 const TRAJ_T *gj, int64_t H, int64_t d, TRAJ_T *restrict dst) {
    for (int t = 0; t < s->taps; t++) {
        int64_t h = TRAJ_FN(traj_tap_row)(central, m, t, H);
        if (h < 0) continue;
        const TRAJ_T wp = s->w[0][t], wv = s->w[1][t], wa = s->w[2][t], wj = s->w[3][t];
        const TRAJ_T *restrict P = gp + h * d, *restrict V = gv + h * d, *restrict A = ga + h * d,
                     *restrict J = gj + h * d;
        TRAJ_SIMD for (int64_t k = 0; k < d; k++) dst[k] += wp * P[k] + wv * V[k] + wa * A[k] + wj * J[k];
    }
}

/* The adjoints of padded sample m for dofs k0 .. k0+nk-1 (the start padding) into y. */
static inline void TRAJ_FN(traj_pad_adjoint_rows)(const TRAJ_FN(traj_stencil) *s, int central, int64_t m,
                                                  const TRAJ_T *gp, const TRAJ_T *gv, const TRAJ_T *ga,
                                                  const TRAJ_T *gj, int64_t H, int64_t d, int64_t k0, int64_t nk,
                                                  TRAJ_T *restrict y) {
    for (int64_t j = 0; j < nk; j++) y[j] = 0;
    for (int t = 0; t < s->taps; t++) {
        int64_t h = TRAJ_FN(traj_tap_row)(central, m, t, H);
        if (h < 0) continue;
        const TRAJ_T wp = s->w[0][t], wv = s->w[1][t], wa = s->w[2][t], wj = s->w[3][t];
        const TRAJ_T *restrict P = gp + h * d + k0, *restrict V = gv + h * d + k0, *restrict A = ga + h * d + k0,
                     *restrict J = gj + h * d + k0;
        TRAJ_SIMD for (int64_t j = 0; j < nk; j++) y[j] += wp * P[j] + wv * V[j] + wa * A[j] + wj * J[j];
    }
}

/* Start adjoints through the padding formulas of traj_start_pad, up to 16
 * dofs at a time. */
static inline void TRAJ_FN(traj_pos_bwd_start)(const TRAJ_FN(traj_stencil) *s, int central, const TRAJ_T *gp,
                                               const TRAJ_T *gv, const TRAJ_T *ga, const TRAJ_T *gj, TRAJ_T dt,
                                               int64_t H, int64_t d, TRAJ_T *st) {
    const TRAJ_T dd = dt * dt;
    for (int64_t k0 = 0; k0 < d; k0 += 16) {
        const int64_t nk = d - k0 < 16 ? d - k0 : 16;
        TRAJ_T b[4][16]; /* central: P_0..P_3; backward: Q_{-2}..Q_0 */
        for (int i = 0; i < (central ? 4 : 3); i++)
            TRAJ_FN(traj_pad_adjoint_rows)(s, central, central ? i : i - 2, gp, gv, ga, gj, H, d, k0, nk, b[i]);
        for (int64_t j = 0; j < nk; j++) {
            const int64_t k = k0 + j;
            if (central) {
                TRAJ_T b0 = b[0][j], b1 = b[1][j], b2 = b[2][j], b3 = b[3][j];
                st[k] = b0 + b1 + b2 + b3;
                st[d + k] = -dt * (3 * b0 + 2 * b1 + b2);
                st[2 * d + k] = -dd * ((TRAJ_T)1.5 * b0 + 2 * b1 + (TRAJ_T)1.5 * b2);
            } else {
                TRAJ_T qm2 = b[0][j], qm1 = b[1][j], q0 = b[2][j];
                TRAJ_T vb = -dt * qm1 - 2 * dt * qm2;
                st[k] = gp[k] + q0 + qm1 + qm2;
                st[d + k] = gv[k] + vb;
                st[2 * d + k] = ga[k] - dt / 2 * vb;
            }
        }
    }
}

/* dst[e] = adjoint of the interior padded samples, flattened: tap t of
 * element e reads the output gradients at e + off[t]. */
static inline void TRAJ_FN(traj_adjoint_flat)(const TRAJ_FN(traj_stencil) *s, const TRAJ_T *gp, const TRAJ_T *gv,
                                              const TRAJ_T *ga, const TRAJ_T *gj, const int64_t *off, int64_t n,
                                              TRAJ_T *restrict dst) {
    for (int64_t e = 0; e < n; e++) dst[e] = 0;
    for (int t = 0; t < s->taps; t++) {
        const TRAJ_T wp = s->w[0][t], wv = s->w[1][t], wa = s->w[2][t], wj = s->w[3][t];
        const TRAJ_T *restrict P = gp + off[t], *restrict V = gv + off[t], *restrict A = ga + off[t],
                     *restrict J = gj + off[t];
        TRAJ_SIMD for (int64_t e = 0; e < n; e++) dst[e] += wp * P[e] + wv * V[e] + wa * A[e] + wj * J[e];
    }
}

static inline void TRAJ_FN(traj_pos_bwd_one)(const TRAJ_FN(traj_stencil) *s, int central, const TRAJ_T *gp,
                                             const TRAJ_T *gv, const TRAJ_T *ga, const TRAJ_T *gj, TRAJ_T dt,
                                             int64_t H, int64_t d, TRAJ_T *gu, TRAJ_T *st) {
    const int64_t A = central ? H - 4 : H, off = central ? 4 : 1; /* u_a is sample a + off */
    /* interior samples: central m = 4 .. H-2 (outputs m-4 .. m), backward
     * m = 1 .. H-4 (outputs m .. m+3) */
    int64_t mlo = off, mend = central ? H - 1 : H - 3;
    int64_t offc[5] = {4 * d, 3 * d, 2 * d, d, 0}, offb[4] = {d, 2 * d, 3 * d, 4 * d};
    if (mend > mlo)
        TRAJ_FN(traj_adjoint_flat)(s, gp, gv, ga, gj, central ? offc : offb, (mend - mlo) * d, gu);
    else
        mend = mlo;
    TRAJ_FN(traj_zero)(gu + (mend - off) * d, (A - (mend - off)) * d);
    /* central: the last action is held over P_{H-1} .. P_{H+3}; backward:
     * u_{H-1} feeds nothing */
    int64_t last = central ? H + 3 : H - 1;
    for (int64_t m = mend; m <= last; m++) {
        int64_t a = m - off < A ? m - off : A - 1;
        TRAJ_FN(traj_pad_adjoint_add)(s, central, m, gp, gv, ga, gj, H, d, gu + a * d);
    }
    TRAJ_FN(traj_pos_bwd_start)(s, central, gp, gv, ga, gj, dt, H, d, st);
}

/* One trajectory's start adjoints 'st' [3, d] added into the start rows it
 * read (several trajectories may share one: callers run these in order). */
static inline void TRAJ_FN(traj_add_start)(const TRAJ_T *st, int64_t d, TRAJ_T *gsp, TRAJ_T *gsv, TRAJ_T *gsa) {
    for (int64_t k = 0; k < d; k++) {
        gsp[k] += st[k];
        gsv[k] += st[d + k];
        gsa[k] += st[2 * d + k];
    }
}
