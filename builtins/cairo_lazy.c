/* cairo_lazy.c: the cairo functions of plot() resolved with dlsym on first
 * use (see cairo_lazy.h), held by the state and closed with it. */
#include "cairo_lazy.h"

#include <dlfcn.h>

#ifdef HAVE_CAIRO
const ad_cairo_api *ad_cairo_api_get(ad_state *S) {
    if (S->cairo) return S->cairo;
    ad_cairo_api *c = ad_calloc(S, 1, sizeof *c);
    if (!c) { ad_nomem(S); return NULL; }
    c->dl = dlopen(AD_CAIRO_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!c->dl) {
        const char *why = dlerror();
        ad_error(S, "plot(): cannot load %s: %s", AD_CAIRO_SONAME, why ? why : "unknown error");
        ad_free(S, c);
        return NULL;
    }
    /* dlsym returns void *; POSIX guarantees it converts to a function pointer. */
#define AD_CAIRO_LOAD(name) \
    if (!(*(void **)&c->name = dlsym(c->dl, #name))) { \
        ad_error(S, "plot(): %s lacks the function %s", AD_CAIRO_SONAME, #name); \
        ad_free(S, c); return NULL; \
    }
    AD_CAIRO_FUNCS(AD_CAIRO_LOAD)
#undef AD_CAIRO_LOAD
    S->cairo = c;
    return c;
}

/* The library stays loaded: fontconfig (under cairo) keeps process-wide
 * caches that its text calls fill, and unloading it under them is what the
 * linked build never did. dlopen of a loaded library only counts up. */
void ad_cairo_close(ad_state *S) {
    if (!S->cairo) return;
    ad_free(S, S->cairo);
    S->cairo = NULL;
}
#else
void ad_cairo_close(ad_state *S) { (void)S; }
#endif
