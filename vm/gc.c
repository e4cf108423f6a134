/* gc.c: the cycle collector (trial deletion over two generations), the
 * iterative release of containers and the depth bound of container walks.
 *
 * A collection examines one set of containers (the young list, or both
 * lists): it copies each refcount into 'refs', subtracts the references the
 * set's members hold to one another, and what keeps refs > 0 is referenced
 * from outside (registers, globals, C code, tensors' graphs, untracked
 * objects). Everything those reach is alive; the rest is held only by cycles
 * and is freed. Only references a traversal reports are subtracted, so a
 * holder the collector does not know about always keeps its object alive. */
#include "gc.h"

#include <stddef.h>
#include <time.h>

#include "ad_assert.h"
#include "dict.h"
#include "tensor/heap.h"
#include "iter.h"
#include "state.h"
#include "vm.h"

/* The link sits right after the header in every tracked kind, so one
 * offset turns a link back into its object. */
_Static_assert(offsetof(ad_list, gc) == sizeof(ad_obj), "gc link after the header");
_Static_assert(offsetof(ad_dict, gc) == sizeof(ad_obj), "gc link after the header");
_Static_assert(offsetof(ad_cell, gc) == sizeof(ad_obj), "gc link after the header");
_Static_assert(offsetof(ad_closure, gc) == sizeof(ad_obj), "gc link after the header");
_Static_assert(offsetof(ad_iter, gc) == sizeof(ad_obj), "gc link after the header");

static ad_obj *obj_of(ad_gclink *g) { return (ad_obj *)((char *)g - sizeof(ad_obj)); }

/* The link of v when v is a tracked kind, else NULL. */
static ad_gclink *link_of(ad_value v) {
    switch (v.t) {
    case AD_TLIST: case AD_TTUPLE: return &v.u.l->gc;
    case AD_TDICT: return &v.u.d->gc;
    case AD_TCELL: return &v.u.cell->gc;
    case AD_TFUNC: return &v.u.fn->gc;
    case AD_TITER: return &v.u.it->gc;
    default: return NULL;
    }
}

static ad_value value_of(ad_gclink *g) {
    ad_value v;
    v.t = (ad_vtype)g->kind;
    v.u.o = obj_of(g);
    return v;
}

/* ---- lists ---- */

static void list_init(ad_gclink *head) { head->prev = head->next = head; }
static bool list_empty(const ad_gclink *head) { return head->next == head; }

static void list_remove(ad_gclink *g) {
    ad_assert(g->prev->next == g && g->next->prev == g); /* on a list, linked both ways */
    g->prev->next = g->next;
    g->next->prev = g->prev;
}

static void list_append(ad_gclink *head, ad_gclink *g) {
    ad_assert(g != head && head->prev->next == head);
    g->prev = head->prev;
    g->next = head;
    head->prev->next = g;
    head->prev = g;
}

/* Members of a list (the checks of a collection compare it with the counts). */
__attribute__((unused)) static int64_t list_count(const ad_gclink *head) {
    int64_t n = 0;
    for (const ad_gclink *g = head->next; g != head; g = g->next) n++;
    return n;
}

/* A tracked container's kind (lists and tuples share AD_TLIST). */
static bool tracked_kind(int kind) {
    return kind == AD_TLIST || kind == AD_TDICT || kind == AD_TCELL || kind == AD_TFUNC || kind == AD_TITER;
}

/* Moves every member of 'from' to the end of 'to'. */
static void list_splice(ad_gclink *to, ad_gclink *from) {
    if (list_empty(from)) return;
    from->next->prev = to->prev;
    to->prev->next = from->next;
    from->prev->next = to;
    to->prev = from->prev;
    list_init(from);
}

void ad_gc_init(ad_gc *gc) {
    list_init(&gc->young);
    list_init(&gc->old);
    gc->threshold = AD_GC_YOUNG_THRESHOLD;
    gc->full_min = AD_GC_FULL_MIN;
}

/* ---- tracking and release ---- */

