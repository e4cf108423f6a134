/* tensor/heap.c: the tensor heap: size-class pooled storage with live-byte accounting
 * and the memory limit, plus a small-object pool for tensor headers. */
#include "tensor/heap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ad_assert.h"
#include "tensor/heap_huge.h"
#include "tensor/heap_prefault.h"
#include "state.h"

/* Tunables that only this file sees. */
#define HEAP_ALIGN 64                 /* storage blocks start on a cache line */
#define HDR_GRAIN 16                  /* header sizes are multiples of this (keeps 16-byte alignment) */
/* Under AddressSanitizer the slabs' unused and freed bytes are poisoned, and a
 * header is unpoisoned for exactly the size asked: reading past a rank-sized
 * header is caught even when its neighbour in the slab is live. */
#if defined(__SANITIZE_ADDRESS__)
#define AD_HEAP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AD_HEAP_ASAN 1
#endif
#endif
#ifdef AD_HEAP_ASAN
#include <sanitizer/asan_interface.h>
#define HEAP_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define HEAP_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define HEAP_POISON(p, n) ((void)(p), (void)(n))
#define HEAP_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define HDR_CLASSES 32                /* headers up to 32 * 16 = 512 bytes come from slabs */
/* Slabs grow geometrically: a small script takes 64 KB, a long recorded loop
 * soon gets 8 MB slabs, few allocator calls and (below) few page faults. */
#define SLAB_MIN ((size_t)64 << 10)
#define SLAB_MAX ((size_t)8 << 20)
/* Slabs from this size on are pre-faulted in one call (tensor/heap_prefault.c): page
 * faults, one per 4 KB touched, were most of a first run's extra time. From
 * there on the next slab is mapped ahead, on a helper thread. */
#define SLAB_PREFAULT ((size_t)1 << 20)

/* Every storage block is preceded by this record (inside the slack left for
 * alignment), so release needs nothing but the pointer and the granted size,
 * and close can free blocks the program never returned. */
typedef struct blk {
    void *raw;                /* what the system allocator returned */
    struct blk *prev, *next;  /* list of live blocks, or free list (next only) */
    size_t nbytes;            /* bytes requested by the current owner */
} blk;

/* Headers (tensors, storages, graph nodes) are small and many: they are carved
 * from slabs with no per-object prefix (the caller gives the size back on
 * release), and a released one waits on its size's free list. Slabs are kept
 * until the heap closes, so a loop that runs again finds its memory ready.
 * Larger headers (rare: nodes of ops with many parameters) carry this prefix,
 * 32 bytes to keep 16-byte alignment, and sit on a ring that close frees. */
typedef struct hdr {
    struct hdr *prev, *next;
    uint64_t pad0, pad1;
} hdr;

typedef struct slab { struct slab *next; size_t bytes; } slab;
typedef struct hfree { struct hfree *next; } hfree;

#define BLK_PREFIX (((sizeof(blk) + HEAP_ALIGN - 1) / HEAP_ALIGN) * HEAP_ALIGN)

struct ad_heap {
    blk *free_list[AD_HEAP_MAX_CLASS + 1];
    uint32_t free_count[AD_HEAP_MAX_CLASS + 1];
    blk live;                 /* sentinel of the live block ring */
    hfree *hfree[HDR_CLASSES];
    slab *slabs;              /* every slab, for close */
    char *bump;               /* the unused end of the newest slab */
    size_t bump_left;
    size_t slab_next;         /* size of the next slab */
    size_t spare_at;          /* when bump_left drops below this, the spare is made ready */
    slab *spare;              /* the next slab, allocated ahead and being pre-faulted */
    ad_prefault pf;           /* the spare's (or a new slab's) pre-faulting */
    hdr hlive;                /* sentinel of the ring of large headers */
    bool no_huge;             /* ADDSL_NO_HUGE_PAGES set: big blocks in small pages too */
    ad_heap_stats st;
};

static blk *blk_of(void *p) { return (blk *)((char *)p - sizeof(blk)); }
static void *blk_data(blk *b) { return (char *)b + sizeof(blk); }

