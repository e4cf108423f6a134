/* addsl.h: the public C API for embedding the addsl interpreter.
 *
 * Ownership rule (every function follows it): a function that takes a tensor
 * borrows it; a function that returns or outputs a tensor gives the caller a
 * reference, which the caller releases with addsl_tensor_release().
 *
 * Every function returns a status (ADDSL_OK or an error code) or, for
 * constructors, NULL on failure; none exits or aborts the host process.
 * One addsl_state per thread; states share nothing.
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
/* Writes 'len' bytes of text; 'is_err' tells error output from normal output. */
typedef void (*addsl_write_fn)(void *ud, const char *text, size_t len, int is_err);
/* Polled by the VM at safe points; returning nonzero stops the script. */
typedef int (*addsl_interrupt_fn)(void *ud);

typedef struct addsl_config {
    addsl_alloc_fn alloc;     /* default: realloc/free */
    void *alloc_ud;           /* default: NULL */
    size_t memory_limit;      /* bytes of tensor storage; default 4 GiB; 0 = no limit */
    int max_depth;            /* script call depth; default 200 */
    addsl_write_fn write;     /* default: fwrite to stdout/stderr */
    void *write_ud;           /* default: NULL */
    addsl_interrupt_fn interrupt; /* default: NULL (never interrupted) */
    void *interrupt_ud;       /* default: NULL */
    uint64_t interrupt_every; /* instructions between interrupt polls; default 4096 */
} addsl_config;

ADDSL_API void addsl_config_init(addsl_config *cfg);

/* Returns NULL only when memory for the state cannot be had. */
ADDSL_API addsl_state *addsl_open(const addsl_config *cfg);
ADDSL_API void addsl_close(addsl_state *S);

/* Compiles then runs; 'name' labels errors ("<string>", a file name). */
ADDSL_API int addsl_dostring(addsl_state *S, const char *code, const char *name);
ADDSL_API int addsl_dofile(addsl_state *S, const char *path);
/* Like dostring, but an expression statement's value is printed (REPL use). */
ADDSL_API int addsl_dorepl(addsl_state *S, const char *code, const char *name);
/* 1 if 'code' is an incomplete statement (open brace or bracket), else 0. */
ADDSL_API int addsl_incomplete(addsl_state *S, const char *code);
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
ADDSL_API void addsl_tensor_release(addsl_state *S, addsl_tensor *t);

ADDSL_API int addsl_set_global(addsl_state *S, const char *name, addsl_tensor *t);
ADDSL_API int addsl_get_tensor(addsl_state *S, const char *name, addsl_tensor **out);
ADDSL_API int addsl_call(addsl_state *S, const char *fname, int nargs, addsl_tensor **args, addsl_tensor **result);
ADDSL_API int addsl_register_kernel(addsl_state *S, const char *name, void (*fn)(void), const char *sig);

#ifdef __cplusplus
}
#endif
#endif