void ad_gc_track(ad_state *S, ad_gclink *g, ad_vtype kind) {
    ad_gc *gc = &S->gc;
    g->kind = (uint8_t)(kind == AD_TTUPLE ? AD_TLIST : kind);
    ad_assert(tracked_kind(g->kind) && obj_of(g)->refcount > 0);
    g->flags = AD_GC_TRACKED;
    if (++gc->young_alloc > gc->threshold && !gc->collecting && !gc->closed) ad_gc_collect(S, false);
    list_append(&gc->young, g);
    gc->nyoung++;
}

static inline void untrack(ad_gc *gc, ad_gclink *g) {
    ad_assert((g->flags & AD_GC_TRACKED) && !(g->flags & (AD_GC_SCAN | AD_GC_UNREACHED)));
    list_remove(g);
    if (g->flags & AD_GC_OLD) gc->nold--;
    else { gc->nyoung--; gc->young_alloc--; }
    ad_assert(gc->nold >= 0 && gc->nyoung >= 0);
    g->flags = 0;
}

void ad_gc_untrack_tracked(ad_state *S, ad_gclink *g) { untrack(&S->gc, g); }

static void destroy(ad_state *S, ad_gclink *g) {
    ad_obj *o = obj_of(g);
    ad_assert(o->refcount == 0 && !(g->flags & AD_GC_TRACKED));
    switch ((ad_vtype)g->kind) {
    case AD_TLIST: ad_list_free(S, (ad_list *)o); break;
    case AD_TDICT: ad_dict_free(S, (ad_dict *)o); break;
    case AD_TCELL: ad_cell_free(S, (ad_cell *)o); break;
    case AD_TFUNC: ad_vm_closure_free(S, (ad_closure *)o); break;
    case AD_TITER: ad_iter_free(S, (ad_iter *)o); break;
    default: ad_assert(!"a tracked object of an untracked kind"); break;
    }
}

void ad_gc_release(ad_state *S, ad_gclink *g) {
    ad_gc *gc = &S->gc;
    ad_assert(tracked_kind(g->kind) && obj_of(g)->refcount == 0);
    if (g->flags & AD_GC_TRACKED) untrack(gc, g);
    /* Off every list, the link chains the objects still to free; the
     * outermost release drains the chain, each destructor adding the
     * children it lets go of. */
    if (gc->releasing) {
        g->next = gc->pending;
        gc->pending = g;
        return;
    }
    gc->releasing = true;
    destroy(S, g);
    while (gc->pending) {
        ad_gclink *p = gc->pending;
        gc->pending = p->next;
        destroy(S, p);
    }
    gc->releasing = false;
}

/* ---- traversal ---- */

/* 'ctx' is the visitor's own: the queue of the reachable pass. */
typedef void (*visit_fn)(ad_gclink *child, ad_gclink *ctx);

static void visit_value(ad_value v, visit_fn visit, ad_gclink *ctx) {
    ad_gclink *c = link_of(v);
    if (c) visit(c, ctx);
}

/* Each reference the object holds and counts in the child's refcount. */
static void traverse(ad_gclink *g, visit_fn visit, ad_gclink *ctx) {
    ad_obj *o = obj_of(g);
    switch ((ad_vtype)g->kind) {
    case AD_TLIST: {
        ad_list *l = (ad_list *)o;
        for (int64_t i = 0; i < l->len; i++) visit_value(l->items[i], visit, ctx);
        if (l->names) visit(&l->names->gc, ctx);
        break;
    }
    case AD_TDICT: {
        ad_dict *d = (ad_dict *)o;
        for (int64_t i = 0; i < d->n; i++) {
            if (!d->e[i].live) continue;
            visit_value(d->e[i].key, visit, ctx);
            visit_value(d->e[i].val, visit, ctx);
        }
        break;
    }
    case AD_TCELL: visit_value(((ad_cell *)o)->v, visit, ctx); break;
    case AD_TFUNC: {
        ad_closure *f = (ad_closure *)o;
        for (int i = 0; i < f->nupvals; i++)
            if (f->upvals[i]) visit(&f->upvals[i]->gc, ctx);
        if (f->defaults)
            for (int i = 0; i < f->p->ndefaults; i++) visit_value(f->defaults[i], visit, ctx);
        break;
    }
    case AD_TITER: visit_value(((ad_iter *)o)->src, visit, ctx); break;
    default: ad_assert(!"traversing an untracked kind"); break;
    }
}

