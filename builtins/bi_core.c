/* bi_core.c: the language-level builtins that are not tensor ops:
 * print, len, str, range, assert, clock, exit, type, append. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "../vm/buf.h"
#include "../vm/dict.h"
#include "../vm/autograd/library.h"
#include "../vm/state.h"
#include "../vm/vm.h"
#include "builtins.h"

/* A 'sep' or 'end' of print: a string, or none for the default. */
static int print_text(ad_state *S, ad_value v, const char *pname, const char *dflt, const char **s, size_t *n) {
    if (v.t == AD_TNONE) { *s = dflt; *n = strlen(dflt); return ADDSL_OK; }
    if (v.t != AD_TSTR) return ad_error(S, "print(): %s must be none or a string, not %s", pname, ad_type_name(v));
    *s = v.u.s->data;
    *n = v.u.s->len;
    return ADDSL_OK;
}

/* print(*values, sep=" ", end="\n", flush=false, all_ranks=false): the four keywords follow the values in argv. */
static int bi_print(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    int n = argc - 4;
    const char *sep = " ", *end = "\n";
    size_t nsep = 1, nend = 1;
    int rc = print_text(S, argv[n], "sep", " ", &sep, &nsep);
    if (!rc) rc = print_text(S, argv[n + 1], "end", "\n", &end, &nend);
    if (rc) return rc;
    /* Under MPI every rank runs the script: one copy of the output by default. */
    if (ad_mpi_rank(S) != 0 && !ad_truthy(argv[n + 3])) { *out = ad_none(); return ADDSL_OK; }
    ad_buf b;
    ad_buf_init(&b, S);
    for (int i = 0; i < n; i++) {
        if (i) ad_buf_add(&b, sep, nsep);
        rc = ad_value_format(S, argv[i], &b, false);
        if (rc) { ad_buf_free(&b); return rc; }
    }
    ad_buf_add(&b, end, nend);
    if (b.failed) { ad_buf_free(&b); return ad_nomem(S); }
    if (b.len) ad_write(S, b.data, b.len, 0);
    ad_buf_free(&b);
    if (ad_truthy(argv[n + 2])) ad_write(S, "", 0, 0);
    *out = ad_none();
    return ADDSL_OK;
}

static int bi_len(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_value v = argv[0];
    switch (v.t) {
    case AD_TLIST: case AD_TTUPLE: *out = ad_int((double)v.u.l->len); return ADDSL_OK;
    case AD_TSTR: *out = ad_int((double)v.u.s->len); return ADDSL_OK;
    case AD_TDICT: *out = ad_int((double)v.u.d->len); return ADDSL_OK;
    case AD_TTENSOR:
        if (v.u.tensor->ndim == 0) return ad_error(S, "len() of a 0-d tensor");
        *out = ad_int((double)v.u.tensor->shape[0]);
        return ADDSL_OK;
    default: return ad_error(S, "len(): %s has no length", ad_type_name(v));
    }
}

static int bi_str(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    if (argv[0].t == AD_TSTR) { *out = argv[0]; ad_value_incref(*out); return ADDSL_OK; }
    ad_buf b;
    ad_buf_init(&b, S);
    int rc = ad_value_format(S, argv[0], &b, false);
    if (!rc && b.failed) rc = ad_nomem(S);
    if (!rc) rc = ad_string_value(S, b.data ? b.data : "", b.len, out);
    ad_buf_free(&b);
    return rc;
}

static int bi_range(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    if (argc < 1 || argc > 3) return ad_error(S, "range() takes 1 to 3 arguments (%d given)", argc);
    double a = 0, b, step = 1;
    bool ints = true;
    for (int i = 0; i < argc; i++) {
        if (!ad_is_number(argv[i])) return ad_error(S, "range() arguments must be numbers, not %s", ad_type_name(argv[i]));
        if (argv[i].t != AD_TINT) ints = false;
    }
    if (argc == 1) b = argv[0].u.n;
    else { a = argv[0].u.n; b = argv[1].u.n; }
    if (argc == 3) step = argv[2].u.n;
    if (step == 0) return ad_error(S, "range() step must not be zero");
    double cnt = ceil((b - a) / step);
    if (cnt < 0) cnt = 0;
    if (cnt > (double)AD_MAX_LIST) return ad_error(S, "range() too long (%.0f items; the limit is %lld)", cnt, (long long)AD_MAX_LIST);
    ad_list *l = ad_list_new(S, AD_TLIST, (int64_t)cnt);
    if (!l) return S->errcode;
    for (int64_t i = 0; i < (int64_t)cnt; i++) {
        double x = a + (double)i * step;
        l->items[i] = ints ? ad_int(x) : ad_num(x);
    }
    *out = ad_list_value(l, AD_TLIST);
    return ADDSL_OK;
}

