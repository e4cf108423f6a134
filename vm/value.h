/* value.h: tagged values of the VM and the refcounted objects behind them.
 * Numbers are unboxed doubles; everything else heavier is a refcounted pointer. */
#ifndef AD_VALUE_H
#define AD_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct addsl_state ad_state;
typedef struct ad_tensor ad_tensor;

typedef enum {
    AD_TNONE,
    AD_TBOOL,
    AD_TINT,      /* a number written or computed as an integer (exact to 2^53) */
    AD_TNUM,      /* any other number (a double) */
    AD_TDTYPE,    /* float32, float64, int64, bool */
    AD_TELLIPSIS, /* the '...' of an index */
    /* kinds at or after AD_TSTR hold a refcounted object */
    AD_TSTR,
    AD_TLIST,
    AD_TTUPLE,
    AD_TSLICE,
    AD_TTENSOR,
    AD_TFUNC,     /* a script closure */
    AD_TBUILTIN,  /* a C function */
    AD_TOP,       /* a differentiable op (vm/autograd/op.h) */
    AD_TGRADFN,   /* t.grad_fn: a graph node seen from scripts (vm/autograd/gradfn.h) */
    AD_TCELL,     /* captured variable (internal, never user-visible) */
    AD_TDICT,     /* vm/dict.h */
    AD_TMODULE,   /* vm/import.h */
    AD_TITER      /* a sequence wrapped with loop hooks, e.g. progress() (vm/iter.h) */
} ad_vtype;

typedef struct ad_obj {
    int64_t refcount;
} ad_obj;

/* A container's place in the cycle collector's lists (vm/gc.h): every kind
 * that can hold other values (lists, tuples, dicts, cells, closures,
 * iterators) has one right after its header. */
typedef struct ad_gclink {
    struct ad_gclink *prev, *next;
    int64_t refs;     /* during a collection: references from outside the examined set */
    uint8_t kind;     /* AD_TLIST (lists and tuples), AD_TDICT, AD_TCELL, AD_TFUNC or AD_TITER */
    uint8_t flags;    /* AD_GC_* (vm/gc.h) */
} ad_gclink;

typedef struct ad_value {
    ad_vtype t;
    union {
        bool b;
        double n;   /* AD_TINT and AD_TNUM */
        int dtype;  /* AD_TDTYPE: an ad_dtype */
        ad_obj *o;
        struct ad_str *s;
        struct ad_list *l; /* AD_TLIST and AD_TTUPLE */
        struct ad_slice *sl;
        ad_tensor *tensor;
        struct ad_closure *fn;
        struct ad_builtin *bi;
        struct ad_opdef *op;
        struct ad_gradfn *gf;
        struct ad_cell *cell;
        struct ad_dict *d;
        struct ad_module *mod;
        struct ad_iter *it;
    } u;
} ad_value;

typedef struct ad_str {
    ad_obj hdr;
    size_t len;
    char data[]; /* NUL-terminated */
} ad_str;

typedef struct ad_list {
    ad_obj hdr;
    ad_gclink gc;
    int64_t len, cap;
    ad_value *items;
    /* A named tuple (torch.return_types: max(x, dim=1).values): a tuple of
     * strings, its type name then one field name per item; NULL otherwise. */
    struct ad_list *names;
} ad_list;

typedef struct ad_slice {
    ad_obj hdr;
    ad_value start, stop, step; /* each none or a number */
} ad_slice;

typedef struct ad_cell {
    ad_obj hdr;
    ad_gclink gc;
    ad_value v;
} ad_cell;

/* A C builtin receives its parameters bound in declaration order (defaults
 * filled in) or, for a variadic builtin, the raw positional arguments. It
 * borrows argv, writes a new reference to *out and returns 0, or returns an
 * error code after ad_error(). */
typedef int (*ad_cfunc)(ad_state *S, ad_value *argv, int argc, ad_value *out);

typedef struct ad_builtin_def {
    const char *name;
    ad_cfunc fn;
    /* "self, dim=none, keepdim=false": names and defaults (none, true, false,
     * numbers, dtype names, strings in double quotes); "*" alone: variadic;
     * "*size, dtype=none": 'size' also takes the sizes as separate numbers;
     * "*, k=v, ...": variadic with keyword-only parameters after the values. */
    const char *params;
    /* What help(name) prints under the signature: one paragraph, then
     * "\nExample: CODE" (one line of the language that runs in a fresh
     * state). NULL for a row whose public name is an op of the library that
     * wraps it (help shows the op's doc comment) or for internal rows. */
    const char *doc;
} ad_builtin_def;

