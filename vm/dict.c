/* dict.c: the insertion-ordered hash map behind dict values.
 * Entries sit in an array in insertion order; an open-addressing index maps hashes to them. */
#include "dict.h"

#include <math.h>
#include <string.h>

#include "ad_assert.h"
#include "buf.h"
#include "gc.h"
#include "tensor/heap.h"
#include "state.h"

#define DICT_MIN_SLOTS 8

/* ---- hashing: equal keys (1, 1.0 and true included) hash alike ---- */

static uint64_t mix(uint64_t h) {
    h ^= h >> 33; h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

static uint64_t str_hash(const char *s, size_t n) {
    uint64_t x = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) { x ^= (unsigned char)s[i]; x *= 1099511628211ULL; }
    return x;
}

/* False for an unhashable key, with *deep set when it is a tuple nested
 * more than AD_MAX_NEST_DEPTH deep. */
static bool hash_at(ad_value k, uint64_t *h, int depth, bool *deep) {
    switch (k.t) {
    case AD_TNONE: *h = 0x6e6f6e65ULL; return true;
    case AD_TBOOL: *h = mix((uint64_t)k.u.b); return true;
    case AD_TINT: case AD_TNUM: {
        double x = k.u.n;
        if (x == floor(x) && fabs(x) < 9.2e18) { *h = mix((uint64_t)(int64_t)x); return true; }
        uint64_t bits;
        memcpy(&bits, &x, sizeof bits);
        *h = mix(bits);
        return true;
    }
    case AD_TDTYPE: *h = mix(0xd7e0ULL + (uint64_t)k.u.dtype); return true;
    case AD_TSTR: *h = str_hash(k.u.s->data, k.u.s->len); return true;
    case AD_TTUPLE: {
        if (depth >= AD_MAX_NEST_DEPTH) { *deep = true; return false; }
        uint64_t x = 0x7475706cULL;
        for (int64_t i = 0; i < k.u.l->len; i++) {
            uint64_t e;
            if (!hash_at(k.u.l->items[i], &e, depth + 1, deep)) return false;
            x = mix(x ^ e) + (uint64_t)i;
        }
        *h = x;
        return true;
    }
    default: return false;
    }
}

/* The table's shape (vm/ad_assert.h): live entries among the used ones among
 * the allocated ones, and an index that is empty or a power of two with a
 * free slot for every probe to end on. */
static bool dict_ok(const ad_dict *d) {
    if (d->hdr.refcount < 0 || d->len < 0 || d->len > d->n || d->n > d->cap) return false;
    if (d->cap && !d->e) return false;
    if (!d->nslots) return !d->slots && d->len == 0;
    return d->slots && (d->nslots & (d->nslots - 1)) == 0 && d->nslots > d->n;
}

static bool hash_key(ad_value k, uint64_t *h) {
    bool deep = false;
    return hash_at(k, h, 0, &deep);
}

int ad_dict_check_key(ad_state *S, ad_value key) {
    uint64_t h;
    bool deep = false;
    if (hash_at(key, &h, 0, &deep)) return ADDSL_OK;
    if (deep)
        return ad_error(S, "RecursionError: maximum recursion depth exceeded while hashing a tuple (nested more than %d deep)",
                        AD_MAX_NEST_DEPTH);
    return ad_error(S, "unhashable type: '%s' (dict keys are strings, numbers, bools, none or tuples of them)",
                    ad_type_name(key));
}

/* ---- the table ---- */

/* What a dict holds of the state's memory, counted against the memory limit. */
static size_t dict_bytes(const ad_dict *d) {
    return sizeof *d + (size_t)d->cap * sizeof(ad_dict_entry) + (size_t)d->nslots * sizeof(int64_t);
}

ad_dict *ad_dict_new(ad_state *S) {
    ad_dict *d = ad_obj_alloc(S, sizeof *d);
    if (!d) return NULL;
    d->hdr.refcount = 1;
    ad_gc_track(S, &d->gc, AD_TDICT);
    return d;
}

