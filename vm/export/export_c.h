/* export/export_c.h: export_c(f, args, PATH): a traced program (vm/trace/trace.h) written
 * as standalone C99; the interface between the writer and the op lowering. */
#ifndef AD_EXPORT_C_H
#define AD_EXPORT_C_H

#include <stdbool.h>
#include <stdint.h>

#include "ad_limits.h"
#include "buf.h"
#include "tensor/tensor.h"
#include "trace/trace.h"
#include "value.h"

/* How the C code holds a traced value. Every value is immutable once made
 * (programs with writes are not exported), so views alias their base. */
typedef enum {
    AD_XV_NONE,    /* not a tensor, or not reached */
    AD_XV_INPUT,   /* the caller's array inK */
    AD_XV_CONST,   /* a static const array kN (folded or read from outside f) */
    AD_XV_BUF,     /* made by a record: a block of the work buffer, or output outK */
    AD_XV_VIEW     /* offset and strides over another value's storage */
} ad_xv_kind;

typedef struct ad_xval {
    ad_xv_kind kind;
    ad_dtype dt;
    int ndim;
    int64_t shape[AD_MAX_DIMS];
    int64_t numel;
    int base;                   /* the INPUT, CONST or BUF holding the elements */
    int64_t off;                /* in elements of base */
    int64_t st[AD_MAX_DIMS];    /* strides over base, in elements */
    int index;                  /* INPUT: argument number */
    int out;                    /* BUF: >= 0 when it is written straight into output 'out' */
    int def, last;              /* BUF: when it is written and last read (through views too), in
                                 * AD_XTIME units: record i runs at i * AD_XTIME, fused loops between */
    int64_t woff;               /* BUF in work: byte offset */
    bool read;                  /* some record or output reads it (inputs, constants) */
    bool scalar;                /* BUF: lives only as a fused loop's scalar temporary, no memory */
    int share;                  /* BUF: the value (a BUF) whose block it may take over when its write is that
                                 * one's last read; the writing statement reads it element for element (-1: none) */
} ad_xval;

typedef struct ad_xctx {
    ad_state *S;
    ad_trace *T;
    ad_xval *v;                 /* T->nvals */
    const char *chunk;          /* script name, for comments and errors */
    const char *name;           /* the exported function's name */
    ad_buf *body;
    ad_buf *decls;              /* file-scope declarations (constants, extern kernels) */
    int node;                   /* the record being lowered */
    int now;                    /* its time: node * AD_XTIME */
    int *outs;                  /* output refs, in order */
    int nouts;
    struct ad_xfuse *fuse;      /* element-wise nests held for one loop; NULL: fusion off */
    int *rd_start, *rd_node;    /* records reading value v: rd_node[rd_start[v] .. rd_start[v+1]) */
    bool blas;                  /* matrix products as cblas_dgemm/sgemm calls */
    int64_t scratch;            /* bytes of work a record uses only while it runs ('scratch' in C): the most any asks */
    ad_buf *prelude;            /* file-scope text shared by the file's functions, written once before them */
} ad_xctx;

/* Time steps per record: the fused loops written before record i run at
 * times between (i - 1) * AD_XTIME and i * AD_XTIME (vm/export/fuse.c). */
#define AD_XTIME 8

/* One argument of a record bound to an op parameter: the traced argument, or
 * the parameter's default. */
typedef struct ad_xarg {
    const ad_targ *a;           /* NULL: use 'c' */
    ad_value c;                 /* the default (borrowed) */
    bool sizes;                 /* '*NAME' parameter: numbers collected from 'first' on */
    int first, count;
} ad_xarg;

/* export_c. */
extern const ad_builtin_def ad_export_c_defs[];

/* Lowers record 'ctx->node' into ctx->body, making its outputs BUF or VIEW
 * values. Errors name the op and the script's line:col. */
int ad_export_lower(ad_xctx *ctx);

/* Copies value 'ref' into output k unless it was computed there. */
int ad_export_copy_out(ad_xctx *ctx, int ref, int k);

/* Element 'lin' (row-major) of a constant, as a double. */
double ad_export_elem(const ad_tensor *t, int64_t lin);
/* Whether constant value 'id' (or a view of one) holds one value everywhere:
 * the C code writes it as a literal instead of reading an array. */
bool ad_export_splat(const ad_xctx *ctx, int id, double *x);

/* C spellings. */
const char *ad_export_ctype(ad_dtype dt);
/* Appends 'x' as a C literal of dtype 'dt' (exact: %.17g for doubles). */
void ad_export_literal(ad_buf *b, ad_dtype dt, double x);
/* The C name of value 'id' (its base's storage). */
void ad_export_vname(const ad_xctx *ctx, int id, char *out, size_t n);

#endif
