/* system/dl_table.c: dlopen a library and dlsym every function of its table
 * (system/dl_table.h), with the errors that say which is missing. */
#include "system/dl_table.h"

#include <dlfcn.h>
#include <string.h>

/* dlsym returns void *; POSIX guarantees it converts to a function pointer of
 * the same size and representation, so its bytes are the pointer's. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "dlsym's pointers must fit a function pointer");

void *ad_dl_table_load(ad_state *S, const ad_dl_table *t, const char *who) {
    char *table = ad_calloc(S, t->count + 1, sizeof(void *));
    if (!table) { ad_nomem(S); return NULL; }
    void *dl = dlopen(t->soname, t->flags);
    if (!dl) {
        const char *why = dlerror();
        ad_error(S, "%s(): %s%s%s", who, t->cannot_open, why ? why : t->no_reason, t->hint);
        ad_free(S, table);
        return NULL;
    }
    memcpy(table, &dl, sizeof dl);
    for (size_t i = 0; i < t->count; i++) {
        void *fn = dlsym(dl, t->names[i]);
        if (!fn) {
            ad_error(S, "%s(): %s lacks the function %s", who, t->soname, t->names[i]);
            ad_free(S, table);
            return NULL;
        }
        memcpy(table + (i + 1) * sizeof fn, &fn, sizeof fn);
    }
    return table;
}