void ad_dict_clear(ad_state *S, ad_dict *d) {
    ad_assert(dict_ok(d));
    ad_dict_entry *e = d->e;
    int64_t n = d->n;
    ad_heap_discharge_objects(S, dict_bytes(d) - sizeof *d);
    d->e = NULL; d->n = d->cap = d->len = 0;
    ad_free(S, d->slots);
    d->slots = NULL; d->nslots = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!e[i].live) continue;
        ad_value_decref(S, e[i].key);
        ad_value_decref(S, e[i].val);
    }
    ad_free(S, e);
}

void ad_dict_free(ad_state *S, ad_dict *d) {
    ad_assert(dict_ok(d) && !d->busy);
    ad_gc_untrack(S, &d->gc);
    for (int64_t i = 0; i < d->n; i++) {
        if (!d->e[i].live) continue;
        ad_value_decref(S, d->e[i].key);
        ad_value_decref(S, d->e[i].val);
    }
    ad_heap_discharge_objects(S, dict_bytes(d) - sizeof *d);
    ad_free(S, d->e);
    ad_free(S, d->slots);
    ad_obj_free(S, d, sizeof *d);
}

/* Slot of 'key' in the index (holding its entry) or of the empty slot where it would go. */
static int64_t find_slot(const ad_dict *d, ad_value key, uint64_t h) {
    ad_assert(d->nslots > d->n && (d->nslots & (d->nslots - 1)) == 0);
    uint64_t mask = (uint64_t)d->nslots - 1;
    for (uint64_t i = h & mask;; i = (i + 1) & mask) {
        int64_t ix = d->slots[i];
        if (ix == 0) return (int64_t)i;
        ad_assert(ix > 0 && ix <= d->n); /* the index points at used entries only */
        const ad_dict_entry *e = &d->e[ix - 1];
        if (e->live && e->hash == h && ad_values_equal(e->key, key)) return (int64_t)i;
    }
}

/* Compacts popped entries away and rebuilds the index for at least 'need' entries. */
static int rebuild(ad_state *S, ad_dict *d, int64_t need) {
    int64_t ns = DICT_MIN_SLOTS;
    while (ns < 2 * need + 2) ns *= 2;
    /* the new index first: failing, the dict is left as it was (compacting
     * first would leave the old index pointing at moved entries) */
    if (ad_heap_charge_objects(S, (size_t)ns * sizeof(int64_t))) return ADDSL_ENOMEM;
    int64_t *slots = ad_calloc(S, (size_t)ns, sizeof *slots);
    if (!slots) { ad_heap_discharge_objects(S, (size_t)ns * sizeof(int64_t)); return ADDSL_ENOMEM; }
    int64_t live = 0;
    for (int64_t i = 0; i < d->n; i++)
        if (d->e[i].live) d->e[live++] = d->e[i];
    ad_assert(live == d->len && need <= d->cap + 1 && ns > 2 * need);
    d->n = live;
    ad_heap_discharge_objects(S, (size_t)d->nslots * sizeof(int64_t));
    ad_free(S, d->slots);
    d->slots = slots;
    d->nslots = ns;
    for (int64_t i = 0; i < d->n; i++) {
        uint64_t mask = (uint64_t)ns - 1, j = d->e[i].hash & mask;
        while (slots[j]) j = (j + 1) & mask;
        slots[j] = i + 1;
    }
    return ADDSL_OK;
}

bool ad_dict_get(const ad_dict *d, ad_value key, ad_value *out) {
    uint64_t h;
    if (!d->len || !hash_key(key, &h)) return false;
    int64_t ix = d->slots[find_slot(d, key, h)];
    if (!ix) return false;
    *out = d->e[ix - 1].val;
    return true;
}

ad_value *ad_dict_get_str(const ad_dict *d, const char *key) {
    size_t len = strlen(key);
    if (!d->len) return NULL;
    uint64_t h = str_hash(key, len), mask = (uint64_t)d->nslots - 1;
    for (uint64_t i = h & mask; d->slots[i]; i = (i + 1) & mask) {
        ad_assert(d->slots[i] > 0 && d->slots[i] <= d->n);
        ad_dict_entry *e = &d->e[d->slots[i] - 1];
        if (e->live && e->hash == h && e->key.t == AD_TSTR && e->key.u.s->len == len &&
            memcmp(e->key.u.s->data, key, len) == 0)
            return &e->val;
    }
    return NULL;
}

