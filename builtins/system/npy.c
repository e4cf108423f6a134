/* system/npy.c: load() and save() of NumPy .npy files (format 1.0/2.0/3.0 read, 1.0 written).
 * Every length read from a file is bounded and overflow-checked before use. */
#include "system/npy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "system/fileio.h"
#include "builtins.h"
#include "state.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64               /* numpy aligns the data start to this */
#define NPY_MAX_HEADER (1 << 20)   /* longest header accepted; numpy's own cap is far lower */
#define NPY_V1_MAX_HEADER 65535    /* a 2-byte length field */
#define NPY_GROWTH_DIGITS 21       /* numpy pads the header so axis 0 can grow to this many digits */

/* The four dtypes addsl stores, by numpy descr. */
static const struct { const char *descr; ad_dtype dt; } npy_dtypes[] = {
    {"<f4", AD_FLOAT32}, {"<f8", AD_FLOAT64}, {"<i8", AD_INT64}, {"|b1", AD_BOOL},
};

typedef struct npy_header {
    char descr[16];
    int have_descr, have_fortran, have_shape;
    bool fortran;
    int ndim;
    int64_t shape[AD_MAX_DIMS];
} npy_header;

/* A cursor over the header text, for the small Python-literal parser. */
typedef struct npy_lex {
    const char *p, *end;
} npy_lex;

static void lex_ws(npy_lex *L) {
    while (L->p < L->end && (*L->p == ' ' || *L->p == '\t' || *L->p == '\n' || *L->p == '\r')) L->p++;
}

static bool lex_char(npy_lex *L, char c) {
    lex_ws(L);
    if (L->p < L->end && *L->p == c) { L->p++; return true; }
    return false;
}

static bool lex_word(npy_lex *L, const char *w) {
    size_t n = strlen(w);
    lex_ws(L);
    if ((size_t)(L->end - L->p) >= n && memcmp(L->p, w, n) == 0) { L->p += n; return true; }
    return false;
}

/* A quoted string ('...' or "...") without escapes, copied into buf. */
static bool lex_string(npy_lex *L, char *buf, size_t cap) {
    lex_ws(L);
    if (L->p >= L->end || (*L->p != '\'' && *L->p != '"')) return false;
    char q = *L->p++;
    size_t n = 0;
    while (L->p < L->end && *L->p != q) {
        if (*L->p == '\\' || *L->p == '\0' || n + 1 >= cap) return false; /* a NUL would cut the key short */
        buf[n++] = *L->p++;
    }
    if (L->p >= L->end) return false;
    L->p++;
    buf[n] = '\0';
    return true;
}

static bool lex_int(npy_lex *L, int64_t *out) {
    lex_ws(L);
    int64_t v = 0;
    const char *start = L->p;
    while (L->p < L->end && *L->p >= '0' && *L->p <= '9') {
        if (!ad_mul_ok(v, 10, &v) || __builtin_add_overflow(v, *L->p - '0', &v)) return false;
        L->p++;
    }
    if (L->p < L->end && *L->p == 'L') L->p++; /* Python 2 longs */
    *out = v;
    return L->p > start;
}

static bool parse_shape(npy_lex *L, npy_header *h) {
    if (!lex_char(L, '(')) return false;
    h->ndim = 0;
    while (!lex_char(L, ')')) {
        if (h->ndim == AD_MAX_DIMS) return false;
        if (!lex_int(L, &h->shape[h->ndim])) return false;
        h->ndim++;
        if (!lex_char(L, ',')) {
            if (!lex_char(L, ')')) return false;
            break;
        }
    }
    h->have_shape = 1;
    return true;
}