/* error(msg): raises msg as the error (Python's raise), at the caller's line. */
static int bi_error(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc; (void)out;
    if (argv[0].t == AD_TSTR) return ad_error(S, "%s", argv[0].u.s->data);
    ad_buf b;
    ad_buf_init(&b, S);
    int rc = ad_value_format(S, argv[0], &b, false);
    rc = rc ? rc : b.failed ? ad_nomem(S) : ad_error(S, "%s", b.data);
    ad_buf_free(&b);
    return rc;
}

static int bi_assert(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    bool ok;
    if (argv[0].t == AD_TTENSOR) {
        ad_tensor *t = argv[0].u.tensor;
        if (t->numel != 1) return ad_error(S, "assert(): Boolean value of Tensor with more than one value is ambiguous");
        double x;
        int rc = ad_tensor_item(S, t, &x);
        if (rc) return rc;
        ok = x != 0;
    } else {
        ok = ad_truthy(argv[0]);
    }
    *out = ad_none();
    if (ok) return ADDSL_OK;
    if (argv[1].t == AD_TNONE) return ad_error(S, "assertion failed");
    ad_buf b;
    ad_buf_init(&b, S);
    ad_value_format(S, argv[1], &b, false);
    int rc = b.failed ? ad_nomem(S) : ad_error(S, "assertion failed: %s", b.data ? b.data : "");
    ad_buf_free(&b);
    return rc;
}

