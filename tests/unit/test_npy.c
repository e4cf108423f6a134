/* test_npy.c: TAP tests of .npy and .npz reading and writing against files numpy
 * wrote (tests/fixtures, made by make_npy.py): values, errors, byte-exact saves. */
#include "tap.h"

#include <unistd.h>
#include <zip.h>

#include "dict.h"
#include "system/npy.h"
#include "system/npz.h"
#include "tensor/tensor.h"
#include "system/zip_lazy.h"

static char fixture_dir[4096];
static char tmp_dir[64];

/* Fixtures sit in $srcdir/tests/fixtures (automake sets srcdir, so VPATH
 * builds work), or in argv[1] when given. */
static void find_fixtures(int argc, char **argv) {
    const char *src = getenv("srcdir");
    if (argc > 1) snprintf(fixture_dir, sizeof fixture_dir, "%s", argv[1]);
    else snprintf(fixture_dir, sizeof fixture_dir, "%s/tests/fixtures", src ? src : ".");
}

static const char *fixture(const char *name) {
    static char path[8192];
    snprintf(path, sizeof path, "%s/%s", fixture_dir, name);
    return path;
}

static ad_tensor *load_ok(ad_state *S, const char *name) {
    ad_tensor *t = NULL;
    int rc = ad_npy_load(S, fixture(name), &t);
    if (!ok(rc == ADDSL_OK && t, "load %s", name)) printf("#   error: %s\n", S->errmsg);
    return rc == ADDSL_OK ? t : NULL;
}

static int shape_is(const ad_tensor *t, int n, const int64_t *want) {
    return t && ad_shape_equal(t->ndim, t->shape, n, want);
}

/* The file's bytes into a malloc'd buffer; *len gets the size. */
static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            unsigned char *p = realloc(buf, cap);
            if (!p) { free(buf); fclose(f); return NULL; }
            buf = p;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return buf;
}

static void test_values(ad_state *S) {
    ad_tensor *t = load_ok(S, "f4_2x3.npy");
    ok(t && t->dtype == AD_FLOAT32 && shape_is(t, 2, (int64_t[]){2, 3}), "f4: dtype and shape");
    if (t) {
        const float *p = ad_tensor_data(t);
        ok(p[0] == 0.1f && p[1] == -2.5f && p[2] == 3.0f && isinf(p[3]) && p[4] == 0.0f && signbit(p[4]) &&
           p[5] == 1e-30f, "f4: values bit-exact (inf, -0.0, tiny)");
    }
    ad_tensor_decref(S, t);

    t = load_ok(S, "f8_4.npy");
    if (t) {
        const double *p = ad_tensor_data(t);
        ok(t->dtype == AD_FLOAT64 && p[0] == 1.0 / 3.0 && p[1] == -1e300 && p[2] == 0x1p-1074 && isnan(p[3]),
           "f8: values bit-exact (denormal, nan)");
    } else ok(0, "f8: values");
    ad_tensor_decref(S, t);

    t = load_ok(S, "i8_2x2.npy");
    if (t) {
        const int64_t *p = ad_tensor_data(t);
        ok(t->dtype == AD_INT64 && p[0] == 9007199254740993LL && p[1] == -7 && p[2] == 0 && p[3] == INT64_MIN,
           "i8: values exact beyond 2^53");
    } else ok(0, "i8: values");
    ad_tensor_decref(S, t);

    t = load_ok(S, "b1_5.npy");
    if (t) {
        const uint8_t *p = ad_tensor_data(t);
        ok(t->dtype == AD_BOOL && p[0] == 1 && p[1] == 0 && p[2] == 0 && p[3] == 1 && p[4] == 1, "b1: values");
    } else ok(0, "b1: values");
    ad_tensor_decref(S, t);
}

static void test_shapes(ad_state *S) {
    ad_tensor *t = load_ok(S, "scalar_f8.npy");
    ok(t && t->ndim == 0 && t->numel == 1 && *(double *)ad_tensor_data(t) == 2.5, "0-d: value 2.5");
    ad_tensor_decref(S, t);
    t = load_ok(S, "empty_f4_0x3.npy");
    ok(t && shape_is(t, 2, (int64_t[]){0, 3}) && t->numel == 0, "empty: shape [0, 3]");
    ad_tensor_decref(S, t);
    t = load_ok(S, "f4_2x3x4.npy");
    ok(t && shape_is(t, 3, (int64_t[]){2, 3, 4}) && ad_tensor_get_flat(t, 23) == 23.0 &&
       ad_tensor_get_flat(t, 6) == 6.0, "3-d: shape and C order");
    ad_tensor_decref(S, t);
    t = load_ok(S, "v2_i8_3.npy");
    ok(t && t->dtype == AD_INT64 && t->numel == 3 && ad_tensor_get_flat(t, 2) == 3.0, "format 2.0");
    ad_tensor_decref(S, t);
    t = load_ok(S, "v3_f4_2.npy");
    ok(t && t->dtype == AD_FLOAT32 && ad_tensor_get_flat(t, 1) == -1.5, "format 3.0");
    ad_tensor_decref(S, t);
}