static bool parse_entry(npy_lex *L, npy_header *h, const char **why) {
    char key[32];
    if (!lex_string(L, key, sizeof key)) { *why = "expected a quoted key"; return false; }
    if (!lex_char(L, ':')) { *why = "expected ':'"; return false; }
    if (strcmp(key, "descr") == 0 && !h->have_descr) {
        h->have_descr = 1;
        if (!lex_string(L, h->descr, sizeof h->descr)) { *why = "'descr' is not a simple dtype string"; return false; }
    } else if (strcmp(key, "fortran_order") == 0 && !h->have_fortran) {
        h->have_fortran = 1;
        if (lex_word(L, "True")) h->fortran = true;
        else if (lex_word(L, "False")) h->fortran = false;
        else { *why = "'fortran_order' is not True or False"; return false; }
    } else if (strcmp(key, "shape") == 0 && !h->have_shape) {
        if (!parse_shape(L, h)) { *why = "'shape' is not a tuple of at most 16 sizes"; return false; }
    } else {
        *why = "unexpected or repeated key";
        return false;
    }
    return true;
}

/* Parses "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }". */
static int parse_header(ad_state *S, const char *path, const char *text, size_t len, npy_header *h) {
    npy_lex L = {text, text + len};
    const char *why = "expected '{'";
    memset(h, 0, sizeof *h);
    if (!lex_char(&L, '{')) goto bad;
    while (!lex_char(&L, '}')) {
        if (!parse_entry(&L, h, &why)) goto bad;
        if (!lex_char(&L, ',')) {
            why = "expected ',' or '}'";
            if (!lex_char(&L, '}')) goto bad;
            break;
        }
    }
    lex_ws(&L);
    why = "text after the dictionary";
    if (L.p != L.end) goto bad;
    why = "the dictionary needs the keys 'descr', 'fortran_order' and 'shape'";
    if (!h->have_descr || !h->have_fortran || !h->have_shape) goto bad;
    return AD_OK;
bad:
    return ad_error(S, "load(): '%s' has a malformed header: %s", path, why);
}

static int descr_dtype(ad_state *S, const char *path, const char *descr, ad_dtype *out) {
    for (size_t i = 0; i < sizeof npy_dtypes / sizeof npy_dtypes[0]; i++)
        if (strcmp(descr, npy_dtypes[i].descr) == 0) { *out = npy_dtypes[i].dt; return AD_OK; }
    if (descr[0] == '>' && strcmp(descr + 1, "b1") != 0 && strcmp(descr + 1, "u1") != 0 && strcmp(descr + 1, "i1") != 0)
        return ad_error(S, "load(): '%s' is big-endian ('%s'); only little-endian data is supported", path, descr);
    return ad_error(S, "load(): '%s' has unsupported dtype '%s' (supported: '<f4' float32, "
                    "'<f8' float64, '<i8' int64, '|b1' bool)", path, descr);
}

static uint32_t le_u32(const unsigned char *b, int n) {
    uint32_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | b[i];
    return v;
}

/* Reads magic, version and header text; *text is the caller's to free. */
static int read_preamble(ad_state *S, FILE *f, const char *path, char **text, size_t *len) {
    unsigned char pre[NPY_MAGIC_LEN + 2 + 4];
    size_t got = fread(pre, 1, NPY_MAGIC_LEN + 2, f);
    if (got < NPY_MAGIC_LEN || memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return ad_error(S, "load(): '%s' is not a .npy file (bad magic string)", path);
    if (got < NPY_MAGIC_LEN + 2) return ad_error(S, "load(): '%s' is truncated (in the header)", path);
    int major = pre[NPY_MAGIC_LEN], minor = pre[NPY_MAGIC_LEN + 1];
    if ((major != 1 && major != 2 && major != 3) || minor != 0)
        return ad_error(S, "load(): '%s' has unsupported .npy format version %d.%d", path, major, minor);
    int lenbytes = major == 1 ? 2 : 4;
    if (fread(pre, 1, (size_t)lenbytes, f) != (size_t)lenbytes)
        return ad_error(S, "load(): '%s' is truncated (in the header)", path);
    uint32_t hlen = le_u32(pre, lenbytes);
    if (hlen > NPY_MAX_HEADER)
        return ad_error(S, "load(): '%s' has a header of %u bytes (at most %d allowed)", path, hlen, NPY_MAX_HEADER);
    *text = ad_malloc(S, hlen + 1);
    if (!*text) return ADDSL_ENOMEM;
    if (fread(*text, 1, hlen, f) != hlen) {
        ad_free(S, *text);
        *text = NULL;
        return ad_error(S, "load(): '%s' is truncated (in the header)", path);
    }
    (*text)[hlen] = '\0';
    *len = hlen;
    return AD_OK;
}

/* Bytes left from the current position, or -1 when unknown. 'total' is the
 * size of an in-memory stream (fstat cannot see it), or -1 for a file. */
static int64_t bytes_left(FILE *f, int64_t total) {
    struct stat st;
    long pos = ftell(f);
    if (pos < 0) return -1;
    if (total >= 0) return total - pos;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) return -1;
    return (int64_t)st.st_size - pos;
}

