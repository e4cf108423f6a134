/* vm.h: function prototypes, closures, globals and the bytecode interpreter.
 * A prototype is the compiled form of one function; a closure binds it to
 * captured cells and default values. */
#ifndef AD_VM_H
#define AD_VM_H

#include <stdbool.h>
#include <stdint.h>

#include "value.h"

typedef uint32_t ad_instr;

typedef enum {
#define OPCODE(name, fmt, syn) OP_##name,
#include "opcodes.def"
#undef OPCODE
    OP__COUNT
} ad_opcode;

#define AD_OP(i) ((ad_opcode)((i) & 0xff))
#define AD_A(i) ((int)(((i) >> 8) & 0xff))
#define AD_B(i) ((int)(((i) >> 16) & 0xff))
#define AD_C(i) ((int)(((i) >> 24) & 0xff))
#define AD_BX(i) ((int)((i) >> 16))
#define AD_SBX(i) (AD_BX(i) - 32767)
#define AD_MAXBX 65535
#define AD_ABC(op, a, b, c) ((ad_instr)(op) | ((ad_instr)(a) << 8) | ((ad_instr)(b) << 16) | ((ad_instr)(c) << 24))
#define AD_ABX(op, a, bx) ((ad_instr)(op) | ((ad_instr)(a) << 8) | ((ad_instr)(bx) << 16))

/* Tensor attributes known to GETATTR/SETATTR. */
typedef enum {
    AD_ATTR_SHAPE, AD_ATTR_DTYPE, AD_ATTR_NDIM, AD_ATTR_DEVICE, AD_ATTR_GRAD,
    AD_ATTR_REQUIRES_GRAD, AD_ATTR_T, AD_ATTR_IS_LEAF, AD_ATTR_DATA,
    AD_ATTR_MT, AD_ATTR_MH, AD_ATTR_H, AD_ATTR_GRAD_FN, AD_ATTR_VERSION,
    /* read from other values: grad_fn's (vm/autograd/gradfn.c) and named tuples' fields */
    AD_ATTR_NEXT_FUNCTIONS, AD_ATTR_VARIABLE, AD_ATTR_VALUES, AD_ATTR_INDICES,
    AD_ATTR_SIGN, AD_ATTR_LOGABSDET, AD_ATTR__COUNT
} ad_attr;
int ad_attr_lookup(const char *name); /* -1 if unknown */
const char *ad_attr_name(int attr);

/* Source text and name shared by all prototypes of one compile. */
typedef struct ad_chunk {
    int64_t refcount;
    char *name;
    char *src;
    size_t len;
    bool library;      /* the embedded op library (errors point past it) */
} ad_chunk;

typedef struct ad_upvaldesc {
    uint8_t instack; /* 1: a register (holding a cell) of the enclosing frame; 0: its upvalue */
    uint8_t index;
} ad_upvaldesc;

typedef struct ad_proto {
    int64_t refcount;
    char *name;
    ad_chunk *chunk;
    ad_instr *code;
    int32_t *lines;      /* per instruction: line << 12 | column (column clipped) */
    int ncode;
    ad_value *k;
    int nk;
    struct ad_proto **protos;
    int nprotos;
    ad_upvaldesc *upvals;
    int nupvals;
    int nparams;
    char **pnames;
    int ndefaults;       /* the last ndefaults parameters have defaults */
    int nregs;
    int line;
    struct ad_optemplate **optemplates; /* op definitions compiled in this function */
    int noptemplates;
} ad_proto;

typedef struct ad_closure {
    ad_obj hdr;
    ad_gclink gc;
    ad_proto *p;
    ad_value *defaults;  /* p->ndefaults values */
    int nupvals;
    ad_cell *upvals[];
} ad_closure;

/* Globals: slots by name, resolved at compile time. */
typedef struct ad_globals {
    int n, cap;
    char **names;
    ad_value *values;
    bool *defined;       /* has a value (set at run time) */
    bool *declared;      /* some compiled chunk defines it (let/fn at top level) */
    int *lazy;           /* library file + 1 that defines it, loaded on first use; 0 if none */
    bool *lib;           /* the library's or a builtin's (existed at ad_globals_seal) */
    int *shadow;         /* lib slot: the user's own slot of that name + 1; 0 if none */
    int *base;           /* user slot shadowing a lib slot: that slot + 1; 0 if none */
    bool sealed;
    int *hash;           /* open addressing over names: slot + 1, 0 empty (lib slots win) */
    int hcap;
} ad_globals;

