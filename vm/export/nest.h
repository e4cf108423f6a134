/* export/nest.h: export_c's loop nests (vm/export/lower.c writes them) and the
 * fusion of element-wise nests into one loop (vm/export/fuse.c). */
#ifndef AD_EXPORT_NEST_H
#define AD_EXPORT_NEST_H

#include "export/export_c.h"

#define AD_XMAX_OPS 6
#define AD_XMAX_LOOP (2 * AD_MAX_DIMS)
/* members of one fused loop; a longer chain starts a new loop */
#define AD_XFUSE_MAX 32
#define AD_XFUSE_NOTE 200
/* groups open at once (a chain of one shape continues past records of
 * another shape); opening one more writes them all */
#define AD_XFUSE_GROUPS 4
#if AD_XFUSE_GROUPS >= AD_XTIME
#error "the loops of the open groups need as many time steps between two records"
#endif

typedef struct ad_xoperand {
    int ref;                    /* value, or -1 for a literal */
    double lit;
    int64_t off, st[AD_XMAX_LOOP]; /* over the nest's loop variables */
    bool raw;                   /* no cast to the compute type (a where() condition) */
    bool tmp;                   /* read from the fused loop's scalar t<base>, not from memory */
} ad_xoperand;

typedef struct ad_xnest {
    int nout, nred;
    int64_t shape[AD_XMAX_LOOP]; /* output dims, then reduced dims */
    int dest;                   /* value written */
    int64_t doff, dst[AD_MAX_DIMS];
    ad_dtype ct;                /* element expression's type */
    ad_dtype acct;              /* accumulator's type */
    const char *expr;           /* $0..$5 operands, $F libm suffix, $T compute type; $C a table formula follows */
    const char *init;           /* NULL: a map; else the accumulator's start ($T: its type) */
    const char *comb;           /* "acc += $E" */
    const char *fin;            /* stored value: "acc", "acc / $N" */
    int64_t count;              /* $N */
    int nops;
    ad_xoperand op[AD_XMAX_OPS];
    bool flat;                  /* one loop variable for all output dims */
    bool rflat;                 /* ... for all reduced dims */
    const char *dname;          /* the destination's C name when it is not dest's (a copy into an output) */
    bool noflat;                /* keep one loop variable per dim (the template names them: $V0..$V9) */
} ad_xnest;

/* Element-wise nests of one shape waiting to be written as one loop. */
typedef struct ad_xgroup {
    int n;
    ad_xnest e[AD_XFUSE_MAX];
    int node[AD_XFUSE_MAX];
    char note[AD_XFUSE_MAX][AD_XFUSE_NOTE]; /* each member's comment line */
} ad_xgroup;

/* The open groups; each is written after the groups whose values it reads. */
typedef struct ad_xfuse {
    int ng;
    ad_xgroup g[AD_XFUSE_GROUPS];
    unsigned deps[AD_XFUSE_GROUPS]; /* bit j: the group reads values of group j */
    size_t mark;                /* body length when the oldest open group began */
    int last;                   /* the last record that joined a group */
} ad_xfuse;

/* export/lower.c's nest writer, for the fusion. */
void ad_export_use(ad_xctx *ctx, int id);
void ad_export_render(ad_xctx *ctx, const ad_xnest *e, const char *t, ad_buf *b);
/* Renders formula t of the element-wise table, a C expression over v, a, b,
 * c, P, Q, T (a template's "$C" tail; vm/export/lower_ew.c). */
void ad_export_render_c(ad_xctx *ctx, const ad_xnest *e, const char *t, ad_buf *b);
void ad_export_index(const ad_xnest *e, int64_t off, const int64_t *st, bool to_dest, ad_buf *b);
void ad_export_open_loops(const ad_xnest *e, int depth, ad_buf *b);
bool ad_export_walks_flat(const ad_xnest *e, const int64_t *st, int lo, int hi);
void ad_export_flatten(ad_xnest *e);
void ad_export_emit_nest(ad_xctx *ctx, ad_xnest *e);

/* A matrix product's geometry: nb batch dims (the nest's first), then
 * (n x k) @ (k x m) with the operands' strides; bias (or -1) broadcast over
 * the output, scaled by beta, the product by alpha. */
typedef struct ad_xgemm {
    int nb;
    int64_t n, m, k, san, sak, sbk, sbm;
    int bias;
    double alpha, beta;
} ad_xgemm;

/* export/lower_blas.c: writes the product of nest 'e' (operands 0 and 1, bias 2)
 * as cblas_dgemm/sgemm calls; false (nothing written) when the operands'
 * strides or the sizes do not fit BLAS's layout, for the loops to do it. */
bool ad_export_gemm(ad_xctx *ctx, ad_xnest *e, const ad_xgemm *g, const char *opname);

/* export/fuse.c. Drops the loop dims of one element and merges neighbouring
 * dims that the destination and every operand walk as one, in the n nests
 * (of one shape) es[0..n): fewer loops and index terms, the same elements. */
void ad_export_coalesce(ad_xnest **es, int n);
/* A map nest 'e' of the current record with its comment line:
 * written now (fusion off, or a nest that cannot join a loop), or held for the
 * group's loop, which is written first when 'e' cannot join it. */
int ad_export_fuse_map(ad_xctx *ctx, ad_xnest *e, const char *note);
/* Called after each record is lowered with the body's length before it: a
 * record that wrote code goes after the open groups' loops. */
int ad_export_fuse_after(ad_xctx *ctx, size_t mark);
/* Writes the open groups (end of the program). */
int ad_export_fuse_flush(ad_xctx *ctx);
/* Which records read each value (for the fusion's decision to store one). */
int ad_export_readers(ad_xctx *ctx);

#endif