static int bi_clock(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)S; (void)argv; (void)argc;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *out = ad_num((double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
    return ADDSL_OK;
}

static int bi_exit(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int64_t code = 0;
    int rc = ad_arg_int(S, argv[0], "exit", "code", &code);
    if (rc) return rc;
    S->exit_code = (int)code;
    *out = ad_none();
    return ad_error_code(S, ADDSL_EXIT, "exit(%d)", (int)code);
}

/* type(x): the name of x's kind. With a dtype it is torch's Tensor.type(dtype),
 * x.type(float64): the library's op 'to' converts, so gradients flow. */
static int bi_type(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    if (argv[1].t != AD_TNONE) {
        if (argv[0].t != AD_TTENSOR)
            return ad_error(S, "type(): a dtype converts tensors only, not %s", ad_type_name(argv[0]));
        int dt;
        int rc = ad_arg_dtype(S, argv[1], "type", "dtype", &dt);
        if (rc) return rc;
        int slot = ad_global_slot(S, "to", false);
        if (slot < 0) return ad_error(S, "type(): the op 'to' is missing");
        if ((rc = ad_library_resolve(S, slot))) return rc;
        return ad_vm_call_value(S, S->globals->values[slot], 2, argv, out);
    }
    const char *n = ad_type_name(argv[0]);
    return ad_string_value(S, n, strlen(n), out);
}

static int bi_append(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    if (argv[0].t != AD_TLIST) return ad_error(S, "append(): argument 'self' must be a list, not %s", ad_type_name(argv[0]));
    ad_value_incref(argv[1]);
    *out = ad_none();
    return ad_list_push(S, argv[0].u.l, argv[1]);
}

/* apply(f, args): f(args[0], args[1], ...), the language's argument spreading. */
static int bi_apply(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    if (!ad_is_seq(argv[1])) return ad_error(S, "apply(): argument 'args' must be a list, not %s", ad_type_name(argv[1]));
    if (argv[1].u.l->len > 255) return ad_error(S, "apply(): too many arguments (%lld; at most 255)", (long long)argv[1].u.l->len);
    return ad_vm_call_value(S, argv[0], (int)argv[1].u.l->len, argv[1].u.l->items, out);
}

/* A list or tuple argument copied as 'kind' (tuple(x), list(x)). */
/* list(x) / tuple(x) of anything a for loop walks: a dict gives its keys. */
static int seq_as(ad_state *S, const char *fn, ad_value v, ad_vtype kind, ad_value *out) {
    if (ad_is_seq(v)) {
        ad_list *l = ad_list_copy(S, v.u.l, kind);
        if (!l) return S->errcode;
        *out = ad_list_value(l, kind);
        return ADDSL_OK;
    }
    if (v.t == AD_TDICT) {
        ad_value keys;
        int rc = ad_dict_list(S, v.u.d, 0, &keys);
        if (rc) return rc;
        rc = seq_as(S, fn, keys, kind, out);
        ad_value_decref(S, keys);
        return rc;
    }
    int64_t n;
    if (!ad_vm_seq_len(v, &n)) {
        if (v.t == AD_TTENSOR) return ad_error(S, "%s(): iteration over a 0-d tensor", fn);
        return ad_error(S, "%s(): %s is not iterable", fn, ad_type_name(v));
    }
    ad_list *l = ad_list_new(S, kind, n);
    if (!l) return S->errcode;
    for (int64_t i = 0; i < n; i++) {
        int rc = ad_vm_seq_item(S, v, i, &l->items[i]);
        if (rc) { ad_value_decref(S, ad_list_value(l, kind)); return rc; }
    }
    *out = ad_list_value(l, kind);
    return ADDSL_OK;
}

/* enumerate(iterable, start=0): a list of (index, item) tuples. */
static int bi_enumerate(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int64_t start = 0;
    int rc = ad_arg_int(S, argv[1], "enumerate", "start", &start);
    if (rc) return rc;
    ad_value items;
    if ((rc = seq_as(S, "enumerate", argv[0], AD_TLIST, &items))) return rc;
    ad_list *src = items.u.l;
    for (int64_t i = 0; i < src->len; i++) {
        ad_list *pair = ad_list_new(S, AD_TTUPLE, 2);
        if (!pair) { ad_value_decref(S, items); return S->errcode; }
        pair->items[0] = ad_int((double)(start + i));
        pair->items[1] = src->items[i];   /* the pair takes the list's reference */
        src->items[i] = ad_list_value(pair, AD_TTUPLE);
    }
    *out = items;
    return ADDSL_OK;
}

/* zip(a, b, ...): tuples of the i-th items, as long as the shortest argument. */
static int bi_zip(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    ad_value *cols = ad_calloc(S, (size_t)(argc ? argc : 1), sizeof *cols);
    if (!cols) return ADDSL_ENOMEM;
    int rc = ADDSL_OK, made = 0;
    int64_t n = argc ? INT64_MAX : 0;
    for (; made < argc && !rc; made++) {
        rc = seq_as(S, "zip", argv[made], AD_TLIST, &cols[made]);
        if (!rc && cols[made].u.l->len < n) n = cols[made].u.l->len;
        if (rc) break;
    }
    ad_list *l = rc ? NULL : ad_list_new(S, AD_TLIST, n);
    if (!rc && !l) rc = S->errcode;
    for (int64_t i = 0; !rc && i < n; i++) {
        ad_list *t = ad_list_new(S, AD_TTUPLE, argc);
        if (!t) { rc = S->errcode; break; }
        for (int k = 0; k < argc; k++) { t->items[k] = cols[k].u.l->items[i]; ad_value_incref(t->items[k]); }
        l->items[i] = ad_list_value(t, AD_TTUPLE);
    }
    for (int k = 0; k < made; k++) ad_value_decref(S, cols[k]);
    ad_free(S, cols);
    if (rc) { if (l) ad_value_decref(S, ad_list_value(l, AD_TLIST)); return rc; }
    *out = ad_list_value(l, AD_TLIST);
    return ADDSL_OK;
}

/* ---- sorted ---- */

/* Why a sort stopped: two values with no order, or lists nested deeper
 * than AD_MAX_NEST_DEPTH (Python's RecursionError). */
typedef struct { bool bad, deep; } order_err;

/* Python's ordering for what sorted() compares: numbers (bools count as 0
 * and 1), strings by bytes, lists and tuples item by item, the first items
 * that differ deciding; a list is equal to itself (Python's identity
 * shortcut), so sorted([a, a]) of a list holding itself is [a, a]. */
static int order_cmp(ad_value a, ad_value b, int depth, order_err *err) {
    bool an = ad_is_number(a) || a.t == AD_TBOOL, bn = ad_is_number(b) || b.t == AD_TBOOL;
    if (an && bn) {
        double x = a.t == AD_TBOOL ? a.u.b : a.u.n, y = b.t == AD_TBOOL ? b.u.b : b.u.n;
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.t == AD_TSTR && b.t == AD_TSTR) {
        size_t n = a.u.s->len < b.u.s->len ? a.u.s->len : b.u.s->len;
        int c = memcmp(a.u.s->data, b.u.s->data, n);
        if (c) return c < 0 ? -1 : 1;
        return a.u.s->len < b.u.s->len ? -1 : a.u.s->len > b.u.s->len ? 1 : 0;
    }
    if (ad_is_seq(a) && a.t == b.t) {
        if (a.u.l == b.u.l) return 0;
        if (depth >= AD_MAX_NEST_DEPTH) { err->deep = true; return 0; }
        int64_t n = a.u.l->len < b.u.l->len ? a.u.l->len : b.u.l->len;
        for (int64_t i = 0; i < n; i++) {
            int c = order_cmp(a.u.l->items[i], b.u.l->items[i], depth + 1, err);
            if (c || err->bad || err->deep) return c;
        }
        return a.u.l->len < b.u.l->len ? -1 : a.u.l->len > b.u.l->len ? 1 : 0;
    }
    err->bad = true;
    return 0;
}

/* Stable merge sort of idx[0..n) by keys[idx[i]]; tmp has room for n. */
static void merge_sort(const ad_value *keys, int64_t *idx, int64_t *tmp, int64_t n, bool reverse, order_err *err) {
    if (n < 2 || err->bad || err->deep) return;
    int64_t h = n / 2;
    merge_sort(keys, idx, tmp, h, reverse, err);
    merge_sort(keys, idx + h, tmp, n - h, reverse, err);
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        int c = order_cmp(keys[idx[j]], keys[idx[i]], 0, err);
        /* take the right one first only when strictly before: stability */
        if (reverse ? c > 0 : c < 0) tmp[k++] = idx[j++]; else tmp[k++] = idx[i++];
    }
    while (i < h) tmp[k++] = idx[i++];
    while (j < n) tmp[k++] = idx[j++];
    memcpy(idx, tmp, (size_t)n * sizeof *idx);
}

