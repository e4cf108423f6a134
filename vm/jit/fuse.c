/* jit/fuse.c: fused element-wise groups run block by block over the shipped
 * kernels (SLEEF's vector functions for exp, sin, ...), intermediates kept in
 * L1-sized registers instead of tensors. */
#include "jit/fuse.h"

#include <stdint.h>
#include <string.h>

#include "../../builtins/kernels/elementwise.h"
#include "jit/fuse_simd.h"
#include "trace/op_ids.h"

#define UN(n) {AD_OP_##n, #n, 1, 1, ad_k_##n##_f32, ad_k_##n##_f64, NULL, NULL, AD_FU_UNARY, NULL, NULL},
#define BIN(n, np) {AD_OP_##n, #n, 2, np, NULL, NULL, ad_k_##n##_f32, ad_k_##n##_f64, AD_FU_BINARY, NULL, NULL},
#define CMP(n) {AD_OP_##n, #n, 2, 2, NULL, NULL, NULL, NULL, AD_FU_COMPARE, ad_k_##n##_f32, ad_k_##n##_f64},

/* The ops a fused group runs: the shipped kernels of kernels/ew_table.h's rows
 * (the binary ones and neg/abs/square/relu have an AVX2 clone), with the
 * parameters their records have (add's alpha, div's rounding_mode). */
static const ad_fuop ops[] = {
    BIN(add, 3) BIN(sub, 3) BIN(mul, 2) BIN(div, 3) BIN(pow, 2) BIN(maximum, 2) BIN(minimum, 2)
    UN(neg) UN(abs) UN(square) UN(relu) UN(exp) UN(expm1) UN(log) UN(log1p) UN(log2) UN(sqrt)
    UN(rsqrt) UN(reciprocal) UN(sin) UN(cos) UN(tan) UN(tanh) UN(sigmoid) UN(silu)
    BIN(sigmoid_backward, 2) BIN(tanh_backward, 2)
    CMP(eq) CMP(ne) CMP(lt) CMP(le) CMP(gt) CMP(ge)
    {AD_OP_where, "where", 3, 3, NULL, NULL, NULL, NULL, AD_FU_WHERE, NULL, NULL},
};

#define NOPS ((int)(sizeof ops / sizeof ops[0]))

int ad_fuse_find(int id) {
    for (int i = 0; i < NOPS; i++)
        if (ops[i].id == id) return i;
    return -1;
}

const ad_fuop *ad_fuse_op(int i) { return &ops[i]; }

enum { LD_NUM, LD_SCALAR, LD_CONTIG, LD_GATHER };

/* Copies run elements from src, 'stride' elements apart (0: one element
 * repeated), to out; es is 1 (bool), 4 or 8 bytes. */
static void copy_run(char *out, const char *src, int64_t stride, int64_t run, size_t es) {
    if (stride == 1) { memcpy(out, src, (size_t)run * es); return; }
    if (es == 1) { /* bools */
        if (stride == 0) memset(out, src[0], (size_t)run);
        else for (int64_t k = 0; k < run; k++) out[k] = src[k * stride];
        return;
    }
    /* element-aligned: tensor data and the block scratch */
    if (es == 8) {
        const double *x = (const double *)(const void *)src;
        double *o = (double *)(void *)out;
        if (stride == 0) { double c = x[0]; _Pragma("omp simd") for (int64_t k = 0; k < run; k++) o[k] = c; }
        else for (int64_t k = 0; k < run; k++) o[k] = x[k * stride];
    } else {
        const float *x = (const float *)(const void *)src;
        float *o = (float *)(void *)out;
        if (stride == 0) { float c = x[0]; _Pragma("omp simd") for (int64_t k = 0; k < run; k++) o[k] = c; }
        else for (int64_t k = 0; k < run; k++) o[k] = x[k * stride];
    }
}

/* A short contiguous operand repeated along the outer dimensions (the
 * trajectory's [7] joint limits read as [64,32,7]): the block is the
 * pattern from phase 'ph', written once and then doubled, instead of a copy
 * per 7 elements. */
static void gather_periodic(const char *src, int64_t P, int64_t ph, int64_t len, size_t es, char *out) {
    int64_t k = P - ph < len ? P - ph : len;
    memcpy(out, src + (size_t)ph * es, (size_t)k * es);
    if (k < len) {
        int64_t n = ph < len - k ? ph : len - k;
        memcpy(out + (size_t)k * es, src, (size_t)n * es);
        k += n;
    }
    for (; k < len; k *= 2) {
        int64_t n = k < len - k ? k : len - k;
        memcpy(out + (size_t)k * es, out, (size_t)n * es);
    }
}

