/* jit/plan.h: the static plan of a compiled program (vm/jit/plan.c builds it, vm/jit/replay.c
 * runs it): fused element-wise groups, the buffer of each value, the arena. */
#ifndef AD_PLAN_H
#define AD_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "state.h"
#include "tensor/tensor.h"
#include "value.h"

struct ad_trace;
struct ad_buf;

/* Bytes per register of a fused group: a few registers stay in L1. A block
 * is as many elements as fit: 256 float64, 512 float32 (the per-block work
 * of the interpreter is paid half as often on float32). */
#define AD_PLAN_BLOCK_BYTES 2048
static inline int64_t ad_plan_block(ad_dtype dt) { return AD_PLAN_BLOCK_BYTES / (dt == AD_FLOAT64 ? 8 : 4); }
/* Arena buffers are reused by size class: the byte count rounded up to a
 * power of two, at least this many bytes (one cache line). */
#define AD_PLAN_MIN_CLASS 64
/* Operands (tensors and numbers) one group loads at most: each has a block
 * of scratch, so a longer run of records starts a new group. */
#define AD_PLAN_MAX_LOADS 32

/* Where a value lives during a replay that runs the plan. */
typedef enum {
    AD_PL_ENV,     /* the replay environment: inputs, constants, records replayed through the seam */
    AD_PL_REG,     /* only inside its group's blocks: never in memory */
    AD_PL_ARENA,   /* a buffer of the arena (read by later groups only) */
    AD_PL_FRESH,   /* a new tensor per call, put in the environment (read by the seam or returned) */
    AD_PL_VIEW,    /* an expand read by groups only: they read its source (ad_plval.buffer) broadcast */
    AD_PL_KVIEW    /* a view record (transpose, reshape, basic indexing: ad_plan.kviews[ad_plval.buffer])
                    * read by planned records only: nothing runs, its readers read its source through it */
} ad_pl_where;

typedef struct ad_plval {
    uint8_t where;         /* ad_pl_where */
    int group;             /* producing group, or -1 */
    int buffer;            /* AD_PL_ARENA: index in ad_plan.buffers; AD_PL_VIEW: the source value */
    int ndim;
    int dims;              /* index of its sizes in ad_plan.dims */
    int64_t numel;
    ad_dtype dtype;
    bool rg;               /* requires grad (at trace time, fixed by the signature) */
} ad_plval;

typedef struct ad_plbuffer {
    int64_t offset;        /* bytes from the arena's start (64-byte aligned) */
    int64_t bytes;         /* its size class */
    int nvals;             /* values it holds over the program (one after another) */
} ad_plbuffer;

/* An operand of a group, loaded once per block: a value, or a number. */
typedef struct ad_plload {
    int val;               /* value id, or -1 for the number 'c' (converted to the group's dtype) */
    double c;
    float cf;
    bool b8;               /* a bool tensor (a where's condition): one byte per element */
    uint8_t conv;          /* a one-element tensor of the other float dtype, converted per run (AD_PLCONV_*) */
} ad_plload;

enum { AD_PLCONV_NONE, AD_PLCONV_F64, AD_PLCONV_F32 }; /* the load's own dtype: float64 in a float32 group, or the reverse */

/* One element-wise record inside a group: dst = fn(a [, b [, c]]). A
 * comparison's dst, and a where's a, hold bools (a byte per element). */
typedef struct ad_plinstr {
    int16_t fn;            /* index in the element-wise table (jit/plan.c) */
    int16_t nin;
    int dst, a, b, c;      /* registers */
    int node;              /* the record */
    bool direct;           /* its first store writes its destination straight (not one element, not bool) */
} ad_plinstr;

/* Written to memory right after instruction 'after', block by block, so
 * its register can be reused at once. */
typedef struct ad_plstore {
    int reg;
    int val;
    int after;
    bool one;              /* a one-element value in a larger space: written once */
    bool b8;               /* a bool value (a comparison's): one byte per element */
    bool into;             /* 'val' written as 0 + val into tensor 'target' (vm/jit/plan_into.c) */
    int target;
} ad_plstore;

/* A record x.copy_(s) (no_grad) whose source a group makes: the group writes
 * s into x itself (vm/jit/plan_into.c), the record only commits the write. */
