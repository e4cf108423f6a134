/* export/lower_traj.c: export_c's lowering of the trajectory steps
 * (tensor_step_acc/jerk/position and their _backward adjoints) to calls of
 * the library's own per-trajectory kernels, include/addsl/traj_kernels.h,
 * whose text the build embeds (vm/export/traj_kernels_text.c) and the writer copies
 * into the exported file, so that the file still needs nothing but libm. */
#include "export/lower.h"

#include <stdio.h>
#include <string.h>

#include "autograd/op.h"

/* include/addsl/traj_kernels.h, verbatim (tools/embed_text.sh). */
extern const char ad_traj_kernels_text[];

enum { XT_ACC, XT_JERK, XT_POS };

typedef struct xt {
    ad_xctx *ctx;
    int step, central;
    bool bwd;
    ad_dtype dt;
    const char *t, *sfx;        /* C type, kernel suffix */
    int64_t b, H, d, B0, hu;    /* hu: rows of u */
    int64_t scr;                /* scratch bytes used so far */
    ad_buf *b_;                 /* the body */
} xt;

/* The header's functions for the element type, once per file; the guard
 * lets several exported files share one translation unit. A file uses only
 * some of them, and clang's -Wunused-function counts static inline functions
 * of the main file: the pragmas keep -Wall -Werror builds of it clean. */
static void embed_kernels(xt *x) {
    ad_buf *d = x->ctx->prelude;
    char guard[40];
    snprintf(guard, sizeof guard, "XC_TRAJ_KERNELS_%s", x->sfx);
    if (d->data && strstr(d->data, guard)) return;
    ad_buf_printf(d, "\n#ifndef %s /* include/addsl/traj_kernels.h of the library that wrote this file, verbatim */\n"
                     "#define %s\n", guard, guard);
    ad_buf_printf(d, "#define TRAJ_T %s\n#define TRAJ_FN(n) xc_##n##_%s\n", x->t, x->sfx);
    ad_buf_puts(d, "#if defined(__GNUC__)\n#pragma GCC diagnostic push\n"
                   "#pragma GCC diagnostic ignored \"-Wunused-function\"\n#endif\n");
    ad_buf_puts(d, ad_traj_kernels_text);
    ad_buf_puts(d, "#if defined(__GNUC__)\n#pragma GCC diagnostic pop\n#endif\n");
    ad_buf_printf(d, "#undef TRAJ_T\n#undef TRAJ_FN\n#endif\n");
}

static int64_t align16(int64_t n) { return (n + 15) / 16 * 16; }

/* A pointer 'name' to 'ref' as contiguous elements of the step's type: the
 * value itself when it already is, else a copy in the scratch. */
static void operand(xt *x, int ref, const char *name) {
    ad_xctx *ctx = x->ctx;
    const ad_xval *v = &ctx->v[ref];
    char vn[32];
    ad_export_vname(ctx, ref, vn, sizeof vn);
    ad_xl_use(ctx, ref);
    if (v->numel) ctx->v[v->base].read = true;
    int64_t s = 1;
    bool contig = true;
    for (int j = v->ndim - 1; j >= 0; j--) {
        if (v->shape[j] != 1 && v->st[j] != s) contig = false;
        s *= v->shape[j];
    }
    if (contig && v->dt == x->dt) {
        ad_buf_printf(x->b_, "        const %s *%s = %s + %lld;\n", x->t, name, vn, (long long)v->off);
        return;
    }
    ad_buf_printf(x->b_, "        %s *%s_c = (%s *)(scratch + %lld); /* a contiguous copy */\n", x->t, name, x->t,
                  (long long)x->scr);
    ad_buf_printf(x->b_, "        const %s *%s = %s_c;\n", x->t, name, name);
    ad_buf_printf(x->b_, "        for (long q = 0; q < %lld; q++) %s_c[q] = (%s)%s[%lld", (long long)v->numel, name, x->t, vn,
                  (long long)v->off);
    int64_t p = 1;
    for (int j = v->ndim - 1; j >= 0; j--) {
        if (v->shape[j] != 1 && v->st[j]) {
            ad_buf_puts(x->b_, " + (q");
            if (p != 1) ad_buf_printf(x->b_, " / %lld", (long long)p);
            if (j > 0) ad_buf_printf(x->b_, " %% %lld", (long long)v->shape[j]);
            ad_buf_printf(x->b_, ")*%lld", (long long)v->st[j]);
        }
        p *= v->shape[j];
    }
    ad_buf_puts(x->b_, "];\n");
    x->scr += align16(v->numel * (int64_t)ad_dtype_size(x->dt));
}

