/* addsl.h: the public C API for embedding the addsl interpreter.
 *
 * Ownership rule (every function follows it): a function that takes a tensor
 * borrows it; a function that returns or outputs a tensor gives the caller a
 * reference, which the caller releases with addsl_tensor_release().
 *
 * Every function returns a status (ADDSL_OK or an error code) or, for
 * constructors, NULL on failure; none exits or aborts the host process. After
 * an error addsl_errmsg() gives the message, with the script location
 * ("FILE:LINE:COL: ...") when the error comes from a script.
 * One addsl_state per thread; states share nothing.
 * Numbers are read and written in the C locale whatever the host's setlocale:
 * the calls that run script code switch their thread with uselocale() and back.
 * Guide and reference: docs/embedding.md.
 */
#ifndef ADDSL_H
#define ADDSL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ADDSL_VERSION "0.1.0"

#if defined(__GNUC__)
#define ADDSL_API __attribute__((visibility("default")))
#else
#define ADDSL_API
#endif

enum {
    ADDSL_OK = 0,
    ADDSL_ECOMPILE = 1,   /* syntax or compile-time check failed */
    ADDSL_ERUNTIME = 2,   /* a script raised an error */
    ADDSL_ENOMEM = 3,     /* allocation failed or memory limit reached */
    ADDSL_EIO = 4,        /* a file could not be read or written */
    ADDSL_EINTERRUPT = 5, /* the interrupt callback stopped the script */
    ADDSL_EARG = 6,       /* a bad argument to an API function */
    ADDSL_EXIT = 7        /* the script called exit(code); see addsl_exit_code */
};

typedef enum {
    ADDSL_FLOAT32 = 0,
    ADDSL_FLOAT64 = 1,
    ADDSL_INT64 = 2,
    ADDSL_BOOL = 3
} addsl_dtype;

typedef struct addsl_state addsl_state;
typedef struct ad_tensor addsl_tensor;

/* realloc-like: size 0 frees and returns NULL. */
typedef void *(*addsl_alloc_fn)(void *ud, void *ptr, size_t size);
/* Writes 'len' bytes of text; 'is_err' tells error output from normal output.
 * A call with 'len' 0 asks for buffered output to be flushed (print(flush=true)). */
typedef void (*addsl_write_fn)(void *ud, const char *text, size_t len, int is_err);
/* Polled by the VM at safe points; returning nonzero stops the script
 * with ADDSL_EINTERRUPT. */
typedef int (*addsl_interrupt_fn)(void *ud);

/* Doors a host can close to the scripts it runs (addsl_config.deny; see
 * docs/security.md). Closed, they fail with ADDSL_ERUNTIME and a message
 * naming the door; the shipped op library is unaffected. */
#define ADDSL_DENY_EXTERN 1u  /* extern declarations: dlopen/dlsym of any library */
#define ADDSL_DENY_FILES  2u  /* load(), save(), plot(), makedirs(), export_c(); import only
                                 * of .ad files in the importing file's directory or below */
#define ADDSL_DENY_IMPORT 4u  /* import of any file */

typedef struct addsl_config {
    addsl_alloc_fn alloc;     /* default: realloc/free */
    void *alloc_ud;           /* default: NULL */
    size_t memory_limit;      /* live bytes of tensor storage and script objects (strings, lists, dicts,
                               * closures, graph nodes, VM frames; docs/security.md); default 4 GiB; 0 = no limit */
    int max_depth;            /* script call depth; default 200 */
    addsl_write_fn write;     /* default: fwrite to stdout/stderr */
    void *write_ud;           /* default: NULL */
    addsl_interrupt_fn interrupt; /* default: NULL (never interrupted) */
    void *interrupt_ud;       /* default: NULL */
    uint64_t interrupt_every; /* loop iterations and calls between interrupt polls; default 4096 */
    unsigned deny;            /* ADDSL_DENY_* bits; default 0 (every door open) */
    const void *mpi_comm;     /* address of the host's MPI_Comm (docs/mpi.md): the scripts' ranks;
                               * the library then never initialises nor finalises MPI. Default NULL */
} addsl_config;

ADDSL_API void addsl_config_init(addsl_config *cfg);

/* Returns NULL only when memory for the state cannot be had. */
ADDSL_API addsl_state *addsl_open(const addsl_config *cfg);
ADDSL_API void addsl_close(addsl_state *S);
/* This process's rank and the number of ranks of the state's communicator (0 and 1 without MPI). */
ADDSL_API int addsl_mpi_rank(addsl_state *S);
ADDSL_API int addsl_mpi_size(addsl_state *S);
/* Ends every rank of the job (MPI_Abort of MPI_COMM_WORLD with 'status') when S
 * runs on several ranks and MPI is initialised: for a host whose rank failed
 * while the others may wait in a collective. Otherwise returns ADDSL_OK. */