static bool periodic(const int64_t *est, int nd, const int64_t *space, int64_t len) {
    return nd == 2 && est[0] == 0 && est[1] == 1 && space[1] < len;
}

/* Copies elements [lo, lo + len) of v, broadcast to the space, into 'out'
 * (est: v's strides per space dim, 0 where broadcast), a run along the
 * innermost dimension at a time: a broadcast operand (the trajectory's
 * [64,1,1] gradient read as [64,32,7]) costs a fill per row, not an index
 * walk per element. */
static void gather(const ad_fuview *v, const int64_t *est, int nd, const int64_t *space, int64_t lo, int64_t len,
                   size_t es, char *out) {
    if (nd == 0) {
        for (int64_t i = 0; i < len; i++) memcpy(out + (size_t)i * es, v->data, es);
        return;
    }
    if (periodic(est, nd, space, len)) {
        gather_periodic(v->data, space[1], lo % space[1], len, es, out);
        return;
    }
    if (nd == 2 && est[1] == 0 && es != 1) {
        /* each element repeated over a short row (the fk chain's [n, 7, 1, 1] cosines read
         * as [n, 7, 4, 4]): a fill per row, without the walk's per-run bookkeeping */
        int64_t P = space[1], row = lo / P, i = 0, run = P - lo % P;
        for (; i < len; i += run, run = P, row++) {
            if (run > len - i) run = len - i;
            if (es == 8) {
                double c, *o = (double *)(void *)(out + (size_t)i * 8);
                memcpy(&c, v->data + (size_t)(row * est[0]) * 8, 8);
                _Pragma("omp simd") for (int64_t k = 0; k < run; k++) o[k] = c;
            } else {
                float c, *o = (float *)(void *)(out + (size_t)i * 4);
                memcpy(&c, v->data + (size_t)(row * est[0]) * 4, 4);
                _Pragma("omp simd") for (int64_t k = 0; k < run; k++) o[k] = c;
            }
        }
        return;
    }
    int64_t idx[AD_MAX_DIMS], off = 0, rest = lo;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = space[d] ? rest % space[d] : 0;
        rest = space[d] ? rest / space[d] : 0;
        off += idx[d] * est[d];
    }
    int last = nd - 1;
    for (int64_t i = 0; i < len;) {
        int64_t run = space[last] - idx[last];
        if (run > len - i) run = len - i;
        copy_run(out + (size_t)i * es, v->data + (size_t)off * es, est[last], run, es);
        i += run;
        if ((idx[last] += run) < space[last]) { off += run * est[last]; continue; }
        off -= est[last] * (idx[last] - run);
        idx[last] = 0;
        for (int d = last - 1; d >= 0; d--) {
            off += est[d];
            if (++idx[d] < space[d]) break;
            off -= est[d] * idx[d];
            idx[d] = 0;
        }
    }
}

static bool view_contiguous(const ad_fuview *v) {
    if (!v->strides) return true;
    int64_t expect = 1;
    for (int k = v->ndim - 1; k >= 0; k--) {
        if (v->shape[k] != 1 && v->strides[k] != expect) return false;
        expect *= v->shape[k];
    }
    return true;
}

/* How a load is read: its mode, and for a gather its strides over the space
 * (0 along broadcast dims). */
static int load_mode(const ad_plgroup *g, const ad_fuview *v, int64_t *est) {
    if (v->numel == 1) return LD_SCALAR;
    if (v->numel == g->numel && view_contiguous(v)) return LD_CONTIG;
    int off = g->ndim - v->ndim;
    int64_t expect = 1;
    for (int d = g->ndim - 1; d >= 0; d--) {
        int k = d - off;
        if (k < 0) { est[d] = 0; continue; }
        est[d] = v->shape[k] == 1 ? 0 : v->strides ? v->strides[k] : expect;
        expect *= v->shape[k];
    }
    return LD_GATHER;
}

/* Merges the space's dimensions that an operand walks as one (its stride
 * of a dimension equals the next one's times that one's size: both 0 when
 * broadcast, as a [64,1,1] operand over [64,32,7] reads [64,224]), so that
 * gather copies long runs. est is rewritten in place; returns the new rank. */
static int collapse(int nd, const int64_t *space, int64_t *est, int64_t *sp) {
    int n = 0;
    for (int d = 0; d < nd; d++) {
        if (space[d] == 1) continue;
        if (n && est[n - 1] == est[d] * space[d]) { sp[n - 1] *= space[d]; est[n - 1] = est[d]; continue; }
        sp[n] = space[d];
        est[n++] = est[d];
    }
    if (n == 0) { sp[0] = 1; est[0] = 0; n = 1; }
    return n;
}