/* Empties the slot before the release, so that whatever the release frees
 * finds this object already without the reference. */
static void drop(ad_state *S, ad_value *slot) {
    ad_value v = *slot;
    *slot = ad_none();
    ad_value_decref(S, v);
}

/* Lets go of every reference the object holds; it stays a valid, empty
 * object until its last reference goes. */
static void clear(ad_state *S, ad_gclink *g) {
    ad_obj *o = obj_of(g);
    switch ((ad_vtype)g->kind) {
    case AD_TLIST: {
        ad_list *l = (ad_list *)o;
        int64_t n = l->len;
        ad_value *items = l->items;
        ad_list *names = l->names;
        /* The list keeps its header; its items' bytes leave the memory limit's count. */
        ad_heap_discharge_objects(S, (size_t)l->cap * sizeof(ad_value));
        l->len = l->cap = 0;
        l->items = NULL;
        l->names = NULL;
        for (int64_t i = 0; i < n; i++) ad_value_decref(S, items[i]);
        ad_free(S, items);
        if (names) ad_value_decref(S, ad_list_value(names, AD_TTUPLE));
        break;
    }
    case AD_TDICT: ad_dict_clear(S, (ad_dict *)o); break;
    case AD_TCELL: drop(S, &((ad_cell *)o)->v); break;
    case AD_TFUNC: {
        ad_closure *f = (ad_closure *)o;
        for (int i = 0; i < f->nupvals; i++) {
            ad_cell *c = f->upvals[i];
            f->upvals[i] = NULL;
            if (c) ad_value_decref(S, (ad_value){.t = AD_TCELL, .u.cell = c});
        }
        if (f->defaults)
            for (int i = 0; i < f->p->ndefaults; i++) drop(S, &f->defaults[i]);
        break;
    }
    case AD_TITER: drop(S, &((ad_iter *)o)->src); break;
    default: break;
    }
}

/* ---- collection ---- */

static void subtract_internal(ad_gclink *child, ad_gclink *ctx) {
    (void)ctx;
    if (child->flags & AD_GC_SCAN) child->refs--;
    /* Below zero: a traversal reported a reference the refcount never counted. */
    ad_assert(!(child->flags & AD_GC_SCAN) || child->refs >= 0);
}

/* A member a reachable one refers to is reachable too (CPython's
 * visit_reachable): one not yet met gets refs 1, so the walk over the
 * examined list treats it as reachable when it gets there; one already set
 * aside as unreachable goes back to the end of that list. */
