/* test_dlmodule.c: TAP tests of where vm/dlmodule.c looks for a loadable
 * module: the environment's path, then beside the code, then pkglibdir.
 * Built with its own copy of vm/dlmodule.c whose configured pkglibdir is
 * DLMODULE_PKGLIB (tests/tests.am), holding a copy of the same module as the
 * test's own directory: a tree installed into another prefix while the
 * configured one holds modules too must load the copy beside it. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlmodule.h"
#include "tap.h"

/* Any small shared object serves as the module: its path is what is checked. */
#ifndef DLMODULE_PROBE
#error "tests/tests.am defines DLMODULE_PROBE, the shared object copied as the module"
#endif

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    int good = in && out;
    char buf[65536];
    size_t n;
    while (good && (n = fread(buf, 1, sizeof buf, in)) > 0) good = fwrite(buf, 1, n, out) == n;
    if (in) good = !ferror(in) && good, fclose(in);
    if (out) good = fclose(out) == 0 && good;
    return good;
}

/* Whether handle 'h' is the file at 'path' (both resolved). */
static int loaded_from(void *h, const char *path) {
    struct link_map *lm = NULL;
    char a[PATH_MAX], b[PATH_MAX];
    if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm) return 0;
    if (!realpath(lm->l_name, a) || !realpath(path, b)) return 0;
    if (strcmp(a, b) != 0) printf("# loaded %s, expected %s\n", a, b);
    return strcmp(a, b) == 0;
}

int main(int argc, char **argv) {
    (void)argc;
    if (access(DLMODULE_PROBE, R_OK) != 0) { /* ./configure --disable-shared */
        printf("1..0 # SKIP no shared object to load: %s\n", DLMODULE_PROBE);
        return 0;
    }
    plan(7);
    char dir[PATH_MAX], beside[PATH_MAX + 32], installed[PATH_MAX + 32], only[PATH_MAX + 32],
        bad[PATH_MAX + 32], why[512];
    snprintf(dir, sizeof dir, "%s", argv[0]);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    snprintf(beside, sizeof beside, "%s/addsl_probe.so", dir);
    snprintf(installed, sizeof installed, "%s/addsl_probe.so", DLMODULE_PKGLIB);
    snprintf(only, sizeof only, "%s/addsl_probe_only.so", DLMODULE_PKGLIB);
    snprintf(bad, sizeof bad, "%s/addsl_probe_bad.so", dir);
    int ready = (mkdir(DLMODULE_PKGLIB, 0755) == 0 || errno == EEXIST) && copy_file(DLMODULE_PROBE, beside) &&
                copy_file(DLMODULE_PROBE, installed) && copy_file(DLMODULE_PROBE, only);
    FILE *f = fopen(bad, "w");
    ready = ready && f && fputs("not an ELF file\n", f) >= 0;
    if (f) ready = fclose(f) == 0 && ready;
    ok(ready, "the probe module copied beside the test and into the configured pkglibdir");

    unsetenv("ADDSL_PROBE_MODULE");
    void *h = ad_dlmodule_open("addsl_probe.so", "ADDSL_PROBE_MODULE", RTLD_NOW | RTLD_LOCAL, why, sizeof why);
    ok(loaded_from(h, beside), "the copy beside the code wins over the configured pkglibdir's");
    void *h2 = ad_dlmodule_open("addsl_probe_only.so", "ADDSL_PROBE_MODULE", RTLD_NOW | RTLD_LOCAL, why, sizeof why);
    ok(loaded_from(h2, only), "a module only in the configured pkglibdir is found there");

    setenv("ADDSL_PROBE_MODULE", installed, 1);
    void *h3 = ad_dlmodule_open("addsl_probe.so", "ADDSL_PROBE_MODULE", RTLD_NOW | RTLD_LOCAL, why, sizeof why);
    ok(loaded_from(h3, installed), "the environment's path wins over both");
    unsetenv("ADDSL_PROBE_MODULE");

    void *h4 = ad_dlmodule_open("addsl_probe_absent.so", NULL, RTLD_NOW | RTLD_LOCAL, why, sizeof why);
    ok(!h4 && why[0] == '\0', "a module found nowhere: NULL and no reason");
    void *h5 = ad_dlmodule_open("addsl_probe_bad.so", NULL, RTLD_NOW | RTLD_LOCAL, why, sizeof why);
    ok(!h5 && strstr(why, "cannot load ") && strstr(why, "addsl_probe_bad.so"),
       "a file that does not load: NULL and the loader's reason naming it ('%s')", why);
    ok(h && h2 && h3 && dlclose(h) == 0 && dlclose(h2) == 0 && dlclose(h3) == 0, "the modules close");

    remove(beside);
    remove(installed);
    remove(only);
    remove(bad);
    rmdir(DLMODULE_PKGLIB);
    return done_testing();
}
