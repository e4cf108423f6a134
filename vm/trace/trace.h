/* trace/trace.h: the tracing mode of the op seam (compile(), vm/jit/compiled.c): while
 * a function is traced, op calls, builtin calls and tensor writes append
 * records to a flat SSA program that can be optimized, printed and replayed. */
#ifndef AD_TRACE_H
#define AD_TRACE_H

#include <stdbool.h>

#include "trace/op_ids.h"
#include "state.h"
#include "value.h"

struct ad_opdef;
struct ad_plan;

/* An argument as the program sees it: an IR value, a constant, or a list
 * or tuple some of whose items are IR values. */
typedef struct ad_targ {
    ad_value c;            /* the constant (held) when ref < 0 and sub == NULL */
    int ref;               /* IR value id, or -1 */
    int nsub;
    ad_vtype seqt;         /* AD_TLIST or AD_TTUPLE, with sub */
    struct ad_targ *sub;
    ad_list *names;        /* a named tuple's names (held), or NULL */
} ad_targ;

typedef enum {
    AD_TN_OP,       /* ad_op_call(fn, args, kw) */
    AD_TN_BUILTIN,  /* a builtin (creation, in-place methods, backward, grad, print, ...) */
    AD_TN_GETATTR,  /* t.grad, t.data */
    AD_TN_SETATTR,  /* t.grad = v, t.requires_grad = v */
    AD_TN_SETINDEX, /* t[idx] = v: args t, idx..., v */
    AD_TN_COMPARE,  /* a < b on tensors (attr: the comparison) */
    AD_TN_ACCUMGRAD /* backward() into a leaf: leaf.grad = g, or leaf.grad + g when it has one
                     * (args leaf, g, create_graph; an effect, out none) */
} ad_tnode_kind;

typedef struct ad_tnode {
    ad_tnode_kind kind;
    ad_value fn;           /* the op or builtin (held), else none */
    int op;                /* fn's ad_op_id (trace/op_ids.h): an alias's is its op's, AD_OP__NONE for a
                            * script's own op or another builtin; what backends switch on */
    int attr;
    int nargs;
    ad_targ *args;
    ad_list *kw;           /* keyword names of the trailing arguments (held), or NULL */
    ad_targ out;
    bool grad_enabled;     /* the grad mode it ran under (no_grad inside f) */
    bool effect;           /* writes or side effects: never removed, merged or folded */
    bool random;           /* drew from the generator: replayed as a fresh draw */
    bool dead;             /* removed by a pass */
    bool folded;           /* replaced by its trace-time outputs */
    bool weak_fn;          /* fn is the program's own compiled function: not held */
    int line, col;         /* where f made the call */
    int *frees;            /* values last read here: released after the call (liveness) */
    int nfrees;
} ad_tnode;

typedef enum { AD_TV_INPUT, AD_TV_NODE, AD_TV_CONST } ad_tval_kind;

typedef struct ad_tval {
    ad_tval_kind kind;
    bool dep;              /* depends on an input or on a random draw */
    int node;              /* producing node (AD_TV_NODE) */
    ad_value v;            /* trace-time value: held while tracing, kept for constants */
    bool folded;           /* a constant computed at trace time by a folded node */
    int prev_storage;      /* the previous value over the same storage, or -1 (alias lookups) */
    char desc[48];         /* "f64[3,4]", for printing */
} ad_tval;

/* A value f read from a global or a captured variable: the program is valid
 * while that variable still holds it (the same tensor or object, an equal
 * number or string), else the call traces again. */
/* A container f reads (a global dict, an optimizer's state, a dict argument)
 * is guarded by its contents too: a number, none or tensor item changed in
 * place between calls would otherwise stay baked into the program. */
enum { AD_GUARD_OBJECT = -2, AD_GUARD_GRAD = -3 };
typedef struct ad_tguard {
    int slot;              /* global slot, when cell is NULL; AD_GUARD_OBJECT: only v's contents;
                            * AD_GUARD_GRAD: whether tensor v has a .grad */
    ad_cell *cell;         /* held */
    ad_value v;            /* held */
    ad_list *snap;         /* v's contents when v is a list, tuple or dict (held), else NULL */
    bool had_grad;         /* AD_GUARD_GRAD */
} ad_tguard;