static void ring_add(blk *head, blk *b) {
    b->next = head->next; b->prev = head;
    head->next->prev = b; head->next = b;
}
static void ring_del(blk *b) {
    ad_assert(b->prev->next == b && b->next->prev == b); /* on the live ring, once */
    b->prev->next = b->next; b->next->prev = b->prev;
}

static void hring_add(hdr *head, hdr *h) {
    h->next = head->next; h->prev = head;
    head->next->prev = h; head->next = h;
}
static void hring_del(hdr *h) {
    ad_assert(h->prev->next == h && h->next->prev == h);
    h->prev->next = h->next; h->next->prev = h->prev;
}

struct ad_heap *ad_heap_new(ad_state *S) {
    struct ad_heap *h = ad_calloc(S, 1, sizeof *h);
    if (!h) return NULL;
    h->live.prev = h->live.next = &h->live;
    h->hlive.prev = h->hlive.next = &h->hlive;
    /* A first touch of fresh huge pages can cost more than of small ones
     * (tensor/heap_huge.c): the switch to measure or avoid that. */
    const char *e = getenv("ADDSL_NO_HUGE_PAGES");
    h->no_huge = e && *e && strcmp(e, "0") != 0;
    return h;
}

/* Size class of a request: the smallest power of two holding it, or -1 when
 * the request is too large to pool. */
static int size_class(size_t n) {
    if (n <= ((size_t)1 << AD_HEAP_MIN_CLASS)) return AD_HEAP_MIN_CLASS;
    int c = 64 - __builtin_clzll((unsigned long long)(n - 1));
    return c <= AD_HEAP_MAX_CLASS ? c : -1;
}

static size_t granted_size(size_t n, int cls) {
    ad_assert(cls == -1 || (cls >= AD_HEAP_MIN_CLASS && cls <= AD_HEAP_MAX_CLASS));
    ad_assert(cls < 0 || n <= (size_t)1 << cls);
    if (cls >= 0) return (size_t)1 << cls;
    return (n + HEAP_ALIGN - 1) & ~(size_t)(HEAP_ALIGN - 1);
}

/* A fresh aligned block from the system, for a first owner of 'nbytes'; NULL
 * without setting an error. A big one starts on a huge page boundary and is
 * advised into huge pages (tensor/heap_huge.c); the slack that costs is address
 * space, never touched. */
static blk *system_block(ad_state *S, size_t granted, size_t nbytes) {
    size_t span = S->heap->no_huge ? 0 : ad_heap_huge_span(nbytes, granted);
    size_t align = span ? AD_HEAP_HUGE : HEAP_ALIGN, total;
    if (__builtin_add_overflow(granted, BLK_PREFIX + align, &total)) return NULL;
    void *raw = S->cfg.alloc(S->cfg.alloc_ud, NULL, total);
    if (!raw) return NULL;
    uintptr_t a = ((uintptr_t)raw + sizeof(blk) + align - 1) & ~(uintptr_t)(align - 1);
    ad_assert(a - (uintptr_t)raw + granted <= total); /* the data fits what was allocated */
    ad_heap_huge_advise((void *)a, span);
    blk *b = blk_of((void *)a);
    b->raw = raw;
    return b;
}

static void pool_trim(struct ad_heap *h, ad_state *S) {
    for (int c = 0; c <= AD_HEAP_MAX_CLASS; c++) {
        blk *b = h->free_list[c];
        uint32_t k = 0;
        while (b) {
            blk *n = b->next;
            ad_free(S, b->raw);
            b = n;
            k++;
        }
        ad_assert(k == h->free_count[c]);
        h->free_list[c] = NULL;
        h->free_count[c] = 0;
    }
    h->st.pooled_bytes = 0;
}

void ad_heap_trim(ad_state *S) {
    if (S->heap) pool_trim(S->heap, S);
}

static int limit_error(ad_state *S, size_t nbytes) {
    const ad_heap_stats *st = &S->heap->st;
    return ad_error_code(S, ADDSL_ENOMEM,
                         "out of memory: tensor heap limit of %zu bytes reached "
                         "(live %zu bytes, other objects %zu bytes, requested %zu bytes)",
                         S->cfg.memory_limit, st->live_bytes + st->device_bytes, st->object_bytes, nbytes);
}