static int read_data(ad_state *S, FILE *f, int64_t total, const char *path, const npy_header *h, ad_dtype dt,
                     ad_tensor **out) {
    int64_t numel = 1, nbytes;
    for (int i = 0; i < h->ndim; i++)
        if (!ad_mul_ok(numel, h->shape[i], &numel))
            return ad_error(S, "load(): '%s' has a shape too large to store", path);
    if (!ad_mul_ok(numel, (int64_t)ad_dtype_size(dt), &nbytes))
        return ad_error(S, "load(): '%s' has a shape too large to store", path);
    int64_t left = bytes_left(f, total);
    if (left >= 0 && left < nbytes)
        return ad_error(S, "load(): '%s' is truncated (the header promises %lld data bytes, the file has %lld)",
                        path, (long long)nbytes, (long long)left);
    ad_tensor *t = ad_tensor_empty(S, dt, h->ndim, h->shape);
    if (!t) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    size_t got = nbytes ? fread(ad_tensor_data(t), 1, (size_t)nbytes, f) : 0;
    if (got != (size_t)nbytes) {
        int io = ferror(f);
        ad_tensor_decref(S, t);
        if (io) return ad_error_code(S, ADDSL_EIO, "load(): cannot read '%s': %s", path, strerror(errno));
        return ad_error(S, "load(): '%s' is truncated (in the data)", path);
    }
    if (dt == AD_BOOL) { /* any nonzero byte is true; keep storage canonical */
        unsigned char *p = ad_tensor_data(t);
        for (int64_t i = 0; i < numel; i++) p[i] = p[i] != 0;
    }
    *out = t;
    return AD_OK;
}

static int load_open(ad_state *S, FILE *f, int64_t total, const char *path, ad_tensor **out) {
    char *text = NULL;
    size_t len = 0;
    npy_header h;
    ad_dtype dt = AD_FLOAT32;
    int rc = read_preamble(S, f, path, &text, &len);
    if (rc) return rc;
    rc = parse_header(S, path, text, len, &h);
    ad_free(S, text);
    if (rc) return rc;
    if ((rc = descr_dtype(S, path, h.descr, &dt))) return rc;
    if (h.fortran)
        return ad_error(S, "load(): '%s' is Fortran-ordered; only C order is supported", path);
    return read_data(S, f, total, path, &h, dt, out);
}

int ad_npy_load(ad_state *S, const char *path, ad_tensor **out) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return ad_error_code(S, ADDSL_EIO, "load(): cannot open '%s': %s", path, strerror(errno));
    int rc = load_open(S, f, -1, path, out);
    fclose(f);
    return rc;
}

int ad_npy_read(ad_state *S, FILE *f, int64_t size, const char *name, ad_tensor **out) {
    *out = NULL;
    return load_open(S, f, size, name, out);
}

int ad_npy_parse(ad_state *S, const void *data, size_t size, const char *name, ad_tensor **out) {
    *out = NULL;
    if (size == 0) return ad_error(S, "load(): '%s' is not a .npy file (bad magic string)", name);
    if (size > INT64_MAX) return ad_error(S, "load(): '%s' is too large", name);
    /* fmemopen keeps one reader for files and bytes; it never writes here. */
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f) return ad_error_code(S, ADDSL_ENOMEM, "load(): cannot read '%s' from memory: %s", name, strerror(errno));
    int rc = load_open(S, f, (int64_t)size, name, out);
    fclose(f);
    return rc;
}