/* Loading 'name' fails with 'code' and a message containing each of 'want'. */
static void load_fails(ad_state *S, const char *name, int code, const char *want1, const char *want2) {
    ad_tensor *t = NULL;
    int rc = ad_npy_load(S, fixture(name), &t);
    int pass = rc == code && !t && strstr(S->errmsg, want1) && (!want2 || strstr(S->errmsg, want2)) &&
               strstr(S->errmsg, name);
    ok(pass, "%s is a clear error", name);
    if (!pass) printf("#   rc %d, message: %s\n", rc, S->errmsg);
    ad_tensor_decref(S, t);
    ad_clear_error(S);
}

static void test_errors(ad_state *S) {
    load_fails(S, "bad_magic.npy", ADDSL_ERUNTIME, "not a .npy file", NULL);
    load_fails(S, "truncated_data.npy", ADDSL_ERUNTIME, "truncated", NULL);
    load_fails(S, "truncated_header.npy", ADDSL_ERUNTIME, "truncated", NULL);
    load_fails(S, "fortran.npy", ADDSL_ERUNTIME, "is Fortran-ordered; only C order is supported", NULL);
    load_fails(S, "big_endian.npy", ADDSL_ERUNTIME, "big-endian", "'>f4'");
    load_fails(S, "complex_c8.npy", ADDSL_ERUNTIME, "unsupported dtype", "'<c8'");
    load_fails(S, "lying_shape.npy", ADDSL_ERUNTIME, "truncated", NULL);
    load_fails(S, "missing_shape.npy", ADDSL_ERUNTIME, "malformed header", "'shape'");
    load_fails(S, "shape_overflow.npy", ADDSL_ERUNTIME, "too large", NULL);
    load_fails(S, "no_such_file.npy", ADDSL_EIO, "load(): cannot open", "No such file or directory");
}

/* Saving what was loaded must reproduce numpy's file byte for byte. */
static void same_bytes(ad_state *S, const char *name) {
    char out[128];
    snprintf(out, sizeof out, "%s/%s", tmp_dir, name);
    ad_tensor *t = NULL;
    int rc = ad_npy_load(S, fixture(name), &t);
    if (rc == ADDSL_OK) rc = ad_npy_save(S, out, t);
    size_t na = 0, nb = 0;
    unsigned char *a = rc == ADDSL_OK ? slurp(out, &na) : NULL, *b = slurp(fixture(name), &nb);
    int pass = a && b && na == nb && memcmp(a, b, na) == 0;
    ok(pass, "save reproduces numpy's %s byte for byte", name);
    if (!pass) printf("#   rc %d (%s), sizes %zu vs %zu\n", rc, S->errmsg, na, nb);
    free(a);
    free(b);
    remove(out);
    ad_tensor_decref(S, t);
}

static void test_save(ad_state *S) {
    static const char *const names[] = {"f4_2x3.npy", "f8_4.npy", "i8_2x2.npy", "b1_5.npy",
                                        "scalar_f8.npy", "empty_f4_0x3.npy", "f4_2x3x4.npy"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) same_bytes(S, names[i]);

    /* A transposed view is written in its logical order and reads back equal. */
    char out[128];
    snprintf(out, sizeof out, "%s/t.npy", tmp_dir);
    ad_tensor *x = NULL, *y = NULL;
    ad_npy_load(S, fixture("f4_2x3x4.npy"), &x);
    ad_tensor *v = x ? ad_tensor_transpose(S, x, 0, 2) : NULL;
    int rc = v ? ad_npy_save(S, out, v) : -1;
    if (rc == ADDSL_OK) rc = ad_npy_load(S, out, &y);
    int same = rc == ADDSL_OK && y && shape_is(y, 3, v->shape);
    for (int64_t i = 0; same && i < v->numel; i++) same = ad_tensor_get_flat(v, i) == ad_tensor_get_flat(y, i);
    ok(same, "a non-contiguous view round-trips in C order");
    remove(out);
    ad_tensor_decref(S, y);
    ad_tensor_decref(S, v);
    ad_tensor_decref(S, x);

    ad_tensor *z = ad_tensor_zeros(S, AD_FLOAT32, 1, (int64_t[]){2});
    rc = z ? ad_npy_save(S, "/nonexistent-dir/x.npy", z) : -1;
    ok(rc == ADDSL_EIO && strstr(S->errmsg, "save(): cannot open '/nonexistent-dir/x.npy'"),
       "save to a missing directory is an I/O error");
    ad_clear_error(S);
    ad_tensor_decref(S, z);
}

