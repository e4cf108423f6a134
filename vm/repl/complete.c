/* repl/complete.c: addsl_complete, the REPL's tab completion: names in scope, attributes and methods
 * after '.', and keyword arguments inside a call, for the word that ends the text typed so far. */
#include <stdlib.h>
#include <string.h>

#include "dict.h"
#include "repl/help.h"
#include "autograd/library.h"
#include "import.h"
#include "state.h"
#include "vm.h"

#define CHAIN_MAX 16   /* names in a.b.c before the word */
#define KW_MAX 128     /* bytes of one "name=" candidate */

static bool ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Walks the text as the lexer would for strings, comments and brackets: says
 * whether it ends inside a string, and where the innermost open '(' is (-1: none). */
static bool scan_text(const char *text, size_t len, long *open_paren) {
    long stack[256];
    int depth = 0;
    char quote = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (quote) {
            if (c == '\\' && i + 1 < len) i++;
            else if (c == quote) quote = 0;
            continue;
        }
        if (c == '#') {
            while (i < len && text[i] != '\n') i++;
            continue;
        }
        if (c == '"' || c == '\'') quote = c;
        else if (c == '(' || c == '[' || c == '{') {
            if (depth < 256) stack[depth] = c == '(' ? (long)i : -2;
            depth++;
        } else if ((c == ')' || c == ']' || c == '}') && depth > 0) depth--;
    }
    *open_paren = -1;
    if (depth > 0 && depth <= 256 && stack[depth - 1] >= 0) *open_paren = stack[depth - 1];
    return quote != 0;
}

/* The value named by the chain of identifiers a.b.c that ends just before
 * 'end' in text (borrowed from a global, a module or a dict); false if none. */
static bool chain_value(ad_state *S, const char *text, size_t end, ad_value *out) {
    size_t starts[CHAIN_MAX], lens[CHAIN_MAX];
    int n = 0;
    size_t e = end;
    for (;;) {
        size_t b = e;
        while (b > 0 && ident_char(text[b - 1])) b--;
        if (b == e || (text[b] >= '0' && text[b] <= '9') || n == CHAIN_MAX) return false;
        starts[n] = b;
        lens[n] = e - b;
        n++;
        if (b > 0 && text[b - 1] == '.') { e = b - 1; continue; }
        break;
    }
    char name[256];
    ad_value v = ad_none();
    for (int i = n - 1; i >= 0; i--) {
        if (lens[i] >= sizeof name) return false;
        memcpy(name, text + starts[i], lens[i]);
        name[lens[i]] = '\0';
        if (i == n - 1) {
            int slot = ad_global_user_slot(S, name, false, false);
            if (slot < 0 || ad_global_resolve(S, &slot) || !S->globals->defined[slot]) return false;
            v = S->globals->values[slot];
        } else if (v.t == AD_TMODULE) {
            ad_value *slot = ad_dict_get_str(v.u.mod->slots, name);
            if (!slot || !S->globals->defined[(int)slot->u.n]) return false;
            v = S->globals->values[(int)slot->u.n];
        } else if (v.t == AD_TDICT) {
            ad_value *item = ad_dict_get_str(v.u.d, name);
            if (!item) return false;
            v = *item;
        } else {
            return false;
        }
    }
    *out = v;
    return true;
}

static void offer(const ad_names *l, const char *prefix, size_t plen, const char *suffix,
                  void (*fn)(void *, const char *), void *ud) {
    char buf[KW_MAX];
    for (int i = 0; i < l->n; i++) {
        const char *s = l->v[i];
        if (strncmp(s, prefix, plen) != 0) continue;
        if (s[0] == '_' && (plen == 0 || prefix[0] != '_') && strcmp(s, "_") != 0) continue;
        if (suffix) {
            if (strlen(s) + strlen(suffix) >= sizeof buf) continue;
            strcpy(buf, s);
            strcat(buf, suffix);
            fn(ud, buf);
        } else {
            fn(ud, s);
        }
    }
}

int addsl_complete(addsl_state *S, const char *text, size_t *start, int *in_string,
                   void (*fn)(void *ud, const char *candidate), void *ud) {
    if (!S || !text || !start || !in_string || !fn) return ADDSL_EARG;
    size_t len = strlen(text);
    long paren;
    *in_string = scan_text(text, len, &paren);
    *start = len;
    if (*in_string) return ADDSL_OK;
    size_t b = len;
    while (b > 0 && ident_char(text[b - 1])) b--;
    *start = b;
    const char *prefix = text + b;
    size_t plen = len - b;
    if (plen > 0 && prefix[0] >= '0' && prefix[0] <= '9') return ADDSL_OK;
    ad_names l;
    ad_names_init(&l, S);
    int rc = ADDSL_OK;
    if (b > 0 && text[b - 1] == '.') {
        ad_value v;
        if (chain_value(S, text, b - 1, &v)) rc = ad_help_attrs(S, v, &l);
        if (!rc) offer(&l, prefix, plen, NULL, fn, ud);
    } else {
        ad_value callee;
        if (paren > 0 && chain_value(S, text, (size_t)paren, &callee)) {
            rc = ad_help_params(callee, &l);
            if (!rc) {
                ad_names_sort(&l);
                offer(&l, prefix, plen, "=", fn, ud);
            }
            l.n = 0;
        }
        if (!rc) rc = ad_help_scope(S, &l, true);
        if (!rc) offer(&l, prefix, plen, NULL, fn, ud);
    }
    if (!rc && l.failed) rc = ADDSL_ENOMEM;
    ad_names_free(&l);
    /* Completion reads values only: whatever it met leaves no error behind. */
    ad_clear_error(S);
    return rc;
}