static const char *dtype_descr(ad_dtype dt) {
    for (size_t i = 0; i < sizeof npy_dtypes / sizeof npy_dtypes[0]; i++)
        if (npy_dtypes[i].dt == dt) return npy_dtypes[i].descr;
    return "?";
}

/* numpy.save's exact bytes: sorted keys, repr of the shape, room for axis 0
 * to grow, spaces then '\n' so that the data starts on a 64-byte boundary. */
static int build_header(ad_state *S, const ad_tensor *t, ad_buf *b) {
    ad_buf body;
    ad_buf_init(&body, S);
    ad_buf_printf(&body, "{'descr': '%s', 'fortran_order': False, 'shape': (", dtype_descr(t->dtype));
    for (int i = 0; i < t->ndim; i++)
        ad_buf_printf(&body, i ? ", %lld" : "%lld", (long long)t->shape[i]);
    ad_buf_puts(&body, t->ndim == 1 ? ",), }" : "), }");
    if (t->ndim > 0) {
        int digits = snprintf(NULL, 0, "%lld", (long long)t->shape[0]);
        for (int i = digits; i < NPY_GROWTH_DIGITS; i++) ad_buf_puts(&body, " ");
    }
    if (body.failed) { ad_buf_free(&body); return ADDSL_ENOMEM; }
    size_t hlen = body.len + 1;
    int lenbytes = 2;
    size_t pad = NPY_ALIGN - (NPY_MAGIC_LEN + 2 + lenbytes + hlen) % NPY_ALIGN;
    if (hlen + pad > NPY_V1_MAX_HEADER) {
        lenbytes = 4;
        pad = NPY_ALIGN - (NPY_MAGIC_LEN + 2 + lenbytes + hlen) % NPY_ALIGN;
    }
    size_t total = hlen + pad;
    unsigned char pre[NPY_MAGIC_LEN + 2 + 4];
    memcpy(pre, NPY_MAGIC, NPY_MAGIC_LEN);
    pre[NPY_MAGIC_LEN] = lenbytes == 2 ? 1 : 2;
    pre[NPY_MAGIC_LEN + 1] = 0;
    for (int i = 0; i < lenbytes; i++) pre[NPY_MAGIC_LEN + 2 + i] = (unsigned char)(total >> (8 * i));
    ad_buf_add(b, (const char *)pre, (size_t)(NPY_MAGIC_LEN + 2 + lenbytes));
    ad_buf_add(b, body.data, body.len);
    for (size_t i = 0; i < pad; i++) ad_buf_puts(b, " ");
    ad_buf_puts(b, "\n");
    ad_buf_free(&body);
    return b->failed ? ADDSL_ENOMEM : AD_OK;
}

int ad_npy_write(ad_state *S, FILE *f, ad_tensor *t) {
    ad_tensor *c = ad_tensor_contiguous(S, t);
    if (!c) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    ad_buf hdr;
    ad_buf_init(&hdr, S);
    int rc = build_header(S, c, &hdr) == AD_OK ? AD_OK : ad_nomem(S);
    size_t nbytes = (size_t)c->numel * ad_dtype_size(c->dtype);
    if (!rc && fwrite(hdr.data, 1, hdr.len, f) != hdr.len) rc = ADDSL_EIO;
    if (!rc && nbytes && fwrite(ad_tensor_data(c), 1, nbytes, f) != nbytes) rc = ADDSL_EIO;
    int err = errno; /* the caller reports the failed write's errno; freeing must not change it */
    ad_buf_free(&hdr);
    ad_tensor_decref(S, c);
    errno = err;
    return rc;
}

int ad_npy_header(ad_state *S, const ad_tensor *c, ad_buf *out) {
    return build_header(S, c, out) == AD_OK ? AD_OK : ad_nomem(S);
}

int ad_npy_save(ad_state *S, const char *path, ad_tensor *t) {
    ad_atomic_file af;
    int rc = ad_atomic_begin(S, "save", path, &af);
    if (rc) return rc;
    rc = ad_npy_write(S, af.f, t);
    if (rc && rc != ADDSL_EIO) { ad_atomic_abort(S, &af); return rc; }
    return ad_atomic_commit(S, "save", &af, rc == AD_OK, errno);
}
