/* test_api.c: TAP tests of every function of include/addsl.h, with their
 * error paths, through the public header only. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addsl.h"
#include "tap_api.h"

/* Output captured by the write callback. */
typedef struct capture { char out[8192]; size_t nout; char err[8192]; size_t nerr; } capture;

static void cap_write(void *ud, const char *text, size_t len, int is_err) {
    capture *c = ud;
    char *buf = is_err ? c->err : c->out;
    size_t *n = is_err ? &c->nerr : &c->nout;
    if (*n + len >= sizeof c->out) len = sizeof c->out - 1 - *n;
    memcpy(buf + *n, text, len);
    *n += len;
    buf[*n] = '\0';
}

static void cap_reset(capture *c) { c->nout = c->nerr = 0; c->out[0] = c->err[0] = '\0'; }

/* Completion candidates, joined with spaces. */
typedef struct completions { char text[4096]; size_t n; } completions;
static void collect(void *ud, const char *word) {
    completions *c = ud;
    size_t len = strlen(c->text), n = strlen(word);
    if (len + n + 2 < sizeof c->text) { memcpy(c->text + len, word, n); c->text[len + n] = ' '; c->text[len + n + 1] = '\0'; }
    c->n++;
}

static addsl_state *open_captured(capture *c) {
    addsl_config cfg;
    addsl_config_init(&cfg);
    cfg.write = cap_write;
    cfg.write_ud = c;
    cap_reset(c);
    return addsl_open(&cfg);
}

static void test_config(void) {
    addsl_config cfg;
    memset(&cfg, 0xab, sizeof cfg);
    addsl_config_init(&cfg);
    ok(cfg.alloc != NULL && cfg.write != NULL && cfg.interrupt == NULL, "config_init: default allocator and writer, no interrupt");
    ok(cfg.max_depth == 200 && cfg.interrupt_every == 4096 && cfg.memory_limit > 0, "config_init: default limits");
    ok(cfg.deny == 0, "config_init: every door open (deny 0)");
    ok(strcmp(addsl_version(), ADDSL_VERSION) == 0, "version is %s", addsl_version());
    addsl_state *S = addsl_open(NULL);
    ok(S != NULL, "open(NULL) uses the defaults");
    addsl_close(S);
    addsl_close(NULL);
    ok(1, "close(NULL) is harmless");
}

