/* fileio.c: atomic replacement of files for save(): write a temporary file in
 * the target's directory, fsync it, rename it over the target. A crash or kill
 * at any moment leaves either the old file or the new one, never a torn one. */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../vm/state.h"

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

int ad_atomic_begin(ad_state *S, const char *fn, const char *path, ad_atomic_file *af) {
    af->f = NULL;
    af->tmp = NULL;
    af->target = NULL;
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
    size_t n = dirlen + 1 + strlen(base) + 8;
    af->tmp = ad_malloc(S, n);
    if (!af->tmp) { drop_tmp(S, af); return ADDSL_ENOMEM; }
    bool existed = stat(target, &st) == 0;
    int fd = -1, err = 0;
    for (unsigned attempt = 0; fd < 0 && attempt < 100; attempt++) {
        snprintf(af->tmp, n, "%.*s.%s.XXXXXX", (int)dirlen, target, base);
        tmp_suffix(af->tmp + n - 7, attempt);
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
