/* bi_fs.c: makedirs(path, exist_ok=false), so a script can make the directory
 * its results go to (os.makedirs: every missing parent too). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "builtins.h"
#include "state.h"

#define DIR_MODE 0777   /* less the umask, as mkdir(1) and os.makedirs */

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Makes each missing directory of 'path' from the top down (writes into it). */
static int make_parents(ad_state *S, char *path, bool exist_ok) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') path[--n] = '\0';
    for (char *p = path + 1; ; p++) {
        if (*p != '/' && *p != '\0') continue;
        char c = *p;
        *p = '\0';
        bool last = c == '\0';
        if (mkdir(path, DIR_MODE) != 0) {
            int err = errno;
            if (err != EEXIST) return ad_error(S, "makedirs('%s'): %s", path, strerror(err));
            if (!is_dir(path)) return ad_error(S, "makedirs('%s'): exists and is not a directory", path);
            if (last && !exist_ok) return ad_error(S, "makedirs('%s'): the directory exists (exist_ok=true allows it)", path);
        }
        if (last) return ADDSL_OK;
        *p = c;
    }
}

static int bi_makedirs(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *path;
    bool exist_ok;
    int rc = ad_arg_str(S, argv[0], "makedirs", "path", &path);
    if (!rc) rc = ad_arg_bool(S, argv[1], "makedirs", "exist_ok", &exist_ok);
    if (rc) return rc;
    if (!*path) return ad_error(S, "makedirs(): 'path' is empty");
    size_t n = strlen(path);
    char *copy = ad_malloc(S, n + 1);
    if (!copy) return ADDSL_ENOMEM;
    memcpy(copy, path, n + 1);
    rc = make_parents(S, copy, exist_ok);
    ad_free(S, copy);
    if (rc) return rc;
    *out = ad_none();
    return ADDSL_OK;
}

const ad_builtin_def ad_bi_fs_defs[] = {
    {"makedirs", bi_makedirs, "path, exist_ok=false",
         "Creates the directory path and any missing parents (os.makedirs); with exist_ok=false an "
         "existing directory is an error."
         "\nExample: makedirs(\"out/run1\", exist_ok=true)"},
    {NULL, NULL, NULL}
};