ADDSL_API int addsl_mpi_abort(addsl_state *S, int status);

/* Compiles then runs; 'name' labels errors ("<string>", a file name). */
ADDSL_API int addsl_dostring(addsl_state *S, const char *code, const char *name);
ADDSL_API int addsl_dofile(addsl_state *S, const char *path);
/* Like dostring, but an expression statement's value is printed (REPL use). */
ADDSL_API int addsl_dorepl(addsl_state *S, const char *code, const char *name);
/* 1 if 'code' is an incomplete statement (open brace or bracket), else 0. */
ADDSL_API int addsl_incomplete(addsl_state *S, const char *code);
/* REPL completion of the word that ends 'text' (the input typed so far, up
 * to the cursor): names in scope and keywords, attributes and methods after
 * 'a.b.', and NAME= for the parameters of the call the cursor is in. Each
 * candidate replaces text from *start on and goes to fn(ud, candidate).
 * *in_string is set when the text ends inside a string literal (nothing is
 * offered: a host completes file names there). */
ADDSL_API int addsl_complete(addsl_state *S, const char *text, size_t *start, int *in_string,
                             void (*fn)(void *ud, const char *candidate), void *ud);
/* Writes a bytecode listing of 'code' through the output callback. */
ADDSL_API int addsl_disasm(addsl_state *S, const char *code, const char *name);
/* Sets the script-visible 'args' list; the strings are copied. */
ADDSL_API int addsl_set_args(addsl_state *S, int argc, const char *const *argv);

/* Message of the last error (never NULL; "" when none). Valid until the next call. */
ADDSL_API const char *addsl_errmsg(addsl_state *S);
/* Exit code passed to exit() by the script, after ADDSL_EXIT. */
ADDSL_API int addsl_exit_code(addsl_state *S);
/* Asks a running script to stop at the next safe point (async-signal-safe). */
ADDSL_API void addsl_interrupt(addsl_state *S);

/* Tensors. */
ADDSL_API addsl_tensor *addsl_tensor_new(addsl_state *S, addsl_dtype dtype, int ndim, const int64_t *shape);
ADDSL_API void *addsl_tensor_data(addsl_tensor *t);
ADDSL_API int addsl_tensor_ndim(const addsl_tensor *t);
ADDSL_API const int64_t *addsl_tensor_shape(const addsl_tensor *t);
ADDSL_API addsl_dtype addsl_tensor_dtype(const addsl_tensor *t);
/* Drops the caller's reference. ADDSL_EARG (nothing released) when 't' was
 * made by another state: every function taking a state and a tensor refuses
 * a tensor of another state so, as states share nothing. */
ADDSL_API int addsl_tensor_release(addsl_state *S, addsl_tensor *t);
/* Another reference to 't' (returns 't'); release it like any other. */
ADDSL_API addsl_tensor *addsl_tensor_retain(addsl_tensor *t);
ADDSL_API int64_t addsl_tensor_numel(const addsl_tensor *t);
/* Element strides (in elements, not bytes); addsl_tensor_data points at the
 * first element, which is row-major only when addsl_tensor_is_contiguous. */
ADDSL_API const int64_t *addsl_tensor_strides(const addsl_tensor *t);
ADDSL_API int addsl_tensor_is_contiguous(const addsl_tensor *t);
/* A contiguous tensor with t's values: 't' itself (a new reference) when it
 * already is, else a copy. NULL after an error. */
ADDSL_API addsl_tensor *addsl_tensor_contiguous(addsl_state *S, addsl_tensor *t);
/* The value of a one-element tensor as a double. */
ADDSL_API int addsl_tensor_item(addsl_state *S, const addsl_tensor *t, double *out);

/* Called with (ud, data) when the last reference to a wrapped tensor goes. */
typedef void (*addsl_release_fn)(void *ud, void *data);
/* A contiguous row-major tensor over the host's memory 'data', without a
 * copy. release == NULL: borrowed; the host keeps 'data' alive while any
 * reference lives. Otherwise release(ud, data) runs on the last release.
 * On failure (NULL) 'release' is not called: the host still owns 'data'. */
ADDSL_API addsl_tensor *addsl_tensor_wrap(addsl_state *S, addsl_dtype dtype, int ndim, const int64_t *shape,
                                          void *data, addsl_release_fn release, void *ud);