static void test_run(void) {
    capture c;
    addsl_state *S = open_captured(&c);
    ok(addsl_dostring(S, "let y = 2 * 3\nprint(y)", "chunk") == ADDSL_OK && strcmp(c.out, "6\n") == 0, "dostring runs and prints through the write callback");
    ok(strcmp(addsl_errmsg(S), "") == 0, "errmsg is empty after success");
    int rc = addsl_dostring(S, "let = 1", "bad.ad");
    ok(rc == ADDSL_ECOMPILE && contains(addsl_errmsg(S), "bad.ad:1:"), "syntax error: ECOMPILE with location");
    rc = addsl_dostring(S, "let a = 1\nlet b = zeros([2]) + zeros([3])", "rt.ad");
    ok(rc == ADDSL_ERUNTIME && contains(addsl_errmsg(S), "rt.ad:2:"), "runtime error: ERUNTIME with location");
    ok(addsl_dostring(S, NULL, "x") == ADDSL_EARG && addsl_dostring(NULL, "1", "x") == ADDSL_EARG, "dostring: NULL code or state is EARG");
    ok(addsl_dostring(S, "print(1)", NULL) == ADDSL_OK, "dostring: NULL name is <string>");
    ok(addsl_dostring(S, "exit(3)", "x") == ADDSL_EXIT && addsl_exit_code(S) == 3, "exit(3): ADDSL_EXIT and exit_code 3");
    ok(addsl_exit_code(NULL) == 0 && strcmp(addsl_errmsg(NULL), "no state") == 0, "NULL state: exit_code 0, errmsg 'no state'");
    rc = addsl_dofile(S, "/nonexistent/model.ad");
    ok(rc == ADDSL_EIO && contains(addsl_errmsg(S), "/nonexistent/model.ad"), "dofile of a missing file: EIO naming it");
    ok(addsl_dofile(S, NULL) == ADDSL_EARG && addsl_dofile(NULL, "x") == ADDSL_EARG, "dofile: NULL is EARG");
    char path[] = "/tmp/addsl_api_XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f) { fputs("let from_file = 41 + 1\n", f); fclose(f); }
    double x = 0;
    ok(f && addsl_dofile(S, path) == ADDSL_OK && addsl_get_number(S, "from_file", &x) == ADDSL_OK && x == 42, "dofile runs a file");
    remove(path);
    cap_reset(&c);
    ok(addsl_dorepl(S, "1 + 1", "<stdin>") == ADDSL_OK && strcmp(c.out, "2\n") == 0, "dorepl prints an expression's value");
    ok(addsl_dorepl(S, NULL, "x") == ADDSL_EARG, "dorepl: NULL code is EARG");
    ok(addsl_incomplete(S, "fn f() {") == 1 && addsl_incomplete(S, "let a = 1") == 0 && addsl_incomplete(S, NULL) == 0, "incomplete");
    ok(addsl_incomplete(S, "tensor([1.0\n)") == 0 && addsl_incomplete(S, "f(]") == 0, "incomplete: a closer that does not match is complete (an error)");
    {
        completions got = {"", 0};
        size_t start = 99;
        int in_str = -1;
        ok(addsl_dostring(S, "let wq_total = 1", "c") == ADDSL_OK
           && addsl_complete(S, "print(wq_t", &start, &in_str, collect, &got) == ADDSL_OK
           && start == 6 && in_str == 0 && strcmp(got.text, "wq_total ") == 0, "complete: a global");
        got.text[0] = '\0';
        ok(addsl_complete(S, "zeros(2, dty", &start, &in_str, collect, &got) == ADDSL_OK
           && start == 9 && strncmp(got.text, "dtype= ", 7) == 0, "complete: a keyword argument first");
        got.text[0] = '\0';
        ok(addsl_complete(S, "zeros(1).resha", &start, &in_str, collect, &got) == ADDSL_OK && got.text[0] == '\0',
           "complete: no guess after a call's result");
        ok(addsl_dostring(S, "let tz = zeros(1)", "c") == ADDSL_OK
           && addsl_complete(S, "tz.resha", &start, &in_str, collect, &got) == ADDSL_OK
           && start == 3 && strcmp(got.text, "reshape reshape_as ") == 0, "complete: methods of a tensor");
        got.text[0] = '\0';
        ok(addsl_complete(S, "load(\"da", &start, &in_str, collect, &got) == ADDSL_OK && in_str == 1 && got.text[0] == '\0',
           "complete: inside a string, nothing (the host's file names)");
        ok(addsl_complete(S, NULL, &start, &in_str, collect, &got) == ADDSL_EARG, "complete: NULL text is EARG");
    }
    cap_reset(&c);
    ok(addsl_disasm(S, "let q = 1 + 2", "d") == ADDSL_OK && c.nout > 0, "disasm writes a listing");
    ok(addsl_disasm(S, NULL, "d") == ADDSL_EARG && addsl_disasm(S, "let = ", "d") == ADDSL_ECOMPILE, "disasm: NULL is EARG, bad code ECOMPILE");
    const char *argv[] = {"one", "two"};
    cap_reset(&c);
    ok(addsl_set_args(S, 2, argv) == ADDSL_OK && addsl_dostring(S, "print(len(args), args[1])", "a") == ADDSL_OK
       && strcmp(c.out, "2 two\n") == 0, "set_args: the script sees args");
    ok(addsl_set_args(S, -1, NULL) == ADDSL_EARG && addsl_set_args(S, 1, NULL) == ADDSL_EARG, "set_args: bad counts are EARG");
    addsl_interrupt(S);
    addsl_interrupt(NULL);
    ok(addsl_dostring(S, "let z = 1", "i") == ADDSL_OK, "a pending addsl_interrupt is cleared when a run starts");
    addsl_close(S);
}

static int stop_after(void *ud) { int *n = ud; return ++*n >= 3; }