static int seq_as(ad_state *S, const char *fn, ad_value v, ad_vtype kind, ad_value *out);

/* sorted(iterable, key=none, reverse=false): a new sorted list (stable, as Python's). */
static int bi_sorted(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    bool reverse = false;
    int rc = ad_arg_bool(S, argv[2], "sorted", "reverse", &reverse);
    if (rc) return rc;
    ad_value items;
    if ((rc = seq_as(S, "sorted", argv[0], AD_TLIST, &items))) return rc;
    ad_list *l = items.u.l;
    int64_t n = l->len;
    ad_value *keys = NULL;
    int64_t *idx = ad_calloc(S, (size_t)(2 * n + 1), sizeof *idx);
    ad_list *res = NULL;
    if (!idx) { rc = ADDSL_ENOMEM; goto done; }
    if (argv[1].t != AD_TNONE) {
        keys = ad_calloc(S, (size_t)(n + 1), sizeof *keys);
        if (!keys) { rc = ADDSL_ENOMEM; goto done; }
        for (int64_t i = 0; i < n && !rc; i++) rc = ad_vm_call_value(S, argv[1], 1, &l->items[i], &keys[i]);
        if (rc) goto done;
    }
    for (int64_t i = 0; i < n; i++) idx[i] = i;
    order_err err = {false, false};
    merge_sort(keys ? keys : l->items, idx, idx + n, n, reverse, &err);
    if (err.deep) {
        rc = ad_error(S, "RecursionError: maximum recursion depth exceeded in comparison (containers nested more than %d deep)",
                      AD_MAX_NEST_DEPTH);
        goto done;
    }
    if (err.bad) { rc = ad_error(S, "sorted(): the items have no order ('<' is not supported between them)"); goto done; }
    res = ad_list_new(S, AD_TLIST, n);
    if (!res) { rc = S->errcode; goto done; }
    for (int64_t i = 0; i < n; i++) { res->items[i] = l->items[idx[i]]; ad_value_incref(res->items[i]); }
    *out = ad_list_value(res, AD_TLIST);
done:
    if (keys) { for (int64_t i = 0; i < n; i++) ad_value_decref(S, keys[i]); ad_free(S, keys); }
    ad_free(S, idx);
    ad_value_decref(S, items);
    return rc;
}

