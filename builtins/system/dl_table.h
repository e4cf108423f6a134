/* system/dl_table.h: one loader for the function tables of the libraries opened with
 * dlopen on first use (system/blas_lazy.c, system/cairo_lazy.c, system/zip_lazy.c). */
#ifndef AD_DL_TABLE_H
#define AD_DL_TABLE_H

#include <stddef.h>

#include "state.h"

/* What to open and fill, and the words of the library's own error when it
 * cannot be opened: "WHO(): <cannot_open><dlerror()'s text, else
 * no_reason><hint>". */
typedef struct ad_dl_table {
    const char *soname;       /* what dlopen opens */
    int flags;                /* dlopen's flags */
    const char *const *names; /* the functions looked up with dlsym, in the struct's order */
    size_t count;
    const char *cannot_open;
    const char *no_reason;
    const char *hint;
} ad_dl_table;

/* The names of an X-macro list of functions, as the initialiser of 'names'. */
#define AD_DL_NAME(name) #name,
/* The struct filled is the handle ('void *dl') first, then a function pointer
 * per name in order; a size of exactly that many pointers proves it has no
 * padding, so the i-th function lies i + 1 pointers in. */
#define AD_DL_FITS(type, names) \
    (offsetof(type, dl) == 0 && sizeof(type) == sizeof(void *) * (1 + sizeof(names) / sizeof *(names)))

/* A new struct of t->count + 1 pointers (the caller keeps it and frees it with ad_free)
 * with the handle and every function set; NULL with S's error set, naming
 * 'who' (e.g. "load"), when the library or one of the functions is missing.
 * The library stays loaded on a missing function, as a linked one would. */
void *ad_dl_table_load(ad_state *S, const ad_dl_table *t, const char *who);

#endif