/* A pointer -> value id map (open addressing, linear probing; keys never removed one by one). */
typedef struct ad_ptrmap {
    const void **keys;
    int *ids;
    int cap, n;
} ad_ptrmap;

typedef struct ad_trace {
    int depth;             /* > 0: inside a recorded call, whose inner calls are not recorded */
    const ad_builtin *self;/* the compiled function being traced: a call of it (recursion) and a
                            * read of it are not held, which would make a reference cycle */
    const ad_builtin *through; /* a builtin that only calls a function (apply): its calls are recorded instead */
    bool guard_data;           /* compile() without fullgraph: a data-dependent read becomes a guard
                            * on the value read (the call traces again when it differs), not an error */
    int guard_scan;            /* records up to here have no effect a guard could not undo */
    ad_value args;             /* while f is traced, its arguments (a tuple, held; else none): a list
                            * a call changes that these reach is the caller's (vm/trace/containers.c) */
    ad_tval *vals;
    int nvals, capvals;
    ad_tnode *nodes;
    int nnodes, capnodes;
    ad_ptrmap tmap;        /* tensor -> value id (tensors held, so keys stay unique) */
    ad_ptrmap smap;        /* storage -> newest value id over it */
    const void **gnodes;   /* graph nodes made by recorded calls (a set by address): the
                            * backward walk is flattened only through these */
    int gcap, gn;
    const void **glog;     /* the same nodes in the order added (a composite's body is undone) */
    int nglog, capglog;
    int soft_reads;        /* data-dependent reads seen while soft */
    char soft_why[96];     /* the last of them, for the note */
    int soft;              /* > 0: inside a flattened backward or a composite's body, where a
                            * data-dependent read fails the trace instead of raising */
    int flattened;         /* grad()/backward() calls flattened into records */
    int fw_flattened;      /* jvp() calls flattened: their JVP formulas' op calls are records */
    int fw_outer;          /* jvp() levels active when the trace began: tangents of those come
                            * from outside, so forward mode flattens only with none */
    bool defer_tangents;   /* the op call one level down leaves its tangents to the trace (vm/autograd/op.c) */
    int pruned;            /* op records the passes moved to no_grad (their graph is never walked) */
    char note[200];        /* why a grad()/backward() was kept as one record (printed, warned) */
    int ninputs;
    ad_tguard *guards;
    int nguards, capguards;
    ad_cell **cells;       /* captured variables made while tracing (held; a set by address) */
    int ncells, capcells;
    ad_targ result;
    char fail[200];        /* non-empty: cannot be replayed exactly (the signature runs eagerly) */
    int traced_nodes;      /* before the passes */
    int removed_dce, removed_cse, folded;
    int simplified[8];     /* records rewritten or removed per rule of vm/trace/simplify.c */
    struct ad_plan *plan;  /* records run outside the seam (vm/jit/plan.h), or NULL */
    int plan_split;        /* > 0: the program runs in two parts, records before and from this one,
                            * both without graph (vm/jit/compiled_vjp.c); the plan is cut there */
} ad_trace;

/* A tensor is about to be made outside the seam from 'src' (a tangent
 * converted or laid out anew): fails a flattened jvp() back to one record,
 * or, elsewhere, the trace, when 'src' depends on the inputs. */
int ad_trace_outside_seam(ad_state *S, const ad_tensor *src, const char *what);

/* The ad_op_id a record of 'fn' carries (ad_tnode.op). */
int ad_trace_fn_id(ad_value fn);

/* Whether the state is tracing and outside any recorded call. */
static inline bool ad_trace_on(const ad_state *S) { return S->trace && S->trace->depth == 0; }

ad_trace *ad_trace_new(ad_state *S);
void ad_trace_free(ad_state *S, ad_trace *T);
/* Adds tensor 't' (held) as the next input. */
int ad_trace_input(ad_state *S, ad_trace *T, ad_tensor *t);
/* Maps f's return value onto the program's values. */
int ad_trace_set_result(ad_state *S, ad_trace *T, ad_value v);
/* The passes: constant folding, common subexpressions, dead code. Then the
 * trace-time values that the replay does not need are released. */
