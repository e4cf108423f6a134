/* autograd/library.h: the shipped op library (the .ad files of lib/, embedded at build time),
 * loaded one file at a time the first time one of its names is used, so
 * start-up does not pay for compiling ops a script never calls. */
#ifndef AD_LIBRARY_H
#define AD_LIBRARY_H

#include <stdbool.h>
#include <stddef.h>

typedef struct addsl_state ad_state;

/* Marks every library name as a lazily loaded global (hiding builtins of the same name). */
int ad_library_init(ad_state *S);
void ad_library_free(ad_state *S);
/* Makes global 'slot' defined if a library file provides it; no error when none does. */
int ad_library_resolve(ad_state *S, int slot);
/* Where a read of an undefined global 'slot' lands: a script's shadow that is
 * not bound yet reads the library's slot (as a Python global falls back to a
 * builtin), and a library name is loaded on first use. Returns the load's
 * status; *slot may still be undefined, and the caller words that error. */
int ad_global_resolve(ad_state *S, int *slot);
/* Loads the files defining the ops behind operators (+, -, *, t[...], ...). */
int ad_library_ensure_operators(ad_state *S);
/* The operators, in the order of operator_names (vm/autograd/library.c). */
enum { AD_OPER_ADD, AD_OPER_SUB, AD_OPER_MUL, AD_OPER_DIV, AD_OPER_REM, AD_OPER_POW, AD_OPER_NEG,
       AD_OPER_MATMUL, AD_OPER_INDEX, AD_OPER_SUM, AD_OPER__COUNT };
/* Loads only the file defining the op behind one operator (AD_OPER_*): the
 * first t * 2 of a run compiles lib/arith.ad, not linalg, shape and reduce too. */
int ad_library_ensure_operator(ad_state *S, int which);
int ad_library_load_all(ad_state *S);
/* Runs the test_inputs statements of every loaded file that has not had
 * them run: the op table's sample inputs are registered only for readers
 * of op->test_inputs, never at start-up. */
int ad_library_load_tests(ad_state *S);

/* The embedded sources (vm/autograd/lib_sources.c, made by tools/embed_lib.sh): file
 * names, main texts, tests texts (NULL where a file has none; line for line
 * the same numbering as the main text), and which file defines each
 * top-level name. */
struct ad_lib_def { const char *name; int file; };
extern const char *const ad_lib_names[];
extern const char *const ad_lib_sources[];
extern const char *const ad_lib_tests[];
extern const size_t ad_lib_count;
extern const struct ad_lib_def ad_lib_defs[];
extern const size_t ad_lib_ndefs;

#endif
