/* repl/suggest.c: "did you mean" for misspelt names: a weighted edit distance and
 * the nearest of a set of candidates (locals, globals, attributes, parameters). */
#include "repl/suggest.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "ad_limits.h"
#include "state.h"
#include "vm.h"

/* Costs in half-edits, so that a change of case alone (x -> X) is cheaper
 * than any real edit and 'true' is the nearest name to 'True'. */
enum { COST_EDIT = 2, COST_CASE = 1 };

static int min3(int a, int b, int c) { int m = a < b ? a : b; return m < c ? m : c; }

static int sub_cost(char a, char b) {
    if (a == b) return 0;
    return tolower((unsigned char)a) == tolower((unsigned char)b) ? COST_CASE : COST_EDIT;
}

static bool same_fold(char a, char b) { return tolower((unsigned char)a) == tolower((unsigned char)b); }

/* Optimal string alignment (Damerau-Levenshtein without repeated edits of one
 * substring): insertions, deletions, substitutions and swaps of neighbours. */
int ad_suggest_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > AD_SUGGEST_MAX_LEN || lb > AD_SUGGEST_MAX_LEN) return -1;
    int rows[3][AD_SUGGEST_MAX_LEN + 1];
    int *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= lb; j++) prev[j] = (int)j * COST_EDIT;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = (int)i * COST_EDIT;
        for (size_t j = 1; j <= lb; j++) {
            int c = min3(prev[j] + COST_EDIT, cur[j - 1] + COST_EDIT, prev[j - 1] + sub_cost(a[i - 1], b[j - 1]));
            if (i > 1 && j > 1 && same_fold(a[i - 1], b[j - 2]) && same_fold(a[i - 2], b[j - 1]) &&
                !same_fold(a[i - 1], b[j - 1]) && prev2[j - 2] + COST_EDIT < c)
                c = prev2[j - 2] + COST_EDIT;
            cur[j] = c;
        }
        int *t = prev2; prev2 = prev; prev = cur; cur = t;
    }
    return prev[lb];
}

/* Python's bound (Lib/traceback.py): a third of the two lengths, so short
 * names need a near-exact match and 'x' never suggests 'y'. */
static int max_cost(size_t la, size_t lb) { return (int)((la + lb + 3) * COST_EDIT / 6); }

void ad_suggest_init(ad_suggest *s, const char *name) {
    s->name = name;
    s->best = NULL;
    s->cost = 0;
}

void ad_suggest_add(ad_suggest *s, const char *cand) {
    if (!cand || !cand[0]) return;
    size_t la = strlen(s->name), lb = strlen(cand);
    int bound = max_cost(la, lb);
    size_t diff = la > lb ? la - lb : lb - la;
    if ((int)diff * COST_EDIT > bound) return;
    int d = ad_suggest_distance(s->name, cand);
    if (d <= 0 || d > bound) return; /* 0: the name itself */
    if (s->best && d >= s->cost) return;
    s->best = cand;
    s->cost = d;
}

void ad_suggest_merge(ad_suggest *s, const ad_suggest *other) {
    if (!other->best) return;
    if (s->best && other->cost >= s->cost) return;
    s->best = other->best;
    s->cost = other->cost;
}

static bool value_callable(ad_value v) { return v.t == AD_TFUNC || v.t == AD_TBUILTIN || v.t == AD_TOP; }

/* A library name not loaded yet: the library defines ops and functions in
 * lower case and only its constants in capitals (lib/helpers_*.ad). */
static bool lazy_callable(const char *name) {
    for (const char *p = name; *p; p++)
        if (islower((unsigned char)*p)) return true;
    return false;
}

static bool slot_callable(const ad_globals *G, int i) {
    if (G->defined[i]) return value_callable(G->values[i]);
    return G->lazy[i] && lazy_callable(G->names[i]);
}

static bool slot_visible(const ad_globals *G, int i) {
    /* '$' names are the f-string helpers (and their ad_ aliases): never suggested. */
    return (G->defined[i] || G->declared[i] || G->lazy[i]) && G->names[i][0] != '_' && !strchr(G->names[i], '$');
}

void ad_suggest_globals(ad_suggest *s, ad_state *S, bool callable_only) {
    const ad_globals *G = S->globals;
    if (!G) return;
    /* Two passes so a script's own names win ties over the library's. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < G->n; i++) {
            if (G->lib[i] != (pass == 1) || !slot_visible(G, i)) continue;
            if (callable_only && !slot_callable(G, i)) continue;
            ad_suggest_add(s, G->names[i]);
        }
}

bool ad_suggest_global_exists(ad_state *S, const char *name) {
    const ad_globals *G = S->globals;
    int i = G ? ad_global_slot(S, name, false) : -1;
    return i >= 0 && slot_visible(G, i);
}

bool ad_suggest_global_callable(ad_state *S, const char *name) {
    const ad_globals *G = S->globals;
    int i = G ? ad_global_slot(S, name, false) : -1;
    if (i < 0) return false;
    /* x.name() calls the script's own binding of a library name when that is
     * callable, else the library's (vm/codegen.c, METHODFB). */
    if (G->shadow[i] && slot_callable(G, G->shadow[i] - 1)) return true;
    return slot_callable(G, i);
}

void ad_suggest_append(const ad_suggest *s, char *buf, size_t n) {
    if (!s->best) return;
    size_t len = strlen(buf);
    if (len + 1 >= n) return;
    snprintf(buf + len, n - len, "; did you mean '%.100s'?", s->best);
}

int ad_error_unknown_kw(ad_state *S, const char *fname, const char *kw, const char *const *pnames, int np) {
    ad_suggest s;
    ad_suggest_init(&s, kw);
    for (int i = 0; i < np; i++) ad_suggest_add(&s, pnames[i]);
    if (s.best) return ad_error(S, "%s() got an unexpected keyword argument '%s'; did you mean '%s'?", fname, kw, s.best);
    return ad_error(S, "%s() got an unexpected keyword argument '%s'", fname, kw);
}