static void test_limits(void) {
    addsl_config cfg;
    addsl_config_init(&cfg);
    capture c;
    cap_reset(&c);
    cfg.write = cap_write; cfg.write_ud = &c;
    int polls = 0;
    cfg.interrupt = stop_after; cfg.interrupt_ud = &polls; cfg.interrupt_every = 10;
    addsl_state *S = addsl_open(&cfg);
    int rc = addsl_dostring(S, "let i = 0\nwhile true { i += 1 }", "loop.ad");
    ok(rc == ADDSL_EINTERRUPT && polls == 3, "interrupt callback stops a runaway loop (EINTERRUPT after %d polls)", polls);
    addsl_close(S);

    addsl_config_init(&cfg);
    cfg.write = cap_write; cfg.write_ud = &c;
    cfg.memory_limit = 1 << 20;
    S = addsl_open(&cfg);
    rc = addsl_dostring(S, "let big = zeros([1000000])", "mem.ad");
    ok(rc == ADDSL_ENOMEM, "memory_limit: a 4 MB tensor under a 1 MB limit is ENOMEM");
    ok(addsl_dostring(S, "let small = zeros([1000])", "mem.ad") == ADDSL_OK, "the state works after ENOMEM");
    addsl_close(S);

    addsl_config_init(&cfg);
    cfg.write = cap_write; cfg.write_ud = &c;
    cfg.max_depth = 20;
    S = addsl_open(&cfg);
    rc = addsl_dostring(S, "fn r(n) { if n == 0 { return 0 }\n return 1 + r(n - 1) }\nlet a = r(15)", "d.ad");
    ok(rc == ADDSL_OK, "max_depth 20 allows 15 nested calls");
    rc = addsl_dostring(S, "let b = r(50)", "d.ad");
    ok(rc == ADDSL_ERUNTIME && contains(addsl_errmsg(S), "stack overflow"), "max_depth 20 stops 50 nested calls");
    addsl_close(S);

    /* Closed doors: extern and files fail; the op library and its kernels still work. */
    addsl_config_init(&cfg);
    cfg.write = cap_write; cfg.write_ud = &c;
    cfg.deny = ADDSL_DENY_EXTERN | ADDSL_DENY_FILES;
    S = addsl_open(&cfg);
    rc = addsl_dostring(S, "extern \"libm.so.6\" cbrt(f64) -> f64\nlet y = cbrt(8.0)", "x.ad");
    ok(rc == ADDSL_ERUNTIME && contains(addsl_errmsg(S), "x.ad:1:1") && contains(addsl_errmsg(S), "ADDSL_DENY_EXTERN"),
       "deny EXTERN: an extern declaration is a runtime error at its line");
    rc = addsl_dostring(S, "save(\"/nonexistent-dir/t.npy\", zeros([2]))", "f.ad");
    ok(rc == ADDSL_ERUNTIME && contains(addsl_errmsg(S), "ADDSL_DENY_FILES"), "deny FILES: save() refused before touching the file system");
    rc = addsl_dostring(S, "let t = load(\"/etc/passwd\")", "f.ad");
    ok(rc == ADDSL_ERUNTIME && contains(addsl_errmsg(S), "load('/etc/passwd')") && contains(addsl_errmsg(S), "ADDSL_DENY_FILES"),
       "deny FILES: load() refused");
    rc = addsl_dostring(S, "let x = tensor([2.0, 1.0], requires_grad=true)\nbackward(sort(x)[0].sum() + sin(x).sum())\nlet k = call_kernel(\"neg_f32\", x.detach())", "ok.ad");
    ok(rc == ADDSL_OK, "deny: ops, autograd and shipped kernels still run");
    addsl_close(S);

    addsl_config_init(&cfg);
    cfg.write = cap_write; cfg.write_ud = &c;
    S = addsl_open(&cfg);
    rc = addsl_dostring(S, "extern \"libm.so.6\" cbrt(f64) -> f64\nassert(cbrt(8.0) == 2.0)", "x.ad");
    ok(rc == ADDSL_OK, "default config: extern works");
    addsl_close(S);
}

