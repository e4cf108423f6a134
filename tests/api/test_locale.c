/* test_locale.c: TAP tests of a host that runs in a decimal-comma locale
 * (setlocale(LC_ALL, "de_DE.UTF-8")): the library parses and prints numbers
 * in the C locale, and the host keeps its own. Run by tests/api/locale.sh,
 * which makes the locale; exits 77 (skip) when it cannot be set. */
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addsl.h"
#include "tap_api.h"

#define LOCALE_NAME "de_DE.UTF-8"

/* Output captured by the write callback, and the host's decimal point as the
 * callback saw it (the host's code runs in the host's locale). */
typedef struct capture { char out[8192]; size_t nout; char host_half[16]; } capture;

static void cap_write(void *ud, const char *text, size_t len, int is_err) {
    capture *c = ud;
    if (is_err || !len) return;
    if (c->nout + len >= sizeof c->out) len = sizeof c->out - 1 - c->nout;
    memcpy(c->out + c->nout, text, len);
    c->nout += len;
    c->out[c->nout] = '\0';
    snprintf(c->host_half, sizeof c->host_half, "%.1f", 0.5);
}

static void cap_reset(capture *c) { c->nout = 0; c->out[0] = c->host_half[0] = '\0'; }

/* TAP descriptions show the first line of a text. */
static int line_len(const char *s) { return (int)strcspn(s, "\n"); }