/* A gradient argument: a tensor, or none (zeros: a constant table). */
static void grad_operand(xt *x, const ad_xrec *r, int i, const char *name) {
    int ref = ad_xl_pref(r, i);
    if (ref >= 0) { operand(x, ref, name); return; }
    int64_t n = x->b * x->H * x->d;
    ad_buf_printf(x->ctx->decls, "static const %s %s_z%d_%d[%lld] = {0};\n", x->t, x->ctx->name, x->ctx->node, i,
                  (long long)(n ? n : 1));
    ad_buf_printf(x->b_, "        const %s *%s = %s_z%d_%d;\n", x->t, name, x->ctx->name, x->ctx->node, i);
}

/* dt: the H step lengths (acc, jerk) into the scratch as 'dts', or the
 * scalar 'dt1' (position). A number keeps its double value until the cast. */
static int step_lengths(xt *x, const ad_xrec *r, int i) {
    ad_xctx *ctx = x->ctx;
    int ref = ad_xl_pref(r, i);
    double c = 0;
    char vn[32] = "";
    if (ref < 0 && !ad_xl_pnum(r, i, &c)) return ad_xl_fail(ctx, "needs a number or tensor dt");
    int64_t n = 1, st = 0, off = 0;
    if (ref >= 0) {
        const ad_xval *v = &ctx->v[ref];
        ad_export_vname(ctx, ref, vn, sizeof vn);
        ad_xl_use(ctx, ref);
        ctx->v[v->base].read = true;
        n = v->numel;
        off = v->off;
        st = v->ndim ? v->st[v->ndim - 1] : 0;
        if (v->ndim > 1) return ad_xl_fail(ctx, "needs a scalar or 1-D dt");
        if (n != 1 && (x->step == XT_POS || n != x->H)) return ad_xl_fail(ctx, "has a dt of another length than the horizon");
    }
    ad_buf *b = x->b_;
    if (x->step == XT_POS) {
        ad_buf_printf(b, "        const %s dt1 = (%s)", x->t, x->t);
        if (ref >= 0) ad_buf_printf(b, "%s[%lld];\n", vn, (long long)off);
        else { ad_export_literal(b, AD_FLOAT64, c); ad_buf_puts(b, ";\n"); }
        return ADDSL_OK;
    }
    ad_buf_printf(b, "        %s *dts = (%s *)(scratch + %lld);\n", x->t, x->t, (long long)x->scr);
    ad_buf_printf(b, "        for (long h = 0; h < %lld; h++) dts[h] = (%s)", (long long)x->H, x->t);
    if (ref < 0) ad_export_literal(b, AD_FLOAT64, c);
    else if (n == 1) ad_buf_printf(b, "%s[%lld]", vn, (long long)off);
    else ad_buf_printf(b, "%s[%lld + h*%lld]", vn, (long long)off, (long long)st);
    ad_buf_puts(b, ";\n");
    x->scr += align16(x->H * (int64_t)ad_dtype_size(x->dt));
    return ADDSL_OK;
}

/* 'long s = ...': the start row of trajectory i (start_idx, or i, or 0). */
static int start_row(xt *x, const ad_xrec *r, int i) {
    ad_xctx *ctx = x->ctx;
    int ref = ad_xl_pref(r, i);
    ad_buf *b = x->b_;
    if (ref < 0) {
        if (ad_xl_pconst(r, i).t != AD_TNONE) return ad_xl_fail(ctx, "needs start_idx none or an int64 tensor");
        if (x->B0 != x->b && x->B0 != 1) return ad_xl_fail(ctx, "has start rows that match no trajectory");
        ad_buf_printf(b, "            long s = %s;\n", x->B0 == x->b ? "i" : "0");
        return ADDSL_OK;
    }
    const ad_xval *v = &ctx->v[ref];
    if (v->dt != AD_INT64 || v->ndim != 1 || v->shape[0] != x->b) return ad_xl_fail(ctx, "needs an int64 start_idx of one entry per trajectory");
    char vn[32];
    ad_export_vname(ctx, ref, vn, sizeof vn);
    ad_xl_use(ctx, ref);
    ctx->v[v->base].read = true;
    /* clamped into range: a C function cannot raise the interpreter's error */
    ad_buf_printf(b, "            long s = (long)%s[%lld + i*%lld];\n", vn, (long long)v->off, (long long)v->st[0]);
    ad_buf_printf(b, "            if (s < 0) s += %lld;\n            if (s < 0) s = 0;\n            if (s > %lld) s = %lld;\n",
                  (long long)x->B0, (long long)(x->B0 - 1), (long long)(x->B0 - 1));
    return ADDSL_OK;
}

