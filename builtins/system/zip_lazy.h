/* system/zip_lazy.h: libzip opened with dlopen on the first .npz save() or load()
 * instead of at start-up: libzip pulls in libcrypto, libbz2 and libz, whose
 * relocations cost ~4M instructions (~1.5 ms) of every run. */
#ifndef AD_ZIP_LAZY_H
#define AD_ZIP_LAZY_H

#include <zip.h>

#include "state.h"

/* The soname the build linked against. */
#define AD_ZIP_SONAME "libzip.so.4"

/* Every libzip function builtins/system/npz.c calls. */
#define AD_ZIP_FUNCS(X) \
    X(zip_close) X(zip_discard) X(zip_error_code_zip) X(zip_error_fini) X(zip_error_init) \
    X(zip_error_init_with_code) X(zip_error_set) X(zip_error_strerror) X(zip_error_to_data) X(zip_fclose) \
    X(zip_file_add) X(zip_file_get_error) X(zip_file_strerror) X(zip_fopen_index) X(zip_fread) \
    X(zip_get_name) X(zip_get_num_entries) X(zip_open) X(zip_set_file_compression) \
    X(zip_source_free) X(zip_source_function) X(zip_source_make_command_bitmap) X(zip_stat_index) \
    X(zip_stat_init) X(zip_strerror)

typedef struct ad_zip_api {
    void *dl;
#define AD_ZIP_MEMBER(name) __typeof__(name) *name;
    AD_ZIP_FUNCS(AD_ZIP_MEMBER)
#undef AD_ZIP_MEMBER
} ad_zip_api;

/* The functions, loaded on the first call into S->zip; NULL with S's error
 * set (naming 'who', e.g. "load") when the library or one of them is missing. */
const ad_zip_api *ad_zip_api_get(ad_state *S, const char *who);
/* Frees the table (addsl_close); the library stays loaded (see system/zip_lazy.c). */
void ad_zip_close(ad_state *S);

#endif
