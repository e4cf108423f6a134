/* npz.c: .npz archives through libzip: save() of a dict of tensors and load()
 * of an archive into a dict. Members are .npy files (builtins/npy.c). */
#include "npz.h"

#include <errno.h>
#include <string.h>
#include <zip.h>

#include "buf.h"
#include "fileio.h"
#include "npy.h"
#include "state.h"
#include "tensor.h"

/* Every key a string (a member name) and every value a tensor. */
static int check_entries(ad_state *S, const char *path, const ad_dict *d) {
    int64_t it = 0;
    ad_value k, v;
    while (ad_dict_next(d, &it, &k, &v)) {
        if (k.t != AD_TSTR)
            return ad_error(S, "save('%s'): a .npz member is named by a string key, not %s", path, ad_type_name(k));
        if (v.t != AD_TTENSOR)
            return ad_error(S, "save('%s'): a .npz holds tensors; key \"%s\" holds %s", path, k.u.s->data,
                            ad_type_name(v));
        if (!k.u.s->data[0] || strchr(k.u.s->data, '/'))
            return ad_error(S, "save('%s'): key \"%s\" is not a valid member name", path, k.u.s->data);
    }
    return ADDSL_OK;
}

static int zip_fail(ad_state *S, const char *path, zip_t *za) {
    return ad_error_code(S, ADDSL_EIO, "save(): cannot write '%s': %s", path, zip_strerror(za));
}

/* Adds every entry of d to za; the member bytes live in bufs[] until zip_close. */
static int add_members(ad_state *S, const char *path, zip_t *za, const ad_dict *d, ad_buf *bufs) {
    int64_t it = 0, i = 0;
    ad_value k, v;
    while (ad_dict_next(d, &it, &k, &v)) {
        ad_buf *b = &bufs[i++];
        int rc = ad_npy_encode(S, v.u.tensor, b);
        if (rc) return rc;
        ad_buf name;
        ad_buf_init(&name, S);
        ad_buf_printf(&name, "%s.npy", k.u.s->data);
        if (name.failed) { ad_buf_free(&name); return ad_nomem(S); }
        zip_source_t *src = zip_source_buffer(za, b->data ? b->data : "", b->len, 0);
        zip_int64_t idx = src ? zip_file_add(za, name.data, src, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE) : -1;
        ad_buf_free(&name);
        if (idx < 0) { if (src) zip_source_free(src); return zip_fail(S, path, za); }
        if (zip_set_file_compression(za, (zip_uint64_t)idx, ZIP_CM_STORE, 0) != 0) return zip_fail(S, path, za);
    }
    return ADDSL_OK;
}

int ad_npz_save(ad_state *S, const char *path, const ad_dict *d) {
    int rc = check_entries(S, path, d);
    if (rc) return rc;
    ad_atomic_file af;
    if ((rc = ad_atomic_begin(S, "save", path, &af))) return rc;
    if (d->len == 0) {
        /* libzip removes an archive left empty; numpy.savez({}) writes the bare
         * end-of-central-directory record, and so do we. */
        static const char eocd[22] = {'P', 'K', 5, 6};
        bool ok = fwrite(eocd, 1, sizeof eocd, af.f) == sizeof eocd;
        return ad_atomic_commit(S, "save", &af, ok, errno);
    }
    if ((rc = ad_atomic_release_stream(S, "save", &af))) return rc;
    int zerr = 0;
    zip_t *za = zip_open(af.tmp, ZIP_TRUNCATE, &zerr);
    if (!za) {
        ad_atomic_abort(S, &af);
        return ad_error_code(S, ADDSL_EIO, "save(): cannot write '%s' (libzip error %d)", path, zerr);
    }
    int64_t n = d->len ? d->len : 1;
    ad_buf *bufs = ad_malloc(S, (size_t)n * sizeof *bufs);
    if (!bufs) { zip_discard(za); ad_atomic_abort(S, &af); return ADDSL_ENOMEM; }
    for (int64_t i = 0; i < n; i++) ad_buf_init(&bufs[i], S);
    rc = add_members(S, path, za, d, bufs);
    if (!rc && zip_close(za) != 0) rc = zip_fail(S, path, za);
    if (rc) zip_discard(za);
    for (int64_t i = 0; i < n; i++) ad_buf_free(&bufs[i]);
    ad_free(S, bufs);
    if (rc) { ad_atomic_abort(S, &af); return rc; }
    return ad_atomic_commit_path(S, "save", &af);
}