typedef struct ad_plinto {
    int node;              /* the _inplace(x, inplace_copy, [s], "copy_") record */
    int target, src;       /* x (a constant) and s */
    int group;             /* the group that makes s */
    struct ad_tensor *tmp; /* run time: where the group wrote s when x could not take it (aliased) */
} ad_plinto;

typedef enum { AD_PLRED_NONE, AD_PLRED_SUM, AD_PLRED_MEAN } ad_plred;

/* A record that is not element-wise but runs outside the seam all the same
 * (vm/jit/plan_ops.c): a matrix product, a view, a reduction over dims. It
 * is a group of its own, with its operands as the group's loads. */
typedef enum {
    AD_PLK_MATMUL = 1,  /* matmul, mm, bmm: out = a @ b */
    AD_PLK_ADDMM,       /* addmm: out = beta c + alpha (a @ b) */
    AD_PLK_TRANSPOSE,   /* transpose, t: a view with two strides swapped */
    AD_PLK_RESHAPE,     /* reshape, view, squeeze, unsqueeze, flatten: a view in the same element order */
    AD_PLK_INDEX,       /* index_get with ints and slices: a view at an offset */
    AD_PLK_ADDAT,       /* index_add_at with ints and slices: out = a, then out[idx] += b */
    AD_PLK_SUMDIM,      /* sum over some dims: out = sum of a over rmask */
    AD_PLK_LINEAR       /* linear (the library's composite): out = a @ b.T (+ c) */
} ad_plkind;

typedef struct ad_plkern {
    uint8_t kind;          /* ad_plkind */
    int a, b, c;           /* operand values (-1: none) */
    int out;
    double alpha, beta;    /* AD_PLK_ADDMM */
    int d0, d1;            /* AD_PLK_TRANSPOSE: the dims swapped */
    uint32_t rmask;        /* AD_PLK_SUMDIM: the dims of a summed */
    bool mean;             /* AD_PLK_SUMDIM: mean, not sum */
    /* AD_PLK_INDEX, AD_PLK_ADDAT: per dim of a, the first index, the step and the
     * size selected; 'drop' bit d: an integer index (the dim goes) */
    int64_t istart[AD_MAX_DIMS], istep[AD_MAX_DIMS], isize[AD_MAX_DIMS];
    uint32_t idrop;
    /* AD_PLK_ADDAT on a constant or folded value of +0.0s (the VJP of indexing into
     * zeros): filled, not copied, while its storage has version zver */
    bool zbase;
    uint32_t zver;
} ad_plkern;

/* A view record (AD_PL_KVIEW): worked out from its source at each read. */
typedef struct ad_plkview {
    ad_plkern kern;
    int node;              /* its record */
    bool cross;            /* made by the first part of a program in parts, read by the second */
    int64_t strides[AD_MAX_DIMS]; /* run time: the last read's */
    struct ad_tensor *copy; /* a reshape that could not view its source reads this copy (held) */
} ad_plkview;

typedef struct ad_plgroup {
    int first_node, last_node;  /* records first_node..last_node (live ones) run as this group */
    int ndim, dims;        /* the iteration space */
    int64_t numel;
    ad_dtype dtype;
    int nregs;             /* loads are registers 0..nloads-1, then the records' results */
    int nloads, ninstrs, nstores;
    ad_plload *loads;
    ad_plinstr *instrs;
    ad_plstore *stores;
    uint8_t red;           /* ad_plred: the group ends with a full reduction of register red_reg */
    int red_reg, red_val, red_node;
    int64_t bytes_moved;   /* loads and stores of this group */
    int64_t bytes_unfused; /* what its records move one by one */
    const char **regp;     /* run time: each register's elements in this block */
    int64_t *rstride;      /* run time: 1, or 0 for one element read everywhere */
    char **dstp;           /* run time: where each store writes */
    int *frees;            /* environment values its records read for the last time */
    int nfrees;
    ad_plkern *kern;       /* a kernel record (vm/jit/plan_ops.c), or NULL: element-wise */
} ad_plgroup;

