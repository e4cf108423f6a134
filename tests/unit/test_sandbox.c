/* test_sandbox.c: TAP tests that walk every registered builtin and the
 * grammar's doors (import, extern): each door of vm/sandbox.c is a builtin,
 * refused under its ADDSL_DENY_* bit before it touches anything, and open
 * without it; no other builtin is a door. tests/hostile/sandbox_doors.sh
 * checks the other half: no builtin outside the table reaches a file call. */
#include <dirent.h>
#include <unistd.h>

#include "tap.h"

#include "sandbox.h"
#include "vm.h"

static void quiet(void *ud, const char *text, size_t len, int is_err) { (void)ud; (void)text; (void)len; (void)is_err; }

static addsl_state *open_with(unsigned deny) {
    addsl_config cfg;
    addsl_config_init(&cfg);
    cfg.deny = deny;
    cfg.write = quiet;
    return addsl_open(&cfg);
}

static const char *bit_name(unsigned bits) {
    return bits & ADDSL_DENY_EXTERN ? "(ADDSL_DENY_EXTERN)" : bits & ADDSL_DENY_IMPORT ? "(ADDSL_DENY_IMPORT)"
                                                                                      : "(ADDSL_DENY_FILES)";
}

static int dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* The call of door 'b' that would touch 'dir' if it ran: its path, or a real
 * library and symbol for extern_fn. */
static void door_call(const ad_builtin *b, const char *dir, char *out, size_t n) {
    bool has_path = false;
    for (int i = 0; i < b->nparams; i++) has_path |= strcmp(b->pnames[i], "path") == 0;
    if (b->doors & ADDSL_DENY_EXTERN) snprintf(out, n, "%s(\"libm.so.6\", \"cbrt\", \"f64 -> f64\")", b->name);
    else if (has_path) snprintf(out, n, "%s(path=\"%s/probe.npy\")", b->name, dir);
    else snprintf(out, n, "%s()", b->name);
}

/* Every global that is a builtin with door bits is refused by exactly its bits. */
static int walk_builtins(const char *dir, const char *open_dir) {
    addsl_state *A = open_with(ADDSL_DENY_EXTERN | ADDSL_DENY_FILES | ADDSL_DENY_IMPORT);
    addsl_state *open_state = open_with(0);
    if (!ok(A && open_state, "addsl_open with every door closed and with every door open")) return 0;
    ad_globals *G = ((ad_state *)A)->globals;
    int found = 0, bad = 0, builtins = 0;
    for (int i = 0; i < G->n; i++) {
        if (!G->defined[i] || G->values[i].t != AD_TBUILTIN) continue;
        const ad_builtin *b = G->values[i].u.bi;
        builtins++;
        if (strcmp(G->names[i], b->name) != 0) continue; /* the ad_NAME alias of the same builtin */
        if (b->doors != ad_sandbox_doors(b->name)) { printf("# %s: doors %u\n", b->name, b->doors); bad++; }
        if (!b->doors) continue;
        found++;
        char call[512];
        door_call(b, dir, call, sizeof call);
        int rc = addsl_dostring(A, call, "<door>");
        const char *msg = addsl_errmsg(A);
        if (rc != ADDSL_ERUNTIME || !strstr(msg, "is disabled by the host") || !strstr(msg, bit_name(b->doors))) {
            printf("# %s under the sandbox: %d %s\n", call, rc, msg);
            bad++;
        }
        if (b->doors & ADDSL_DENY_FILES && !strstr(msg, "probe.npy')")) { printf("# %s: no path in %s\n", call, msg); bad++; }
        /* Open, the same call goes past the door (to an argument or file
         * error, or success) in a directory of its own, emptied after. */
        char open_call[512], probe[4200];
        door_call(b, open_dir, open_call, sizeof open_call);
        addsl_dostring(open_state, open_call, "<door>");
        if (strstr(addsl_errmsg(open_state), "is disabled by the host")) { printf("# %s open: refused\n", open_call); bad++; }
        snprintf(probe, sizeof probe, "%s/probe.npy", open_dir);
        if (unlink(probe) != 0) rmdir(probe);
    }
    ok(builtins > 500, "walked %d builtin globals", builtins);
    ok(found == ad_sandbox_door_count(), "every row of the door table is a registered builtin (%d of %d)", found,
       ad_sandbox_door_count());
    ok(bad == 0, "each door is refused by its own bit, naming it and its path, and open without it (%d bad)", bad);
    ok(dir_entries(dir) == 0, "the refused calls created nothing (%d entries)", dir_entries(dir));
    addsl_close(A);
    addsl_close(open_state);
    return 1;
}

