/* bi_string.c: Python's string methods. A method call x.m(...) is m(x, ...),
 * so these are builtins whose first parameter is the string: join, strip,
 * lstrip, rstrip, replace, startswith, endswith, upper, lower, find, and
 * str_split (split(s, sep) of a string, lib/shape.ad's split dispatches). */
#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "../vm/buf.h"
#include "../vm/state.h"
#include "builtins.h"

static int self_str(ad_state *S, ad_value v, const char *fn, const ad_str **out) {
    if (v.t != AD_TSTR) return ad_error(S, "%s() is a string method; got %s", fn, ad_type_name(v));
    *out = v.u.s;
    return ADDSL_OK;
}

static int arg_str(ad_state *S, ad_value v, const char *fn, const char *pname, const ad_str **out) {
    if (v.t != AD_TSTR) return ad_error(S, "%s(): %s must be a string, not %s", fn, pname, ad_type_name(v));
    *out = v.u.s;
    return ADDSL_OK;
}

static int ret_buf(ad_state *S, ad_buf *b, ad_value *out) {
    int rc = b->failed ? ad_nomem(S) : ad_string_value(S, b->data ? b->data : "", b->len, out);
    ad_buf_free(b);
    return rc;
}

/* sep.join(items): items a list or tuple of strings. */
static int bi_join(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const ad_str *sep = NULL;
    int rc = self_str(S, argv[0], "join", &sep);
    if (rc) return rc;
    if (argv[1].t != AD_TLIST && argv[1].t != AD_TTUPLE)
        return ad_error(S, "join(): can only join a list or tuple of strings, not %s", ad_type_name(argv[1]));
    const ad_list *l = argv[1].u.l;
    ad_buf b;
    ad_buf_init(&b, S);
    for (int64_t i = 0; i < l->len; i++) {
        if (l->items[i].t != AD_TSTR) {
            ad_buf_free(&b);
            return ad_error(S, "sequence item %lld: expected str instance, %s found", (long long)i, ad_type_name(l->items[i]));
        }
        if (i > 0) ad_buf_add(&b, sep->data, sep->len);
        ad_buf_add(&b, l->items[i].u.s->data, l->items[i].u.s->len);
    }
    return ret_buf(S, &b, out);
}

/* Whether byte c is in 'chars' (none: whitespace, as Python's strip()). */
static bool strip_char(unsigned char c, const ad_str *chars) {
    return chars ? memchr(chars->data, c, chars->len) != NULL : isspace(c) != 0;
}

static int strip_sides(ad_state *S, ad_value *argv, const char *fn, bool left, bool right, ad_value *out) {
    const ad_str *s = NULL, *chars = NULL;
    int rc = self_str(S, argv[0], fn, &s);
    if (!rc && argv[1].t != AD_TNONE) rc = arg_str(S, argv[1], fn, "chars", &chars);
    if (rc) return rc;
    size_t a = 0, z = s->len;
    while (left && a < z && strip_char((unsigned char)s->data[a], chars)) a++;
    while (right && z > a && strip_char((unsigned char)s->data[z - 1], chars)) z--;
    return ad_string_value(S, s->data + a, z - a, out);
}

static int bi_strip(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return strip_sides(S, argv, "strip", true, true, out);
}

static int bi_lstrip(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return strip_sides(S, argv, "lstrip", true, false, out);
}

static int bi_rstrip(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return strip_sides(S, argv, "rstrip", false, true, out);
}

/* First index of needle in s at or after 'from', or -1. */
static int64_t find_from(const ad_str *s, const char *needle, size_t n, size_t from) {
    if (n > s->len) return -1;
    for (size_t i = from; i + n <= s->len; i++)
        if (!memcmp(s->data + i, needle, n)) return (int64_t)i;
    return -1;
}

/* s.replace(old, new, count=-1); an empty 'old' inserts 'new' between the
 * characters and at both ends, as Python does. */
static int bi_replace(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const ad_str *s = NULL, *old = NULL, *rep = NULL;
    int rc = self_str(S, argv[0], "replace", &s);
    if (!rc) rc = arg_str(S, argv[1], "replace", "old", &old);
    if (!rc) rc = arg_str(S, argv[2], "replace", "new", &rep);
    if (rc) return rc;
    if (argv[3].t != AD_TINT) return ad_error(S, "replace(): count must be an integer, not %s", ad_type_name(argv[3]));
    int64_t left = argv[3].u.n < 0 ? INT64_MAX : (int64_t)argv[3].u.n;
    ad_buf b;
    ad_buf_init(&b, S);
    size_t at = 0;
    if (old->len == 0) {
        for (size_t i = 0; i <= s->len; i++) {
            if (left > 0) { ad_buf_add(&b, rep->data, rep->len); left--; }
            if (i < s->len) ad_buf_add(&b, s->data + i, 1);
        }
        return ret_buf(S, &b, out);
    }
    int64_t k;
    while (left > 0 && (k = find_from(s, old->data, old->len, at)) >= 0) {
        ad_buf_add(&b, s->data + at, (size_t)k - at);
        ad_buf_add(&b, rep->data, rep->len);
        at = (size_t)k + old->len;
        left--;
    }
    ad_buf_add(&b, s->data + at, s->len - at);
    return ret_buf(S, &b, out);
}

