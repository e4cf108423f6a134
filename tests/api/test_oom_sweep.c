/* test_oom_sweep.c: allocation failure at every point of addsl_open, and at
 * the points of a script that touches every subsystem, each in a child process.
 *
 * Each point runs twice: that allocation alone fails, then it and every
 * later one (the memory does not come back until the usability check).
 * A failure point passes when the call ends in ADDSL_OK or a clean error
 * (ADDSL_ENOMEM, or the error the script raises anyway), the state stays
 * usable (a later script prints the right value), and addsl_close frees every
 * block. A point that crashes is reported with its signal, so one bad point
 * does not hide the others. addsl_open is swept at every point. The script's
 * points: the first ADDSL_OOM_HEAD (default 400: its compile), then every
 * ADDSL_OOM_STRIDE-th (default 23), plus ADDSL_OOM_SAMPLE (default 150) random ones (seed ADDSL_OOM_SEED, default from the clock, printed);
 * ADDSL_OOM_FULL=1 sweeps them all (`make check-oom`). ADDSL_OOM_OPEN_STRIDE
 * (default 1) thins the open's points, for a run under valgrind. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "addsl.h"
#include "alloc_hook.h"
#include "tap_api.h"

/* Parsing, closures, dicts, strings, f-strings, tensors, views, autograd,
 * compile(), export_c, npy/npz save and load (into DIR). */
static const char *const script_body =
    "let xs = [1, 2, 3]\n"
    "append(xs, 4)\n"
    "let d = {\"a\": 1, \"b\": [xs, \"s\"]}\n"
    "d[\"c\"] = str(d)\n"
    "fn make(k) {\n"
    "    let c = 0\n"
    "    fn f(v) { c += v; return c * k }\n"
    "    return f\n"
    "}\n"
    "let f = make(3)\n"
    "let s = f\"{f(2)} and {len(xs):>4} {xs} {3.5:.2f}\"\n"
    "let w = tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=true)\n"
    "let x = tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])\n"
    "let l = (sigmoid(x @ w) ** 2).sum()\n"
    "backward(l)\n"
    "let g = w.grad\n"
    "let v = x[1:, 0]\n"
    "fn step(a) { return (a * a + 1).sum() }\n"
    "let cs = compile(step)\n"
    "cs(x)\n"
    "cs(x)\n"
    "save(DIR + \"/t.npy\", x)\n"
    "let y = load(DIR + \"/t.npy\")\n"
    "save(DIR + \"/d.npz\", {\"x\": x, \"w\": w.detach()})\n"
    "let z = load(DIR + \"/d.npz\")\n"
    "export_c(step, [x], DIR + \"/step.c\")\n"
    "let srt = sorted([3, 1, 2])\n"
    "let comp = [i * i for i in range(5) if i % 2 == 0]\n"
    "let up = s.upper()\n"
    "let total = y.sum().item() + z[\"x\"].sum().item() + v.sum().item() + g.sum().item()\n";

/* Scripts that fail on purpose (error messages, tracebacks, hints), with the
 * code each gives when nothing else fails. */
static const struct { const char *code; int rc; } errors[] = {
    {"fn inner(t) { return t + zeros([4]) }\nfn outer() { return inner(zeros([2, 3])) }\nouter()\n", ADDSL_ERUNTIME},
    {"let q = (1, 2\n", ADDSL_ECOMPILE},
    {"let total2 = totl + 1\n", ADDSL_ECOMPILE},
};
#define NERRORS ((int)(sizeof errors / sizeof errors[0]))

typedef struct capture { char buf[64]; size_t n; } capture;

static void capture_write(void *ud, const char *text, size_t len, int is_err) {
    capture *c = ud;
    if (is_err) return;
    for (size_t i = 0; i < len && c->n + 1 < sizeof c->buf; i++) c->buf[c->n++] = text[i];
    c->buf[c->n] = 0;
}

static char script[4096];
static alloc_count F;
static capture out;

static int persist; /* this run's failures last (alloc_count.persist) */

static addsl_state *open_counted(long fail_at) {
    memset(&F, 0, sizeof F);
    F.fail_at = fail_at;
    F.persist = persist;
    out.n = 0; out.buf[0] = 0;
    addsl_config cfg;
    addsl_config_init(&cfg);
    cfg.alloc = counting_alloc;
    cfg.alloc_ud = &F;
    cfg.write = capture_write;
    cfg.write_ud = &out;
    return addsl_open(&cfg);
}

/* The state works after whatever failed: a script runs and prints 3. */
static int usable(addsl_state *S) {
    F.fail_at = 0;
    F.persist = 0;
    out.n = 0; out.buf[0] = 0;
    int rc = addsl_dostring(S, "let after = [1, 2]\nprint(after[0] + after[1])\n", "after.ad");
    if (rc != ADDSL_OK || strcmp(out.buf, "3\n") != 0) {
        printf("#   not usable afterwards: rc %d, output '%s', %s\n", rc, out.buf, addsl_errmsg(S));
        return 0;
    }
    return 1;
}

static int clean_error(addsl_state *S, int rc, int expected, const char *what) {
    if (rc == ADDSL_OK || rc == expected) return 1;
    if (rc == ADDSL_ENOMEM && F.failed && addsl_errmsg(S)[0]) return 1;
    printf("#   %s: rc %d (failed=%d): %s\n", what, rc, F.failed, addsl_errmsg(S));
    return 0;
}