/* Member i of za, read whole and parsed as .npy. */
static int read_member(ad_state *S, const char *path, zip_t *za, zip_uint64_t i, const char *name, ad_tensor **t) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(za, i, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
        return ad_error_code(S, ADDSL_EIO, "load('%s'): cannot read member '%s': %s", path, name, zip_strerror(za));
    if (S->cfg.memory_limit && st.size > S->cfg.memory_limit)
        return ad_error(S, "load('%s'): member '%s' is larger than the memory limit", path, name);
    char *data = ad_malloc(S, st.size ? (size_t)st.size : 1);
    if (!data) return ADDSL_ENOMEM;
    zip_file_t *zf = zip_fopen_index(za, i, 0);
    zip_int64_t got = zf ? zip_fread(zf, data, st.size) : -1;
    int rc = ADDSL_OK;
    if (got < 0 || (zip_uint64_t)got != st.size)
        rc = ad_error_code(S, ADDSL_EIO, "load('%s'): cannot read member '%s': %s", path, name,
                           zf ? zip_file_strerror(zf) : zip_strerror(za));
    if (zf) zip_fclose(zf);
    if (!rc) {
        ad_buf label;
        ad_buf_init(&label, S);
        ad_buf_printf(&label, "%s[%s]", path, name);
        rc = label.failed ? ad_nomem(S) : ad_npy_parse(S, data, (size_t)st.size, label.data, t);
        ad_buf_free(&label);
    }
    ad_free(S, data);
    return rc;
}

int ad_npz_load(ad_state *S, const char *path, ad_dict **out) {
    int zerr = 0;
    zip_t *za = zip_open(path, ZIP_RDONLY, &zerr);
    if (!za) {
        zip_error_t e;
        zip_error_init_with_code(&e, zerr);
        int rc = ad_error_code(S, zerr == ZIP_ER_NOENT || zerr == ZIP_ER_OPEN ? ADDSL_EIO : ADDSL_ERUNTIME,
                               "load(): cannot read '%s' as a .npz archive: %s", path, zip_error_strerror(&e));
        zip_error_fini(&e);
        return rc;
    }
    ad_dict *d = ad_dict_new(S);
    int rc = d ? ADDSL_OK : ADDSL_ENOMEM;
    zip_int64_t n = zip_get_num_entries(za, 0);
    for (zip_int64_t i = 0; !rc && i < n; i++) {
        const char *name = zip_get_name(za, (zip_uint64_t)i, 0);
        if (!name) { rc = ad_error_code(S, ADDSL_EIO, "load('%s'): %s", path, zip_strerror(za)); break; }
        size_t len = strlen(name);
        if (len < 5 || strcmp(name + len - 4, ".npy") != 0) {
            rc = ad_error(S, "load('%s'): member '%s' is not a .npy file", path, name);
            break;
        }
        ad_tensor *t = NULL;
        if ((rc = read_member(S, path, za, (zip_uint64_t)i, name, &t))) break;
        ad_buf key;
        ad_buf_init(&key, S);
        ad_buf_add(&key, name, len - 4);
        rc = key.failed ? (ad_tensor_decref(S, t), ad_nomem(S)) : ad_dict_set_str(S, d, key.data, ad_tensor_value(t));
        ad_buf_free(&key);
    }
    zip_discard(za);
    if (rc) { if (d) ad_value_decref(S, ad_dict_value(d)); return rc; }
    *out = d;
    return ADDSL_OK;
}