/* Autograd. requires_grad only on floating tensors that are leaves. */
ADDSL_API int addsl_tensor_set_requires_grad(addsl_state *S, addsl_tensor *t, int requires_grad);
ADDSL_API int addsl_tensor_requires_grad(const addsl_tensor *t);
/* *grad: the accumulated .grad of 't' (a new reference), or NULL when none. */
ADDSL_API int addsl_tensor_grad(addsl_state *S, addsl_tensor *t, addsl_tensor **grad);
/* Drops the .grad of 't' (the next backward starts from zero). */
ADDSL_API int addsl_tensor_zero_grad(addsl_state *S, addsl_tensor *t);
/* backward(t, grad_output): accumulates into the .grad of leaves;
 * grad_output may be NULL when 't' has one element. */
ADDSL_API int addsl_backward(addsl_state *S, addsl_tensor *t, addsl_tensor *grad_output);
/* grad(output, inputs): grads[i] gets d output / d inputs[i] (a new reference),
 * or NULL when the output does not depend on it. 'output' needs one element. */
ADDSL_API int addsl_grad(addsl_state *S, addsl_tensor *output, int ninputs, addsl_tensor **inputs,
                         addsl_tensor **grads);

/* Globals. set_global binds (or rebinds) 'name' to t, borrowing it. */
ADDSL_API int addsl_set_global(addsl_state *S, const char *name, addsl_tensor *t);
ADDSL_API int addsl_get_tensor(addsl_state *S, const char *name, addsl_tensor **out);
ADDSL_API int addsl_set_number(addsl_state *S, const char *name, double x);
ADDSL_API int addsl_get_number(addsl_state *S, const char *name, double *out);

/* Calls the script function (or op) 'fname' with tensor arguments; a number
 * result becomes a 0-d tensor; 'result' may be NULL; none gives *result NULL. */
ADDSL_API int addsl_call(addsl_state *S, const char *fname, int nargs, addsl_tensor **args, addsl_tensor **result);

/* A tagged argument or result of addsl_callv. */
typedef enum {
    ADDSL_TNONE = 0,
    ADDSL_TBOOL,
    ADDSL_TNUMBER,
    ADDSL_TTENSOR,
    ADDSL_TSTRING,  /* arguments only: the string is copied */
    ADDSL_TOTHER    /* results only: a list, function, ... (not given to C) */
} addsl_type;

typedef struct addsl_value {
    addsl_type type;
    union {
        int boolean;
        double number;
        addsl_tensor *tensor;  /* borrowed in arguments; a reference in results */
        const char *string;
    } as;
} addsl_value;

static inline addsl_value addsl_number(double x) { addsl_value v; v.type = ADDSL_TNUMBER; v.as.number = x; return v; }
static inline addsl_value addsl_tensor_value(addsl_tensor *t) { addsl_value v; v.type = ADDSL_TTENSOR; v.as.tensor = t; return v; }
static inline addsl_value addsl_string(const char *s) { addsl_value v; v.type = ADDSL_TSTRING; v.as.string = s; return v; }

/* Calls 'fname' with mixed arguments. A tuple result ("return a, b") is
 * spread over results[0..nres) (missing ones are none, extra ones dropped);
 * any other value goes to results[0]. Release results with addsl_value_release. */
ADDSL_API int addsl_callv(addsl_state *S, const char *fname, int nargs, const addsl_value *args,
                          int nres, addsl_value *results);
/* Releases the tensor a result holds, if any, and sets it to none
 * (ADDSL_EARG, leaving it, when the tensor is another state's). */
ADDSL_API int addsl_value_release(addsl_state *S, addsl_value *v);

/* Kernels: registers C function 'fn' under 'name' with signature 'sig'
 * ("RET(ARG,...)" over v, i32, i64, f32, f64, p); scripts reach it through
 * kernel("name") and call_kernel("name", ...). Replacing a shipped kernel is
 * ADDSL_EARG. A name ending _f32, _f64, _i64 or _b8 makes its tensor
 * arguments checked for that dtype. */
ADDSL_API int addsl_register_kernel(addsl_state *S, const char *name, void (*fn)(void), const char *sig);

/* export_c (docs/export.md): from now on every export_c call of the scripts
 * writes 'path' (and its .h) instead of the path it names; a second call is an
 * error. export_c_calls counts the calls that wrote since; addsl --export-c
 * uses both. The path is copied. */
ADDSL_API int addsl_set_export_c(addsl_state *S, const char *path);
ADDSL_API int addsl_export_c_calls(addsl_state *S);

/* Version of the library ("0.1.0"). */
ADDSL_API const char *addsl_version(void);

#ifdef __cplusplus
}
#endif
#endif
