/* test_fileio.c: TAP tests of the atomic save's temporary files
 * (builtins/system/fileio.c): the unnamed O_TMPFILE path leaves no name while it
 * writes; the named path (libzip's, and every save where the file system has
 * no O_TMPFILE) takes ".NAME.addsl-PID-XXXXXX"; and the sweep removes exactly
 * the temporary files of dead processes for that name. */
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

#include "system/fileio.h"

static char dir[] = "/tmp/test_fileio.XXXXXX";

static void put(const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f) { fputs("x", f); fclose(f); }
}

static int exists(const char *name) {
    char p[4096];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return lstat(p, &st) == 0;
}

static int entries(void) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, ".."));
    if (d) closedir(d);
    return n;
}

static void clear(void) {
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (unlink(p) != 0) rmdir(p);
    }
    if (d) closedir(d);
}

/* A PID that no process has now: a child that has exited and been reaped. */
static long dead_pid(void) {
    pid_t c = fork();
    if (c == 0) _exit(0);
    waitpid(c, NULL, 0);
    return (long)c;
}

static void test_sweep(void) {
    long dead = dead_pid(), live = (long)getppid();
    char n[10][128];
    snprintf(n[0], sizeof n[0], ".x.npy.addsl-%ld-abcdef", dead);         /* stale: removed */
    snprintf(n[1], sizeof n[1], ".x.npy.addsl-%ld-abcdef.QWErty", dead);  /* libzip's beside it: removed */
    snprintf(n[2], sizeof n[2], ".x.npy.addsl-%ld-abcdef", live);         /* a live save: kept */
    snprintf(n[3], sizeof n[3], ".x.npy.addsl-%ld-abcdef", (long)getpid()); /* this process's: kept */
    snprintf(n[4], sizeof n[4], ".y.npy.addsl-%ld-abcdef", dead);         /* another name's: kept */
    snprintf(n[5], sizeof n[5], ".x.npy.addsl-%ldabcdef", dead);          /* not our pattern: kept */
    snprintf(n[6], sizeof n[6], ".x.npy.%ld-abcdef", dead);               /* the user's: kept */
    snprintf(n[7], sizeof n[7], "x.npy");
    for (int i = 0; i < 8; i++) put(n[i]);
    char link[128], sub[4096], target[4096];
    snprintf(link, sizeof link, ".x.npy.addsl-%ld-symlnk", dead);        /* not a regular file: kept */
    snprintf(sub, sizeof sub, "%s/%s", dir, link);
    snprintf(target, sizeof target, "%s/x.npy", dir);
    ok(symlink(target, sub) == 0, "a symlink named like a stale temporary file");
    ok(ad_atomic_sweep(dir, "x.npy") == 2, "the sweep removes two files");
    ok(!exists(n[0]) && !exists(n[1]), "the dead process's temporary file and libzip's beside it are gone");
    int kept = 1;
    for (int i = 2; i < 8; i++) kept &= exists(n[i]);
    ok(kept && exists(link), "a live process's, this process's, another name's, other patterns and the symlink stay");
    clear();
}

static int read_file(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (int)n;
}

static void test_save(ad_state *S, bool named) {
    char target[4096], got[64];
    snprintf(target, sizeof target, "%s/t.npy", dir);
    ad_atomic_file af;
    int rc = named ? ad_atomic_begin_named(S, "save", target, &af) : ad_atomic_begin(S, "save", target, &af);
    if (!ok(rc == ADDSL_OK, "%s: begin", named ? "named" : "default")) return;
    fputs("contents", af.f);
    fflush(af.f);
    if (named) {
        char want[64];
        snprintf(want, sizeof want, "/.t.npy.addsl-%ld-", (long)getpid());
        ok(af.tmp && strstr(af.tmp, want) && entries() == 1, "named: the temporary file is %s", af.tmp ? af.tmp : "none");
    } else if (af.unnamed) {
        ok(af.tmp == NULL && entries() == 0, "default: the file being written has no name (O_TMPFILE)");
    } else {
        ok(1, "# SKIP the file system has no O_TMPFILE: the default path is the named one");
    }
    rc = ad_atomic_commit(S, "save", &af, true, 0);
    ok(rc == ADDSL_OK && read_file(target, got, sizeof got) == 8 && !strcmp(got, "contents") && entries() == 1,
       "%s: commit leaves the target whole and nothing else", named ? "named" : "default");
    clear();
}

int main(void) {
    plan(10);
    if (!mkdtemp(dir)) { printf("Bail out! mkdtemp\n"); return 1; }
    ad_state *S = test_state(0);
    test_sweep();
    test_save(S, false);
    test_save(S, true);
    test_state_close(S);
    rmdir(dir);
    return done_testing();
}
