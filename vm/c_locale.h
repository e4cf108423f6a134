/* c_locale.h: the C locale every library call runs in, whatever locale the
 * host set, so that numbers are parsed and printed with a '.' (docs/embedding.md). */
#ifndef AD_C_LOCALE_H
#define AD_C_LOCALE_H

#include <locale.h>

typedef struct addsl_state ad_state;

/* What ad_c_locale_leave puts back: the thread's locale and the host's, as they
 * were when the scope began (scopes nest: a write callback may call the API). */
typedef struct ad_c_scope {
    locale_t thread;
    locale_t host;
} ad_c_scope;

/* The state's C locale object; NULL when it cannot be had (out of memory). */
locale_t ad_c_locale_new(void);
void ad_c_locale_free(locale_t loc);

/* Switches the calling thread to S's C locale until ad_c_locale_leave; every
 * public entry point that compiles, runs or resolves script code holds one, and
 * so does every load of a library file (addsl_complete may load them all). */
ad_c_scope ad_c_locale_enter(ad_state *S);
void ad_c_locale_leave(ad_state *S, ad_c_scope sc);

/* Runs the host's code in the host's locale: switches back to the locale the
 * host called the library in, returning the one to restore with uselocale()
 * ((locale_t)0 outside any scope, which uselocale() takes as "change nothing"). */
locale_t ad_c_locale_host(ad_state *S);

#endif