void ad_trace_optimize(ad_state *S, ad_trace *T, bool passes);
/* Runs the program on 'inputs' (ninputs tensors) through the op seam. */
int ad_trace_replay(ad_state *S, const ad_trace *T, ad_tensor *const *inputs, ad_value *out);
/* One record through the seam, and f's result, for the planned replay (vm/jit/replay.c). */
int ad_trace_replay_node(ad_state *S, const ad_tnode *n, ad_value *env);
int ad_trace_result_value(ad_state *S, const ad_trace *T, ad_value *env, ad_value *out);
/* A program run in parts (vm/jit/compiled_vjp.c): a value standing for a tensor
 * given later (its id, or -error); the id of a traced tensor (while
 * tracing); an environment with the inputs and constants; records
 * [from, to) run on it (grad: 1 or 0 forces the grad mode, -1 keeps each
 * record's); a value of the program rebuilt from it. */
int ad_trace_placeholder(ad_state *S, ad_trace *T, ad_tensor *t);
int ad_trace_value_of(const ad_trace *T, const ad_tensor *t);
ad_value *ad_trace_env_new(ad_state *S, const ad_trace *T, ad_tensor *const *inputs);
void ad_trace_env_free(ad_state *S, const ad_trace *T, ad_value *env);
int ad_trace_run(ad_state *S, const ad_trace *T, ad_value *env, int from, int to, int grad);
int ad_trace_build(ad_state *S, const ad_trace *T, ad_value *env, const ad_targ *a, ad_value *out);
/* Appends the printed program to 'b' (an ad_buf). */
struct ad_buf;
int ad_trace_print(ad_state *S, const ad_trace *T, struct ad_buf *b);

/* Hooks of the seam (vm/autograd/op.c, vm/vm.c): each runs the call one level down
 * and records it. */
int ad_trace_op(ad_state *S, struct ad_opdef *op, const ad_value *args, int nargs, const ad_list *kw, ad_value *out);
int ad_trace_builtin(ad_state *S, ad_builtin *b, const ad_value *args, int nargs, const ad_list *kw, ad_value *out);
/* t.grad/t.data (out set), t.attr = v, t[idx] = v, a < b: args as ad_tnode.args. */
int ad_trace_vm(ad_state *S, ad_tnode_kind kind, int attr, const ad_value *args, int nargs, ad_value *out);
/* The error for a tensor value steering control flow ('what': "bool()", "if"). */
int ad_trace_check_truth(ad_state *S, ad_value v, const char *what);
/* f read 'v' from global 'slot' or from 'cell' (GETGLOBAL, GETUPVAL). */
void ad_trace_guard(ad_state *S, int slot, ad_cell *cell, ad_value v);
/* A dict argument of f (the signature holds its identity, not its contents). */
void ad_trace_guard_object(ad_state *S, ad_value v);
/* f assigned a global: a replay would not, so this signature runs eagerly. */
void ad_trace_global_write(ad_state *S);
/* A captured variable made while tracing (NEWCELL): reads of it are not guarded. */
void ad_trace_new_cell(ad_state *S, ad_cell *c);
/* f assigned captured variable 'c' (SETUPVAL): fails the trace unless f made it. */
void ad_trace_cell_write(ad_state *S, ad_cell *c);
bool ad_trace_guards_hold(const ad_state *S, const ad_trace *T);
/* The backward engine (vm/autograd/engine.c) while a grad()/backward() is being
 * flattened into the program: whether graph node 'node' was made by a
 * recorded call (else the walk left the trace), a failure that makes the
 * signature run eagerly, and the write of a leaf's .grad as an effect record. */
bool ad_trace_knows_node(const ad_state *S, const void *node);
void ad_trace_fail(ad_state *S, const char *why);
int ad_trace_accum_grad(ad_state *S, ad_tensor *leaf, ad_value g, bool create);
/* Whether 't' depends on the traced inputs (iteration goes through the indexing op then). */
bool ad_trace_depends(const ad_state *S, const ad_tensor *t);

#endif