/* Shapes from u [b, rows, d] and the start tensors ([B0, d] or [d]). */
static int shapes(xt *x, const ad_xrec *r, int first) {
    ad_xctx *ctx = x->ctx;
    int u = ad_xl_pref(r, first);
    if (u < 0 || ctx->v[u].ndim != 3) return ad_xl_fail(ctx, "needs u of shape [b, H, d]");
    const ad_xval *U = &ctx->v[u];
    x->b = U->shape[0]; x->hu = U->shape[1]; x->d = U->shape[2];
    x->H = x->hu + (x->step == XT_POS && x->central ? 4 : 0);
    for (int k = 1; k <= 3; k++) {
        int s = ad_xl_pref(r, first + k);
        if (s < 0) return ad_xl_fail(ctx, "needs tensor start states");
        const ad_xval *S0 = &ctx->v[s];
        int64_t rows = S0->ndim == 2 ? S0->shape[0] : 1;
        if ((S0->ndim != 1 && S0->ndim != 2) || S0->shape[S0->ndim - 1] != x->d) return ad_xl_fail(ctx, "needs start states of shape [B0, d]");
        if (k == 1) x->B0 = rows;
    }
    return ADDSL_OK;
}

static void out_ptr(xt *x, int ref, const char *name) {
    char vn[32];
    ad_export_vname(x->ctx, ref, vn, sizeof vn);
    ad_buf_printf(x->b_, "        %s *%s = %s;\n", x->t, name, vn);
}

