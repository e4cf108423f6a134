/* source.c: reading a source file (bounded, interruptible, regular files only
 * for imports) and normalising its BOM and line endings for the lexer. */
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "state.h"

#define READ_CHUNK 65536 /* bytes per read(); the interrupt is polled between chunks */

/* "cannot import \"m.ad\"" or "cannot open 'PATH'" / "cannot read 'PATH'". */
static int fail(ad_state *S, int code, const char *who, const char *verb, const char *path, const char *why) {
    if (who) return ad_error_code(S, code, "%s: %s", who, why);
    return ad_error_code(S, code, "cannot %s '%s': %s", verb, path, why);
}

static int poll_interrupt(ad_state *S) {
    if (S->interrupted) {
        S->interrupted = 0;
        return ad_error_code(S, ADDSL_EINTERRUPT, "interrupted");
    }
    if (S->cfg.interrupt && S->cfg.interrupt(S->cfg.interrupt_ud))
        return ad_error_code(S, ADDSL_EINTERRUPT, "interrupted by the host");
    return ADDSL_OK;
}

static int too_long(ad_state *S, const char *who, const char *path) {
    char why[128];
    snprintf(why, sizeof why, "the file is longer than %zu bytes, the limit for a source file (AD_MAX_SOURCE)",
             (size_t)AD_MAX_SOURCE);
    return fail(S, ADDSL_EIO, who, "read", path, why);
}

/* Opens 'path' for reading: a FIFO opened for the regular-file check must not
 * wait for a writer, so O_NONBLOCK, cleared again once the check passed. */
static int open_checked(ad_state *S, const char *path, const char *who, bool regular_only, int *fdp) {
    int fd;
    do fd = open(path, O_RDONLY | O_CLOEXEC | (regular_only ? O_NONBLOCK : 0));
    while (fd < 0 && errno == EINTR && poll_interrupt(S) == ADDSL_OK);
    if (fd < 0) return S->errcode == ADDSL_EINTERRUPT ? S->errcode : fail(S, ADDSL_EIO, who, "open", path, strerror(errno));
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) != 0) why = strerror(errno);
    else if (S_ISDIR(st.st_mode)) why = strerror(EISDIR);
    else if (regular_only && !S_ISREG(st.st_mode)) why = "not a regular file";
    else if (regular_only && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) why = strerror(errno);
    if (why) {
        close(fd);
        return fail(S, ADDSL_EIO, who, "open", path, why);
    }
    if (S_ISREG(st.st_mode) && st.st_size > (off_t)AD_MAX_SOURCE) {
        close(fd);
        return too_long(S, who, path);
    }
    *fdp = fd;
    return ADDSL_OK;
}

int ad_source_read(ad_state *S, const char *path, const char *who, bool regular_only, char **out, size_t *len) {
    int fd = -1;
    int rc = open_checked(S, path, who, regular_only, &fd);
    if (rc) return rc;
    ad_buf b;
    ad_buf_init(&b, S);
    char chunk[READ_CHUNK];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno != EINTR) { rc = fail(S, ADDSL_EIO, who, "read", path, strerror(errno)); break; }
        if (n == 0) break;
        if (n > 0 && b.len + (size_t)n > AD_MAX_SOURCE) { rc = too_long(S, who, path); break; }
        if (n > 0 && ad_buf_add(&b, chunk, (size_t)n)) { rc = ad_nomem(S); break; }
        if ((rc = poll_interrupt(S))) break;
    }
    close(fd);
    if (!rc && !b.data && ad_buf_add(&b, "", 0)) rc = ad_nomem(S);
    if (rc) { ad_buf_free(&b); return rc; }
    *out = b.data;
    *len = b.len;
    return ADDSL_OK;
}

int ad_source_normalize(ad_state *S, const char **src, size_t *len, char **owned) {
    const char *s = *src;
    size_t n = *len;
    *owned = NULL;
    if (n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) { s += 3; n -= 3; }
    if (!memchr(s, '\r', n)) { *src = s; *len = n; return ADDSL_OK; }
    char *t = ad_malloc(S, n + 1);
    if (!t) return ADDSL_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\r') t[k++] = s[i];
        else if (i + 1 == n || s[i + 1] != '\n') t[k++] = '\n';
    }
    t[k] = '\0';
    *owned = t;
    *src = t;
    *len = k;
    return ADDSL_OK;
}
