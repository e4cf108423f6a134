/* state.h: the interpreter state every module hangs off, and its error and
 * allocation primitives. There is no global mutable state anywhere else. */
#ifndef AD_STATE_H
#define AD_STATE_H

#include <locale.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addsl.h"
#include "ad_limits.h"
#include "gc.h"
#include "value.h"

struct ad_heap;
struct ad_kreg;
struct ad_vm;
struct ad_globals;
struct ad_device;
struct ad_cairo_api;
struct ad_zip_api;
struct ad_blas_api;

/* Internal status codes are the public ones. */
#define AD_OK ADDSL_OK

typedef struct ad_rng {
    uint64_t s[4]; /* xoshiro256** state */
    int has_spare; double spare; /* Box-Muller second sample */
} ad_rng;

/* One forward-mode level: a running jvp() call. Levels nest; each lives in
 * its jvp() call's C frame, linked to the one outside it. */
typedef struct ad_fwlevel {
    uint64_t id;                     /* key of the tangents (ad_tangent.level) */
    int depth;                       /* 1 for the outermost */
    const struct ad_fwlevel *outer;
} ad_fwlevel;

struct addsl_state {
    addsl_config cfg;
    struct ad_heap *heap;
    struct ad_kreg *kernels;   /* libffi kernel registry */
    struct ad_vm *vm;          /* frames, registers, call depth */
    struct ad_globals *globals;/* global slots by name (compile-time resolved) */
    ad_rng rng;
    int errcode;
    uint64_t nomem_cleared; /* out-of-memory errors a degrading path cleared (ad_clear_error): a caller
                             * whose result degraded into another error reports out of memory */
    char errmsg[AD_ERRMSG_MAX];
    int exit_code;
    volatile int interrupted;  /* set by addsl_interrupt, polled by the VM */
    bool grad_enabled;         /* false inside no_grad { } */
    int fw_level;              /* active jvp() levels; 0: ops skip forward mode */
    const struct ad_fwlevel *fw_top; /* the innermost active level (when fw_level > 0) */
    uint64_t fw_ids;           /* level ids handed out: never reused, so a tangent
                                * left on a tensor by a finished jvp() stays dead */
    bool anomaly;              /* inside detect_anomaly { } */
    bool bar_shown;            /* a progress() bar ends the terminal's last line (builtins/system/progress.c) */
    bool ops_ready;            /* the operators' ops are loaded (vm/autograd/library.c) */
    unsigned ops_loaded;       /* bit AD_OPER_*: that operator's op is loaded (vm/autograd/library.c) */
    bool *lib_loaded;          /* per library file */
    bool *lib_tested;          /* per library file: its test_inputs statements ran */
    uint64_t grad_epoch;       /* bumped per backward pass */
    struct ad_opdef *op_add, *op_sub, *op_mul, *op_div, *op_rem, *op_pow, *op_neg, *op_matmul, *op_index, *op_sum;
    struct ad_device *device;  /* CUDA module and device memory (vm/tensor/device.c), NULL until used */
    ad_gc gc;                  /* the cycle collector's lists and thresholds (vm/gc.h) */
    struct ad_dict *modules;   /* imported files (vm/import.c): real path -> module, or its name while it runs */
    struct ad_mpi *mpi;        /* rank, size and communicator (builtins/bi_mpi.c) */
    struct ad_cairo_api *cairo;/* plot()'s cairo functions (builtins/system/cairo_lazy.c), NULL until used */
    struct ad_zip_api *zip;    /* .npz save()/load()'s libzip functions (builtins/system/zip_lazy.c), NULL until used */
    struct ad_blas_api *blas;  /* OpenBLAS's CBLAS and LAPACK functions (builtins/system/blas_lazy.c), NULL until used */
    struct ad_trace *trace;    /* compile() is tracing a function (vm/trace/trace.h), else NULL */
    bool trace_guard_failed;   /* a compiled program's guard on a value read (_compiled_guard) failed:
                                * the error it raised means "trace again", not a failure */
    char export_c_path[1024];  /* addsl --export-c OUT.c: the path every export_c call writes; "" unless set */
    int export_c_calls;        /* export_c calls that wrote files since it was set */
    void *ad_state_ext;        /* autograd/forward-AD state (later issues) */
    locale_t c_locale;         /* "C": the locale the entry points run in (vm/c_locale.c) */
    locale_t host_locale;      /* the caller's thread locale inside an entry point, else 0 */
};

/* Sets the error message and returns 'code' (ADDSL_ERUNTIME unless told). */
int ad_error(ad_state *S, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ad_error_code(ad_state *S, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int ad_verror(ad_state *S, int code, const char *fmt, va_list ap);
/* Sets the preallocated out-of-memory message; returns ADDSL_ENOMEM. */
int ad_nomem(ad_state *S);
void ad_clear_error(ad_state *S);

/* The state's allocator. ad_malloc and ad_realloc set ENOMEM on failure. */
void *ad_malloc(ad_state *S, size_t n);
void *ad_calloc(ad_state *S, size_t count, size_t size); /* zeroed, overflow-checked */
void *ad_realloc(ad_state *S, void *p, size_t n);
void ad_free(ad_state *S, void *p);

/* Checked size arithmetic: false on overflow. */
static inline bool ad_mul_ok(int64_t a, int64_t b, int64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}

/* Random numbers from the state's generator (manual_seed sets it). */
void ad_rng_seed(ad_rng *r, uint64_t seed);
uint64_t ad_rng_next(ad_rng *r);
double ad_rng_uniform(ad_rng *r);  /* [0, 1) */
double ad_rng_normal(ad_rng *r);

/* Writes through the configured output callback. */
void ad_write(ad_state *S, const char *text, size_t len, int is_err);

#endif