static void test_tensors(void) {
    capture c;
    addsl_state *S = open_captured(&c);
    int64_t shape[2] = {2, 3};
    addsl_tensor *t = addsl_tensor_new(S, ADDSL_FLOAT32, 2, shape);
    ok(t && addsl_tensor_ndim(t) == 2 && addsl_tensor_shape(t)[1] == 3 && addsl_tensor_numel(t) == 6
       && addsl_tensor_dtype(t) == ADDSL_FLOAT32, "tensor_new: shape, ndim, numel, dtype");
    ok(addsl_tensor_strides(t)[0] == 3 && addsl_tensor_strides(t)[1] == 1 && addsl_tensor_is_contiguous(t), "strides and contiguity");
    float *p = addsl_tensor_data(t);
    for (int i = 0; i < 6; i++) p[i] = (float)i;
    ok(addsl_set_global(S, "x", t) == ADDSL_OK, "set_global borrows the tensor");
    ok(addsl_dostring(S, "let y = x * 2\nlet xt = x.T", "t") == ADDSL_OK, "script uses the host tensor");
    addsl_tensor *y = NULL;
    ok(addsl_get_tensor(S, "y", &y) == ADDSL_OK && ((float *)addsl_tensor_data(y))[5] == 10.0f, "get_tensor reads the result");
    addsl_tensor_release(S, y);
    addsl_tensor *xt = NULL, *xc = NULL;
    ok(addsl_get_tensor(S, "xt", &xt) == ADDSL_OK && !addsl_tensor_is_contiguous(xt), "a transposed view is not contiguous");
    xc = addsl_tensor_contiguous(S, xt);
    ok(xc && addsl_tensor_is_contiguous(xc) && ((float *)addsl_tensor_data(xc))[1] == 3.0f, "tensor_contiguous copies a view");
    addsl_tensor_release(S, xc);
    ok(addsl_tensor_contiguous(S, NULL) == NULL && contains(addsl_errmsg(S), "NULL"), "tensor_contiguous(NULL) fails");
    addsl_tensor *r = addsl_tensor_retain(xt);
    ok(r == xt && addsl_tensor_retain(NULL) == NULL, "retain gives the same tensor");
    addsl_tensor_release(S, r);
    addsl_tensor_release(S, xt);
    addsl_tensor *y2 = NULL;
    ok(addsl_get_tensor(S, "nope", &y2) == ADDSL_EARG && y2 == NULL && contains(addsl_errmsg(S), "nope"), "get_tensor of a missing global is EARG");
    addsl_dostring(S, "let n = 5", "t");
    ok(addsl_get_tensor(S, "n", &y2) == ADDSL_EARG && contains(addsl_errmsg(S), "not a tensor"), "get_tensor of a number is EARG");
    /* A host global named like a library op hides it from scripts only. */
    ok(addsl_set_global(S, "t", t) == ADDSL_OK
       && addsl_dostring(S, "let tt = t.t()\nlet m = mm(ones([3, 2], requires_grad=true), t)\nbackward(m.sum())", "t") == ADDSL_OK,
       "a host global 't' leaves the op t to x.t() and to mm's gradient formula");
    addsl_tensor *tt = NULL, *tback = NULL;
    ok(addsl_get_tensor(S, "t", &tback) == ADDSL_OK && tback == t && addsl_get_tensor(S, "tt", &tt) == ADDSL_OK
       && addsl_tensor_shape(tt)[0] == 3 && addsl_tensor_shape(tt)[1] == 2, "get_tensor('t') is the host's tensor; t.t() is its transpose");
    addsl_tensor_release(S, tt);
    addsl_tensor_release(S, tback);
    ok(addsl_set_global(S, NULL, t) == ADDSL_EARG && addsl_set_global(S, "q", NULL) == ADDSL_EARG && addsl_get_tensor(S, "n", NULL) == ADDSL_EARG, "set/get_tensor NULL arguments are EARG");
    ok(addsl_tensor_new(S, (addsl_dtype)9, 1, shape) == NULL && addsl_tensor_new(S, ADDSL_FLOAT32, -1, shape) == NULL
       && addsl_tensor_new(S, ADDSL_FLOAT32, 2, NULL) == NULL && addsl_tensor_new(NULL, ADDSL_FLOAT32, 0, NULL) == NULL, "tensor_new rejects bad arguments");
    int64_t neg[1] = {-2};
    ok(addsl_tensor_new(S, ADDSL_FLOAT32, 1, neg) == NULL, "tensor_new rejects a negative size");
    ok(addsl_tensor_data(NULL) == NULL && addsl_tensor_ndim(NULL) == -1 && addsl_tensor_shape(NULL) == NULL
       && addsl_tensor_numel(NULL) == 0 && addsl_tensor_strides(NULL) == NULL && !addsl_tensor_is_contiguous(NULL), "accessors accept NULL");
    addsl_tensor_release(S, NULL);
    double v = 0;
    addsl_tensor *one = addsl_tensor_new(S, ADDSL_FLOAT64, 0, NULL);
    *(double *)addsl_tensor_data(one) = 2.5;
    ok(addsl_tensor_item(S, one, &v) == ADDSL_OK && v == 2.5, "tensor_item of a 0-d tensor");
    ok(addsl_tensor_item(S, t, &v) == ADDSL_EARG && addsl_tensor_item(S, NULL, &v) == ADDSL_EARG, "tensor_item of 6 elements or NULL is EARG");
    addsl_tensor_release(S, one);
    ok(addsl_set_number(S, "k", 0.25) == ADDSL_OK && addsl_get_number(S, "k", &v) == ADDSL_OK && v == 0.25, "set_number / get_number");
    addsl_dostring(S, "let s = \"str\"\nlet one_t = tensor([7.0])", "t");
    ok(addsl_get_number(S, "s", &v) == ADDSL_EARG && addsl_get_number(S, "zz", &v) == ADDSL_EARG, "get_number of a string or a missing name is EARG");
    ok(addsl_get_number(S, "one_t", &v) == ADDSL_OK && v == 7.0, "get_number of a one-element tensor");
    ok(addsl_set_number(S, NULL, 1) == ADDSL_EARG && addsl_get_number(S, "k", NULL) == ADDSL_EARG, "set/get_number NULL is EARG");
    addsl_tensor_release(S, t);
    addsl_close(S);
}