int ad_globals_init(ad_state *S);
void ad_globals_free(ad_state *S);
/* Slot of 'name', created (undefined) when 'create'; -1 if absent or on ENOMEM. */
int ad_global_slot(ad_state *S, const char *name, bool create);
/* Scripts and hosts get their own slot for a name the library defines, so
 * `let t = 0.5` leaves the op `t` that library formulas call untouched (as a
 * Python global hides a builtin). The slot for 'name' as user code sees it:
 * its own shadow if it has one, else the library's; with 'bind' (a top-level
 * let/fn/op, a host setting a global) a library name gets a new shadow.
 * Creates a plain slot when 'create' or 'bind'; -1 if absent or on ENOMEM. */
int ad_global_user_slot(ad_state *S, const char *name, bool create, bool bind);
/* Every slot that exists now becomes the library's (end of addsl_open). */
void ad_globals_seal(ad_state *S);
/* Sets a global as user code would (a shadow for a library name once sealed). */
int ad_global_set(ad_state *S, const char *name, ad_value v); /* steals v */

void ad_proto_incref(ad_proto *p);
void ad_proto_decref(ad_state *S, ad_proto *p);
void ad_chunk_decref(ad_state *S, ad_chunk *c);
void ad_vm_closure_free(ad_state *S, ad_closure *f);
void ad_vm_builtin_free(ad_state *S, ad_builtin *b);
const char *ad_vm_closure_name(const ad_closure *f);

/* Registers a table of builtins as defined globals. */
int ad_vm_register(ad_state *S, const ad_builtin_def *defs);

int ad_vm_open(ad_state *S);
void ad_vm_close(ad_state *S);
/* Runs a compiled chunk's main prototype. The error message, on failure, is
 * fully formatted (location, source line, caret, traceback) in S->errmsg. */
int ad_vm_run_main(ad_state *S, ad_proto *main);
/* Calls a function value (closure or builtin) from C: argv borrowed, *out a new reference. */
int ad_vm_call_value(ad_state *S, ad_value fn, int argc, const ad_value *argv, ad_value *out);
/* The same with the names of the trailing kw->len arguments (compile()'s functions). */
int ad_vm_call_value_kw(ad_state *S, ad_value fn, int argc, const ad_value *argv, const ad_list *kw, ad_value *out);
/* Position (line, column, chunk name) of the instruction running now. */
/* The VM's own steps, for replaying a compiled program (vm/trace/trace.c). */
/* Runs the call (opcode OP_CALL, callee) or the operator (an arithmetic
 * opcode on argv[0], argv[1]) at instruction pc of fn inside a frame of fn
 * whose registers stay unset: fn's traceback on error (vm/autograd/formula_fast.c).
 * With attrs, argument i is attribute attrs[i] (>= 0) of argv[i], read as
 * the GETATTR at attr_pcs[i] reads it. */
#define AD_VM_FRAME_CALL_MAX_ARGS 8
int ad_vm_call_in_frame(ad_state *S, ad_closure *fn, int pc, int opcode, ad_value callee, int argc,
                        const ad_value *argv, const int16_t *attrs, const int *attr_pcs, ad_value *out);
int ad_vm_call_builtin(ad_state *S, ad_builtin *b, const ad_value *args, int nargs, const ad_list *kw, ad_value *out);
int ad_vm_get_attr(ad_state *S, ad_value obj, int attr, ad_value *out);
int ad_vm_set_attr(ad_state *S, ad_value obj, int attr, ad_value v);
int ad_vm_set_index(ad_state *S, ad_value obj, int n, const ad_value *idx, ad_value v);
void ad_vm_current_pos(ad_state *S, int *line, int *col, const char **chunk);
/* Writes a listing of 'p' and its nested prototypes. */
int ad_vm_disasm(ad_state *S, const ad_proto *p, struct ad_buf *b);
/* The formatted message of the last error (points at S->errmsg or a longer buffer). */
const char *ad_vm_errmsg(ad_state *S);
/* Sets a fully formatted error message (any length). */
void ad_vm_set_errmsg(ad_state *S, int code, const char *msg);
/* Ends an error a builtin has caught and turned into a value (export_c_error):
 * clears it and forgets its location and traceback, so the next error inside
 * the same run is located afresh instead of reusing this one's text. */
void ad_vm_error_handled(ad_state *S);

/* The length and items of what a for loop walks (list, tuple, string, tensor
 * rows, an iterator wrapper's source); a tensor on a graph yields t[i] through
 * the indexing op. ad_vm_seq_len is false for anything else. */
bool ad_vm_seq_len(ad_value v, int64_t *n);
int ad_vm_seq_item(ad_state *S, ad_value v, int64_t i, ad_value *out);

#endif