/* "KeyError: "k" (keys: "a", "b")": the keys tell the user what to write instead. */
static int key_error(ad_state *S, const ad_dict *d, ad_value key) {
    enum { SHOWN_KEYS = 8 };
    ad_buf b;
    ad_buf_init(&b, S);
    ad_value_format(S, key, &b, true);
    if (!d->len) ad_buf_puts(&b, " (the dict is empty)");
    else {
        ad_buf_puts(&b, " (keys: ");
        int64_t it = 0, shown = 0;
        ad_value k, v;
        while (ad_dict_next(d, &it, &k, &v)) {
            if (shown == SHOWN_KEYS) { ad_buf_puts(&b, ", ..."); break; }
            if (shown++) ad_buf_puts(&b, ", ");
            ad_value_format(S, k, &b, true);
        }
        ad_buf_puts(&b, ")");
    }
    int rc = b.failed ? ad_nomem(S) : ad_error(S, "KeyError: %s", b.data);
    ad_buf_free(&b);
    return rc;
}

int ad_dict_get_checked(ad_state *S, const ad_dict *d, ad_value key, ad_value *out) {
    int rc = ad_dict_check_key(S, key);
    if (rc) return rc;
    if (!ad_dict_get(d, key, out)) return key_error(S, d, key);
    ad_value_incref(*out);
    return ADDSL_OK;
}

int ad_dict_set(ad_state *S, ad_dict *d, ad_value key, ad_value val) {
    uint64_t h;
    ad_assert(dict_ok(d) && ad_vtype_valid(val.t));
    if (!hash_key(key, &h)) return ad_dict_check_key(S, key);
    if (d->nslots) {
        int64_t ix = d->slots[find_slot(d, key, h)];
        if (ix) {
            ad_value old = d->e[ix - 1].val;
            ad_value_incref(val);
            d->e[ix - 1].val = val;
            ad_value_decref(S, old);
            return ADDSL_OK;
        }
    }
    if (d->len >= AD_MAX_LIST) return ad_error(S, "dict too large (the limit is %lld entries)", (long long)AD_MAX_LIST);
    if (d->n == d->cap) {
        /* Popped entries are reclaimed before the array grows. */
        if (d->len < d->n / 2 + 1 && d->n) {
            int rc = rebuild(S, d, d->len + 1);
            if (rc) return rc;
        }
        if (d->n == d->cap) {
            int64_t cap = d->cap ? d->cap * 2 : 4;
            size_t more = (size_t)(cap - d->cap) * sizeof(ad_dict_entry);
            if (ad_heap_charge_objects(S, more)) return ADDSL_ENOMEM;
            ad_dict_entry *e = ad_realloc(S, d->e, (size_t)cap * sizeof *e);
            if (!e) { ad_heap_discharge_objects(S, more); return ADDSL_ENOMEM; }
            d->e = e; d->cap = cap;
        }
    }
    if (2 * (d->n + 1) > d->nslots) {
        int rc = rebuild(S, d, d->n + 1);
        if (rc) return rc;
    }
    int64_t slot = find_slot(d, key, h);
    ad_assert(d->n < d->cap && d->slots[slot] == 0);
    ad_dict_entry *e = &d->e[d->n];
    e->key = key; e->val = val; e->hash = h; e->live = true;
    ad_value_incref(key);
    ad_value_incref(val);
    d->slots[slot] = ++d->n;
    d->len++;
    ad_assert(dict_ok(d) && 2 * d->n <= d->nslots);
    return ADDSL_OK;
}

