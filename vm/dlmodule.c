/* dlmodule.c: where addsl's loadable modules are looked for (dlmodule.h). */
#include "dlmodule.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where 'make install' puts the modules (set by Makefile.am). */
#ifndef ADDSL_PKGLIBDIR
#define ADDSL_PKGLIBDIR "/usr/local/lib/addsl"
#endif
#ifndef ADDSL_BINDIR
#define ADDSL_BINDIR "/usr/local/bin"
#endif

/* A path that exists but does not load (a missing dependency, a wrong
 * architecture) is worth reporting: keep the first such reason. */
static void *try_path(const char *path, int flags, char *why, size_t why_len) {
    void *h = dlopen(path, flags);
    if (!h && !why[0] && access(path, F_OK) == 0) {
        const char *e = dlerror();
        snprintf(why, why_len, "cannot load %s: %s", path, e ? e : "unknown error");
    }
    return h;
}

/* pkglibdir as seen from bindir ("../lib/addsl/" in the usual layout), so
 * that a tree installed with 'make install prefix=...' or DESTDIR, or moved
 * after, finds its modules from its own addsl binary, which holds this code
 * (it links the core statically). 0 when there is no such path. */
static int bindir_to_pkglibdir(char *out, size_t len) {
    const char *bin = ADDSL_BINDIR, *lib = ADDSL_PKGLIBDIR;
    size_t common = 0; /* just past the last '/' of the shared start */
    for (size_t i = 0; bin[i] && bin[i] == lib[i]; i++)
        if (bin[i] == '/') common = i + 1;
    if (common <= 1 || !bin[common]) return 0;
    size_t n = 0;
    for (const char *c = bin + common; *c; c++)
        if ((c == bin + common || c[-1] == '/') && *c != '/') {
            if (n + 3 >= len) return 0;
            memcpy(out + n, "../", 3);
            n += 3;
        }
    int w = snprintf(out + n, len - n, "%s/", lib + common);
    return w > 0 && (size_t)w < len - n;
}

/* The directory of the library or executable that holds this code. dladdr
 * names the main program as it was started: a bare name when found on PATH. */
static int my_dir(char *dir, size_t len) {
    Dl_info info;
    if (!dladdr((void *)ad_dlmodule_open, &info) || !info.dli_fname) return 0;
    if (strchr(info.dli_fname, '/')) {
        snprintf(dir, len, "%s", info.dli_fname);
    } else {
        ssize_t n = readlink("/proc/self/exe", dir, len - 1);
        if (n <= 0) return 0;
        dir[n] = '\0';
    }
    char *slash = strrchr(dir, '/');
    if (!slash) return 0;
    *slash = '\0';
    return 1;
}

/* The module next to the library or executable that holds this code: in it,
 * in a build tree's .libs/, in a library's addsl/, or in the pkglibdir of a
 * moved install. */
static void *open_beside_me(const char *file, int flags, char *why, size_t why_len) {
    char dir[1024], from_bin[512];
    if (!my_dir(dir, sizeof dir)) return NULL;
    const char *subdirs[] = {"", ".libs/", "addsl/", from_bin};
    size_t count = bindir_to_pkglibdir(from_bin, sizeof from_bin) ? 4 : 3;
    for (size_t i = 0; i < count; i++) {
        char path[1700], real[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s%s", dir, subdirs[i], file);
        /* "bin/../lib/addsl/x.so" as the file it is, in the loader's
         * messages too */
        void *h = try_path(realpath(path, real) ? real : path, flags, why, why_len);
        if (h) return h;
    }
    return NULL;
}

void *ad_dlmodule_open(const char *file, const char *env, int flags, char *why, size_t why_len) {
    why[0] = '\0';
    const char *path = env ? getenv(env) : NULL;
    if (path && *path) {
        void *h = dlopen(path, flags);
        if (!h) {
            const char *e = dlerror();
            snprintf(why, why_len, "cannot load %s=%s: %s", env, path, e ? e : "unknown error");
        }
        return h;
    }
    /* Beside this code before the configured pkglibdir: a build tree, or a
     * tree installed with 'make install prefix=...', moved or staged, must
     * load its own modules even where the configured prefix holds others. */
    void *h = open_beside_me(file, flags, why, why_len);
    if (!h) {
        char installed[1100];
        snprintf(installed, sizeof installed, "%s/%s", ADDSL_PKGLIBDIR, file);
        h = try_path(installed, flags, why, why_len);
    }
    if (!h) h = dlopen(file, flags);
    if (h) why[0] = '\0';
    return h;
}