/* startswith/endswith: 'x' a string or a tuple of strings (any matches). */
static int affix(ad_state *S, ad_value *argv, const char *fn, bool end, ad_value *out) {
    const ad_str *s = NULL;
    int rc = self_str(S, argv[0], fn, &s);
    if (rc) return rc;
    const ad_value *xs = &argv[1];
    int64_t n = 1;
    if (argv[1].t == AD_TTUPLE || argv[1].t == AD_TLIST) { xs = argv[1].u.l->items; n = argv[1].u.l->len; }
    for (int64_t i = 0; i < n; i++) {
        if (xs[i].t != AD_TSTR)
            return ad_error(S, "%s first arg must be str or a tuple of str, not %s", fn, ad_type_name(xs[i]));
        const ad_str *x = xs[i].u.s;
        if (x->len <= s->len && !memcmp(s->data + (end ? s->len - x->len : 0), x->data, x->len)) {
            *out = ad_bool(true);
            return ADDSL_OK;
        }
    }
    *out = ad_bool(false);
    return ADDSL_OK;
}

static int bi_startswith(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return affix(S, argv, "startswith", false, out);
}

static int bi_endswith(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return affix(S, argv, "endswith", true, out);
}

static int change_case(ad_state *S, ad_value *argv, const char *fn, int (*conv)(int), ad_value *out) {
    const ad_str *s = NULL;
    int rc = self_str(S, argv[0], fn, &s);
    if (rc) return rc;
    rc = ad_string_value(S, s->data, s->len, out);
    if (rc) return rc;
    for (size_t i = 0; i < s->len; i++) out->u.s->data[i] = (char)conv((unsigned char)s->data[i]);
    return ADDSL_OK;
}

static int bi_upper(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return change_case(S, argv, "upper", toupper, out);
}

static int bi_lower(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return change_case(S, argv, "lower", tolower, out);
}

static int bi_find(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const ad_str *s = NULL, *sub = NULL;
    int rc = self_str(S, argv[0], "find", &s);
    if (!rc) rc = arg_str(S, argv[1], "find", "sub", &sub);
    if (rc) return rc;
    *out = ad_int((double)find_from(s, sub->data, sub->len, 0));
    return ADDSL_OK;
}

static int push_piece(ad_state *S, ad_list *l, const char *p, size_t n) {
    ad_value v;
    int rc = ad_string_value(S, p, n, &v);
    return rc ? rc : ad_list_push(S, l, v);
}

/* s.split(sep=none): none splits on runs of whitespace and drops empty
 * pieces; a string separates exactly (an empty one is Python's error). */
static int bi_str_split(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const ad_str *s = NULL, *sep = NULL;
    int rc = self_str(S, argv[0], "split", &s);
    if (!rc && argv[1].t != AD_TNONE) rc = arg_str(S, argv[1], "split", "sep", &sep);
    if (rc) return rc;
    if (sep && sep->len == 0) return ad_error(S, "split(): empty separator");
    ad_list *l = ad_list_new(S, AD_TLIST, 0);
    if (!l) return S->errcode;
    size_t i = 0;
    if (!sep) {
        while (!rc && i < s->len) {
            while (i < s->len && isspace((unsigned char)s->data[i])) i++;
            size_t a = i;
            while (i < s->len && !isspace((unsigned char)s->data[i])) i++;
            if (i > a) rc = push_piece(S, l, s->data + a, i - a);
        }
    } else {
        int64_t k;
        while (!rc && (k = find_from(s, sep->data, sep->len, i)) >= 0) {
            rc = push_piece(S, l, s->data + i, (size_t)k - i);
            i = (size_t)k + sep->len;
        }
        if (!rc) rc = push_piece(S, l, s->data + i, s->len - i);
    }
    *out = ad_list_value(l, AD_TLIST);
    if (rc) ad_value_decref(S, *out), *out = ad_none();
    return rc;
}

const ad_builtin_def ad_bi_string_defs[] = {
    {"join", bi_join, "self, iterable",
         "The strings of iterable joined with self between them, as Python's str.join."
         "\nExample: \", \".join([\"a\", \"b\", \"c\"])"},
    {"strip", bi_strip, "self, chars=none",
         "self without leading and trailing whitespace (or the characters in chars), as Python's str.strip."
         "\nExample: \"  x  \".strip()"},
    {"lstrip", bi_lstrip, "self, chars=none",
         "self without leading whitespace (or the characters in chars), as Python's str.lstrip."
         "\nExample: \"  x\".lstrip()"},
    {"rstrip", bi_rstrip, "self, chars=none",
         "self without trailing whitespace (or the characters in chars), as Python's str.rstrip."
         "\nExample: \"x\\n\".rstrip()"},
    {"replace", bi_replace, "self, old, new, count=-1",
         "self with each occurrence of old replaced by new (the first count ones when count >= 0), as "
         "Python's str.replace."
         "\nExample: \"a-b-c\".replace(\"-\", \"+\")"},
    {"startswith", bi_startswith, "self, prefix",
         "Whether self starts with prefix (a string, or a tuple of strings: any of them), as Python's "
         "str.startswith."
         "\nExample: \"model.ad\".startswith(\"model\")"},
    {"endswith", bi_endswith, "self, suffix",
         "Whether self ends with suffix (a string, or a tuple of strings: any of them), as Python's "
         "str.endswith."
         "\nExample: \"model.ad\".endswith(\".ad\")"},
    {"upper", bi_upper, "self",
         "self with ASCII letters in upper case, as Python's str.upper."
         "\nExample: \"adam\".upper()"},
    {"lower", bi_lower, "self",
         "self with ASCII letters in lower case, as Python's str.lower."
         "\nExample: \"SGD\".lower()"},
    {"find", bi_find, "self, sub",
         "The index of the first occurrence of sub in self, or -1, as Python's str.find."
         "\nExample: \"loss=0.5\".find(\"=\")"},
    {"str_split", bi_str_split, "self, sep=none",
         "The pieces of string self between occurrences of sep (none: runs of whitespace), as Python's "
         "str.split; s.split(sep) calls it for a string."
         "\nExample: str_split(\"a,b,c\", \",\")"},
    {NULL, NULL, NULL, NULL},
};
