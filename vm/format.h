/* format.h: Python's format-spec mini-language, printf-style '%' and str.format.
 * One engine turns a value and a spec into text; f-strings, format(), '%' and .format() share it. */
#ifndef AD_FORMAT_H
#define AD_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "value.h"

struct ad_buf;

/* [[fill]align][sign][z][#][0][width][,|_][.precision][type], parsed. */
typedef struct ad_fmtspec {
    char fill[5];      /* one UTF-8 character, NUL-terminated */
    int fill_len;
    char align;        /* '<' '>' '^' '=' or 0 (the value's default) */
    char sign;         /* '+' '-' ' ' or 0 */
    bool no_neg_zero;  /* 'z' */
    bool alt;          /* '#' */
    int64_t width;     /* -1: none */
    char group;        /* ',' '_' or 0 */
    int64_t prec;      /* -1: none */
    char type;         /* presentation type, or 0 */
} ad_fmtspec;

/* Conversions of an f-string or .format() field: {x!r}, {x!s}. */
enum { AD_CONV_NONE = 0, AD_CONV_STR = 1, AD_CONV_REPR = 2 };

/* Parses 'spec' as Python does for a value whose default type is 'default_type'
 * ('s' strings, 'd' integers, 0 floats, '?' not known yet). Pure: on a bad spec, writes Python's
 * message into err (when err is not NULL) and returns false. */
bool ad_format_spec_parse(const char *spec, size_t len, char default_type, ad_fmtspec *out, char *err, size_t errn);

/* Appends format(v, spec) to b: numbers, bools, strings and one-element tensors
 * take any spec; an empty spec is str(v), except that a 0-d tensor formats its
 * item as PyTorch does. 'conv' first turns v into str(v) or repr(v). */
int ad_format_value(ad_state *S, ad_value v, const char *spec, size_t len, int conv, struct ad_buf *b);

/* fmt % args (printf-style; args a tuple, or one value). */
int ad_format_percent(ad_state *S, const ad_str *fmt, ad_value args, ad_value *out);

/* fmt.format(args...): positional fields {} {0} {:spec} {!r}, nested {:{w}}. */
int ad_format_method(ad_state *S, const ad_str *fmt, const ad_value *args, int nargs, ad_value *out);

#endif
