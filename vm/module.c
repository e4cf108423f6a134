/* module.c: import "path.ad" as m: resolving the path, running each file once
 * per state, refusing cycles, and reading a module's top-level names. */
#include "module.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "compile.h"
#include "dict.h"
#include "state.h"
#include "vm.h"

void ad_module_free(ad_state *S, ad_module *m) {
    if (m->slots) ad_value_decref(S, ad_dict_value(m->slots));
    ad_free(S, m->path);
    ad_free(S, m);
}

void ad_modules_close(ad_state *S) {
    if (!S->modules) return;
    ad_dict *d = S->modules;
    S->modules = NULL;
    ad_value_decref(S, ad_dict_value(d));
}

/* The file an import names: absolute, or joined to the importer's directory
 * (the current directory for code without a file: <string>, <stdin>). */
static int join_path(ad_state *S, const char *path, const char *importer, ad_buf *out) {
    const char *slash = importer ? strrchr(importer, '/') : NULL;
    if (path[0] != '/' && importer && importer[0] != '<' && slash)
        ad_buf_add(out, importer, (size_t)(slash - importer + 1));
    ad_buf_puts(out, path);
    return out->failed ? ad_nomem(S) : ADDSL_OK;
}

/* A file whose import failed is forgotten, so a later import tries again. */
static void forget(ad_state *S, const char *key) {
    ad_value k;
    if (ad_string_value(S, key, strlen(key), &k)) return;
    ad_dict_remove(S, S->modules, k, NULL);
    ad_value_decref(S, k);
}

/* "import cycle: a.ad -> b.ad -> a.ad": the files still running, from the one imported again. */
static int cycle_error(ad_state *S, const char *key, const char *shown) {
    ad_buf b;
    ad_buf_init(&b, S);
    ad_buf_puts(&b, "import cycle: ");
    int64_t it = 0;
    ad_value k, v;
    bool on = false;
    while (ad_dict_next(S->modules, &it, &k, &v)) {
        if (v.t != AD_TTUPLE) continue;
        if (!on && strcmp(k.u.s->data, key) == 0) on = true;
        if (on) ad_buf_printf(&b, "%s -> ", v.u.l->items[0].u.s->data);
    }
    ad_buf_puts(&b, shown);
    int rc = b.failed ? ad_nomem(S) : ad_error(S, "%s", b.data);
    ad_buf_free(&b);
    return rc;
}

int ad_module_begin(ad_state *S, const char *path, const char *importer, ad_value *done,
                    struct ad_proto **main, char **key) {
    *done = ad_none(); *main = NULL; *key = NULL;
    if (!S->modules && !(S->modules = ad_dict_new(S))) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    ad_buf file;
    ad_buf_init(&file, S);
    int rc = join_path(S, path, importer, &file);
    if (rc) { ad_buf_free(&file); return rc; }
    char *real = realpath(file.data, NULL);
    if (!real) {
        rc = ad_error(S, "cannot import \"%s\": %s (looked for %s)", path, strerror(errno), file.data);
        ad_buf_free(&file);
        return rc;
    }
    ad_value *known = ad_dict_get_str(S->modules, real);
    if (known && known->t == AD_TMODULE) {
        *done = *known;
        ad_value_incref(*done);
        free(real);
        ad_buf_free(&file);
        return ADDSL_OK;
    }
    if (known) {
        rc = cycle_error(S, real, file.data);
        free(real);
        ad_buf_free(&file);
        return rc;
    }
    size_t n = strlen(real);
    *key = ad_malloc(S, n + 1);
    if (*key) memcpy(*key, real, n + 1);
    free(real);
    char *src = NULL;
    size_t len = 0;
    rc = *key ? ad_read_file(S, *key, &src, &len) : ADDSL_ENOMEM;
    /* Entered as (name shown, names map) before it runs, so an import of it
     * from inside is seen as a cycle; finish replaces it with the module. */
    ad_list *entry = rc ? NULL : ad_list_new(S, AD_TTUPLE, 2);
    ad_dict *names = entry ? ad_dict_new(S) : NULL;
    if (!rc && !names) rc = S->errcode ? S->errcode : ADDSL_ENOMEM;
    if (!rc) {
        entry->items[1] = ad_dict_value(names);
        rc = ad_string_value(S, file.data, file.len, &entry->items[0]);
    }
    if (!rc) {
        ad_value ev = ad_list_value(entry, AD_TTUPLE);
        entry = NULL;
        rc = ad_dict_set_str(S, S->modules, *key, ev);
    }
    if (entry) ad_value_decref(S, ad_list_value(entry, AD_TTUPLE));
    if (!rc) {
        *main = ad_compile_module(S, src, len, file.data, *key, names);
        if (!*main) {
            rc = S->errcode ? S->errcode : ADDSL_ECOMPILE;
            forget(S, *key);
        }
    }
    ad_free(S, src);
    ad_buf_free(&file);
    if (rc) { ad_free(S, *key); *key = NULL; }
    return rc;
}

int ad_module_finish(ad_state *S, char *key, int rc, ad_value *out) {
    *out = ad_none();
    ad_value *entry = ad_dict_get_str(S->modules, key);
    if (!rc && entry && entry->t == AD_TTUPLE) {
        ad_value shown = entry->u.l->items[0], names = entry->u.l->items[1];
        ad_module *m = ad_calloc(S, 1, sizeof *m);
        if (m) m->path = ad_malloc(S, shown.u.s->len + 1);
        if (!m || !m->path) { ad_free(S, m); rc = ADDSL_ENOMEM; }
        else {
            memcpy(m->path, shown.u.s->data, shown.u.s->len + 1);
            m->hdr.refcount = 1;
            m->slots = names.u.d;
            ad_value_incref(names);
            *out = ad_module_value(m);
            ad_value_incref(*out);
            rc = ad_dict_set_str(S, S->modules, key, *out);
        }
    }
    if (rc) {
        forget(S, key);
        ad_value_decref(S, *out);
        *out = ad_none();
    }
    ad_free(S, key);
    return rc;
}

int ad_module_get(ad_state *S, ad_module *m, const char *name, ad_value *out) {
    ad_value *slot = ad_dict_get_str(m->slots, name);
    ad_globals *G = S->globals;
    if (!slot) return ad_error(S, "module \"%s\" has no name '%s'", m->path, name);
    int i = (int)slot->u.n;
    if (!G->defined[i]) return ad_error(S, "module \"%s\": '%s' is not defined yet", m->path, name);
    *out = G->values[i];
    ad_value_incref(*out);
    return ADDSL_OK;
}
