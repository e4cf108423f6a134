/* module.c: import "path.ad" as m: resolving the path, running each file once
 * per state, refusing cycles, and reading a module's top-level names. */
#include "import.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "codegen.h"
#include "dict.h"
#include "source.h"
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

/* The sandbox's rule for imports (ADDSL_DENY_FILES, docs/security.md): a
 * relative path without '..' to a .ad file that, symlinks resolved, lies in
 * the importing file's own directory or below it. Judged on the path's text
 * before anything is looked up, then on the resolved path 'real'; code without
 * a file (-e, standard input, the REPL: "<string>") imports nothing. */
static int sandbox_refuse(ad_state *S, const char *path, const char *why) {
    return ad_error(S, "cannot import \"%s\": file access is disabled by the host (ADDSL_DENY_FILES); %s", path, why);
}

static const char sandbox_rule[] = "a sandboxed script imports only .ad files in its own directory or below it";

static bool ends_with_ad(const char *p) {
    size_t n = strlen(p);
    return n > 3 && strcmp(p + n - 3, ".ad") == 0;
}

static int sandbox_path_ok(ad_state *S, const char *path, const char *importer) {
    if (!importer || importer[0] == '<')
        return sandbox_refuse(S, path, "code that is not in a file (-e, standard input, the REPL) imports nothing");
    bool dotdot = false;
    for (const char *c = path; *c; c = strchr(c, '/') ? strchr(c, '/') + 1 : c + strlen(c))
        if (c[0] == '.' && c[1] == '.' && (c[2] == '/' || c[2] == '\0')) dotdot = true;
    if (path[0] == '/' || dotdot || !ends_with_ad(path)) return sandbox_refuse(S, path, sandbox_rule);
    return ADDSL_OK;
}

/* 'real' (resolved) lies under the resolved directory of 'importer'. */
static int sandbox_real_ok(ad_state *S, const char *path, const char *importer, const char *real) {
    const char *slash = strrchr(importer, '/');
    ad_buf dir;
    ad_buf_init(&dir, S);
    if (slash) ad_buf_add(&dir, importer, (size_t)(slash - importer) + 1);
    else ad_buf_puts(&dir, ".");
    if (dir.failed) { ad_buf_free(&dir); return ad_nomem(S); }
    char *root = realpath(dir.data, NULL);
    ad_buf_free(&dir);
    size_t n = root ? strlen(root) : 0;
    if (n && root[n - 1] == '/') n--;
    bool inside = root && strncmp(real, root, n) == 0 && real[n] == '/' && ends_with_ad(real);
    free(root);
    return inside ? ADDSL_OK : sandbox_refuse(S, path, sandbox_rule);
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

/* A module's text: a regular file only (a FIFO would block the import, a
 * device would never end), of at most AD_MAX_SOURCE bytes. */
static int read_module(ad_state *S, const char *path, const char *real, char **src, size_t *len) {
    ad_buf who;
    ad_buf_init(&who, S);
    ad_buf_printf(&who, "cannot import \"%s\"", path);
    int rc = who.failed ? ad_nomem(S) : ad_source_read(S, real, who.data, true, src, len);
    ad_buf_free(&who);
    return rc;
}

int ad_module_begin(ad_state *S, const char *path, const char *importer, ad_value *done,
                    struct ad_proto **main, char **key) {
    *done = ad_none(); *main = NULL; *key = NULL;
    if (S->cfg.deny & ADDSL_DENY_IMPORT)
        return ad_error(S, "cannot import \"%s\": import is disabled by the host (ADDSL_DENY_IMPORT)", path);
    bool sandboxed = (S->cfg.deny & ADDSL_DENY_FILES) != 0;
    if (sandboxed) {
        int rc = sandbox_path_ok(S, path, importer);
        if (rc) return rc;
    }
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
    if (sandboxed && (rc = sandbox_real_ok(S, path, importer, real))) {
        free(real);
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
    rc = *key ? read_module(S, path, *key, &src, &len) : ADDSL_ENOMEM;
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
