/* system/npz.c: .npz archives through libzip: save() of a dict of tensors and load()
 * of an archive into a dict. Members are .npy files (builtins/system/npy.c). */
#include "system/npz.h"

#include <errno.h>
#include <string.h>

#include "buf.h"
#include "system/fileio.h"
#include "system/npy.h"
#include "state.h"
#include "tensor/tensor.h"
#include "system/zip_lazy.h"

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

static int npz_fail(ad_state *S, const char *path, zip_t *za) {
    return ad_error_code(S, ADDSL_EIO, "save(): cannot write '%s': %s", path, S->zip->zip_strerror(za));
}

/* A member's bytes, streamed to libzip from the tensor itself (its header, then
 * its data), so a save never holds a second copy of a large tensor. */
typedef struct member_src {
    ad_state *S;
    ad_tensor *c;         /* contiguous; a reference of our own */
    ad_buf hdr;
    zip_uint64_t pos, size;
    zip_error_t err;
} member_src;

static zip_int64_t member_cb(void *ud, void *data, zip_uint64_t len, zip_source_cmd_t cmd) {
    member_src *m = ud;
    ad_state *S = m->S;
    switch (cmd) {
    case ZIP_SOURCE_OPEN: m->pos = 0; return 0;
    case ZIP_SOURCE_READ: {
        zip_uint64_t n = m->size - m->pos < len ? m->size - m->pos : len, done = 0;
        if (m->pos < m->hdr.len) {
            done = m->hdr.len - m->pos < n ? m->hdr.len - m->pos : n;
            memcpy(data, m->hdr.data + m->pos, done);
        }
        if (done < n)
            memcpy((char *)data + done, (const char *)ad_tensor_data(m->c) + (m->pos + done - m->hdr.len), n - done);
        m->pos += n;
        return (zip_int64_t)n;
    }
    case ZIP_SOURCE_CLOSE: return 0;
    case ZIP_SOURCE_STAT: {
        zip_stat_t *st = data;
        if (len < sizeof *st) { S->zip->zip_error_set(&m->err, ZIP_ER_INVAL, 0); return -1; }
        S->zip->zip_stat_init(st);
        st->size = m->size;
        st->valid |= ZIP_STAT_SIZE;
        return sizeof *st;
    }
    case ZIP_SOURCE_ERROR: return S->zip->zip_error_to_data(&m->err, data, len);
    case ZIP_SOURCE_FREE:
        ad_buf_free(&m->hdr);
        ad_tensor_decref(m->S, m->c);
        S->zip->zip_error_fini(&m->err);
        ad_free(m->S, m);
        return 0;
    case ZIP_SOURCE_SUPPORTS:
        return S->zip->zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT,
                                              ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, -1);
    default: S->zip->zip_error_set(&m->err, ZIP_ER_OPNOTSUPP, 0); return -1;
    }
}

/* *src: a zip source for tensor t's .npy bytes. */
static int member_source(ad_state *S, const char *path, zip_t *za, ad_tensor *t, zip_source_t **src) {
    member_src *m = ad_malloc(S, sizeof *m);
    *src = NULL;
    if (!m) return ad_nomem(S);
    m->S = S;
    m->pos = 0;
    ad_buf_init(&m->hdr, S);
    S->zip->zip_error_init(&m->err);
    m->c = ad_tensor_contiguous(S, t);
    int rc = m->c ? ad_npy_header(S, m->c, &m->hdr) : (S->errcode ? S->errcode : ad_nomem(S));
    if (!rc) {
        m->size = m->hdr.len + (zip_uint64_t)m->c->numel * ad_dtype_size(m->c->dtype);
        if (!(*src = S->zip->zip_source_function(za, member_cb, m))) rc = npz_fail(S, path, za);
    }
    if (rc) {
        ad_buf_free(&m->hdr);
        if (m->c) ad_tensor_decref(S, m->c);
        S->zip->zip_error_fini(&m->err);
        ad_free(S, m);
    }
    return rc;
}

/* Adds every entry of d to za, stored (numpy.savez does not compress). */
static int add_members(ad_state *S, const char *path, zip_t *za, const ad_dict *d) {
    int64_t it = 0;
    ad_value k, v;
    while (ad_dict_next(d, &it, &k, &v)) {
        ad_buf name;
        ad_buf_init(&name, S);
        ad_buf_printf(&name, "%s.npy", k.u.s->data);
        if (name.failed) { ad_buf_free(&name); return ad_nomem(S); }
        zip_source_t *src;
        int rc = member_source(S, path, za, v.u.tensor, &src);
        if (rc) { ad_buf_free(&name); return rc; }
        zip_int64_t idx = S->zip->zip_file_add(za, name.data, src, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE);
        ad_buf_free(&name);
        if (idx < 0) { S->zip->zip_source_free(src); return npz_fail(S, path, za); }
        if (S->zip->zip_set_file_compression(za, (zip_uint64_t)idx, ZIP_CM_STORE, 0) != 0) return npz_fail(S, path, za);
    }
    return ADDSL_OK;
}

