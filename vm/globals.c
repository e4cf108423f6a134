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

static int grow_slots(ad_state *S, ad_globals *G) {
    int cap = G->cap ? G->cap * 2 : 256;
    char **names = ad_realloc(S, G->names, (size_t)cap * sizeof *names);
    if (!names) return ADDSL_ENOMEM;
    G->names = names;
    ad_value *values = ad_realloc(S, G->values, (size_t)cap * sizeof *values);
    if (!values) return ADDSL_ENOMEM;
    G->values = values;
    bool *def = ad_realloc(S, G->defined, (size_t)cap * sizeof *def);
    if (!def) return ADDSL_ENOMEM;
    G->defined = def;
    bool *decl = ad_realloc(S, G->declared, (size_t)cap * sizeof *decl);
    if (!decl) return ADDSL_ENOMEM;
    G->declared = decl;
    int *lazy = ad_realloc(S, G->lazy, (size_t)cap * sizeof *lazy);
    if (!lazy) return ADDSL_ENOMEM;
    G->lazy = lazy;
    G->cap = cap;
    return ADDSL_OK;
}

int ad_global_slot(ad_state *S, const char *name, bool create) {
    ad_globals *G = S->globals;
    if (G->hcap) {
        uint32_t k = hash_name(name) & (uint32_t)(G->hcap - 1);
        while (G->hash[k]) {
            int i = G->hash[k] - 1;
            if (strcmp(G->names[i], name) == 0) return i;
            k = (k + 1) & (uint32_t)(G->hcap - 1);
        }
    }
    if (!create) return -1;
    if (G->n == G->cap && grow_slots(S, G)) return -1;
    if ((G->n + 1) * 2 > G->hcap && rehash(S, G, G->hcap ? G->hcap * 2 : 512)) return -1;
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
    uint32_t k = hash_name(name) & (uint32_t)(G->hcap - 1);
    while (G->hash[k]) k = (k + 1) & (uint32_t)(G->hcap - 1);
    G->hash[k] = i + 1;
    return i;
}

int ad_global_set(ad_state *S, const char *name, ad_value v) {
    int slot = ad_global_slot(S, name, true);
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
