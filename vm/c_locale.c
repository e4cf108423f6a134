/* c_locale.c: the library runs in the C locale (uselocale, per thread) inside its
 * entry points, and gives the host its own locale back around the write callback. */
#include "c_locale.h"

#include "ad_assert.h"
#include "state.h"

/* glibc hands out its static C locale object here, allocating nothing; another
 * libc may malloc it (outside the state's allocator) or fail, and then addsl_open
 * fails as it does without memory. */
locale_t ad_c_locale_new(void) {
    return newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

void ad_c_locale_free(locale_t loc) {
    if (loc) freelocale(loc);
}

ad_c_scope ad_c_locale_enter(ad_state *S) {
    ad_assert(S->c_locale);
    ad_c_scope sc = {uselocale(S->c_locale), S->host_locale};
    /* uselocale fails only for an invalid locale object, and S->c_locale is valid. */
    ad_assert(sc.thread);
    /* A scope inside a scope (a library file loaded by a call) keeps the host's. */
    if (sc.thread != S->c_locale) S->host_locale = sc.thread;
    return sc;
}

void ad_c_locale_leave(ad_state *S, ad_c_scope sc) {
    S->host_locale = sc.host;
    uselocale(sc.thread);
}

locale_t ad_c_locale_host(ad_state *S) {
    /* Outside any scope the thread is in the host's locale already. */
    if (!S->host_locale) return (locale_t)0;
    return uselocale(S->host_locale);
}