/* Member 'name' of the archive at 'path', compared with a fixture's bytes; it
 * must be stored (numpy.savez does not compress). */
static int member_is(zip_t *za, const char *name, const char *fixture_name) {
    zip_stat_t st;
    size_t nb = 0;
    unsigned char *want = slurp(fixture(fixture_name), &nb);
    int pass = want && zip_stat(za, name, 0, &st) == 0 && st.comp_method == ZIP_CM_STORE && st.size == nb;
    unsigned char *got = pass ? malloc(nb ? nb : 1) : NULL;
    zip_file_t *zf = got ? zip_fopen(za, name, 0) : NULL;
    pass = zf && zip_fread(zf, got, nb) == (zip_int64_t)nb && memcmp(got, want, nb) == 0;
    if (zf) zip_fclose(zf);
    free(got);
    free(want);
    return pass;
}

/* ad_npz_save streams each tensor into the archive: every member must be
 * exactly the file numpy.save wrote for it, a view included (as its values). */
static void test_npz(ad_state *S) {
    static const char *const names[] = {"f4_2x3.npy", "i8_2x2.npy", "b1_5.npy", "scalar_f8.npy", "empty_f4_0x3.npy"};
    char out[128];
    snprintf(out, sizeof out, "%s/p.npz", tmp_dir);
    ad_dict *d = ad_dict_new(S);
    int rc = d ? ADDSL_OK : ADDSL_ENOMEM;
    for (size_t i = 0; !rc && i < sizeof names / sizeof names[0]; i++) {
        ad_tensor *t = NULL;
        char key[32];
        snprintf(key, sizeof key, "%.*s", (int)(strlen(names[i]) - 4), names[i]);
        rc = ad_npy_load(S, fixture(names[i]), &t);
        if (!rc) rc = ad_dict_set_str(S, d, key, ad_tensor_value(t));
    }
    /* f4_2x3x4 transposed twice is a non-contiguous view with the same values. */
    ad_tensor *x = NULL, *v = NULL, *w = NULL;
    if (!rc) rc = ad_npy_load(S, fixture("f4_2x3x4.npy"), &x);
    if (!rc) rc = (v = ad_tensor_transpose(S, x, 0, 2)) && (w = ad_tensor_transpose(S, v, 0, 2)) ? ADDSL_OK : -1;
    if (!rc) { rc = ad_dict_set_str(S, d, "view", ad_tensor_value(w)); w = NULL; }
    if (!rc) rc = ad_npz_save(S, out, d);
    if (!ok(rc == ADDSL_OK, "save a dict of tensors as .npz")) printf("#   rc %d: %s\n", rc, S->errmsg);
    int zerr = 0;
    zip_t *za = rc ? NULL : zip_open(out, ZIP_RDONLY | ZIP_CHECKCONS, &zerr);
    int pass = za && zip_get_num_entries(za, 0) == 6;
    for (int64_t i = 0; pass && i < 5; i++) {
        char member[32];
        snprintf(member, sizeof member, "%s", names[i]);
        pass = strcmp(zip_get_name(za, (zip_uint64_t)i, 0), member) == 0 && member_is(za, member, names[i]);
    }
    pass = pass && strcmp(zip_get_name(za, 5, 0), "view.npy") == 0 && member_is(za, "view.npy", "f4_2x3x4.npy");
    ok(pass, "every .npz member, in order, is byte for byte what numpy.save wrote");
    if (za) zip_discard(za);

    ad_dict *back = NULL;
    rc = ad_npz_load(S, out, &back);
    ad_value *bv = back ? ad_dict_get_str(back, "view") : NULL;
    pass = rc == ADDSL_OK && back->len == 6 && bv && bv->t == AD_TTENSOR && shape_is(bv->u.tensor, 3, x->shape);
    for (int64_t i = 0; pass && i < x->numel; i++) pass = ad_tensor_get_flat(x, i) == ad_tensor_get_flat(bv->u.tensor, i);
    ok(pass, "load of the .npz gives the dict back");
    if (back) ad_value_decref(S, ad_dict_value(back));
    remove(out);
    ad_tensor_decref(S, v);
    ad_tensor_decref(S, x);
    if (d) ad_value_decref(S, ad_dict_value(d));
}

int main(int argc, char **argv) {
    find_fixtures(argc, argv);
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/test_npy.XXXXXX");
    plan(41);
    ad_state *S = test_state(0);
    if (!S || !mkdtemp(tmp_dir)) {
        printf("Bail out! no state or temporary directory\n");
        return 1;
    }
    test_values(S);
    test_shapes(S);
    test_errors(S);
    test_save(S);
    test_npz(S);
    rmdir(tmp_dir);
    ad_zip_close(S); /* addsl_close's part for the libzip table save() loaded */
    test_state_close(S);
    return done_testing();
}