/* The script and the failing scripts; 1 when every result is clean. */
static int run_scripts(addsl_state *S) {
    int good = clean_error(S, addsl_dostring(S, script, "sweep.ad"), ADDSL_OK, "script");
    for (int i = 0; i < NERRORS; i++)
        good &= clean_error(S, addsl_dostring(S, errors[i].code, "err.ad"), errors[i].rc, "error script");
    return good;
}

/* In a child: open failing at allocation n of the open. */
static int child_open(long n) {
    addsl_state *S = open_counted(n);
    if (!S) {
        if (F.live != 0 || !F.failed) { printf("#   NULL state, %ld blocks leaked, failed=%d\n", F.live, F.failed); return 0; }
        return 1;
    }
    int good = usable(S);
    addsl_close(S);
    if (F.live != 0) { printf("#   %ld blocks leaked at close\n", F.live); good = 0; }
    return good;
}

/* In a child of the state S: the scripts with allocation n after the open failing. */
static int child_script(addsl_state *S, long n) {
    F.fail_at = F.count + n;
    int good = run_scripts(S);
    good &= usable(S);
    addsl_close(S);
    if (F.live != 0) { printf("#   %ld blocks leaked at close\n", F.live); good = 0; }
    return good;
}

enum { PT_OK, PT_BAD, PT_CRASH };

/* Runs one point in a child; 'S' is the opened state for a script point. */
static int point_mode(addsl_state *S, long n, const char *what) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return PT_CRASH; }
    if (pid == 0) {
        int good;
    if (S) { F.persist = persist; good = child_script(S, n); }
    else good = child_open(n);
        fflush(stdout);
        _exit(good ? 0 : 1);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) < 0) return PT_CRASH;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return PT_OK;
    const char *mode = persist ? " and every later one" : "";
    if (WIFSIGNALED(st)) { printf("# %s: failing allocation %ld%s: killed by signal %d\n", what, n, mode, WTERMSIG(st)); return PT_CRASH; }
    printf("# %s: failing allocation %ld%s: unclean (exit %d)\n", what, n, mode, WEXITSTATUS(st));
    return PT_BAD;
}

/* Each point twice: the one allocation fails, then every one from it on
 * (as a capped allocator does; a retry that succeeds hides nothing then). */
static int point(addsl_state *S, long n, const char *what) {
    persist = 0;
    int r1 = point_mode(S, n, what);
    persist = 1;
    int r2 = point_mode(S, n, what);
    persist = 0;
    return r1 > r2 ? r1 : r2;
}

static long env_long(const char *name, long dflt) {
    const char *e = getenv(name);
    return e && *e ? atol(e) : dflt;
}

int main(void) {
    char dir[] = "/tmp/addsl-oom-XXXXXX";
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    snprintf(script, sizeof script, "let DIR = \"%s\"\n%s", dir, script_body);

    /* The counts with no failure. */
    addsl_state *S = open_counted(0);
    long opens = F.count;
    int clean = S != NULL && run_scripts(S);
    long scripts = F.count - opens;
    ok(clean && opens > 0 && scripts > 0 && addsl_dostring(S, script, "again.ad") == ADDSL_OK,
       "with no failure the state opens (%ld allocations) and the scripts run (%ld more)", opens, scripts);
    if (S) addsl_close(S);

    long bad = 0, crash = 0, open_stride = env_long("ADDSL_OOM_OPEN_STRIDE", 1);
    if (open_stride < 1) open_stride = 1;
    for (long n = 1; n <= opens; n += open_stride) {
        int r = point(NULL, n, "open");
        bad += r == PT_BAD; crash += r == PT_CRASH;
    }
    ok(bad == 0 && crash == 0, "open: every %ld-th of %ld failure points ends cleanly (%ld unclean, %ld crashes)", open_stride, opens, bad, crash);

    int full = env_long("ADDSL_OOM_FULL", 0) != 0;
    long stride = full ? 1 : env_long("ADDSL_OOM_STRIDE", 23);
    long sample = full ? 0 : env_long("ADDSL_OOM_SAMPLE", 150);
    unsigned seed = (unsigned)env_long("ADDSL_OOM_SEED", (long)time(NULL));
    if (stride < 1) stride = 1;
    srand(seed);
    /* Points past the end fail nothing; a few extra cover a count that varies. */
    long last = scripts + 16, tried = 0;
    bad = crash = 0;
    S = open_counted(0);
    if (!S) { ok(0, "the base state opens"); return tap_done(); }
    long head = full ? 0 : env_long("ADDSL_OOM_HEAD", 400);
    for (long n = 1; n <= last; n += n < head ? 1 : stride) {
        int r = point(S, n, "script");
        tried++; bad += r == PT_BAD; crash += r == PT_CRASH;
    }
    for (long i = 0; i < sample; i++) {
        long n = 1 + (long)((double)rand() / ((double)RAND_MAX + 1) * (double)last);
        int r = point(S, n, "script");
        tried++; bad += r == PT_BAD; crash += r == PT_CRASH;
    }
    addsl_close(S);
    ok(bad == 0 && crash == 0, "script: %ld of %ld failure points (the first %ld, then every %ld-th, %ld random, seed %u) end cleanly (%ld unclean, %ld crashes)",
       tried, scripts, head, stride, sample, seed, bad, crash);

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("# could not remove %s\n", dir);
    return tap_done();
}
