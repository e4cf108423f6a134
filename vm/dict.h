/* dict.h: the dict value: an insertion-ordered hash map from hashable values
 * (strings, numbers, bools, none, dtypes and tuples of them) to any value. */
#ifndef AD_DICT_H
#define AD_DICT_H

#include <stdbool.h>
#include <stdint.h>

#include "value.h"

struct ad_buf;

typedef struct ad_dict_entry {
    ad_value key, val;
    uint64_t hash;
    bool live;            /* false once popped: the slot stays until a rebuild */
} ad_dict_entry;

typedef struct ad_dict {
    ad_obj hdr;
    ad_gclink gc;
    int64_t len;          /* live entries */
    int64_t n, cap;       /* entries used (live and popped) and allocated, in insertion order */
    ad_dict_entry *e;
    int64_t *slots;       /* open addressing: entry index + 1, 0 when empty */
    int64_t nslots;       /* a power of two, at least twice n */
    bool busy;            /* being printed: a cycle through it shows as {...} */
} ad_dict;

static inline ad_value ad_dict_value(ad_dict *d) { ad_value v; v.t = AD_TDICT; v.u.d = d; return v; }

/* A new empty dict (refcount 1), or NULL with the error set. */
ad_dict *ad_dict_new(ad_state *S);
void ad_dict_free(ad_state *S, ad_dict *d);

/* Releases every entry and leaves d empty (the collector breaking a cycle). */
void ad_dict_clear(ad_state *S, ad_dict *d);

/* Fails with "unhashable type: 'T' ..." unless 'key' may be a dict key. */
int ad_dict_check_key(ad_state *S, ad_value key);

/* *out is d[key], borrowed (valid while d holds it); false when absent. An
 * unhashable key is simply absent here; ad_dict_get_checked reports it. */
bool ad_dict_get(const ad_dict *d, ad_value key, ad_value *out);
/* d[key] as a new reference in *out; a missing key fails with KeyError. */
int ad_dict_get_checked(ad_state *S, const ad_dict *d, ad_value key, ad_value *out);
/* Borrowed pointer to d[key] for a string key, or NULL. */
ad_value *ad_dict_get_str(const ad_dict *d, const char *key);

/* d[key] = val. Borrows both: the dict takes its own references. A key
 * already present keeps its place in the order. */
int ad_dict_set(ad_state *S, ad_dict *d, ad_value key, ad_value val);
/* d[key] = val for a C string key; steals 'val' (even on failure), so a
 * fresh tensor can be handed over directly. */
int ad_dict_set_str(ad_state *S, ad_dict *d, const char *key, ad_value val);

/* Removes key; *old (when not NULL) receives the caller's reference to the
 * removed value. Returns false when the key was absent. */
bool ad_dict_remove(ad_state *S, ad_dict *d, ad_value key, ad_value *old);

/* Iteration in insertion order: start with *it = 0; each call gives the next
 * live entry's key and value (borrowed) and returns false at the end. The
 * dict must not change during the walk. */
bool ad_dict_next(const ad_dict *d, int64_t *it, ad_value *key, ad_value *val);

/* A shallow copy (new references to the same keys and values). */
ad_dict *ad_dict_copy(ad_state *S, const ad_dict *d);
/* d's keys, values or (key, value) tuples as a new list; which: 0, 1, 2. */
int ad_dict_list(ad_state *S, const ad_dict *d, int which, ad_value *out);

/* Equality of the entries; 'depth' levels of containers are already open
 * (AD_MAX_NEST_DEPTH bounds it: *deep is set and the dicts compare unequal). */
bool ad_dict_equal(ad_dict *a, ad_dict *b, int depth, bool *deep);
int ad_dict_format(ad_state *S, ad_dict *d, struct ad_buf *b);

#endif
