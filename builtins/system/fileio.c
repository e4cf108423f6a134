/* system/fileio.c: atomic replacement of files for save(): write a temporary file in
 * the target's directory, fsync it, rename it over the target. A crash or kill
 * at any moment leaves either the old file or the new one, never a torn one,
 * and no full-size temporary file: it has no name while it is written
 * (O_TMPFILE), or, where it must have one, the next save removes it. */
#include "system/fileio.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../vm/state.h"

/* The names a temporary file of ours takes: ".NAME.addsl-PID-XXXXXX", so that
 * the next save to NAME can tell a stale one (its process is gone) from one
 * another save is writing now. libzip writes beside ours as "OURS.XXXXXX". */
#define TMP_TAG ".addsl-"
#define TMP_ATTEMPTS 100

static void drop_tmp(ad_state *S, ad_atomic_file *af) {
    if (af->f) { fclose(af->f); af->f = NULL; }
    if (af->tmp) { unlink(af->tmp); ad_free(S, af->tmp); af->tmp = NULL; }
    ad_free(S, af->target);
    af->target = NULL;
}

/* Six characters for a temporary name, from the clock, the process and the
 * attempt (mkstemp's job, which we cannot call: it creates the file 0600, and
 * a new file must get 0666 less the umask, as fopen gives it). */
static void tmp_suffix(char *out, unsigned attempt) {
    static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 17) ^
                 (uint64_t)(uintptr_t)out ^ (uint64_t)attempt * 0x9E3779B97F4A7C15u;
    x ^= x >> 31; /* splitmix64's finaliser spreads the bits */
    x *= 0xBF58476D1CE4E5B9u;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBu;
    x ^= x >> 31;
    for (int i = 0; i < 6; i++, x /= 62) out[i] = chars[x % 62];
}

/* af->tmp gets a fresh temporary name for 'target' (whose directory part is
 * 'dirlen' bytes and whose last component is 'base'). */
static int tmp_name(ad_state *S, ad_atomic_file *af, const char *target, size_t dirlen, const char *base,
                    unsigned attempt) {
    if (!af->tmp) {
        af->tmp_cap = dirlen + strlen(base) + sizeof "." TMP_TAG "-XXXXXX" + 24;
        if (!(af->tmp = ad_malloc(S, af->tmp_cap))) return ADDSL_ENOMEM;
    }
    int n = snprintf(af->tmp, af->tmp_cap, "%.*s.%s" TMP_TAG "%ld-XXXXXX", (int)dirlen, target, base, (long)getpid());
    tmp_suffix(af->tmp + n - 6, attempt);
    return ADDSL_OK;
}

int ad_atomic_sweep(const char *dir, const char *base) {
    DIR *d = opendir(dir && *dir ? dir : ".");
    if (!d) return 0;
    size_t nb = strlen(base), nt = strlen(TMP_TAG);
    int removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        const char *n = e->d_name;
        if (n[0] != '.' || strncmp(n + 1, base, nb) != 0 || strncmp(n + 1 + nb, TMP_TAG, nt) != 0) continue;
        const char *p = n + 1 + nb + nt;
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p || *end != '-' || pid <= 0 || pid == (long)getpid()) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to judge */
        struct stat st;
        if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue;
        removed += unlinkat(dirfd(d), n, 0) == 0;
    }
    closedir(d);
    return removed;
}

/* An unnamed file in 'dir' (O_TMPFILE): it vanishes with the process unless
 * commit links it in. -1 where the file system or kernel has none, or where
 * /proc, which linkat names it through, is missing. */
static int open_unnamed(const char *dir) {
#ifdef O_TMPFILE
    int fd = open(dir && *dir ? dir : ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0) return -1;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (access(proc, F_OK) != 0) { close(fd); return -1; }
    return fd;
#else
    (void)dir;
    return -1;
#endif
}

static int begin(ad_state *S, const char *fn, const char *path, ad_atomic_file *af, bool named) {
    memset(af, 0, sizeof *af);
    af->path = path;
    struct stat st;
    /* Saving to a symlink replaces the file it points to (as writing through
     * it did), not the link itself. */
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        char *real = realpath(path, NULL);
        if (real) {
            af->target = ad_malloc(S, strlen(real) + 1);
            if (af->target) strcpy(af->target, real);
            free(real);
            if (!af->target) return ADDSL_ENOMEM;
        }
    }
    const char *target = af->target ? af->target : path;
    const char *slash = strrchr(target, '/');
    size_t dirlen = slash ? (size_t)(slash - target) + 1 : 0;
    const char *base = slash ? slash + 1 : target;
    if (!*base) {
        drop_tmp(S, af);
        return ad_error_code(S, ADDSL_EIO, "%s(): '%s' names a directory, not a file", fn, path);
    }
    char *dir = ad_malloc(S, dirlen + 1);
    if (!dir) { drop_tmp(S, af); return ADDSL_ENOMEM; }
    memcpy(dir, target, dirlen);
    dir[dirlen] = '\0';
    /* What earlier saves to this name left when they were killed. */
    ad_atomic_sweep(dir, base);
    bool existed = stat(target, &st) == 0;
    int fd = named ? -1 : open_unnamed(dir);
    ad_free(S, dir);
    af->unnamed = fd >= 0;
    int err = 0;
    for (unsigned attempt = 0; fd < 0 && attempt < TMP_ATTEMPTS; attempt++) {
        if (tmp_name(S, af, target, dirlen, base, attempt)) { drop_tmp(S, af); return ADDSL_ENOMEM; }
        fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        err = errno;
        if (fd < 0 && err != EEXIST) break;
    }
    if (fd < 0) {
        ad_free(S, af->tmp);
        af->tmp = NULL;
        drop_tmp(S, af);
        return ad_error_code(S, ADDSL_EIO, "%s(): cannot open '%s': %s", fn, path, strerror(err));
    }
    /* A replaced file keeps its permission bits; a new one has 0666 less the umask. */
    if (existed) (void)fchmod(fd, st.st_mode & 07777);
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        err = errno;
        close(fd);
        drop_tmp(S, af);
        return ad_error_code(S, ADDSL_EIO, "%s(): cannot open '%s': %s", fn, path, strerror(err));
    }
    return ADDSL_OK;
}

