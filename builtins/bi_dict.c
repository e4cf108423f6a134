/* bi_dict.c: the dict builtins, called as methods (d.keys() is keys(d)):
 * dict, keys, values, items, get, pop, update, copy. */
#include <string.h>

#include "../vm/dict.h"
#include "../vm/state.h"
#include "builtins.h"

static int need_dict(ad_state *S, const char *fn, ad_value v) {
    if (v.t == AD_TDICT) return ADDSL_OK;
    return ad_error(S, "%s(): argument 'self' must be a dict, not %s", fn, ad_type_name(v));
}

static int bi_keys(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int rc = need_dict(S, "keys", argv[0]);
    return rc ? rc : ad_dict_list(S, argv[0].u.d, 0, out);
}

static int bi_values(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int rc = need_dict(S, "values", argv[0]);
    return rc ? rc : ad_dict_list(S, argv[0].u.d, 1, out);
}

static int bi_items(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int rc = need_dict(S, "items", argv[0]);
    return rc ? rc : ad_dict_list(S, argv[0].u.d, 2, out);
}

static int bi_get(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int rc = need_dict(S, "get", argv[0]);
    if (!rc) rc = ad_dict_check_key(S, argv[1]);
    if (rc) return rc;
    if (!ad_dict_get(argv[0].u.d, argv[1], out)) *out = argv[2];
    ad_value_incref(*out);
    return ADDSL_OK;
}

/* pop(d, key[, default]) as Python's dict.pop; pop(list[, index]) as list.pop. */
static int bi_pop(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    if (argc < 1 || argc > 3) return ad_error(S, "pop() takes 1 to 3 arguments (%d given)", argc);
    ad_value self = argv[0];
    if (self.t == AD_TLIST) {
        if (argc > 2) return ad_error(S, "pop() of a list takes at most 1 argument (%d given)", argc - 1);
        ad_list *l = self.u.l;
        int64_t i = l->len - 1;
        if (argc == 2) {
            int rc = ad_arg_int(S, argv[1], "pop", "index", &i);
            if (rc) return rc;
            if (i < 0) i += l->len;
        }
        if (!l->len) return ad_error(S, "pop from empty list");
        if (i < 0 || i >= l->len) return ad_error(S, "pop index out of range");
        *out = l->items[i];
        memmove(l->items + i, l->items + i + 1, (size_t)(l->len - i - 1) * sizeof *l->items);
        l->len--;
        return ADDSL_OK;
    }
    int rc = need_dict(S, "pop", self);
    if (rc) return rc;
    if (argc < 2) return ad_error(S, "pop() of a dict needs a key");
    if ((rc = ad_dict_check_key(S, argv[1]))) return rc;
    if (ad_dict_remove(S, self.u.d, argv[1], out)) return ADDSL_OK;
    if (argc == 3) { *out = argv[2]; ad_value_incref(*out); return ADDSL_OK; }
    return ad_dict_get_checked(S, self.u.d, argv[1], out); /* raises the KeyError */
}

static int bi_update(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int rc = need_dict(S, "update", argv[0]);
    if (rc) return rc;
    if (argv[1].t != AD_TDICT) return ad_error(S, "update(): argument 'other' must be a dict, not %s", ad_type_name(argv[1]));
    /* Copy first: d.update(d) must not walk a dict it is changing. */
    ad_dict *src = ad_dict_copy(S, argv[1].u.d);
    if (!src) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    int64_t it = 0;
    ad_value k, v;
    while (!rc && ad_dict_next(src, &it, &k, &v)) rc = ad_dict_set(S, argv[0].u.d, k, v);
    ad_dict_free(S, src);
    *out = ad_none();
    return rc;
}

static int bi_copy(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_value self = argv[0];
    if (ad_is_seq(self)) {
        ad_list *l = ad_list_copy(S, self.u.l, self.t);
        if (!l) return S->errcode ? S->errcode : ADDSL_ENOMEM;
        *out = ad_list_value(l, self.t);
        return ADDSL_OK;
    }
    int rc = need_dict(S, "copy", self);
    if (rc) return rc;
    ad_dict *d = ad_dict_copy(S, self.u.d);
    if (!d) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    *out = ad_dict_value(d);
    return ADDSL_OK;
}

/* dict(), dict(d) (a copy), dict(pairs) from (key, value) pairs. */
static int bi_dict(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_value src = argv[0];
    if (src.t == AD_TDICT) return bi_copy(S, argv, 1, out);
    if (src.t != AD_TNONE && !ad_is_seq(src))
        return ad_error(S, "dict(): argument must be a dict or a list of (key, value) pairs, not %s", ad_type_name(src));
    ad_dict *d = ad_dict_new(S);
    if (!d) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    for (int64_t i = 0; src.t != AD_TNONE && i < src.u.l->len; i++) {
        ad_value p = src.u.l->items[i];
        int rc = !ad_is_seq(p) || p.u.l->len != 2
                     ? ad_error(S, "dict(): item %lld is not a (key, value) pair", (long long)i)
                     : ad_dict_set(S, d, p.u.l->items[0], p.u.l->items[1]);
        if (rc) { ad_dict_free(S, d); return rc; }
    }
    *out = ad_dict_value(d);
    return ADDSL_OK;
}

const ad_builtin_def ad_bi_dict_defs[] = {
    {"dict", bi_dict, "x=none",
         "A new dict: empty, a copy of a dict, or built from a list of (key, value) pairs. "
         "Literals {\"a\": 1} make dicts too."
         "\nExample: dict([(\"a\", 1), (\"b\", 2)])"},
    {"keys", bi_keys, "self",
         "The keys of a dict, as a list in insertion order (d.keys())."
         "\nExample: let d = {\"a\": 1, \"b\": 2}; d.keys()"},
    {"values", bi_values, "self",
         "The values of a dict, as a list in insertion order (d.values())."
         "\nExample: let d = {\"a\": 1, \"b\": 2}; d.values()"},
    {"items", bi_items, "self",
         "The (key, value) pairs of a dict, as a list of tuples in insertion order (d.items())."
         "\nExample: for (k, v) in {\"a\": 1}.items() { print(k, v) }"},
    {"get", bi_get, "self, key, default=none",
         "d.get(key, default): the value stored under key, or default (none) when the key is "
         "absent."
         "\nExample: let d = {\"a\": 1}; d.get(\"b\", 0)   # 0"},
    {"pop", bi_pop, "*",
         "d.pop(key[, default]) removes key from a dict and returns its value (default when "
         "absent, an error without one); xs.pop([i]) removes and returns a list's item i (default "
         "the last)."
         "\nExample: let xs = [1, 2, 3]; xs.pop()   # 3"},
    {"update", bi_update, "self, other",
         "d.update(other): copies every key and value of the dict other into d, in place."
         "\nExample: let d = {\"a\": 1}; d.update({\"b\": 2}); d"},
    {"copy", bi_copy, "self",
         "A shallow copy of a dict or list (d.copy()); the values themselves are shared."
         "\nExample: let d = {\"a\": 1}; let e = d.copy(); e[\"a\"] = 2; d[\"a\"]   # 1"},
    {NULL, NULL, NULL}
};
