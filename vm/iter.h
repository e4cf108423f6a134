/* iter.h: an iterable that wraps a sequence and has hooks the for loop calls as
 * it walks it, so progress() can report each step without copying the items. */
#ifndef AD_ITER_H
#define AD_ITER_H

#include <stdint.h>

#include "value.h"

typedef struct ad_iter ad_iter;

struct ad_iter {
    ad_obj hdr;
    ad_gclink gc;
    const char *name;   /* printed as <name> (static text) */
    ad_value src;       /* the list, tuple, string or non-0-d tensor walked (owned) */
    /* Called by the loop before item 'i' is handed out, and once more with
     * i == len(src) when the loop runs out of items. May be NULL. */
    void (*step)(ad_state *S, ad_iter *it, int64_t i);
    /* Called before the wrapper is freed (a loop left by break, an error);
     * releases 'ud'. May be NULL. */
    void (*fini)(ad_state *S, ad_iter *it);
    void *ud;
};

/* A wrapper of 'src' (borrowed; a dict is walked by its keys, as the for loop
 * does). Fails with "FN(): X is not iterable" for anything else. The hooks and
 * 'ud' are the caller's to set; the new value is one reference. */
int ad_iter_new(ad_state *S, const char *fn, const char *name, ad_value src, ad_iter **out);
void ad_iter_free(ad_state *S, ad_iter *it);
static inline ad_value ad_iter_value(ad_iter *it) { ad_value v; v.t = AD_TITER; v.u.it = it; return v; }

#endif