int ad_npz_save(ad_state *S, const char *path, const ad_dict *d) {
    int rc = check_entries(S, path, d);
    if (rc) return rc;
    if (!ad_zip_api_get(S, "save")) return S->errcode;
    ad_atomic_file af;
    if ((rc = ad_atomic_begin_named(S, "save", path, &af))) return rc;
    if (d->len == 0) {
        /* libzip removes an archive left empty; numpy.savez({}) writes the bare
         * end-of-central-directory record, and so do we. */
        static const char eocd[22] = {'P', 'K', 5, 6};
        bool ok = fwrite(eocd, 1, sizeof eocd, af.f) == sizeof eocd;
        return ad_atomic_commit(S, "save", &af, ok, errno);
    }
    if ((rc = ad_atomic_release_stream(S, "save", &af))) return rc;
    int zerr = 0;
    zip_t *za = S->zip->zip_open(af.tmp, ZIP_TRUNCATE, &zerr);
    if (!za) {
        ad_atomic_abort(S, &af);
        return ad_error_code(S, ADDSL_EIO, "save(): cannot write '%s' (libzip error %d)", path, zerr);
    }
    rc = add_members(S, path, za, d);
    if (!rc && S->zip->zip_close(za) != 0) rc = npz_fail(S, path, za);
    if (rc) { S->zip->zip_discard(za); ad_atomic_abort(S, &af); return rc; }
    return ad_atomic_commit_path(S, "save", &af);
}

/* A member open for reading, as a stdio stream (fopencookie) for the .npy
 * reader, so the data goes straight from libzip into the new tensor. */
typedef struct member_in {
    ad_state *S;
    zip_file_t *zf;
    int64_t pos;
} member_in;

static ssize_t member_read(void *cookie, char *buf, size_t size) {
    member_in *m = cookie;
    zip_int64_t got = m->S->zip->zip_fread(m->zf, buf, size);
    if (got < 0) { errno = EIO; return -1; }
    m->pos += got;
    return (ssize_t)got;
}

/* Only ftell's query (offset 0 from here): the reader asks how much is left. */
static int member_seek(void *cookie, off64_t *off, int whence) {
    member_in *m = cookie;
    if (whence != SEEK_CUR || *off != 0) { errno = ESPIPE; return -1; }
    *off = m->pos;
    return 0;
}

static int member_fail(ad_state *S, const char *path, const char *name, zip_t *za, zip_file_t *zf) {
    return ad_error_code(S, ADDSL_EIO, "load('%s'): cannot read member '%s': %s", path, name,
                         zf ? S->zip->zip_file_strerror(zf) : S->zip->zip_strerror(za));
}

/* Member i of za, parsed as .npy. */
static int read_member(ad_state *S, const char *path, zip_t *za, zip_uint64_t i, const char *name, ad_tensor **t) {
    zip_stat_t st;
    S->zip->zip_stat_init(&st);
    if (S->zip->zip_stat_index(za, i, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE)) return member_fail(S, path, name, za, NULL);
    if (st.size > INT64_MAX) return ad_error(S, "load('%s'): member '%s' is too large", path, name);
    member_in m = {S, S->zip->zip_fopen_index(za, i, 0), 0};
    if (!m.zf) return member_fail(S, path, name, za, NULL);
    FILE *f = fopencookie(&m, "rb", (cookie_io_functions_t){member_read, NULL, member_seek, NULL});
    ad_buf label;
    ad_buf_init(&label, S);
    ad_buf_printf(&label, "%s[%s]", path, name);
    int rc = !f ? ad_nomem(S) : label.failed ? ad_nomem(S) : ad_npy_read(S, f, (int64_t)st.size, label.data, t);
    ad_buf_free(&label);
    if (f) fclose(f);
    /* A read that failed inside libzip (a CRC or inflate error) says so, not just "I/O error". */
    zip_error_t *ze = S->zip->zip_file_get_error(m.zf);
    if (rc && ze && S->zip->zip_error_code_zip(ze) != ZIP_ER_OK) rc = member_fail(S, path, name, za, m.zf);
    /* libzip checks a member's CRC when its end is read; read to the end. */
    char rest[256];
    zip_int64_t got;
    while (!rc && (got = S->zip->zip_fread(m.zf, rest, sizeof rest)) != 0)
        if (got < 0) rc = member_fail(S, path, name, za, m.zf);
    S->zip->zip_fclose(m.zf);
    if (rc && *t) { ad_tensor_decref(S, *t); *t = NULL; }
    return rc;
}

int ad_npz_load(ad_state *S, const char *path, ad_dict **out) {
    if (!ad_zip_api_get(S, "load")) return S->errcode;
    int zerr = 0;
    zip_t *za = S->zip->zip_open(path, ZIP_RDONLY, &zerr);
    if (!za) {
        zip_error_t e;
        S->zip->zip_error_init_with_code(&e, zerr);
        int rc = ad_error_code(S, zerr == ZIP_ER_NOENT || zerr == ZIP_ER_OPEN ? ADDSL_EIO : ADDSL_ERUNTIME,
                               "load(): cannot read '%s' as a .npz archive: %s", path, S->zip->zip_error_strerror(&e));
        S->zip->zip_error_fini(&e);
        return rc;
    }
    ad_dict *d = ad_dict_new(S);
    int rc = d ? ADDSL_OK : ADDSL_ENOMEM;
    zip_int64_t n = S->zip->zip_get_num_entries(za, 0);
    for (zip_int64_t i = 0; !rc && i < n; i++) {
        const char *name = S->zip->zip_get_name(za, (zip_uint64_t)i, 0);
        if (!name) { rc = ad_error_code(S, ADDSL_EIO, "load('%s'): %s", path, S->zip->zip_strerror(za)); break; }
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
    S->zip->zip_discard(za);
    if (rc) { if (d) ad_value_decref(S, ad_dict_value(d)); return rc; }
    *out = d;
    return ADDSL_OK;
}