/* The table is sorted (it is searched) and names each door once. */
static void table_sorted(void) {
    unsigned bits;
    int bad = 0;
    for (int i = 1; i < ad_sandbox_door_count(); i++) {
        const char *prev = ad_sandbox_door_name(i - 1, &bits);
        bad += strcmp(prev, ad_sandbox_door_name(i, &bits)) >= 0;
    }
    ok(bad == 0 && ad_sandbox_door_count() > 0, "the door table is sorted");
}

/* The grammar's doors: 'import' and 'extern'. */
static void grammar_doors(const char *dir) {
    char path[4096], code[4200];
    snprintf(path, sizeof path, "%s/m.ad", dir);
    FILE *f = fopen(path, "w");
    if (f) { fputs("let v = 7\n", f); fclose(f); }
    snprintf(code, sizeof code, "import \"m.ad\" as m\nif m.v != 7 { error(\"v\") }\n");
    char chunk[4200];
    snprintf(chunk, sizeof chunk, "%s/main.ad", dir);

    addsl_state *A = open_with(ADDSL_DENY_FILES);
    ok(A && addsl_dostring(A, code, chunk) == ADDSL_OK, "ADDSL_DENY_FILES: a file imports a .ad beside it");
    ok(A && addsl_dostring(A, code, "<string>") == ADDSL_ERUNTIME &&
           strstr(addsl_errmsg(A), "(ADDSL_DENY_FILES); code that is not in a file"),
       "ADDSL_DENY_FILES: <string> imports nothing");
    ok(A && addsl_dostring(A, "extern \"libm.so.6\" cbrt(f64) -> f64", "<string>") == ADDSL_OK,
       "ADDSL_DENY_FILES leaves extern open");
    addsl_close(A);
    A = open_with(ADDSL_DENY_IMPORT);
    ok(A && addsl_dostring(A, code, chunk) == ADDSL_ERUNTIME &&
           strstr(addsl_errmsg(A), "cannot import \"m.ad\": import is disabled by the host (ADDSL_DENY_IMPORT)"),
       "ADDSL_DENY_IMPORT: no import at all");
    addsl_close(A);
    A = open_with(ADDSL_DENY_EXTERN);
    ok(A && addsl_dostring(A, "extern \"libm.so.6\" cbrt(f64) -> f64", "<string>") == ADDSL_ERUNTIME &&
           strstr(addsl_errmsg(A), "extern cbrt from \"libm.so.6\": extern is disabled by the host (ADDSL_DENY_EXTERN)"),
       "ADDSL_DENY_EXTERN: an extern declaration");
    ok(A && addsl_dostring(A, code, chunk) == ADDSL_OK, "ADDSL_DENY_EXTERN leaves import open");
    addsl_close(A);
    unlink(path);
}

static int polls;
static int stop_at_once(void *ud) { (void)ud; return ++polls > 0; }

/* Reading a source file polls the host's interrupt between chunks: a script
 * of 1 MiB (16 chunks) is stopped while it is read, by dofile and by import. */
static void read_polls(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/long.ad", dir);
    FILE *f = fopen(path, "w");
    for (int i = 0; f && i < 16384; i++) fputs("# a comment line of sixty-four bytes, to make the file long..\n", f);
    if (f) fclose(f);
    addsl_config cfg;
    addsl_config_init(&cfg);
    cfg.write = quiet;
    cfg.interrupt = stop_at_once;
    addsl_state *A = addsl_open(&cfg);
    polls = 0;
    int rc = A ? addsl_dofile(A, path) : -1;
    ok(rc == ADDSL_EINTERRUPT && polls == 1, "addsl_dofile of 1 MiB stops at the first poll (%d, %d polls)", rc, polls);
    char chunk[4200];
    snprintf(chunk, sizeof chunk, "%s/main.ad", dir);
    polls = 0;
    rc = A ? addsl_dostring(A, "import \"long.ad\" as m", chunk) : -1;
    ok(rc == ADDSL_EINTERRUPT && polls == 1, "importing it stops at the first poll too (%d, %d polls)", rc, polls);
    addsl_close(A);
    unlink(path);
}

int main(void) {
    plan(14);
    char dir[] = "/tmp/test_sandbox.XXXXXX", open_dir[] = "/tmp/test_sandbox_open.XXXXXX";
    if (!mkdtemp(dir) || !mkdtemp(open_dir)) { printf("Bail out! mkdtemp\n"); return 1; }
    table_sorted();
    walk_builtins(dir, open_dir);
    grammar_doors(dir);
    read_polls(dir);
    rmdir(dir);
    rmdir(open_dir);
    return done_testing();
}
