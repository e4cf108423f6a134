/* export_lower.h: what the op lowerings kept in files of their own
 * (export_index.c, export_multi.c, export_traj.c) share with export_lower.c. */
#ifndef AD_EXPORT_LOWER_H
#define AD_EXPORT_LOWER_H

#include "export_c.h"

#define AD_XMAX_PARAMS 16

/* A record's arguments bound to its op's (or builtin's) parameters. */
typedef struct ad_xrec {
    const ad_tnode *n;
    int np;
    ad_xarg p[AD_XMAX_PARAMS];
} ad_xrec;

/* Returned by a lowering that does not handle the record: the next one is asked. */
#define AD_XL_PASS (-1)

/* The lowerings of the files above, asked in turn by export_lower.c. */
int ad_export_lower_multi(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_conv(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_fft(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_index(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_linalg(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_special(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_traj(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_inplace(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_inplace_write(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_eig(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_split(ad_xctx *ctx, const ad_tnode *n);
int ad_export_refuse(ad_xctx *ctx, const ad_xrec *r);

/* The record's name (op or builtin). */
const char *ad_xl_name(const ad_tnode *n);
/* An error naming the op and the script's line:col. */
int ad_xl_fail(ad_xctx *ctx, const char *why);
/* Record n's arguments bound to its parameters. */
int ad_xl_bind(ad_xctx *ctx, const ad_tnode *n, ad_xrec *r);
/* Parameter i: its tensor ref (-1 when not a tensor), its constant, a number, ints. */
int ad_xl_pref(const ad_xrec *r, int i);
ad_value ad_xl_pconst(const ad_xrec *r, int i);
bool ad_xl_pnum(const ad_xrec *r, int i, double *x);
bool ad_xl_pints(const ad_xrec *r, int i, int64_t *out, int *n);
/* Value 'id' is read by the current record (liveness, and its base is emitted). */
void ad_xl_use(ad_xctx *ctx, int id);
/* Value 'id' is a contiguous block made by the current record. */
void ad_xl_make_buf(ad_xctx *ctx, int id);
/* An element-wise map of parameters 0..k-1 (tensors broadcast, or numbers)
 * into the record's output: template 'tmpl' ($0.. the operands) in type ct. */
/* The comment line naming the record and its position. */
void ad_xl_comment(ad_xctx *ctx, const char *what);
/* An element-wise map (fused with its neighbours) of template 'tmpl' over the
 * first k parameters ($0.., numbers as literals), computed in 'ct'; 'tmpl' is
 * kept until the loop is written: a string literal. */
int ad_xl_emit_map(ad_xctx *ctx, const ad_xrec *r, int k, const char *tmpl, ad_dtype ct);

#endif