int ad_atomic_begin(ad_state *S, const char *fn, const char *path, ad_atomic_file *af) {
    return begin(S, fn, path, af, false);
}

int ad_atomic_begin_named(ad_state *S, const char *fn, const char *path, ad_atomic_file *af) {
    return begin(S, fn, path, af, true);
}

/* Gives the synced unnamed file a temporary name beside the target (linkat
 * through /proc, as open(2) shows for O_TMPFILE); the rename over the target
 * follows. Only a kill between the two leaves a name, which the next save's
 * sweep removes. */
static int link_unnamed(ad_state *S, ad_atomic_file *af) {
    const char *target = af->target ? af->target : af->path;
    const char *slash = strrchr(target, '/');
    size_t dirlen = slash ? (size_t)(slash - target) + 1 : 0;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fileno(af->f));
    int err = EEXIST;
    for (unsigned attempt = 0; err == EEXIST && attempt < TMP_ATTEMPTS; attempt++) {
        if (tmp_name(S, af, target, dirlen, target + dirlen, attempt)) return ADDSL_ENOMEM;
        err = linkat(AT_FDCWD, proc, AT_FDCWD, af->tmp, AT_SYMLINK_FOLLOW) == 0 ? 0 : errno;
    }
    if (err) { ad_free(S, af->tmp); af->tmp = NULL; errno = err; return ADDSL_EIO; }
    return ADDSL_OK;
}

static int sync_close(FILE *f) {
    int rc = fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : -1;
    int err = errno;
    if (fclose(f) != 0 && rc == 0) return -1;
    errno = err;
    return rc;
}

/* Renames the synced temporary file over the target (and syncs the directory
 * entry, so the rename itself survives a power cut where the FS allows). */
static int finish(ad_state *S, const char *fn, ad_atomic_file *af) {
    const char *target = af->target ? af->target : af->path;
    if (rename(af->tmp, target) != 0) {
        int err = errno;
        drop_tmp(S, af);
        return ad_error_code(S, ADDSL_EIO, "%s(): cannot write '%s': %s", fn, af->path, strerror(err));
    }
    const char *slash = strrchr(target, '/');
    char *dir = NULL;
    if (slash && (dir = ad_malloc(S, (size_t)(slash - target) + 2))) {
        memcpy(dir, target, (size_t)(slash - target) + 1);
        dir[slash - target + 1] = '\0';
    }
    int dfd = open(dir ? dir : ".", O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) { (void)fsync(dfd); close(dfd); }
    ad_free(S, dir);
    ad_free(S, af->tmp);
    af->tmp = NULL;
    ad_free(S, af->target);
    af->target = NULL;
    return ADDSL_OK;
}

int ad_atomic_commit(ad_state *S, const char *fn, ad_atomic_file *af, bool ok, int err) {
    if (ok && af->unnamed) {
        int rc = fflush(af->f) == 0 && fsync(fileno(af->f)) == 0 ? link_unnamed(S, af) : ADDSL_EIO;
        if (rc == ADDSL_ENOMEM) { drop_tmp(S, af); return ad_nomem(S); }
        if (rc) { ok = false; err = errno; }
    }
    if (ok && sync_close(af->f) != 0) { ok = false; err = errno; }
    else if (!ok) fclose(af->f);
    af->f = NULL;
    if (!ok) {
        drop_tmp(S, af);
        return ad_error_code(S, ADDSL_EIO, "%s(): cannot write '%s': %s", fn, af->path, strerror(err));
    }
    return finish(S, fn, af);
}

void ad_atomic_abort(ad_state *S, ad_atomic_file *af) { drop_tmp(S, af); }

int ad_atomic_release_stream(ad_state *S, const char *fn, ad_atomic_file *af) {
    assert(!af->unnamed && af->tmp);
    int rc = fclose(af->f);
    af->f = NULL;
    if (rc != 0) {
        int err = errno;
        drop_tmp(S, af);
        return ad_error_code(S, ADDSL_EIO, "%s(): cannot write '%s': %s", fn, af->path, strerror(err));
    }
    return ADDSL_OK;
}

int ad_atomic_commit_path(ad_state *S, const char *fn, ad_atomic_file *af) {
    int fd = open(af->tmp, O_RDONLY);
    if (fd < 0 || fsync(fd) != 0) {
        int err = errno;
        if (fd >= 0) close(fd);
        drop_tmp(S, af);
        return ad_error_code(S, ADDSL_EIO, "%s(): cannot write '%s': %s", fn, af->path, strerror(err));
    }
    close(fd);
    return finish(S, fn, af);
}
