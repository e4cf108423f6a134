/* kernel.h: the kernel registry. Every forward kernel (shipped, registered by
 * a host, or bound by 'extern') is a plain C function with a signature string
 * "RET(ARG,...)" over v, i32, i64, f32, f64, p; one ffi_cif per distinct
 * signature is prepared once and reused by every kernel that shares it. */
#ifndef AD_KERNEL_H
#define AD_KERNEL_H

#include <stdint.h>

typedef struct addsl_state ad_state;

typedef enum { AD_KT_VOID, AD_KT_I32, AD_KT_I64, AD_KT_F32, AD_KT_F64, AD_KT_PTR } ad_ktype;

#define AD_KERNEL_MAX_ARGS 16

/* One argument or return slot of a kernel call. */
typedef union ad_karg {
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
    void *p;
} ad_karg;

struct ad_kreg *ad_kreg_new(ad_state *S);
void ad_kreg_free(ad_state *S, struct ad_kreg *r);

/* Adds (or replaces) kernel 'name' (a shipped one cannot be replaced); returns its id (>= 0) or a negative error
 * code after ad_error ("bad kernel signature 'x' for NAME: ..."). The name is copied. */
int ad_kreg_add(ad_state *S, const char *name, void (*fn)(void), const char *sig);
/* Id of 'name' or -1 (no error set). */
int ad_kreg_find(ad_state *S, const char *name);
int ad_kreg_nargs(ad_state *S, int id);
ad_ktype ad_kreg_argtype(ad_state *S, int id, int i);  /* i == -1: the return type */
const char *ad_kreg_name(ad_state *S, int id);
/* Calls kernel 'id' through its cached ffi_cif; args has nargs entries. */
void ad_kreg_call(ad_state *S, int id, ad_karg *args, ad_karg *ret);

/* The C function of kernel 'id' (for direct calls and benchmarks), or NULL. */
void (*ad_kreg_fn(ad_state *S, int id))(void);
/* The script value of kernel 'id' (builtins/system/extern.c makes it on first use and
 * hands it over with ad_kreg_set_callable; the registry then owns it, and
 * drops it when the kernel is replaced). */
struct ad_builtin *ad_kreg_callable(ad_state *S, int id);
void ad_kreg_set_callable(ad_state *S, int id, struct ad_builtin *b);
/* Handle of library 'lib', opened on first use and kept until the state
 * closes; NULL after an error naming 'who' (the extern function). */
void *ad_kreg_dlopen(ad_state *S, const char *lib, const char *who);

/* Registers every shipped kernel (the X-macro table builtins/kernels.def). */
int ad_kernels_register_builtin(ad_state *S);

#endif
