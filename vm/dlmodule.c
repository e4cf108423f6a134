/* dlmodule.c: where addsl's loadable modules are looked for (dlmodule.h). */
#include "dlmodule.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where 'make install' puts the modules (set by Makefile.am). */
#ifndef ADDSL_PKGLIBDIR
#define ADDSL_PKGLIBDIR "/usr/local/lib/addsl"
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

/* The module next to the library or executable that holds this code: the
 * installed pkglibdir, or .libs/ of a build tree. */
static void *open_beside_me(const char *file, int flags, char *why, size_t why_len) {
    Dl_info info;
    if (!dladdr((void *)ad_dlmodule_open, &info) || !info.dli_fname) return NULL;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", info.dli_fname);
    char *slash = strrchr(dir, '/');
    if (!slash) return NULL;
    *slash = '\0';
    static const char *const subdirs[] = {"/", "/.libs/", "/addsl/"};
    for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
        char path[1100];
        snprintf(path, sizeof path, "%s%s%s", dir, subdirs[i], file);
        void *h = try_path(path, flags, why, why_len);
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
    char installed[1100];
    snprintf(installed, sizeof installed, "%s/%s", ADDSL_PKGLIBDIR, file);
    void *h = try_path(installed, flags, why, why_len);
    if (!h) h = open_beside_me(file, flags, why, why_len);
    if (!h) h = dlopen(file, flags);
    if (h) why[0] = '\0';
    return h;
}