static void splat(char *dst, const char *src, int64_t len, size_t es) {
    for (int64_t i = 0; i < len; i++) memcpy(dst + (size_t)i * es, src, es);
}

static double block_sum(const char *p, int64_t stride, int64_t len, ad_dtype dt) {
    double s = 0;
    if (dt == AD_FLOAT64) {
        const double *x = (const double *)p;
        if (!stride) return x[0] * (double)len;
        for (int64_t i = 0; i < len; i++) s += x[i];
    } else {
        const float *x = (const float *)p;
        if (!stride) return (double)x[0] * (double)len;
        for (int64_t i = 0; i < len; i++) s += x[i];
    }
    return s;
}


/* The group's instructions over one block, stores right after the
 * instruction that makes their value. One copy per dtype: the loop runs per
 * record of a long chain, so it stays free of per-instruction dtype tests. */
/* A comparison or a where (kept out of the block loop, which runs per
 * record of a long chain): returns the result's stride. */
#define AD_FUSE_SELECT(T, sfx, CMP)                                                                      \
    static int64_t select_##sfx(const ad_fuop *op, const ad_plinstr *in, T *d, const char **regp,        \
                                const int64_t *rstride, int64_t len) {                                  \
        int64_t sa = rstride[in->a], sb = rstride[in->b], s = sa | sb;                                 \
        if (op->kind == AD_FU_COMPARE) {                                                               \
            op->CMP((bool *)(void *)d, (const T *)regp[in->a], sa, (const T *)regp[in->b], sb, s ? len : 1); \
            return s;                                                                                  \
        }                                                                                              \
        int64_t sc = rstride[in->c];                                                                   \
        s |= sc;                                                                                       \
        ad_fu_where_##sfx(d, (const bool *)regp[in->a], sa, (const T *)regp[in->b], sb, (const T *)regp[in->c], sc, \
                          s ? len : 1);                                                                \
        return s;                                                                                      \
    }
AD_FUSE_SELECT(float, f32, c32)
AD_FUSE_SELECT(double, f64, c64)

#define AD_FUSE_BLOCK(T, UN, BIN, CMP, sfx)                                                              \
    for (int k = 0; k < g->ninstrs; k++) {                                                             \
        const ad_plinstr *in = &g->instrs[k];                                                          \
        const ad_fuop *op = &ops[in->fn];                                                              \
        /* a value stored right after: computed straight into its destination (bools go through     \
         * their register, a byte per element) */                                                    \
        bool direct = in->direct;                                                                      \
        T *d = direct ? (T *)dst[st] + lo : (T *)(scratch + (size_t)in->dst * AD_PLAN_BLOCK_BYTES); \
        int64_t sa = rstride[in->a], s = sa;                                                           \
        if (op->kind == AD_FU_BINARY) {                                                                \
            int64_t sb = rstride[in->b];                                                               \
            s |= sb;                                                                                   \
            op->BIN(d, (const T *)regp[in->a], sa, (const T *)regp[in->b], sb, s ? len : 1);           \
        } else if (op->kind == AD_FU_UNARY) op->UN(d, (const T *)regp[in->a], sa ? len : 1);            \
        else s = select_##sfx(op, in, d, regp, rstride, len);                                          \
        regp[in->dst] = (const char *)d;                                                               \
        rstride[in->dst] = s;                                                                          \
        if (direct) {                                                                                  \
            if (!s && len > 1) splat((char *)(d + 1), (const char *)d, len - 1, sizeof(T));           \
            rstride[in->dst] = 1;                                                                      \
            st++;                                                                                      \
        }                                                                                              \
        for (; st < g->nstores && g->stores[st].after == k; st++) store(g, st, dst[st], lo, len, sizeof(T)); \
    }

/* A copy_'s write (vm/jit/plan_into.c): 0 + x, as inplace_copy's forward adds
 * its source to zeros (-0.0 becomes +0.0, nan stays). */
static void store_into(char *to, const char *from, int64_t stride, int64_t len, size_t es) {
    if (es == 8) {
        double *y = (double *)(void *)to;
        const double *x = (const double *)(const void *)from;
        if (stride) { _Pragma("omp simd") for (int64_t i = 0; i < len; i++) y[i] = 0.0 + x[i]; }
        else for (int64_t i = 0; i < len; i++) y[i] = 0.0 + x[0];
    } else {
        float *y = (float *)(void *)to;
        const float *x = (const float *)(const void *)from;
        if (stride) { _Pragma("omp simd") for (int64_t i = 0; i < len; i++) y[i] = 0.0f + x[i]; }
        else for (int64_t i = 0; i < len; i++) y[i] = 0.0f + x[0];
    }
}

