/* export/lower.h: what the op lowerings kept in files of their own
 * (export/lower_index.c, export/lower_multi.c, export/lower_traj.c) share with export/lower.c. */
#ifndef AD_EXPORT_LOWER_H
#define AD_EXPORT_LOWER_H

#include "export/export_c.h"

#define AD_XMAX_PARAMS 16

/* A record's arguments bound to its op's (or builtin's) parameters. */
typedef struct ad_xrec {
    const ad_tnode *n;
    int np;
    ad_xarg p[AD_XMAX_PARAMS];
} ad_xrec;

/* Returned by a lowering that does not handle the record: the next one is asked. */
#define AD_XL_PASS (-1)

/* The lowerings of the files above, asked in turn by export/lower.c. */
int ad_export_lower_multi(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_conv(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_fft(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_index(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_linalg(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_special(ad_xctx *ctx, const ad_xrec *r);
/* Function 'name' of kernels/special_math.h or kernels/scalar_math.h (and
 * those it calls) in the file's prelude, once. */
int ad_export_need_fn(ad_xctx *ctx, const char *name);
int ad_export_lower_traj(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_inplace(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_inplace_write(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_eig(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_split(ad_xctx *ctx, const ad_tnode *n);
int ad_export_refuse(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_scatter(ad_xctx *ctx, const ad_xrec *r);
int ad_export_lower_loss(ad_xctx *ctx, const ad_xrec *r);

/* The record's name (op or builtin). */
const char *ad_xl_name(const ad_tnode *n);
/* Whether lower.c lowers records of op id itself (its switch, ew_table, the
 * comparisons), not counting the sub-lowerers: tests/unit checks the ids. */
bool ad_export_lowers_id(int id);
/* A record's op id, a builtin's read without the 'ad_' of the alias that keeps a
 * builtin reachable under an op of its name (kernel("ad_NAME")), so the two
 * lower alike; AD_OP__NONE for any other record. */
int ad_xl_op_id(const ad_tnode *n);
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
/* The comment line naming the record and its position. */
void ad_xl_comment(ad_xctx *ctx, const char *what);
/* The opening of a lowering of one tensor operand 'src' into a new block 'o':
 * o made a buffer, src used, their C names into in and on (32 chars each),
 * then the comment 'what'. */
void ad_xl_open1(ad_xctx *ctx, int src, int o, char *in, char *on, const char *what);
/* An element-wise map (fused with its neighbours) of template 'tmpl' over the
 * first k parameters ($0.., numbers as literals), computed in 'ct'; 'tmpl' is
 * kept until the loop is written: a string literal. */
int ad_xl_emit_map(ad_xctx *ctx, const ad_xrec *r, int k, const char *tmpl, ad_dtype ct);
/* The same, operand i read in its own type (no cast to ct) where bit i of rawmask is set. */
int ad_xl_emit_map_raw(ad_xctx *ctx, const ad_xrec *r, int k, const char *tmpl, ad_dtype ct, int rawmask);

/* export/lower_ew.c: the ops of the element-wise table (builtins/kernels/ew_table.h). */
/* The record's map when 'name' is a row of the table (or another name of
 * one), else AD_XL_PASS. */
int ad_export_lower_ew(ad_xctx *ctx, const ad_xrec *r, const char *name);
/* Whether the element-wise table has a row for op 'name' (or one of its names). */
bool ad_export_ew_has(const char *name);
/* Kernel row 'kernel''s formula as a "$C" template (fl: the float one, else
 * the int64 one), NULL when it has none. */
const char *ad_export_ew_formula(const char *kernel, bool fl);
/* A map of kernel row 'kernel''s formula over the record's operands in ct. */
int ad_export_ew_map(ad_xctx *ctx, const ad_xrec *r, const char *kernel, ad_dtype ct);
/* An element-wise record's compute type: its output's, or for a bool output
 * its first np operands' promoted type. */
ad_dtype ad_export_ew_ctype(const ad_xctx *ctx, const ad_xrec *r, int np);


/* export/lower_index.c's index arithmetic, for export/lower_scatter.c and export/lower_loss.c. */
/* " + (q / P % S)*st" over the dims of 'shape' with a stride (skip: a dim left out, or -1). */
void ad_xl_offset_terms(ad_buf *b, const char *q, const int64_t *shape, int nd, const int64_t *st, int skip);
/* Statements that wrap a negative index 'var' once, then clamp it into [0, size)
 * (indented by 8 spaces more than 'ind'). */
void ad_xl_clamp_index(ad_buf *b, const char *ind, const char *var, int64_t size);
/* The statement for an output with no elements. */
int ad_xl_empty(ad_xctx *ctx, int o);
/* The C name of a value the statements being written read (marked read). */
void ad_xl_read_name(ad_xctx *ctx, int id, char *out, size_t n);
/* A copy of 'self' into the contiguous 'o' (in self's block when it dies there). */
void ad_xl_copy_self(ad_xctx *ctx, const ad_xrec *r, int self, int o);
/* A tensor's shape and strides with at least one dim (a 0-d one as [1]). */
void ad_xl_dims1(const ad_xval *x, int *nd, int64_t *sh, int64_t *st);
/* Parameter i as a dim of a tensor of nd dims. */
int ad_xl_dim_of(ad_xctx *ctx, const ad_xrec *r, int i, int nd, int *d);
/* Strides of value 'v' broadcast against 'shape' of nd dims (numpy alignment). */
void ad_xl_bcast_st(const ad_xval *v, const int64_t *shape, int nd, int64_t *st);
/* The tensor an argument holds at export time (a constant), or NULL. */
const ad_tensor *ad_xl_known(const ad_xctx *ctx, const ad_targ *a);

#endif
