/* gc.h: the cycle collector of containers (lists, tuples, dicts, cells,
 * closures, iterators), the iterative release of freed objects, and the
 * depth bound of the recursive walks over containers (printing, comparing,
 * hashing). Refcounting frees everything acyclic at once; the collector finds
 * what only cycles keep alive, by trial deletion as CPython's does
 * (docs/architecture.md, "Memory management"). */
#ifndef AD_GC_H
#define AD_GC_H

#include <stdbool.h>
#include <stdint.h>

#include "value.h"

/* Flags of ad_gclink.flags. */
enum {
    AD_GC_TRACKED = 1,        /* on the young or old list */
    AD_GC_OLD = 2,            /* on the old list */
    AD_GC_BUSY = 4,           /* being printed: met again, it shows as [...] */
    AD_GC_SCAN = 8,           /* in the set a collection examines */
    AD_GC_UNREACHED = 16      /* that collection set it aside as unreachable, so far */
};

typedef struct ad_gc {
    ad_gclink young, old;     /* circular lists with these heads: every tracked container */
    int64_t nyoung, nold;     /* objects on each list */
    int64_t young_alloc;      /* made minus freed since the last collection (the trigger) */
    int64_t threshold;        /* young_alloc that starts a young collection */
    int64_t full_min;         /* promotions before a full collection, at the least */
    int64_t promoted;         /* moved to old since the last full collection */
    ad_gclink *pending;       /* freed objects whose children are still to release */
    bool releasing;           /* a release loop is draining 'pending' */
    bool collecting;          /* a collection runs: no other starts */
    bool closed;              /* the state is closing: no collection starts */
    int nest;                 /* depth of the recursive walks over containers now */
    /* Statistics (gc_stats()). */
    int64_t collections[2];   /* young, full */
    int64_t collected;        /* objects freed by collections */
    double max_pause_s, total_pause_s;
} ad_gc;

void ad_gc_init(ad_gc *gc);
/* Adds a fully built container (kind AD_TLIST, AD_TDICT, AD_TCELL, AD_TFUNC
 * or AD_TITER) to the young list; may run a young collection first. */
void ad_gc_track(ad_state *S, ad_gclink *g, ad_vtype kind);
/* Takes an object off its list (its destructor calls this; a no-op when untracked). */
void ad_gc_untrack_tracked(ad_state *S, ad_gclink *g);
static inline void ad_gc_untrack(ad_state *S, ad_gclink *g) {
    if (g->flags & AD_GC_TRACKED) ad_gc_untrack_tracked(S, g);
}
/* The refcount of a tracked object reached zero: frees it and, iteratively,
 * whatever that frees, so no depth of nesting grows the C stack. */
void ad_gc_release(ad_state *S, ad_gclink *g);

/* Runs a collection (young only, or full) now; returns the objects it freed. */
int64_t ad_gc_collect(ad_state *S, bool full);
/* At close: empties every container still alive, so that every cycle falls
 * apart whatever holds it; the emptied objects go with their owners. */
void ad_gc_close(ad_state *S);

/* Entering one level of a recursive walk over containers: fails with
 * "RecursionError: maximum recursion depth exceeded WHAT" past
 * AD_MAX_NEST_DEPTH levels; every success is paired with ad_nest_leave. */
int ad_nest_enter(ad_state *S, const char *what);
void ad_nest_leave(ad_state *S);

#endif