/* Runs 'code' and compares what it printed with 'want'. */
static void prints(addsl_state *S, capture *c, const char *code, const char *want) {
    cap_reset(c);
    int rc = addsl_dostring(S, code, "<locale>");
    const char *err = rc ? addsl_errmsg(S) : "";
    ok(rc == ADDSL_OK && strcmp(c->out, want) == 0, "%.*s prints '%.*s' (got rc %d, '%.*s'%s%.*s)",
       line_len(code), code, line_len(want), want, rc, line_len(c->out), c->out, rc ? ": " : "", line_len(err), err);
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static void test_numbers(addsl_state *S, capture *c) {
    double x = 0;
    int rc = addsl_dostring(S, "let x = 2.5", "<locale>");
    if (!rc) rc = addsl_get_number(S, "x", &x);
    ok(rc == ADDSL_OK && x == 2.5, "the literal 2.5 parses as 2.5 (got %.17g)", x);
    prints(S, c, "print(1e-3)", "0.001\n");
    prints(S, c, "print(x, x * 2, 7 / 2)", "2.5 5 3.5\n");
    prints(S, c, "print(f\"{x:.3f}\")", "2.500\n");
    prints(S, c, "print(f\"{1234567.5:,.2f} {x:e} {0.125:.1%}\")", "1,234,567.50 2.500000e+00 12.5%\n");
    prints(S, c, "print(\"%.2f|%g\" % (x, 0.25))", "2.50|0.25\n");
    prints(S, c, "print(str(1.25), float(\"2.5\"), float(\"-1.5e-2\"))", "1.25 2.5 -0.015\n");
    prints(S, c, "print(tensor([1.5, 2.25]))", "tensor([1.5000, 2.2500])\n");
    prints(S, c, "print(tensor([1e-5, 2.0]))", "tensor([1.0000e-05, 2.0000e+00])\n");
    ok(strcmp(c->host_half, "0,5") == 0, "the write callback runs in the host's locale (%%.1f of 0.5 gave '%s')",
       c->host_half);

    /* A number from the host, and numbers in an error message. */
    ok(addsl_set_number(S, "k", 0.75) == ADDSL_OK, "set_number k = 0.75");
    prints(S, c, "print(k + 1)", "1.75\n");
    rc = addsl_dostring(S, "let w = zeros([3], requires_grad=true)\nSGD([w], lr=-0.5)", "<locale>");
    ok(rc == ADDSL_ERUNTIME && contains(addsl_errmsg(S), "Invalid learning rate: -0.5"),
       "an error message prints -0.5 (got '%.*s')", line_len(addsl_errmsg(S)), addsl_errmsg(S));
}

static void test_csv(addsl_state *S, capture *c, const char *dir) {
    char path[512], code[1024];
    snprintf(path, sizeof path, "%s/data.csv", dir);
    FILE *f = fopen(path, "w");
    ok(f != NULL, "wrote %s", path);
    if (!f) return;
    fputs("1.5,2.25\n-3e-2,4\n", f);
    fclose(f);
    snprintf(code, sizeof code, "let c = load(\"%s\")\nprint(c.sum())", path);
    prints(S, c, code, "tensor(7.7200)\n");
    addsl_tensor *t = NULL;
    int rc = addsl_get_tensor(S, "c", &t);
    const float *d = t ? addsl_tensor_data(t) : NULL;
    ok(rc == ADDSL_OK && addsl_tensor_numel(t) == 4 && d[0] == 1.5f && d[1] == 2.25f && d[2] == -0.03f && d[3] == 4.0f,
       "load() of '1.5,2.25' reads 1.5 and 2.25 (got %g, %g)", d ? d[0] : -1, d ? d[1] : -1);
    addsl_tensor_release(S, t);
}

static void test_export(addsl_state *S, const char *dir) {
    char path[512], code[1024];
    snprintf(path, sizeof path, "%s/f.c", dir);
    int rc = addsl_set_number(S, "h", 1.5);
    snprintf(code, sizeof code,
             "fn f(x) { return (x * h + 0.25).sum() }\nexport_c(f, [ones(3)], \"%s\", name=\"f\")", path);
    if (!rc) rc = addsl_dostring(S, code, "<locale>");
    ok(rc == ADDSL_OK, "export_c ran (%.*s)", line_len(addsl_errmsg(S)), addsl_errmsg(S));
    const char *src = rc ? NULL : read_text(path);
    ok(src && strstr(src, "* 1.5f") && strstr(src, "0.25f") && !strstr(src, "1,5"),
       "export_c writes the C literals 1.5f and 0.25f, never 1,5");
}

static void count(void *ud, const char *word) { (void)word; (*(int *)ud)++; }

/* Completing 't.' of a tensor loads the whole op library, from a call that runs
 * no script: its literals too are read in the C locale (leaky_relu's default
 * negative_slope=0.01 is not 0). */
static void test_complete_loads(capture *c) {
    addsl_config cfg;
    addsl_config_init(&cfg);
    cfg.write = cap_write;
    cfg.write_ud = c;
    addsl_state *S = addsl_open(&cfg);
    int64_t shape[1] = {1};
    addsl_tensor *t = S ? addsl_tensor_new(S, ADDSL_FLOAT32, 1, shape) : NULL;
    if (!t) { ok(0, "open a second state"); addsl_close(S); return; }
    *(float *)addsl_tensor_data(t) = -100.0f;
    size_t start = 0;
    int in_string = 0, n = 0;
    int rc = addsl_set_global(S, "t", t);
    if (!rc) rc = addsl_complete(S, "t.", &start, &in_string, count, &n);
    ok(rc == ADDSL_OK && n > 10, "complete 't.' offers the tensor methods (%d)", n);
    prints(S, c, "print(leaky_relu(t))", "tensor([-1.])\n");
    addsl_tensor_release(S, t);
    addsl_close(S);
}

/* The library leaves the host's locale as it found it. */
static void test_host_kept(void) {
    char buf[16];
    snprintf(buf, sizeof buf, "%.1f", 2.5);
    ok(strcmp(buf, "2,5") == 0, "after the calls the host still prints 2,5 (got '%s')", buf);
    ok(uselocale((locale_t)0) == LC_GLOBAL_LOCALE, "the thread is back on the global locale");
    ok(strtod("2,5", NULL) == 2.5, "the host still parses 2,5");
}

int main(void) {
    if (!setlocale(LC_ALL, LOCALE_NAME)) {
        printf("1..0 # SKIP the locale %s cannot be set here\n", LOCALE_NAME);
        return 77;
    }
    ok(strcmp(localeconv()->decimal_point, ",") == 0, "%s has a decimal comma", LOCALE_NAME);
    char dir[] = "/tmp/addsl-locale-XXXXXX";
    if (!mkdtemp(dir)) { ok(0, "mkdtemp"); return tap_done(); }

    capture c;
    addsl_config cfg;
    addsl_config_init(&cfg);
    cfg.write = cap_write;
    cfg.write_ud = &c;
    cap_reset(&c);
    addsl_state *S = addsl_open(&cfg);
    ok(S != NULL, "open");
    if (S) {
        test_numbers(S, &c);
        test_csv(S, &c, dir);
        test_export(S, dir);
        addsl_close(S);
    }
    test_complete_loads(&c);
    test_host_kept();

    char path[600];
    snprintf(path, sizeof path, "%s/data.csv", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/f.c", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/f.h", dir);
    remove(path);
    rmdir(dir);
    return tap_done();
}
