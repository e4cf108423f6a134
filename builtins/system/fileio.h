/* system/fileio.h: replacing a file atomically: the new contents go to a temporary
 * file beside the target, which is synced and renamed over it only when whole. */
#ifndef AD_FILEIO_H
#define AD_FILEIO_H

#include <stdbool.h>
#include <stdio.h>

typedef struct addsl_state ad_state;

typedef struct ad_atomic_file {
    FILE *f;             /* open for writing; NULL after commit or abort */
    char *tmp;           /* the temporary file's path (owned); NULL while an unnamed one is written */
    size_t tmp_cap;      /* bytes of tmp */
    bool unnamed;        /* f is an O_TMPFILE file, linked in at commit */
    const char *path;    /* the target as the caller named it (borrowed; errors name it) */
    char *target;        /* what a symlink at path resolves to (owned), or NULL */
} ad_atomic_file;

/* Creates the temporary file for 'path' ('fn' names the caller in errors,
 * e.g. "save"): unnamed (O_TMPFILE) where the file system has them, so a
 * killed process leaves nothing; else "DIR/.NAME.addsl-PID-XXXXXX". Either
 * way it first removes what killed saves to the same name left (see
 * ad_atomic_sweep). A symlink at 'path' is followed, so the file it points to
 * is replaced. With a pre-existing target the new file takes its permission
 * bits, else 0666 less the umask (as fopen would create it). */
int ad_atomic_begin(ad_state *S, const char *fn, const char *path, ad_atomic_file *af);
/* The same with a named temporary file, for a library that reopens it by
 * path (libzip): then ad_atomic_release_stream and ad_atomic_commit_path. */
int ad_atomic_begin_named(ad_state *S, const char *fn, const char *path, ad_atomic_file *af);
/* Removes, in 'dir' ("" for the current one), the temporary files of saves to
 * 'base' whose process is gone: ".BASE.addsl-PID-*" with no process PID,
 * regular and owned by this user; a live process's (another save now) are
 * left. A save running in another PID namespace that shares the directory
 * looks dead from here: such hosts give each its own directory. Returns how
 * many it removed. */
int ad_atomic_sweep(const char *dir, const char *base);
/* Flushes, syncs and closes the temporary file and renames it over the
 * target. On any failure (or when 'ok' is false: the caller's write failed,
 * with errno 'err') the temporary file is removed, the target is untouched,
 * and the error names the path. */
int ad_atomic_commit(ad_state *S, const char *fn, ad_atomic_file *af, bool ok, int err);
/* Removes the temporary file after an error of the caller's own. */
void ad_atomic_abort(ad_state *S, ad_atomic_file *af);
/* Closes the stream but keeps the temporary file for a library that writes
 * it by path (libzip); commit with ad_atomic_commit_path. */
int ad_atomic_release_stream(ad_state *S, const char *fn, ad_atomic_file *af);
int ad_atomic_commit_path(ad_state *S, const char *fn, ad_atomic_file *af);

#endif
