/* test_library.c: TAP tests of how the embedded op library splits its
 * test_inputs statements off (tools/embed_lib.sh) and loads them
 * (vm/autograd/library.c): the split texts rebuild the lib files line for line, start-up
 * compiles no test_inputs, and op_test_inputs() still sees every set of its
 * op's file, also for a file loaded after the first request. */
#include "tap.h"

#include "addsl.h"
#include "autograd/library.h"

/* The file index of lib/NAME, or -1. */
static int lib_file(const char *name) {
    for (size_t f = 0; f < ad_lib_count; f++)
        if (strcmp(ad_lib_names[f], name) == 0) return (int)f;
    return -1;
}

static char *read_all(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, fp)) > 0;) {
        n += got;
        if (n + 1 == cap) {
            char *more = realloc(buf, cap * 2);
            if (!more) { free(buf); buf = NULL; break; }
            buf = more;
            cap *= 2;
        }
    }
    fclose(fp);
    if (buf) buf[n] = '\0';
    return buf;
}

/* One line of s (without its newline) into out; returns where the next starts, NULL at the end. */
static const char *next_line(const char *s, char *out, size_t cap) {
    if (!*s) return NULL;
    size_t n = strcspn(s, "\n");
    size_t k = n < cap - 1 ? n : cap - 1;
    memcpy(out, s, k);
    out[k] = '\0';
    return s[n] ? s + n + 1 : s + n;
}

/* The main text and tests text of a file, laid over each other, give the
 * file back: each line is whole in one text and empty in the other. */
static void check_split(const char *srcdir, size_t f) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", srcdir, ad_lib_names[f]);
    char *orig = read_all(path);
    if (!ok(orig != NULL, "%s: read %s", ad_lib_names[f], path)) return;
    const char *o = orig, *m = ad_lib_sources[f], *t = ad_lib_tests[f] ? ad_lib_tests[f] : "";
    static char lo[8192], lm[8192], lt[8192];
    int line = 0, bad = 0, ntests = 0, nmain_tests = 0;
    while ((o = next_line(o, lo, sizeof lo))) {
        line++;
        m = m ? next_line(m, lm, sizeof lm) : NULL;
        t = ad_lib_tests[f] ? (t ? next_line(t, lt, sizeof lt) : NULL) : "";
        if (!ad_lib_tests[f]) lt[0] = '\0';
        if (!m || !t) { bad = line; break; }
        if (strncmp(lm, "test_inputs(", 12) == 0) nmain_tests++;
        if (strncmp(lo, "test_inputs(", 12) == 0) ntests += strncmp(lt, "test_inputs(", 12) == 0;
        bool whole_in_main = strcmp(lm, lo) == 0 && lt[0] == '\0';
        bool whole_in_tests = strcmp(lt, lo) == 0 && lm[0] == '\0';
        if (!whole_in_main && !whole_in_tests && !bad) bad = line;
    }
    bool extra = (m && *m) || (ad_lib_tests[f] && t && *t);
    ok(!bad && !extra, "%s: main and tests texts rebuild the file line for line (first bad line %d)",
       ad_lib_names[f], bad);
    ok(nmain_tests == 0, "%s: no test_inputs statement left in the main text", ad_lib_names[f]);
    int want = 0;
    for (const char *s = orig; (s = next_line(s, lo, sizeof lo));) want += strncmp(lo, "test_inputs(", 12) == 0;
    ok(ntests == want && (want > 0) == (ad_lib_tests[f] != NULL),
       "%s: all %d test_inputs statements in the tests text (%d)", ad_lib_names[f], want, ntests);
    free(orig);
}

static int run(addsl_state *A, const char *code) {
    int rc = addsl_dostring(A, code, "<test>");
    if (rc) printf("# %s\n# %s\n", code, addsl_errmsg(A));
    return rc;
}

int main(void) {
    const char *srcdir = getenv("srcdir");
    if (!srcdir) srcdir = ".";
    plan(4 * (int)ad_lib_count + 11);
    for (size_t f = 0; f < ad_lib_count; f++) check_split(srcdir, f);

    addsl_state *A = addsl_open(NULL);
    if (!ok(A != NULL, "addsl_open")) return done_testing();
    ad_state *S = (ad_state *)A;
    int arith = lib_file("lib/arith.ad"), scans = lib_file("lib/scans.ad");
    ok(arith >= 0 && scans >= 0, "lib/arith.ad and lib/scans.ad are embedded");
    if (arith < 0 || scans < 0) { addsl_close(A); return done_testing(); }

    ok(run(A, "let x = tensor([1.0], requires_grad=true)\nbackward(sum(x * 2))\n"
              "if x.grad.tolist() != [2.0] { error(\"grad\") }") == 0, "a backward pass runs");
    ok(S->lib_loaded[arith], "the backward pass loaded lib/arith.ad");
    int tested = 0;
    for (size_t f = 0; f < ad_lib_count; f++) tested += S->lib_tested[f];
    ok(tested == 0, "start-up and ops ran no test_inputs statement (%d files)", tested);
    ok(!S->lib_loaded[scans], "lib/scans.ad is not loaded yet");

    /* mul's sets, counted in lib/arith.ad by hand: 19 statements (9 of its own, 10 that were
     * multiply's before it became an alias of mul). */
    ok(run(A, "let g = op_test_inputs(mul)\nif len(g) != 19 { error(str(len(g))) }\n"
              "for f in g { let a = f()\n if type(a) != \"list\" or len(a) < 2 { error(\"set\") } }") == 0,
       "op_test_inputs(mul) gives its 19 sets, each a list of arguments");
    ok(S->lib_tested[arith], "the request ran lib/arith.ad's test_inputs");
    ok(!S->lib_tested[scans], "and not those of lib/scans.ad, which is not loaded");

    /* A file loaded after the first request: cummax's sets (lib/scans.ad, 4 statements). */
    ok(run(A, "let y = cummax(tensor([1.0, 3.0, 2.0]), 0)\nlet g2 = op_test_inputs(cummax)\n"
              "if type(g2) != \"list\" or len(g2) != 4 { error(str(g2)) }\n"
              "if len(op_test_inputs(mul)) != 19 { error(\"mul sets added twice\") }") == 0,
       "an op of a file loaded after the first request still gets its 4 sets, and mul keeps 19");
    ok(S->lib_tested[scans], "lib/scans.ad's test_inputs ran on that request");
    addsl_close(A);
    return done_testing();
}
