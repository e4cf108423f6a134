/* globals.c: the global slots of a state. Names map to slots at compile
 * time; the VM reads and writes slots by index, never by name. */
#include <string.h>

#include "state.h"
#include "vm.h"

static uint32_t hash_name(const char *s) {
    uint32_t h = 2166136261u;
    while (*s) { h ^= (unsigned char)*s++; h *= 16777619u; }
    return h;
}

int ad_globals_init(ad_state *S) {
    ad_globals *G = ad_calloc(S, 1, sizeof *G);
    if (!G) return ADDSL_ENOMEM;
    S->globals = G;
    return ADDSL_OK;
}

void ad_globals_free(ad_state *S) {
    ad_globals *G = S->globals;
    if (!G) return;
    for (int i = 0; i < G->n; i++) {
        ad_value_decref(S, G->values[i]);
        ad_free(S, G->names[i]);
    }
    ad_free(S, G->names); ad_free(S, G->values); ad_free(S, G->defined);
    ad_free(S, G->declared); ad_free(S, G->lazy); ad_free(S, G->hash);
    ad_free(S, G->lib); ad_free(S, G->shadow); ad_free(S, G->base);
    ad_free(S, G);
    S->globals = NULL;
}

static int rehash(ad_state *S, ad_globals *G, int hcap) {
    int *h = ad_calloc(S, (size_t)hcap, sizeof *h);
    if (!h) return ADDSL_ENOMEM;
    for (int i = 0; i < G->n; i++) {
        uint32_t k = hash_name(G->names[i]) & (uint32_t)(hcap - 1);
        while (h[k]) k = (k + 1) & (uint32_t)(hcap - 1);
        h[k] = i + 1;
    }
    ad_free(S, G->hash);
    G->hash = h; G->hcap = hcap;
    return ADDSL_OK;
}

/* Each per-slot array grows to 'cap'; one that fails leaves the others
 * larger, harmlessly, and G->cap unchanged. */
#define GROW(field)                                                             \
    do {                                                                        \
        void *q = ad_realloc(S, G->field, (size_t)cap * sizeof *G->field);      \
        if (!q) return ADDSL_ENOMEM;                                            \
        G->field = q;                                                           \
    } while (0)

static int grow_slots(ad_state *S, ad_globals *G) {
    int cap = G->cap ? G->cap * 2 : 256;
    GROW(names);
    GROW(values);
    GROW(defined);
    GROW(declared);
    GROW(lazy);
    GROW(lib);
    GROW(shadow);
    GROW(base);
    G->cap = cap;
    return ADDSL_OK;
}
#undef GROW

static int find_slot(const ad_globals *G, const char *name) {
    if (!G->hcap) return -1;
    uint32_t k = hash_name(name) & (uint32_t)(G->hcap - 1);
    while (G->hash[k]) {
        int i = G->hash[k] - 1;
        if (strcmp(G->names[i], name) == 0) return i;
        k = (k + 1) & (uint32_t)(G->hcap - 1);
    }
    return -1;
}

/* A new undefined slot; a shadow is not entered in the hash, so lookups by
 * name keep finding the library's slot and reach the shadow through it. */
static int new_slot(ad_state *S, const char *name, bool hashed) {
    ad_globals *G = S->globals;
    if (G->n == G->cap && grow_slots(S, G)) return -1;
    if (hashed && (G->n + 1) * 2 > G->hcap && rehash(S, G, G->hcap ? G->hcap * 2 : 512)) return -1;
    size_t len = strlen(name);
    char *copy = ad_malloc(S, len + 1);
    if (!copy) return -1;
    memcpy(copy, name, len + 1);
    int i = G->n++;
    G->names[i] = copy;
    G->values[i] = ad_none();
    G->defined[i] = false;
    G->declared[i] = false;
    G->lazy[i] = 0;
    G->lib[i] = false;
    G->shadow[i] = 0;
    G->base[i] = 0;
    if (hashed) {
        uint32_t k = hash_name(name) & (uint32_t)(G->hcap - 1);
        while (G->hash[k]) k = (k + 1) & (uint32_t)(G->hcap - 1);
        G->hash[k] = i + 1;
    }
    return i;
}

int ad_global_slot(ad_state *S, const char *name, bool create) {
    int i = find_slot(S->globals, name);
    if (i >= 0 || !create) return i;
    return new_slot(S, name, true);
}

int ad_global_user_slot(ad_state *S, const char *name, bool create, bool bind) {
    ad_globals *G = S->globals;
    int i = find_slot(G, name);
    if (i < 0) return create || bind ? new_slot(S, name, true) : -1;
    if (!G->lib[i]) return i;
    if (G->shadow[i]) return G->shadow[i] - 1;
    if (!bind) return i;
    int u = new_slot(S, name, false);
    if (u < 0) return -1;
    G->shadow[i] = u + 1;
    G->base[u] = i + 1;
    return u;
}

void ad_globals_seal(ad_state *S) {
    ad_globals *G = S->globals;
    for (int i = 0; i < G->n; i++) G->lib[i] = true;
    G->sealed = true;
}

int ad_global_set(ad_state *S, const char *name, ad_value v) {
    int slot = S->globals->sealed ? ad_global_user_slot(S, name, true, true) : ad_global_slot(S, name, true);
    if (slot < 0) { ad_value_decref(S, v); return ADDSL_ENOMEM; }
    ad_globals *G = S->globals;
    ad_value old = G->values[slot];
    G->values[slot] = v;
    G->defined[slot] = true;
    G->declared[slot] = true;
    G->lazy[slot] = 0;
    ad_value_decref(S, old);
    return ADDSL_OK;
}
