/* fileio.c: atomic replacement of files for save(): write a temporary file in
 * the target's directory, fsync it, rename it over the target. A crash or kill
 * at any moment leaves either the old file or the new one, never a torn one. */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../vm/state.h"

static void drop_tmp(ad_state *S, ad_atomic_file *af) {
    if (af->f) { fclose(af->f); af->f = NULL; }
    if (af->tmp) { unlink(af->tmp); ad_free(S, af->tmp); af->tmp = NULL; }
}

int ad_atomic_begin(ad_state *S, const char *fn, const char *path, ad_atomic_file *af) {
    af->f = NULL;
    af->path = path;
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = slash ? slash + 1 : path;
    if (!*base) return ad_error_code(S, ADDSL_EIO, "%s(): '%s' names a directory, not a file", fn, path);
    size_t n = dirlen + 1 + strlen(base) + 8;
    af->tmp = ad_malloc(S, n);
    if (!af->tmp) return ADDSL_ENOMEM;
    snprintf(af->tmp, n, "%.*s.%s.XXXXXX", (int)dirlen, path, base);
    int fd = mkstemp(af->tmp);
    if (fd < 0) {
        int err = errno;
        ad_free(S, af->tmp);
        af->tmp = NULL;
        return ad_error_code(S, ADDSL_EIO, "%s(): cannot open '%s': %s", fn, path, strerror(err));
    }
    struct stat st;
    /* mkstemp makes 0600; a replaced file keeps its mode, a new one gets 0644. */
    (void)fchmod(fd, stat(path, &st) == 0 ? (st.st_mode & 07777) : 0644);
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        int err = errno;
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
    if (rename(af->tmp, af->path) != 0) {
        int err = errno;
        drop_tmp(S, af);
        return ad_error_code(S, ADDSL_EIO, "%s(): cannot write '%s': %s", fn, af->path, strerror(err));
    }
    const char *slash = strrchr(af->path, '/');
    char *dir = NULL;
    if (slash && (dir = ad_malloc(S, (size_t)(slash - af->path) + 2))) {
        memcpy(dir, af->path, (size_t)(slash - af->path) + 1);
        dir[slash - af->path + 1] = '\0';
    }
    int dfd = open(dir ? dir : ".", O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) { (void)fsync(dfd); close(dfd); }
    ad_free(S, dir);
    ad_free(S, af->tmp);
    af->tmp = NULL;
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
