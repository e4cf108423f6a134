/* sandbox.c: the doors a script has to the file system and to native code,
 * one row per builtin, and the check call_builtin makes before any of them runs. */
#include "sandbox.h"

#include <stdlib.h>
#include <string.h>

#include "state.h"

typedef struct door { const char *name; unsigned bits; } door;

/* Every builtin that opens, creates, removes or maps a file or a library
 * named by the script, sorted (bsearch). tests/hostile/sandbox_doors.sh fails
 * when a builtin that reaches such a call is missing here, and
 * tests/unit/test_sandbox.c checks that each row is refused. The grammar's
 * doors are 'import' (vm/import.c) and 'extern', which compiles to extern_fn. */
static const door doors[] = {
    {"export_c", ADDSL_DENY_FILES},
    {"export_c_error", ADDSL_DENY_FILES},
    {"extern_fn", ADDSL_DENY_EXTERN},
    {"load", ADDSL_DENY_FILES},
    {"makedirs", ADDSL_DENY_FILES},
    {"plot", ADDSL_DENY_FILES},
    {"save", ADDSL_DENY_FILES},
};
#define NDOORS ((int)(sizeof doors / sizeof doors[0]))

static int cmp_door(const void *k, const void *d) { return strcmp(k, ((const door *)d)->name); }

unsigned ad_sandbox_doors(const char *name) {
    const door *d = bsearch(name, doors, (size_t)NDOORS, sizeof doors[0], cmp_door);
    return d ? d->bits : 0;
}

int ad_sandbox_door_count(void) { return NDOORS; }

const char *ad_sandbox_door_name(int i, unsigned *bits) {
    if (i < 0 || i >= NDOORS) return NULL;
    *bits = doors[i].bits;
    return doors[i].name;
}

/* The string the call passes for parameter 'param' (by position or keyword,
 * else its default), or NULL. */
static const char *arg_str(const ad_builtin *b, const ad_value *args, int nargs, const ad_list *kw, const char *param) {
    int j = -1;
    for (int i = 0; i < b->nparams && j < 0; i++)
        if (strcmp(b->pnames[i], param) == 0) j = i;
    if (j < 0) return NULL;
    int nkw = kw ? (int)kw->len : 0, npos = nargs - nkw;
    const ad_value *v = !b->varargs && j < npos ? &args[j] : NULL;
    for (int k = 0; !v && k < nkw; k++)
        if (kw->items[k].t == AD_TSTR && strcmp(kw->items[k].u.s->data, param) == 0) v = &args[npos + k];
    if (!v && !b->required[j]) v = &b->defaults[j];
    return v && v->t == AD_TSTR ? v->u.s->data : NULL;
}

int ad_sandbox_check(ad_state *S, const ad_builtin *b, const ad_value *args, int nargs, const ad_list *kw) {
    unsigned closed = b->doors & S->cfg.deny;
    if (!closed) return ADDSL_OK;
    if (closed & ADDSL_DENY_EXTERN) {
        const char *lib = arg_str(b, args, nargs, kw, "lib"), *name = arg_str(b, args, nargs, kw, "name");
        if (lib && name)
            return ad_error(S, "extern %s from \"%s\": extern is disabled by the host (ADDSL_DENY_EXTERN)", name, lib);
        return ad_error(S, "%s(): extern is disabled by the host (ADDSL_DENY_EXTERN)", b->name);
    }
    const char *path = arg_str(b, args, nargs, kw, "path");
    if (path) return ad_error(S, "%s('%s'): file access is disabled by the host (ADDSL_DENY_FILES)", b->name, path);
    return ad_error(S, "%s(): file access is disabled by the host (ADDSL_DENY_FILES)", b->name);
}
