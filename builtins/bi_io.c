/* bi_io.c: load() and save(): the file type comes from the extension (.npy a
 * tensor, .npz a dict of tensors, .csv/.txt numbers as a 2-D tensor), and a
 * value that the type cannot hold is an error, never a silent other format. */
#include <string.h>
#include <strings.h>

#include "builtins.h"
#include "dict.h"
#include "system/npy.h"
#include "system/npz.h"
#include "state.h"
#include "system/textload.h"

typedef enum { F_UNKNOWN, F_NPY, F_NPZ, F_CSV, F_TXT } ftype;

static ftype file_type(const char *path) {
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    if (!dot) return F_UNKNOWN;
    if (strcasecmp(dot, ".npy") == 0) return F_NPY;
    if (strcasecmp(dot, ".npz") == 0) return F_NPZ;
    if (strcasecmp(dot, ".csv") == 0) return F_CSV;
    if (strcasecmp(dot, ".txt") == 0) return F_TXT;
    return F_UNKNOWN;
}

static int text_options(ad_state *S, ftype ft, const ad_value *argv, char *delim, int64_t *skip, ad_dtype *dt) {
    *delim = ft == F_CSV ? ',' : 0;
    if (argv[0].t != AD_TNONE) {
        const char *d;
        int rc = ad_arg_str(S, argv[0], "load", "delimiter", &d);
        if (rc) return rc;
        if (strlen(d) > 1) return ad_error(S, "load(): 'delimiter' must be one character (or none for whitespace), not \"%s\"", d);
        *delim = d[0] == ' ' ? 0 : d[0];
    }
    int rc = ad_arg_int(S, argv[1], "load", "skip_header", skip);
    if (rc) return rc;
    if (*skip < 0) return ad_error(S, "load(): 'skip_header' must be >= 0, not %lld", (long long)*skip);
    int d = AD_FLOAT32;
    if (argv[2].t != AD_TNONE && (rc = ad_arg_dtype(S, argv[2], "load", "dtype", &d))) return rc;
    if (d == AD_BOOL) return ad_error(S, "load(): a text file loads as float32, float64 or int64, not bool");
    *dt = (ad_dtype)d;
    return ADDSL_OK;
}

/* load(path, delimiter=none, skip_header=0, dtype=none) */
static int bi_load(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *path;
    int rc = ad_arg_str(S, argv[0], "load", "path", &path);
    if (rc) return rc;
    ftype ft = file_type(path);
    bool text_args = argv[1].t != AD_TNONE || !(ad_is_number(argv[2]) && argv[2].u.n == 0) || argv[3].t != AD_TNONE;
    if ((ft == F_NPY || ft == F_NPZ) && text_args)
        return ad_error(S, "load(): delimiter=, skip_header= and dtype= are for .csv and .txt files, not '%s'", path);
    if (ft == F_NPY) {
        ad_tensor *t;
        if ((rc = ad_npy_load(S, path, &t))) return rc;
        *out = ad_tensor_value(t);
        return ADDSL_OK;
    }
    if (ft == F_NPZ) {
        ad_dict *d;
        if ((rc = ad_npz_load(S, path, &d))) return rc;
        *out = ad_dict_value(d);
        return ADDSL_OK;
    }
    if (ft == F_CSV || ft == F_TXT) {
        char delim = 0;
        int64_t skip = 0;
        ad_dtype dt = AD_FLOAT32;
        ad_tensor *t;
        if ((rc = text_options(S, ft, argv + 1, &delim, &skip, &dt)) || (rc = ad_text_load(S, path, delim, skip, dt, &t)))
            return rc;
        *out = ad_tensor_value(t);
        return ADDSL_OK;
    }
    return ad_error(S, "load(): unknown file type '%s': addsl reads .npy (a tensor), .npz (a dict of tensors), "
                       ".csv and .txt (numbers, as a 2-D tensor)", path);
}

/* save(path, obj): a tensor as .npy, a dict of tensors as .npz. */
static int bi_save(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *path;
    int rc = ad_arg_str(S, argv[0], "save", "path", &path);
    if (rc) return rc;
    ftype ft = file_type(path);
    ad_value v = argv[1];
    if (ft == F_NPY) {
        if (v.t != AD_TTENSOR)
            return ad_error(S, "save(): a .npy file holds one tensor, not %s%s", ad_type_name(v),
                            v.t == AD_TDICT ? " (save a dict of tensors to a .npz path)" : "");
        rc = ad_npy_save(S, path, v.u.tensor);
    } else if (ft == F_NPZ) {
        if (v.t != AD_TDICT)
            return ad_error(S, "save(): a .npz file holds a dict of tensors, not %s%s", ad_type_name(v),
                            v.t == AD_TTENSOR ? " (save a tensor to a .npy path, or save(path, {\"name\": t}))" : "");
        rc = ad_npz_save(S, path, v.u.d);
    } else {
        return ad_error(S, "save(): unknown file type '%s': addsl writes .npy (a tensor) and .npz (a dict of tensors)",
                        path);
    }
    if (rc) return rc;
    *out = ad_none();
    return ADDSL_OK;
}

const ad_builtin_def ad_bi_io_defs[] = {
    {"load", bi_load, "path, delimiter=none, skip_header=0, dtype=none",
         "Reads a .npy, .npz (a dict), .csv or .txt (a 2-D tensor) file; the extension decides the "
         "format. For text, delimiter (default , for .csv, whitespace for .txt), skip_header lines "
         "and dtype (default float32) apply."
         "\nExample: save(\"w.npy\", ones(3)); load(\"w.npy\")"},
    {"save", bi_save, "path, obj",
         "Writes a tensor to .npy, or a dict of tensors to .npz, replacing the file atomically."
         "\nExample: save(\"w.npy\", randn(3))"},
    {NULL, NULL, NULL},
};