typedef struct ad_builtin {
    ad_obj hdr;
    const char *name;
    ad_cfunc fn;
    const char *doc;      /* ad_builtin_def.doc (static), or NULL */
    int nparams;          /* -1: variadic; with 'varargs', the keyword-only parameters */
    bool varargs;         /* "*, k=v": positional arguments, then nparams keyword-only slots */
    const char **pnames;  /* nparams names */
    ad_value *defaults;   /* nparams values; AD_TNONE with required[i] set means required */
    bool *required;
    void *ud;             /* data of a builtin made at run time (e.g. an extern kernel) */
    int kid;              /* kernel id for kernel-backed builtins, else -1 */
    bool on_device;       /* takes GPU tensors (vm/tensor/device.c lists which) */
    unsigned doors;       /* ADDSL_DENY_* bits that refuse it (vm/sandbox.c lists which) */
    int sizes_param;      /* 1 + index of the parameter written '*NAME'; 0: none */
    void (*ud_free)(ad_state *S, void *ud);
    /* A builtin made at run time that needs its own record (compile()'s
     * functions, vm/jit/compiled.c): called instead of fn, with keywords unbound. */
    int (*call)(ad_state *S, struct ad_builtin *b, const ad_value *argv, int argc, const struct ad_list *kw, ad_value *out);
} ad_builtin;

/* Constructors of immediate values. */
static inline ad_value ad_none(void) { ad_value v; v.t = AD_TNONE; v.u.n = 0; return v; }
static inline ad_value ad_bool(bool b) { ad_value v; v.t = AD_TBOOL; v.u.n = 0; v.u.b = b; return v; }
static inline ad_value ad_int(double n) { ad_value v; v.t = AD_TINT; v.u.n = n; return v; }
static inline ad_value ad_num(double n) { ad_value v; v.t = AD_TNUM; v.u.n = n; return v; }
static inline ad_value ad_dtype_value(int dt) { ad_value v; v.t = AD_TDTYPE; v.u.n = 0; v.u.dtype = dt; return v; }
/* Steals the caller's reference to 't'. */
static inline ad_value ad_tensor_value(ad_tensor *t) { ad_value v; v.t = AD_TTENSOR; v.u.tensor = t; return v; }

/* A tag of the enum above (vm/ad_assert.h checks every value it meets). */
static inline bool ad_vtype_valid(ad_vtype t) { return (unsigned)t <= (unsigned)AD_TITER; }
static inline bool ad_is_number(ad_value v) { return v.t == AD_TINT || v.t == AD_TNUM; }

static inline bool ad_is_obj(ad_value v) { return v.t >= AD_TSTR; }
static inline bool ad_is_seq(ad_value v) { return v.t == AD_TLIST || v.t == AD_TTUPLE; }

void ad_value_incref(ad_value v);
void ad_value_decref(ad_state *S, ad_value v);

/* Objects: each returns a new reference, or sets an error and fails. */
ad_str *ad_str_new(ad_state *S, const char *data, size_t len);
/* A zeroed block of 'n' bytes for a script object (cell, slice, closure),
 * counted against the memory limit; NULL with the error set. ad_obj_free
 * takes the same 'n' back. */
void *ad_obj_alloc(ad_state *S, size_t n);
void ad_obj_free(ad_state *S, void *p, size_t n);
/* A string of 'len' bytes to fill (refcount 1, NUL-terminated), counted
 * against the memory limit; NULL with the error set. */
