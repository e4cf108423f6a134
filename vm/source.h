/* source.h: source text from a file, and source text as the compiler reads it:
 * a bounded, interruptible read, a BOM dropped, every line ending made '\n'. */
#ifndef AD_SOURCE_H
#define AD_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct addsl_state ad_state;

/* The whole file at 'path' in *out (NUL-terminated, the caller frees with
 * ad_free) and its length in *len. At most AD_MAX_SOURCE bytes; the host's
 * interrupt is polled after every chunk read. 'who' starts the error
 * messages ("cannot import \"m.ad\"" or NULL for "cannot open 'PATH'").
 * With 'regular_only' anything but a regular file is refused before a byte is
 * read (a FIFO or device is opened without blocking for the check); without
 * it (a file the host names: addsl_dofile) only directories are refused, so
 * `addsl <(gen)` still reads a pipe. Errors are ADDSL_EIO, ADDSL_ENOMEM or
 * ADDSL_EINTERRUPT and never quote the file's content. */
int ad_source_read(ad_state *S, const char *path, const char *who, bool regular_only, char **out, size_t *len);

/* The text [*src, *src + *len) as the lexer wants it: a leading UTF-8 byte
 * order mark dropped and CRLF and lone CR line endings made LF (as Python's
 * universal newlines), so lines, columns and quoted error lines are right for
 * files saved on Windows or classic Mac OS. When nothing changes *owned is
 * NULL and *src is untouched; otherwise *src points into *owned (the caller
 * frees it). ADDSL_ENOMEM when the copy cannot be made. */
int ad_source_normalize(ad_state *S, const char **src, size_t *len, char **owned);

#endif