static void store(const ad_plgroup *g, int st, char *to, int64_t lo, int64_t len, size_t es) {
    const ad_plstore *o = &g->stores[st];
    if (o->b8) es = 1;
    if (o->one) { if (!lo) memcpy(to, g->regp[o->reg], es); return; }
    to += (size_t)lo * es;
    if (o->into) { store_into(to, g->regp[o->reg], g->rstride[o->reg], len, es); return; }
    if (g->rstride[o->reg]) memcpy(to, g->regp[o->reg], (size_t)len * es);
    else splat(to, g->regp[o->reg], len, es);
}

static void run_block64(ad_plgroup *g, char *scratch, char *const *dst, int64_t lo, int64_t len) {
    const char **regp = g->regp;
    int64_t *rstride = g->rstride;
    int st = 0;
    AD_FUSE_BLOCK(double, u64, b64, c64, f64)
}

static void run_block32(ad_plgroup *g, char *scratch, char *const *dst, int64_t lo, int64_t len) {
    const char **regp = g->regp;
    int64_t *rstride = g->rstride;
    int st = 0;
    AD_FUSE_BLOCK(float, u32, b32, c32, f32)
}

void ad_fuse_run(ad_plgroup *g, const int64_t *space, const ad_fuview *views, char *const *dst, char *red,
                 char *scratch) {
    size_t es = g->dtype == AD_FLOAT64 ? 8 : 4;
    uint8_t mode[AD_PLAN_MAX_LOADS];
    int64_t est[AD_PLAN_MAX_LOADS][AD_MAX_DIMS], csp[AD_PLAN_MAX_LOADS][AD_MAX_DIMS];
    int cnd[AD_PLAN_MAX_LOADS];
    for (int i = 0; i < g->nloads; i++) {
        ad_plload *l = &g->loads[i];
        if (l->val < 0) {
            mode[i] = LD_NUM;
            g->regp[i] = g->dtype == AD_FLOAT64 ? (const char *)&l->c : (const char *)&l->cf;
            g->rstride[i] = 0;
            continue;
        }
        mode[i] = (uint8_t)load_mode(g, &views[i], est[i]);
        if (mode[i] == LD_GATHER) cnd[i] = collapse(g->ndim, space, est[i], csp[i]);
        if (mode[i] == LD_SCALAR) { g->regp[i] = views[i].data; g->rstride[i] = 0; }
        else g->rstride[i] = 1;
        if (mode[i] == LD_SCALAR && l->conv) {
            /* the other float dtype: converted first, as eager converts every operand to the result's */
            double x;
            if (l->conv == AD_PLCONV_F64) { memcpy(&x, views[i].data, 8); l->cf = (float)x; g->regp[i] = (const char *)&l->cf; }
            else { float f; memcpy(&f, views[i].data, 4); l->c = f; g->regp[i] = (const char *)&l->c; }
        }
    }
    int64_t gph[AD_PLAN_MAX_LOADS], glen[AD_PLAN_MAX_LOADS];
    for (int i = 0; i < g->nloads; i++) gph[i] = -1;
    double acc = 0;
    const int64_t block = ad_plan_block(g->dtype);
    for (int64_t lo = 0; lo < g->numel; lo += block) {
        int64_t len = g->numel - lo < block ? g->numel - lo : block;
        for (int i = 0; i < g->nloads; i++) {
            size_t les = g->loads[i].b8 ? 1 : es;
            if (mode[i] == LD_CONTIG) g->regp[i] = views[i].data + (size_t)lo * les;
            else if (mode[i] == LD_GATHER) {
                char *s = scratch + (size_t)i * AD_PLAN_BLOCK_BYTES;
                /* a periodic operand starting at the same phase is the block the
                 * last one gathered (a load's register is never an instruction's) */
                int64_t ph = periodic(est[i], cnd[i], csp[i], len) ? lo % csp[i][1] : -1;
                if (ph < 0 || ph != gph[i] || len > glen[i]) gather(&views[i], est[i], cnd[i], csp[i], lo, len, les, s);
                gph[i] = ph;
                glen[i] = len;
                g->regp[i] = s;
            }
        }
        if (g->dtype == AD_FLOAT64) run_block64(g, scratch, dst, lo, len);
        else run_block32(g, scratch, dst, lo, len);
        if (g->red) acc += block_sum(g->regp[g->red_reg], g->rstride[g->red_reg], len, g->dtype);
    }
    if (!red) return;
    if (g->red == AD_PLRED_MEAN) acc /= (double)g->numel;
    if (g->dtype == AD_FLOAT64) { double v = acc; memcpy(red, &v, 8); }
    else { float v = (float)acc; memcpy(red, &v, 4); }
}
