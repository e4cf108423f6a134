/* buf.h: a growable byte buffer for building text (messages, printing).
 * Memory comes from the state's allocator; a failed append sets ENOMEM. */
#ifndef AD_BUF_H
#define AD_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef struct addsl_state ad_state;

typedef struct ad_buf {
    ad_state *S;
    char *data; /* always NUL-terminated once anything was appended */
    size_t len, cap;
    int failed; /* an append ran out of memory; later appends do nothing */
} ad_buf;

void ad_buf_init(ad_buf *b, ad_state *S);
void ad_buf_free(ad_buf *b);
int ad_buf_add(ad_buf *b, const char *s, size_t n);
int ad_buf_puts(ad_buf *b, const char *s);
int ad_buf_printf(ad_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ad_buf_vprintf(ad_buf *b, const char *fmt, va_list ap);
/* "[2, 3]" as PyTorch prints a size in messages. */
int ad_buf_shape(ad_buf *b, int ndim, const int64_t *shape);
#endif
