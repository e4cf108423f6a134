/* system/cairo_lazy.c: the cairo functions of plot() resolved with dlsym on first
 * use (see system/cairo_lazy.h), held by the state and closed with it. */
#include "system/cairo_lazy.h"

#ifdef HAVE_CAIRO
#include <dlfcn.h>

#include "system/dl_table.h"

static const char *const cairo_names[] = {AD_CAIRO_FUNCS(AD_DL_NAME)};
_Static_assert(AD_DL_FITS(ad_cairo_api, cairo_names), "system/dl_table.c fills ad_cairo_api as one pointer after another");

static const ad_dl_table cairo_table = {
    .soname = AD_CAIRO_SONAME,
    .flags = RTLD_NOW | RTLD_LOCAL,
    .names = cairo_names,
    .count = sizeof cairo_names / sizeof *cairo_names,
    .cannot_open = "cannot load " AD_CAIRO_SONAME ": ",
    .no_reason = "unknown error",
    .hint = "",
};

const ad_cairo_api *ad_cairo_api_get(ad_state *S) {
    if (!S->cairo) S->cairo = ad_dl_table_load(S, &cairo_table, "plot");
    return S->cairo;
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