static int bi_tuple(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return seq_as(S, "tuple", argv[0], AD_TTUPLE, out);
}

static int bi_list(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return seq_as(S, "list", argv[0], AD_TLIST, out);
}

const ad_builtin_def ad_bi_core_defs[] = {
    {"apply", bi_apply, "f, args",
         "Calls f with the items of the list or tuple args as its positional arguments (Python's "
         "f(*args))."
         "\nExample: apply(fn(a, b) => a + b, [2, 5])   # 7"},
    {"tuple", bi_tuple, "x",
         "A tuple of the items of a list or tuple (Python's tuple())."
         "\nExample: tuple([1, 2, 3])"},
    {"list", bi_list, "x",
         "A new list of the items of a list or tuple (Python's list(); tensors have tolist())."
         "\nExample: list((1, 2))"},
    {"print", bi_print, "*, sep=none, end=none, flush=false, all_ranks=false",
         "Writes its arguments separated by sep (default a space) and then end (default a "
         "newline); flush=true flushes the output at once. Under MPI only rank 0 prints unless "
         "all_ranks=true."
         "\nExample: print(\"loss\", 0.5, sep=\": \")"},
    {"len", bi_len, "x",
         "The number of items of a list, tuple, dict or string, or the size of a tensor's first "
         "dimension."
         "\nExample: len([1, 2, 3])   # 3"},
    {"str", bi_str, "x",
         "The text print() shows for a value."
         "\nExample: str(1.5) + \"!\""},
    {"range", bi_range, "*",
         "The integers from start (default 0) up to, not including, stop, by step: range(n), "
         "range(a, b), range(a, b, step)."
         "\nExample: for i in range(3) { print(i) }"},
    {"assert", bi_assert, "cond, msg=none",
         "Raises an error with msg when cond is false."
         "\nExample: assert(1 + 1 == 2, \"arithmetic\")"},
    {"error", bi_error, "msg",
         "Raises a runtime error with the message msg (Python's raise); the script stops with a "
         "traceback unless the host catches it."
         "\nExample: fn check(x) { if x < 0 { error(\"negative\") } ; return x }; check(1)"},
    {"clock", bi_clock, "",
         "Seconds of a monotonic clock, for timing."
         "\nExample: let t = clock(); randn(1000); print(clock() - t >= 0)"},
    {"exit", bi_exit, "code=0",
         "Ends the script (or the REPL) with status code."
         "\nExample: exit(0)"},
    {"type", bi_type, "x, dtype=none",
         "The kind of a value as a string (\"tensor\", \"list\", \"number\", ...); type(x, dtype) "
         "converts a tensor to that dtype, as torch's Tensor.type."
         "\nExample: type([1])   # \"list\""},
    {"append", bi_append, "self, x",
         "Adds x at the end of a list, in place (xs.append(x) is the same); returns none."
         "\nExample: let xs = []; xs.append(1); print(xs)"},
    {"enumerate", bi_enumerate, "iterable, start=0",
         "The (index, item) pairs of a list, tuple, string, dict or range, as a list of tuples, "
         "counting from start (Python's enumerate)."
         "\nExample: for (i, v) in enumerate([\"a\", \"b\"], start=1) { print(i, v) }"},
    {"zip", bi_zip, "*",
         "Tuples of the i-th items of each argument, as a list, as long as the shortest argument "
         "(Python's zip)."
         "\nExample: zip([1, 2], [\"a\", \"b\"])   # [(1, \"a\"), (2, \"b\")]"},
    {"sorted", bi_sorted, "iterable, key=none, reverse=false",
         "A new sorted list of the items of iterable (Python's sorted): key=f sorts by f(item), "
         "reverse=true in descending order; the sort is stable."
         "\nExample: sorted([\"bb\", \"a\", \"ccc\"], key=len, reverse=true)"},
    {NULL, NULL, NULL}
};