/* Whether 'nbytes' more live bytes (tensor storage on host and GPU, and the
 * script's other objects, together) pass the limit. */
static bool over_limit(ad_state *S, size_t nbytes) {
    const ad_heap_stats *st = &S->heap->st;
    size_t lim = S->cfg.memory_limit, live = st->live_bytes + st->device_bytes + st->object_bytes;
    return lim && (nbytes > lim || live > lim - nbytes);
}

int ad_heap_charge_objects(ad_state *S, size_t nbytes) {
    struct ad_heap *h = S->heap;
    if (!h) return ADDSL_OK; /* after close began: nothing is counted any more */
    if (over_limit(S, nbytes))
        return ad_error_code(S, ADDSL_ENOMEM,
                             "out of memory: memory limit of %zu bytes reached (tensors %zu bytes, "
                             "other objects %zu bytes, requested %zu bytes)",
                             S->cfg.memory_limit, h->st.live_bytes + h->st.device_bytes, h->st.object_bytes, nbytes);
    h->st.object_bytes += nbytes;
    return ADDSL_OK;
}

void ad_heap_discharge_objects(ad_state *S, size_t nbytes) {
    struct ad_heap *h = S->heap;
    if (!h) return;
    ad_assert(nbytes <= h->st.object_bytes); /* more given back than charged */
    h->st.object_bytes = nbytes <= h->st.object_bytes ? h->st.object_bytes - nbytes : 0;
}

int ad_heap_charge_device(ad_state *S, size_t nbytes) {
    if (over_limit(S, nbytes)) return limit_error(S, nbytes);
    S->heap->st.device_bytes += nbytes;
    return ADDSL_OK;
}

void ad_heap_discharge_device(ad_state *S, size_t nbytes) {
    ad_assert(nbytes <= S->heap->st.device_bytes);
    S->heap->st.device_bytes -= nbytes;
}

/* A block from the free list of 'cls', or NULL. */
static blk *pool_take(struct ad_heap *h, int cls) {
    if (cls < 0 || !h->free_list[cls]) return NULL;
    blk *b = h->free_list[cls];
    ad_assert(h->free_count[cls] > 0 && h->st.pooled_bytes >= (size_t)1 << cls);
    h->free_list[cls] = b->next;
    h->free_count[cls]--;
    h->st.pooled_bytes -= (size_t)1 << cls;
    h->st.pool_hits++;
    return b;
}

/* Pooled blocks are not live, but they are memory the process holds: before
 * the heap grows past the limit it gives the cache back first. */
static blk *system_take(ad_state *S, size_t granted, size_t nbytes) {
    struct ad_heap *h = S->heap;
    size_t lim = S->cfg.memory_limit;
    if (lim && h->st.pooled_bytes && h->st.live_bytes + h->st.pooled_bytes + granted > lim)
        pool_trim(h, S);
    blk *b = system_block(S, granted, nbytes);
    if (!b && h->st.pooled_bytes) {
        pool_trim(h, S);
        b = system_block(S, granted, nbytes);
    }
    if (b) h->st.system_allocs++;
    return b;
}

void *ad_heap_alloc(ad_state *S, size_t nbytes, size_t *granted) {
    struct ad_heap *h = S->heap;
    if (over_limit(S, nbytes)) {
        limit_error(S, nbytes);
        return NULL;
    }
    int cls = size_class(nbytes);
    size_t g = granted_size(nbytes, cls);
    blk *b = pool_take(h, cls);
    if (!b) b = system_take(S, g, nbytes);
    if (!b) { ad_nomem(S); return NULL; }
    ad_assert(((uintptr_t)blk_data(b) & (HEAP_ALIGN - 1)) == 0 && g >= nbytes);
    b->nbytes = nbytes;
    ring_add(&h->live, b);
    h->st.live_bytes += nbytes;
    if (h->st.live_bytes > h->st.peak_bytes) h->st.peak_bytes = h->st.live_bytes;
    *granted = g;
    return blk_data(b);
}