static int released;
static void on_release(void *ud, void *data) { (void)data; released += *(int *)ud; }

static void test_wrap(void) {
    capture c;
    addsl_state *S = open_captured(&c);
    double host[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    addsl_tensor *b = addsl_tensor_wrap(S, ADDSL_FLOAT64, 1, shape, host, NULL, NULL);
    ok(b && addsl_tensor_data(b) == (void *)host, "wrap (borrowed) shares the host buffer");
    addsl_set_global(S, "h", b);
    ok(addsl_dostring(S, "h[0] = 10.0", "w") == ADDSL_OK && host[0] == 10.0, "a script write lands in host memory");
    host[3] = 40.0;
    double s = 0;
    ok(addsl_dostring(S, "let hs = sum(h).item()", "w") == ADDSL_OK && addsl_get_number(S, "hs", &s) == ADDSL_OK && s == 55.0, "the script sees host writes");
    addsl_tensor_release(S, b);
    float *owned = malloc(3 * sizeof(float));
    int one = 1;
    int64_t s3[1] = {3};
    released = 0;
    addsl_tensor *o = addsl_tensor_wrap(S, ADDSL_FLOAT32, 1, s3, owned, on_release, &one);
    addsl_set_global(S, "o", o);
    addsl_tensor_release(S, o);
    ok(released == 0, "an owned wrap is not released while the script holds it");
    addsl_dostring(S, "o = none", "w");
    ok(released == 1, "the release callback runs once on the last reference");
    free(owned);
    ok(addsl_tensor_wrap(S, ADDSL_FLOAT32, 1, s3, NULL, NULL, NULL) == NULL && contains(addsl_errmsg(S), "addsl_tensor_wrap"), "wrap of NULL data is EARG");
    ok(addsl_tensor_wrap(NULL, ADDSL_FLOAT32, 1, s3, host, NULL, NULL) == NULL, "wrap without a state is NULL");
    addsl_close(S);
}

static void test_calls(void) {
    capture c;
    addsl_state *S = open_captured(&c);
    addsl_dostring(S, "fn f(x) { return x * 3 }\nfn g(a, k, s) { return a * k, len(s) }\nfn n() { return 4 }\nfn none_f() { }\nlet notfn = 3", "c");
    int64_t shape[1] = {2};
    addsl_tensor *x = addsl_tensor_new(S, ADDSL_FLOAT32, 1, shape), *res = NULL;
    ((float *)addsl_tensor_data(x))[1] = 2.0f;
    addsl_tensor *args[1] = {x};
    ok(addsl_call(S, "f", 1, args, &res) == ADDSL_OK && res && ((float *)addsl_tensor_data(res))[1] == 6.0f, "call f(x) returns a tensor");
    addsl_tensor_release(S, res);
    ok(addsl_call(S, "n", 0, NULL, &res) == ADDSL_OK && res && addsl_tensor_ndim(res) == 0, "a number result becomes a 0-d tensor");
    addsl_tensor_release(S, res);
    ok(addsl_call(S, "none_f", 0, NULL, &res) == ADDSL_OK && res == NULL, "a none result gives NULL");
    ok(addsl_call(S, "f", 0, NULL, NULL) == ADDSL_ERUNTIME && contains(addsl_errmsg(S), "f()"), "call with a missing argument is ERUNTIME");
    ok(addsl_call(S, "missing", 0, NULL, NULL) == ADDSL_EARG && contains(addsl_errmsg(S), "missing"), "call of an unknown name is EARG");
    ok(addsl_call(S, "notfn", 0, NULL, NULL) == ADDSL_ERUNTIME, "call of a number is ERUNTIME");
    addsl_tensor *nul[1] = {NULL};
    ok(addsl_call(S, "f", 1, nul, NULL) == ADDSL_EARG && addsl_call(S, NULL, 0, NULL, NULL) == ADDSL_EARG, "call: NULL arguments are EARG");
    addsl_value in[3] = {addsl_tensor_value(x), addsl_number(0.5), addsl_string("abcd")}, out[3];
    int rc = addsl_callv(S, "g", 3, in, 3, out);
    ok(rc == ADDSL_OK && out[0].type == ADDSL_TTENSOR && ((float *)addsl_tensor_data(out[0].as.tensor))[1] == 1.0f
       && out[1].type == ADDSL_TNUMBER && out[1].as.number == 4 && out[2].type == ADDSL_TNONE, "callv spreads a tuple over results");
    for (int i = 0; i < 3; i++) addsl_value_release(S, &out[i]);
    ok(out[0].type == ADDSL_TNONE, "value_release resets to none");
    ok(addsl_callv(S, "n", 0, NULL, 1, out) == ADDSL_OK && out[0].type == ADDSL_TNUMBER && out[0].as.number == 4, "callv: a number result");
    ok(addsl_callv(S, "g", 3, in, 0, NULL) == ADDSL_OK, "callv may drop results");
    addsl_dostring(S, "fn lst() { return [1] }\nfn b() { return true }", "c");
    ok(addsl_callv(S, "lst", 0, NULL, 1, out) == ADDSL_OK && out[0].type == ADDSL_TOTHER, "callv: a list is TOTHER");
    ok(addsl_callv(S, "b", 0, NULL, 1, out) == ADDSL_OK && out[0].type == ADDSL_TBOOL && out[0].as.boolean, "callv: a bool result");
    addsl_value bad = {(addsl_type)42, {0}};
    ok(addsl_callv(S, "f", 1, &bad, 1, out) == ADDSL_EARG && contains(addsl_errmsg(S), "argument 0"), "callv: a bad tag is EARG");
    addsl_value nt = addsl_tensor_value(NULL);
    ok(addsl_callv(S, "f", 1, &nt, 1, out) == ADDSL_EARG, "callv: a NULL tensor is EARG");
    ok(addsl_callv(S, "zz", 0, NULL, 0, NULL) == ADDSL_EARG && addsl_callv(S, "f", 1, NULL, 0, NULL) == ADDSL_EARG, "callv: unknown name, NULL args");
    addsl_value_release(S, NULL);
    addsl_tensor_release(S, x);
    addsl_close(S);
}

static void test_autograd(void) {
    capture c;
    addsl_state *S = open_captured(&c);
    int64_t shape[1] = {3};
    addsl_tensor *w = addsl_tensor_new(S, ADDSL_FLOAT32, 1, shape);
    float *wp = addsl_tensor_data(w);
    wp[0] = 1; wp[1] = 2; wp[2] = 3;
    ok(addsl_tensor_set_requires_grad(S, w, 1) == ADDSL_OK && addsl_tensor_requires_grad(w), "set_requires_grad on a float leaf");
    addsl_dostring(S, "fn loss(w) { return sum(w * w) }", "m");
    addsl_tensor *args[1] = {w}, *l = NULL, *g = NULL;
    ok(addsl_call(S, "loss", 1, args, &l) == ADDSL_OK && l, "forward from C");
    ok(addsl_backward(S, l, NULL) == ADDSL_OK, "backward from C");
    ok(addsl_tensor_grad(S, w, &g) == ADDSL_OK && g && ((float *)addsl_tensor_data(g))[2] == 6.0f, "grad read back: d/dw sum(w*w) = 2w");
    addsl_tensor_release(S, g);
    ok(addsl_tensor_set_requires_grad(S, l, 0) == ADDSL_EARG && contains(addsl_errmsg(S), "leaf"), "requires_grad on a non-leaf is EARG");
    ok(addsl_backward(S, l, NULL) == ADDSL_ERUNTIME, "a second backward through a freed graph is an error");
    addsl_tensor_release(S, l);
    ok(addsl_tensor_zero_grad(S, w) == ADDSL_OK && addsl_tensor_grad(S, w, &g) == ADDSL_OK && g == NULL, "zero_grad drops .grad");
    addsl_tensor *grads[1];
    l = NULL;
    addsl_call(S, "loss", 1, args, &l);
    ok(addsl_grad(S, l, 1, args, grads) == ADDSL_OK && grads[0] && ((float *)addsl_tensor_data(grads[0]))[0] == 2.0f, "grad(output, inputs) from C");
    addsl_tensor_release(S, grads[0]);
    addsl_tensor_release(S, l);
    addsl_dostring(S, "let vec = tensor([1.0, 2.0], requires_grad=true) * 2", "m");
    addsl_tensor *vec = NULL;
    addsl_get_tensor(S, "vec", &vec);
    ok(addsl_backward(S, vec, NULL) == ADDSL_ERUNTIME && contains(addsl_errmsg(S), "grad can be implicitly created only for scalar outputs"), "backward of a vector needs a grad_output");
    int64_t two[1] = {2};
    addsl_tensor *go = addsl_tensor_new(S, ADDSL_FLOAT32, 1, two);
    ok(addsl_backward(S, vec, go) == ADDSL_OK, "backward with a grad_output");
    addsl_tensor_release(S, go);
    addsl_tensor_release(S, vec);
    addsl_tensor *i64 = addsl_tensor_new(S, ADDSL_INT64, 1, shape);
    ok(addsl_tensor_set_requires_grad(S, i64, 1) == ADDSL_EARG && contains(addsl_errmsg(S), "floating point"), "requires_grad on int64 is EARG");
    ok(addsl_tensor_set_requires_grad(S, NULL, 1) == ADDSL_EARG && addsl_backward(S, NULL, NULL) == ADDSL_EARG
       && addsl_tensor_grad(S, NULL, &g) == ADDSL_EARG && addsl_tensor_zero_grad(S, NULL) == ADDSL_EARG
       && addsl_grad(S, w, 0, args, grads) == ADDSL_EARG && !addsl_tensor_requires_grad(NULL), "autograd functions reject NULL");
    addsl_tensor *nul[1] = {NULL};
    ok(addsl_grad(S, w, 1, nul, grads) == ADDSL_EARG, "grad with a NULL input is EARG");
    addsl_tensor_release(S, i64);
    addsl_tensor_release(S, w);
    addsl_close(S);
}

static void host_scale(float *out, const float *x, int64_t n, double k) {
    for (int64_t i = 0; i < n; i++) out[i] = (float)(x[i] * k);
}
static void host_triple_f32(float *out, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = 3 * x[i];
}
static double host_add(double a, double b) { return a + b; }

static void test_kernels(void) {
    capture c;
    addsl_state *S = open_captured(&c);
    ok(addsl_register_kernel(S, "my_scale", (void (*)(void))host_scale, "v(p,p,i64,f64)") == ADDSL_OK, "register_kernel");
    ok(addsl_register_kernel(S, "triple_f32", (void (*)(void))host_triple_f32, "v(p,p,i64)") == ADDSL_OK
       && addsl_register_kernel(S, "hadd", (void (*)(void))host_add, "f64(f64,f64)") == ADDSL_OK, "register two more");
    int rc = addsl_dostring(S,
        "let x = tensor([1.0, 2.0])\nlet o = zeros([2])\ncall_kernel(\"my_scale\", o, x, 2, 0.5)\n"
        "print(o)\nprint(call_kernel(\"hadd\", 1, 2.5))\n"
        "op triple(x) {\n    forward: kernel(\"triple_f32\")\n    x: 3 * grad\n}\n"
        "let w = tensor([1.0, 2.0], requires_grad=true)\nbackward(sum(triple(w)))\nprint(w.grad)", "k");
    ok(rc == ADDSL_OK && strcmp(c.out, "tensor([0.5000, 1.0000])\n3.5\ntensor([3., 3.])\n") == 0,
       "host kernels from call_kernel and as an op's forward, differentiated");
    rc = addsl_dostring(S, "call_kernel(\"triple_f32\", tensor([1.0], dtype=float64))", "k");
    ok(rc == ADDSL_ERUNTIME && contains(addsl_errmsg(S), "triple_f32(): expected a float32 tensor"), "a _f32 kernel checks the dtype");
    rc = addsl_dostring(S, "call_kernel(\"hadd\", 1)", "k");
    ok(rc == ADDSL_ERUNTIME && contains(addsl_errmsg(S), "hadd() takes 2 arguments but 1 was given"), "arity mismatch names the kernel");
    ok(addsl_register_kernel(S, "bad", (void (*)(void))host_add, "f64(f64,x)") == ADDSL_EARG && contains(addsl_errmsg(S), "bad kernel signature"), "a bad signature is EARG");
    ok(addsl_register_kernel(S, "bad", (void (*)(void))host_add, "f64(v)") == ADDSL_EARG && addsl_register_kernel(S, "bad", (void (*)(void))host_add, "f64") == ADDSL_EARG, "v as an argument, no parens: EARG");
    ok(addsl_register_kernel(S, "add_f32", (void (*)(void))host_add, "f64(f64,f64)") == ADDSL_EARG && contains(addsl_errmsg(S), "shipped"), "a shipped kernel cannot be replaced");
    ok(addsl_register_kernel(S, NULL, (void (*)(void))host_add, "v()") == ADDSL_EARG && addsl_register_kernel(S, "z", NULL, "v()") == ADDSL_EARG
       && addsl_register_kernel(S, "z", (void (*)(void))host_add, NULL) == ADDSL_EARG && addsl_register_kernel(NULL, "z", (void (*)(void))host_add, "v()") == ADDSL_EARG, "register_kernel NULL arguments are EARG");
    ok(addsl_register_kernel(S, "", (void (*)(void))host_add, "v()") == ADDSL_EARG, "an empty kernel name is EARG");
    addsl_close(S);
}


/* A host's scripts import files: relative to the chunk's own file for
 * addsl_dofile, relative to the current directory for addsl_dostring. */
static void test_import(void) {
    capture c;
    char dir[] = "/tmp/addsl-api-import.XXXXXX";
    if (!mkdtemp(dir)) { ok(0, "import: mkdtemp"); return; }
    char mod[256], main_file[256];
    snprintf(mod, sizeof mod, "%s/lib.ad", dir);
    snprintf(main_file, sizeof main_file, "%s/main.ad", dir);
    FILE *f = fopen(mod, "w");
    if (f) { fputs("fn twice(x) { return 2 * x }\nlet k = 21\n", f); fclose(f); }
    f = fopen(main_file, "w");
    if (f) { fputs("import \"lib.ad\" as m\nlet y = m.twice(m.k)\n", f); fclose(f); }
    addsl_state *S = open_captured(&c);
    ok(addsl_dofile(S, main_file) == ADDSL_OK, "import: dofile imports a file beside the script (%s)", addsl_errmsg(S));
    addsl_tensor *t = NULL;
    ok(addsl_dostring(S, "let yt = tensor(y, dtype=float32)", "c") == ADDSL_OK && addsl_get_tensor(S, "yt", &t) == ADDSL_OK &&
       *(float *)addsl_tensor_data(t) == 42.0f, "import: the module's function and value are m.name");
    addsl_tensor_release(S, t);
    char code[512];
    snprintf(code, sizeof code, "import \"%s\" as m2\nprint(m2.k)", mod);
    cap_reset(&c);
    ok(addsl_dostring(S, code, "chunk") == ADDSL_OK && strcmp(c.out, "21\n") == 0, "import: dostring imports an absolute path");
    ok(addsl_dostring(S, "import \"no-such-file.ad\" as z", "chunk") != ADDSL_OK &&
       contains(addsl_errmsg(S), "no-such-file.ad"), "import: a missing file is an error naming it");
    addsl_close(S);
    remove(mod);
    remove(main_file);
    rmdir(dir);
}

int main(void) {
    test_config();
    test_run();
    test_limits();
    test_tensors();
    test_wrap();
    test_calls();
    test_autograd();
    test_kernels();
    test_import();
    return tap_done();
}