int ad_dict_set_str(ad_state *S, ad_dict *d, const char *key, ad_value val) {
    ad_value k;
    int rc = ad_string_value(S, key, strlen(key), &k);
    if (!rc) {
        rc = ad_dict_set(S, d, k, val);
        ad_value_decref(S, k);
    }
    ad_value_decref(S, val);
    return rc;
}

bool ad_dict_remove(ad_state *S, ad_dict *d, ad_value key, ad_value *old) {
    uint64_t h;
    if (!d->len || !hash_key(key, &h)) return false;
    int64_t slot = find_slot(d, key, h);
    int64_t ix = d->slots[slot];
    if (!ix) return false;
    ad_dict_entry *e = &d->e[ix - 1];
    ad_assert(e->live && e->hash == h && d->len > 0);
    /* The index slot keeps pointing at the dead entry so probe chains stay
     * intact; find_slot skips it and the next rebuild drops it. */
    e->live = false;
    d->len--;
    ad_value_decref(S, e->key);
    if (old) *old = e->val;
    else ad_value_decref(S, e->val);
    e->key = ad_none(); e->val = ad_none();
    return true;
}

bool ad_dict_next(const ad_dict *d, int64_t *it, ad_value *key, ad_value *val) {
    ad_assert(*it >= 0 && dict_ok(d));
    while (*it < d->n) {

        const ad_dict_entry *e = &d->e[(*it)++];
        if (!e->live) continue;
        *key = e->key;
        *val = e->val;
        return true;
    }
    return false;
}

ad_dict *ad_dict_copy(ad_state *S, const ad_dict *d) {
    ad_dict *c = ad_dict_new(S);
    if (!c) return NULL;
    int64_t it = 0;
    ad_value k, v;
    while (ad_dict_next(d, &it, &k, &v))
        if (ad_dict_set(S, c, k, v)) { ad_dict_free(S, c); return NULL; }
    return c;
}

int ad_dict_list(ad_state *S, const ad_dict *d, int which, ad_value *out) {
    ad_list *l = ad_list_new(S, AD_TLIST, d->len);
    if (!l) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    int64_t it = 0, i = 0;
    ad_value k, v;
    while (ad_dict_next(d, &it, &k, &v)) {
        if (which == 2) {
            ad_list *t = ad_list_new(S, AD_TTUPLE, 2);
            if (!t) { ad_value_decref(S, ad_list_value(l, AD_TLIST)); return S->errcode ? S->errcode : ADDSL_ENOMEM; }
            t->items[0] = k; t->items[1] = v;
            ad_value_incref(k); ad_value_incref(v);
            l->items[i++] = ad_list_value(t, AD_TTUPLE);
        } else {
            l->items[i] = which == 0 ? k : v;
            ad_value_incref(l->items[i++]);
        }
    }
    *out = ad_list_value(l, AD_TLIST);
    return ADDSL_OK;
}

bool ad_dict_equal(ad_dict *a, ad_dict *b, int depth, bool *deep) {
    if (a == b) return true;
    if (a->len != b->len) return false;
    if (depth >= AD_MAX_NEST_DEPTH) { *deep = true; return false; }
    int64_t it = 0;
    ad_value k, v, w;
    while (ad_dict_next(a, &it, &k, &v))
        if (!ad_dict_get(b, k, &w) || !ad_values_equal_at(v, w, depth + 1, deep)) return false;
    return true;
}

int ad_dict_format(ad_state *S, ad_dict *d, ad_buf *b) {
    if (d->busy) return ad_buf_puts(b, "{...}");
    int rc = ad_nest_enter(S, "while getting the str of an object");
    if (rc) return rc;
    d->busy = true;
    ad_buf_puts(b, "{");
    int64_t it = 0, i = 0;
    ad_value k, v;
    while (!rc && ad_dict_next(d, &it, &k, &v)) {
        if (i++) ad_buf_puts(b, ", ");
        rc = ad_value_format(S, k, b, true);
        ad_buf_puts(b, ": ");
        if (!rc) rc = ad_value_format(S, v, b, true);
    }
    d->busy = false;
    ad_nest_leave(S);
    if (rc) return rc;
    return ad_buf_puts(b, "}");
}