void ad_heap_release(ad_state *S, void *block, size_t granted) {
    if (!block) return;
    struct ad_heap *h = S->heap;
    blk *b = blk_of(block);
    ad_assert(((uintptr_t)block & (HEAP_ALIGN - 1)) == 0 && (char *)b->raw <= (char *)b);
    ad_assert(b->nbytes <= granted && granted == granted_size(b->nbytes, size_class(b->nbytes)));
    ad_assert(b->nbytes <= h->st.live_bytes);
    ring_del(b);
    h->st.live_bytes -= b->nbytes;
    int cls = size_class(granted);
    if (cls >= 0 && granted == ((size_t)1 << cls) && h->free_count[cls] < AD_HEAP_MAX_FREE_PER_CLASS) {
        b->next = h->free_list[cls];
        h->free_list[cls] = b;
        h->free_count[cls]++;
        h->st.pooled_bytes += granted;
        ad_assert(h->free_count[cls] <= AD_HEAP_MAX_FREE_PER_CLASS);
        return;
    }
    ad_free(S, b->raw);
}

void ad_heap_stats_get(ad_state *S, ad_heap_stats *out) {
    if (S->heap) *out = S->heap->st;
    else memset(out, 0, sizeof *out);
}

void ad_heap_set_limit(ad_state *S, size_t limit) { S->cfg.memory_limit = limit; }

/* A new slab to carve headers from (the old one's tail is left unused): the
 * spare when one was made ready, else a fresh allocation. */
static bool slab_new(ad_state *S, struct ad_heap *h) {
    slab *sl = h->spare;
    size_t bytes;
    if (sl) {
        /* Carved at once, even while the helper still maps it: it only faults
         * pages in (no write), and where the main thread gets ahead of it the
         * main thread's own faults map the rest. Waiting for it here was most
         * of a first run's extra time on a loaded machine (row 1c of
         * bench/run.sh). It is joined at the next spare_start or at close. */
        h->spare = NULL;
        bytes = sl->bytes;
    } else {
        bytes = h->slab_next ? h->slab_next : SLAB_MIN;
        sl = S->cfg.alloc(S->cfg.alloc_ud, NULL, bytes);
        if (!sl && bytes > SLAB_MIN) sl = S->cfg.alloc(S->cfg.alloc_ud, NULL, bytes = SLAB_MIN);
        if (!sl) { ad_nomem(S); return false; }
        if (bytes >= SLAB_PREFAULT) ad_prefault_start(&h->pf, sl, bytes, false);
    }
    sl->next = h->slabs;
    sl->bytes = bytes;
    h->slabs = sl;
    ad_assert(bytes >= SLAB_MIN && bytes <= SLAB_MAX && bytes % HDR_GRAIN == 0);
    h->bump = (char *)(sl + 1);
    h->bump_left = bytes - sizeof(slab);
    h->slab_next = bytes < SLAB_MAX ? 2 * bytes : SLAB_MAX;
    /* a loop this long will likely want the next slab: map it ahead, from half-way */
    h->spare_at = h->slab_next >= SLAB_PREFAULT ? h->bump_left / 2 : 0;
    HEAP_POISON(h->bump, h->bump_left);
    return true;
}

/* Allocates the next slab now and has a helper thread map it while this
 * one is carved. Failure is silent: slab_new allocates as before. */
static void spare_start(ad_state *S, struct ad_heap *h) {
    h->spare_at = 0;
    if (h->spare) return;
    size_t bytes = h->slab_next;
    slab *sl = S->cfg.alloc(S->cfg.alloc_ud, NULL, bytes);
    if (!sl) return;
    sl->next = NULL;
    sl->bytes = bytes;
    h->spare = sl;
    ad_prefault_start(&h->pf, sl, bytes, true);
}

static void *header_take(ad_state *S, struct ad_heap *h, size_t size);

/* Every op makes headers: their charge is inlined here, and only the
 * refusal takes the call that words the error. */