ad_str *ad_str_alloc(ad_state *S, size_t len);
int ad_string_value(ad_state *S, const char *data, size_t len, ad_value *out);
/* A list or tuple of 'len' none items (AD_TLIST or AD_TTUPLE). */
ad_list *ad_list_new(ad_state *S, ad_vtype kind, int64_t len);
int ad_list_push(ad_state *S, ad_list *l, ad_value v); /* steals v, even on failure */
/* A new list or tuple ('kind') holding the items of 'src' (new references). */
ad_list *ad_list_copy(ad_state *S, const ad_list *src, ad_vtype kind);
/* Makes tuple 't' a named tuple of type 'type' with fields 'fields' (t->len names). */
int ad_tuple_name(ad_state *S, ad_list *t, const char *type, const char *const *fields);
/* Gives tuple 't' (a new one, not yet named) the names tuple 'names' (made by ad_names_new). */
void ad_tuple_share_names(ad_list *t, ad_list *names);
/* A names tuple for ad_tuple_share_names: type, then nfields field names. */
ad_list *ad_names_new(ad_state *S, const char *type, int nfields, const char *const *fields);
/* The item of named tuple 't' whose field is 'field' (borrowed), or NULL. */
const ad_value *ad_tuple_field(const ad_list *t, const char *field);
static inline ad_value ad_list_value(ad_list *l, ad_vtype kind) { ad_value v; v.t = kind; v.u.l = l; return v; }

const char *ad_type_name(ad_value v);
bool ad_truthy(ad_value v);
/* Structural equality for numbers, strings, none, bools, dtypes, lists, tuples,
 * dicts; a container is equal to itself whatever it holds (Python's identity
 * shortcut). Containers nested deeper than AD_MAX_NEST_DEPTH compare unequal
 * here; ad_values_eq reports them as Python's RecursionError instead. */
bool ad_values_equal(ad_value a, ad_value b);
int ad_values_eq(ad_state *S, ad_value a, ad_value b, bool *out);
/* The walk inside a container 'depth' levels down (vm/dict.c's equality). */
bool ad_values_equal_at(ad_value a, ad_value b, int depth, bool *deep);
/* A new cell holding v (a new reference of its own). */
ad_cell *ad_cell_new(ad_state *S, ad_value v);
/* Destructors the collector's release calls (vm/gc.c); others use ad_value_decref. */
void ad_list_free(ad_state *S, ad_list *l);
void ad_cell_free(ad_state *S, ad_cell *c);

/* Text of a value as print() shows it (strings unquoted when 'quote_str' is false). */
struct ad_buf;
int ad_value_format(ad_state *S, ad_value v, struct ad_buf *b, bool quote_str);
/* The text print() gives a number (vm/value.c); returns its length. */
int ad_format_number(char *out, size_t n, double x);

/* Argument helpers for builtins: each checks the kind and, on a mismatch,
 * raises "FN(): argument 'PNAME' must be ..." and returns an error code. */
int ad_arg_tensor(ad_state *S, ad_value v, const char *fn, const char *pname, ad_tensor **out); /* new ref; numbers and nested lists become tensors */
int ad_arg_int(ad_state *S, ad_value v, const char *fn, const char *pname, int64_t *out);
int ad_arg_double(ad_state *S, ad_value v, const char *fn, const char *pname, double *out);
int ad_arg_bool(ad_state *S, ad_value v, const char *fn, const char *pname, bool *out);
int ad_arg_dtype(ad_state *S, ad_value v, const char *fn, const char *pname, int *out); /* none leaves *out unchanged */
/* A shape: a list/tuple of ints (or one int). */
int ad_arg_shape(ad_state *S, ad_value v, const char *fn, const char *pname, int *ndim, int64_t *shape);
/* A list of dims or one dim (not normalized); none gives *n = -1. */
int ad_arg_dims(ad_state *S, ad_value v, const char *fn, const char *pname, int *n, int64_t *dims);
int ad_arg_str(ad_state *S, ad_value v, const char *fn, const char *pname, const char **out);

/* Binding (vm/args.c). The index of the parameter keyword 'kw' names, also
 * through torch's aliases ('axis' for 'dim', 'keepdims' for 'keepdim', 'input' for
 * 'self'); -1 if none. */
int ad_param_find(int np, const char *const *pnames, const char *kw);
/* A parameter written '*NAME' (index 'star') takes sizes as one list or as
 * separate numbers, as torch's zeros(2, 3) and x.view(3, 2): when the
 * positional arguments from 'star' on start with a number, they become one
 * list. Sets bound and nbound to the arguments to bind (args itself, or 'buf'
 * of at least nargs values) and *packed to the new list (a reference the
 * caller releases after the call; none if nothing was packed). */
int ad_args_pack_sizes(ad_state *S, const char *fn, const char *pname, int star,
                       const ad_value *args, int nargs, int nkw, ad_value *buf,
                       const ad_value **bound, int *nbound, ad_value *packed);

#endif