static void mark_child(ad_gclink *child, ad_gclink *scan) {
    if (!(child->flags & AD_GC_SCAN)) return;
    if (child->flags & AD_GC_UNREACHED) {
        child->flags &= (uint8_t)~AD_GC_UNREACHED;
        list_remove(child);
        list_append(scan, child);
        child->refs = 1;
    } else if (child->refs == 0) child->refs = 1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int64_t ad_gc_collect(ad_state *S, bool full) {
    ad_gc *gc = &S->gc;
    if (gc->collecting || gc->closed) return 0;
    gc->collecting = true;
    double t0 = now_s();
    ad_gclink scan, dead;
    list_init(&scan); list_init(&dead);
    /* The counts are the lists' lengths, and each list holds its own
     * generation. The old list is counted only by a full collection, which
     * walks it anyway: counting it at each young one made them O(heap). */
    ad_assert_slow(list_count(&gc->young) == gc->nyoung);
    ad_assert_slow(!full || list_count(&gc->old) == gc->nold);

    ad_assert(list_empty(&gc->young) || !(gc->young.next->flags & AD_GC_OLD));
    ad_assert(list_empty(&gc->old) || (gc->old.next->flags & AD_GC_OLD));
    list_splice(&scan, &gc->young);
    if (full) list_splice(&scan, &gc->old);
    gc->nyoung = 0;
    if (full) gc->nold = 0;
    for (ad_gclink *g = scan.next; g != &scan; g = g->next) {
        ad_assert((g->flags & AD_GC_TRACKED) && tracked_kind(g->kind) && obj_of(g)->refcount > 0);
        ad_assert(full || !(g->flags & AD_GC_OLD));
        g->refs = obj_of(g)->refcount;
        g->flags = (uint8_t)((g->flags & ~AD_GC_UNREACHED) | AD_GC_SCAN);
    }
    for (ad_gclink *g = scan.next; g != &scan; g = g->next) traverse(g, subtract_internal, NULL);
    /* One walk over the examined list: a member with refs > 0 is reachable
     * and marks what it refers to; one with refs 0 is set aside until a
     * reachable one refers to it. Only those set aside move, so a full
     * collection over a heap that is all alive moves nothing. */
    for (ad_gclink *g = scan.next, *next; g != &scan; g = next) {
        if (g->refs > 0) {
            traverse(g, mark_child, &scan);
            next = g->next;
        } else {
            next = g->next;
            g->flags |= AD_GC_UNREACHED;
            list_remove(g);
            list_append(&dead, g);
        }
    }
    /* What was set aside and never reached only cycles hold. */
    int64_t nalive = 0;
    for (ad_gclink *g = scan.next; g != &scan; g = g->next) {
        g->flags = (uint8_t)((g->flags & AD_GC_BUSY) | AD_GC_TRACKED | AD_GC_OLD);
        nalive++;
    }
    list_splice(&gc->old, &scan);
    gc->nold += nalive;
    if (full) gc->promoted = 0;
    else gc->promoted += nalive;
    /* Pinned, emptied, then let go: emptying one frees no other, and each
     * goes once its pin does. One the emptying left referenced (it cannot,
     * if every traversal is right) simply lives on in the old list. */
    int64_t ndead = 0;
    for (ad_gclink *g = dead.next; g != &dead; g = g->next) {
        g->flags = (uint8_t)((g->flags & AD_GC_BUSY) | AD_GC_TRACKED | AD_GC_OLD);
        obj_of(g)->refcount++;
        ndead++;
    }
    gc->nold += ndead;
    for (ad_gclink *g = dead.next; g != &dead; g = g->next) clear(S, g);
    while (!list_empty(&dead)) {
        ad_gclink *g = dead.next;
        list_remove(g);
        list_append(&gc->old, g);
        ad_value_decref(S, value_of(g));
    }
    ad_assert(gc->nold >= 0 && gc->nyoung >= 0);
    gc->young_alloc = 0;
    gc->collected += ndead;
    gc->collections[full ? 1 : 0]++;
    double dt = now_s() - t0;
    gc->total_pause_s += dt;
    if (dt > gc->max_pause_s) gc->max_pause_s = dt;
    gc->collecting = false;
    /* A full collection once the old generation has grown by a quarter
     * since the last one: its cost stays proportional to what was made. */
    if (!full && gc->promoted > gc->full_min && gc->promoted > gc->nold / 4) ndead += ad_gc_collect(S, true);
    return ndead;
}

void ad_gc_close(ad_state *S) {
    ad_gc *gc = &S->gc;
    gc->closed = true;
    list_splice(&gc->old, &gc->young);
    gc->nold += gc->nyoung;
    gc->nyoung = 0;
    for (ad_gclink *g = gc->old.next; g != &gc->old; g = g->next) {
        g->flags |= AD_GC_OLD;
        obj_of(g)->refcount++;
    }
    for (ad_gclink *g = gc->old.next; g != &gc->old; g = g->next) clear(S, g);
    /* Each unpinned object is freed unless its owner still holds it; freeing
     * one empties nothing else, so the next link stays valid. */
    for (ad_gclink *g = gc->old.next, *next; g != &gc->old; g = next) {
        next = g->next;
        ad_value_decref(S, value_of(g));
    }
}

/* ---- the depth bound of container walks ---- */

int ad_nest_enter(ad_state *S, const char *what) {
    if (S->gc.nest >= AD_MAX_NEST_DEPTH)
        return ad_error(S, "RecursionError: maximum recursion depth exceeded %s (containers nested more than %d deep)",
                        what, AD_MAX_NEST_DEPTH);
    S->gc.nest++;
    return ADDSL_OK;
}

void ad_nest_leave(ad_state *S) {
    ad_assert(S->gc.nest > 0); /* a leave without its enter */
    S->gc.nest--;
}

