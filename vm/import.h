/* module.h: modules made by import "path.ad" as m: finding, loading once per
 * state, cycle detection, and the module value whose top-level names read as m.name. */
#ifndef AD_MODULE_H
#define AD_MODULE_H

#include "value.h"

struct ad_dict;
struct ad_proto;

typedef struct ad_module {
    ad_obj hdr;
    char *path;              /* the file as the import found it (for messages) */
    struct ad_dict *slots;   /* its top-level names -> their global slots (integers) */
} ad_module;

static inline ad_value ad_module_value(ad_module *m) { ad_value v; v.t = AD_TMODULE; v.u.mod = m; return v; }

void ad_module_free(ad_state *S, ad_module *m);
/* Frees the state's registry of imported modules (at close). */
void ad_modules_close(ad_state *S);

/* The first step of an import written in chunk 'importer': finds the file
 * ('path' is relative to the importer's directory, or to the current
 * directory for <string>, <stdin> and the REPL). A module imported before
 * gives *done (a new reference) and no *main. Otherwise *main is its
 * compiled top level (a new reference, to run), and ad_module_finish must
 * follow with the run's status. Fails on a missing file, anything but a
 * regular file, an import cycle, a file the sandbox refuses (ADDSL_DENY_IMPORT,
 * ADDSL_DENY_FILES: docs/security.md) and a compile error (ADDSL_ECOMPILE,
 * the message already located). */
int ad_module_begin(ad_state *S, const char *path, const char *importer, ad_value *done,
                    struct ad_proto **main, char **key);
/* Registers the module whose main ran with status 'rc' and gives it in *out;
 * a failed run forgets the file, so a later import tries again. Frees 'key'. */
int ad_module_finish(ad_state *S, char *key, int rc, ad_value *out);

/* m.name: the current value of a module's top-level name. */
int ad_module_get(ad_state *S, ad_module *m, const char *name, ad_value *out);

#endif