static int lower_step(ad_xctx *ctx, const ad_xrec *r, int step, bool bwd) {
    xt x;
    memset(&x, 0, sizeof x);
    x.ctx = ctx; x.step = step; x.bwd = bwd; x.b_ = ctx->body;
    const ad_targ *out = &r->n->out;
    if (out->nsub != 4) return ad_xl_fail(ctx, "needs four outputs");
    for (int k = 0; k < 4; k++) if (out->sub[k].ref < 0) return ad_xl_fail(ctx, "needs four tensor outputs");
    int first = bwd ? 4 : 0;               /* u's parameter */
    int imode = first + 5, iidx = first + (step == XT_POS ? 6 : 5);
    if (step == XT_POS) {
        ad_value m = ad_xl_pconst(r, imode);
        if (m.t != AD_TSTR || (strcmp(m.u.s->data, "central") && strcmp(m.u.s->data, "backward")))
            return ad_xl_fail(ctx, "needs mode \"central\" or \"backward\"");
        x.central = !strcmp(m.u.s->data, "central");
    }
    int rc = shapes(&x, r, first);
    if (rc) return rc;
    x.dt = ctx->v[out->sub[0].ref].dt;
    if (x.dt != AD_FLOAT32 && x.dt != AD_FLOAT64) return ad_xl_fail(ctx, "is lowered for float32 and float64 only");
    x.t = ad_export_ctype(x.dt);
    x.sfx = x.dt == AD_FLOAT32 ? "f32" : "f64";
    for (int k = 0; k < 4; k++) ad_xl_make_buf(ctx, out->sub[k].ref);
    embed_kernels(&x);
    ad_xl_comment(ctx, "the library's kernel (include/addsl/traj_kernels.h), one trajectory at a time");
    ad_buf *b = ctx->body;
    ad_buf_puts(b, "    {\n");
    static const char *const names[] = {"acc", "jerk", "pos"};
    const char *nm = names[step];
    int64_t n = x.H * x.d, nu = x.hu * x.d, d = x.d;
    if (!bwd) {
        operand(&x, ad_xl_pref(r, 0), "u");
        operand(&x, ad_xl_pref(r, 1), "p0");
        operand(&x, ad_xl_pref(r, 2), "v0");
        operand(&x, ad_xl_pref(r, 3), "a0");
    } else {
        grad_operand(&x, r, 0, "gp");
        grad_operand(&x, r, 1, "gv");
        grad_operand(&x, r, 2, "ga");
        grad_operand(&x, r, 3, "gj");
    }
    if ((rc = step_lengths(&x, r, first + 4))) return rc;
    static const char *const onames[2][4] = {{"pos", "vel", "acc", "jerk"}, {"du", "dp", "dv", "da"}};
    for (int k = 0; k < 4; k++) out_ptr(&x, out->sub[k].ref, onames[bwd][k]);
    if (step == XT_POS) {
        ad_buf_printf(b, "        xc_traj_stencil_%s stl;\n        xc_traj_stencil_init_%s(&stl, %d, dt1);\n", x.sfx, x.sfx,
                      x.central);
    }
    if (bwd) {
        ad_buf_printf(b, "        %s *st = (%s *)(scratch + %lld);\n", x.t, x.t, (long long)x.scr);
        x.scr += align16(3 * d * (int64_t)ad_dtype_size(x.dt));
        for (int k = 1; k < 4; k++)
            ad_buf_printf(b, "        xc_traj_zero_%s(%s, %lld);\n", x.sfx, onames[1][k], (long long)(x.B0 * d));
    }
    ad_buf_printf(b, "        for (long i = 0; i < %lld; i++) {\n", (long long)x.b);
    if ((rc = start_row(&x, r, iidx))) return rc;
    const char *dts = step == XT_POS ? "dt1" : "dts";
    const char *stl = step == XT_POS ? "&stl, " : "";
    char cen[8] = "";
    if (step == XT_POS) snprintf(cen, sizeof cen, "%d, ", x.central);
    if (!bwd)
        ad_buf_printf(b, "            xc_traj_%s_fwd_one_%s(%s%su + i*%lld, p0 + s*%lld, v0 + s*%lld, a0 + s*%lld, %s, %lld, %lld, "
                         "pos + i*%lld, vel + i*%lld, acc + i*%lld, jerk + i*%lld);\n",
                      nm, x.sfx, stl, cen, (long long)nu, (long long)d, (long long)d, (long long)d, dts, (long long)x.H,
                      (long long)d, (long long)n, (long long)n, (long long)n, (long long)n);
    else {
        ad_buf_printf(b, "            xc_traj_%s_bwd_one_%s(%s%sgp + i*%lld, gv + i*%lld, ga + i*%lld, gj + i*%lld, %s, %lld, %lld, "
                         "du + i*%lld, st);\n",
                      nm, x.sfx, stl, cen, (long long)n, (long long)n, (long long)n, (long long)n, dts, (long long)x.H,
                      (long long)d, (long long)nu);
        ad_buf_printf(b, "            xc_traj_add_start_%s(st, %lld, dp + s*%lld, dv + s*%lld, da + s*%lld);\n", x.sfx,
                      (long long)d, (long long)d, (long long)d, (long long)d);
    }
    ad_buf_puts(b, "        }\n");
    if (!bwd) ad_buf_puts(b, "        (void)p0; (void)v0; (void)a0;\n");
    ad_buf_puts(b, "    }\n");
    if (x.scr > ctx->scratch) ctx->scratch = x.scr;
    return ADDSL_OK;
}

int ad_export_lower_traj(ad_xctx *ctx, const ad_xrec *r) {
    if (r->n->kind != AD_TN_OP) return AD_XL_PASS;
    switch (r->n->op) {
    case AD_OP_tensor_step_acc: return lower_step(ctx, r, XT_ACC, false);
    case AD_OP_tensor_step_acc_backward: return lower_step(ctx, r, XT_ACC, true);
    case AD_OP_tensor_step_jerk: return lower_step(ctx, r, XT_JERK, false);
    case AD_OP_tensor_step_jerk_backward: return lower_step(ctx, r, XT_JERK, true);
    case AD_OP_tensor_step_position: return lower_step(ctx, r, XT_POS, false);
    case AD_OP_tensor_step_position_backward: return lower_step(ctx, r, XT_POS, true);
    default: return AD_XL_PASS;
    }
}
