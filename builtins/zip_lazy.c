/* zip_lazy.c: the libzip functions of .npz save() and load() resolved with
 * dlsym on first use (see zip_lazy.h), held by the state. */
#include "zip_lazy.h"

#include <dlfcn.h>

const ad_zip_api *ad_zip_api_get(ad_state *S, const char *who) {
    if (S->zip) return S->zip;
    ad_zip_api *z = ad_calloc(S, 1, sizeof *z);
    if (!z) { ad_nomem(S); return NULL; }
    z->dl = dlopen(AD_ZIP_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!z->dl) {
        const char *why = dlerror();
        ad_error(S, "%s(): .npz archives need %s, which cannot be loaded: %s", who, AD_ZIP_SONAME,
                 why ? why : "unknown error");
        ad_free(S, z);
        return NULL;
    }
    /* dlsym returns void *; POSIX guarantees it converts to a function pointer. */
#define AD_ZIP_LOAD(name) \
    if (!(*(void **)&z->name = dlsym(z->dl, #name))) { \
        ad_error(S, "%s(): %s lacks the function %s", who, AD_ZIP_SONAME, #name); \
        ad_free(S, z); return NULL; \
    }
    AD_ZIP_FUNCS(AD_ZIP_LOAD)
#undef AD_ZIP_LOAD
    S->zip = z;
    return z;
}

/* The library stays loaded: libcrypto under it registers exit handlers, which
 * must not outlive its code. dlopen of a loaded library only counts up. */
void ad_zip_close(ad_state *S) {
    if (!S->zip) return;
    ad_free(S, S->zip);
    S->zip = NULL;
}