void *ad_heap_alloc_header(ad_state *S, size_t size) {
    struct ad_heap *h = S->heap;
    if (S->cfg.memory_limit && over_limit(S, size)) {
        ad_heap_charge_objects(S, size); /* refused: it words the error */
        return NULL;
    }
    h->st.object_bytes += size;
    void *p = header_take(S, h, size);
    if (!p) h->st.object_bytes -= size;
    return p;
}

static void *header_take(ad_state *S, struct ad_heap *h, size_t size) {
    size_t c = size ? (size - 1) / HDR_GRAIN : 0;
    if (c >= HDR_CLASSES) {
        if (size > SIZE_MAX - sizeof(hdr)) { ad_nomem(S); return NULL; }
        hdr *x = ad_malloc(S, sizeof(hdr) + size);
        if (!x) return NULL;
        hring_add(&h->hlive, x);
        return x + 1;
    }
    if (h->hfree[c]) {
        hfree *f = h->hfree[c];
        ad_assert(((uintptr_t)f & (HDR_GRAIN - 1)) == 0);
        HEAP_UNPOISON(f, sizeof *f);
        h->hfree[c] = f->next;
        HEAP_POISON(f, (c + 1) * HDR_GRAIN);
        HEAP_UNPOISON(f, size);
        return f;
    }
    size_t n = (c + 1) * HDR_GRAIN;
    if (h->bump_left < n && !slab_new(S, h)) return NULL;
    if (h->bump_left < h->spare_at) spare_start(S, h);
    void *p = h->bump;
    ad_assert(((uintptr_t)p & (HDR_GRAIN - 1)) == 0 && h->bump_left >= n);
    h->bump += n;
    h->bump_left -= n;
    HEAP_UNPOISON(p, size);
    return p;
}

void ad_heap_release_header(ad_state *S, void *p, size_t size) {
    if (!p) return;
    struct ad_heap *h = S->heap;
    ad_assert(size <= h->st.object_bytes); /* a header given back twice, or with the wrong size */
    h->st.object_bytes -= size;
    size_t c = size ? (size - 1) / HDR_GRAIN : 0;
    if (c >= HDR_CLASSES) {
        hdr *x = (hdr *)p - 1;
        hring_del(x);
        ad_free(S, x);
        return;
    }
    hfree *f = p;
    ad_assert(((uintptr_t)f & (HDR_GRAIN - 1)) == 0 && f != (hfree *)h->hfree[c]);
    HEAP_UNPOISON(f, sizeof *f);
    f->next = h->hfree[c];
    h->hfree[c] = f;
    HEAP_POISON(f, (c + 1) * HDR_GRAIN);
}

int ad_heap_charge_host(ad_state *S, size_t nbytes) {
    if (over_limit(S, nbytes)) return limit_error(S, nbytes);
    struct ad_heap *h = S->heap;
    h->st.live_bytes += nbytes;
    if (h->st.live_bytes > h->st.peak_bytes) h->st.peak_bytes = h->st.live_bytes;
    return ADDSL_OK;
}

void ad_heap_discharge_host(ad_state *S, size_t nbytes) {
    ad_assert(nbytes <= S->heap->st.live_bytes);
    S->heap->st.live_bytes -= nbytes;
}


/* Frees the pools and whatever is still live: after close nothing of the
 * heap survives, even if a tensor reference was leaked. */
void ad_heap_free(ad_state *S, struct ad_heap *h) {
    if (!h) return;
    pool_trim(h, S);
    while (h->live.next != &h->live) {
        blk *b = h->live.next;
        ring_del(b);
        ad_free(S, b->raw);
    }
    ad_prefault_wait(&h->pf);
    if (h->spare) ad_free(S, h->spare);
    while (h->slabs) {
        HEAP_UNPOISON(h->slabs, h->slabs->bytes);
        slab *n = h->slabs->next;
        ad_free(S, h->slabs);
        h->slabs = n;
    }
    while (h->hlive.next != &h->hlive) {
        hdr *x = h->hlive.next;
        hring_del(x);
        ad_free(S, x);
    }
    ad_free(S, h);
    if (S->heap == h) S->heap = NULL;
}
