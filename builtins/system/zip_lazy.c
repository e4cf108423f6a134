/* system/zip_lazy.c: the libzip functions of .npz save() and load() resolved with
 * dlsym on first use (see system/zip_lazy.h), held by the state. */
#include "system/zip_lazy.h"

#include <dlfcn.h>

#include "system/dl_table.h"

static const char *const zip_names[] = {AD_ZIP_FUNCS(AD_DL_NAME)};
_Static_assert(AD_DL_FITS(ad_zip_api, zip_names), "system/dl_table.c fills ad_zip_api as one pointer after another");

static const ad_dl_table zip_table = {
    .soname = AD_ZIP_SONAME,
    .flags = RTLD_NOW | RTLD_LOCAL,
    .names = zip_names,
    .count = sizeof zip_names / sizeof *zip_names,
    .cannot_open = ".npz archives need " AD_ZIP_SONAME ", which cannot be loaded: ",
    .no_reason = "unknown error",
    .hint = "",
};

const ad_zip_api *ad_zip_api_get(ad_state *S, const char *who) {
    if (!S->zip) S->zip = ad_dl_table_load(S, &zip_table, who);
    return S->zip;
}

/* The library stays loaded: libcrypto under it registers exit handlers, which
 * must not outlive its code. dlopen of a loaded library only counts up. */
void ad_zip_close(ad_state *S) {
    if (!S->zip) return;
    ad_free(S, S->zip);
    S->zip = NULL;
}