typedef struct ad_plan {
    int nvals;
    ad_plval *vals;
    int64_t *dims;         /* sizes of values and groups */
    int ndims, capdims;
    int ngroups;
    ad_plgroup *groups;
    int *group_at;         /* per record: the group that starts there, or -1; -2: a later record of a group; -3: a view;
                            * -4: a copy_ a group writes (ad_plan.intos) */
    int *envvals;          /* values a replay may put in its environment (not the groups' own) */
    int nenvvals;
    int *steps;            /* what a replay runs, in order: a record through the seam (>= 0), or group -1 - s */
    int nsteps;
    int nnodes;
    int split;             /* > 0: built for a program run in two parts (ad_plan_run_part) */
    int nbuffers;
    ad_plbuffer *buffers;
    int64_t scratch_bytes; /* registers: the most any group needs */
    int64_t arena_bytes;   /* scratch, then buffers */
    int nfallback;         /* live records replayed through the seam */
    int nfused;            /* live records run by groups */
    int nviews;            /* expand records that groups read through */
    int nkernels;          /* records run as kernel groups (matmul, sums over dims, index_add_at) */
    int nkviews;
    ad_plkview *kviews;    /* per kernel-made view (AD_PL_KVIEW) */
    int ninto;
    ad_plinto *intos;      /* copy_ records whose source a group writes into the target */
    bool *keep;            /* per value: read through a view by planned records, so a record
                            * through the seam does not drop it (its liveness does not see views) */
    /* Run-time state, made on the first replay and reused. */
    void *arena;
    ad_value *env;
    bool busy;             /* a replay is running it (a recursive call replays through the seam) */
    int64_t runs;          /* replays that ran the plan */
} ad_plan;

/* Builds the plan of a program after its passes, while the trace-time values
 * are still held (shapes, dtypes, requires_grad). NULL when no record can run
 * outside the seam, or on failure (the replay then goes through the seam). */
ad_plan *ad_plan_build(ad_state *S, const struct ad_trace *T);
void ad_plan_free(ad_state *S, ad_plan *P);
/* Runs the program with its plan. Returns -1 (nothing done, no error) when the
 * plan cannot serve this call; the caller replays through the seam then. */
int ad_plan_replay(ad_state *S, const struct ad_trace *T, ad_tensor *const *inputs, ad_value *out);
/* Runs records from..to-1 of a program planned in parts (ad_trace.plan_split),
 * under no_grad, in the caller's environment. Returns -1 (nothing done, no
 * error) when the plan cannot serve it; the caller runs the records then. */
int ad_plan_run_part(ad_state *S, const struct ad_trace *T, ad_value *env, int from, int to);
/* The plan's own environment, every value none, or NULL when the plan cannot
 * lend it (absent, busy, or a call the seam must see); filling it with a call's
 * inputs and the constants; ad_plan_run_part in it (-1: nothing run or made,
 * the caller fills an environment of its own); and emptying it again (the
 * values a planned run puts there). ad_plan_replay uses the same two. */
ad_value *ad_plan_part_env(ad_state *S, const struct ad_trace *T);
void ad_plan_env_fill(const struct ad_trace *T, ad_tensor *const *inputs);
int ad_plan_run_lent(ad_state *S, const struct ad_trace *T, int from, int to);
void ad_plan_env_release(ad_state *S, const struct ad_trace *T);
/* For the kernel records (vm/jit/plan_ops.c): the memory of value v as
 * the replay sees it now, and where value v is written (the arena, or a new
 * tensor put in the environment). */
struct ad_fuview;
int ad_plan_view_of(ad_state *S, const struct ad_trace *T, ad_plan *P, ad_value *env, int v, struct ad_fuview *out);
int ad_plan_dest_of(ad_state *S, ad_plan *P, ad_value *env, int v, char **out);
/* The marker after a record in the printed program (" [g3]"), or nothing. */
void ad_plan_print_tag(const ad_plan *P, int node, struct ad_buf *b);
/* The plan section of the printed program. */
void ad_plan_print(const struct ad_trace *T, const ad_plan *P, struct ad_buf *b);

/* Sizes stored at 'at' of P->dims; NULL while the plan has none (all 0-d). */
static inline const int64_t *ad_plan_dims(const ad_plan *P, int at) { return P->dims ? P->dims + at : NULL; }

#endif
