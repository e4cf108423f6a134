/* tensor/heap.h: the tensor heap: storage pooled by power-of-two size class, live
 * byte accounting and the memory limit. Tensor headers are pooled too. */
#ifndef AD_HEAP_H
#define AD_HEAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct addsl_state ad_state;

typedef struct ad_heap_stats {
    size_t live_bytes;      /* bytes of storage handed out and not yet returned */
    size_t peak_bytes;
    size_t pooled_bytes;    /* bytes held in free lists */
    size_t device_bytes;    /* bytes of GPU storage live (the same memory limit counts them) */
    size_t object_bytes;    /* bytes of everything else a script can grow: tensor and graph node
                             * headers, strings, lists, dicts, closures, cells, the VM's stack and
                             * frames (the same memory limit counts them; docs/security.md) */
    uint64_t system_allocs; /* calls to the underlying allocator for storage */
    uint64_t pool_hits;     /* storage requests served from a free list */
} ad_heap_stats;

struct ad_heap *ad_heap_new(ad_state *S);
void ad_heap_free(ad_state *S, struct ad_heap *h);  /* releases every pooled block */

/* A block of at least 'nbytes' (64-byte aligned). On the memory limit it fails
 * with "out of memory: tensor heap limit of N bytes reached (...)"; returns NULL. */
void *ad_heap_alloc(ad_state *S, size_t nbytes, size_t *granted);
void ad_heap_release(ad_state *S, void *block, size_t granted);
/* GPU storage is allocated by vm/tensor/device.c but counts against the same limit:
 * charge fails with the heap's out-of-memory error, discharge gives it back. */
int ad_heap_charge_device(ad_state *S, size_t nbytes);
void ad_heap_discharge_device(ad_state *S, size_t nbytes);
/* Accounts external (host) memory against nothing but keeps stats consistent. */
void ad_heap_stats_get(ad_state *S, ad_heap_stats *out);
void ad_heap_set_limit(ad_state *S, size_t limit);
/* Frees every pooled block (e.g. after a memory-limit error). */
void ad_heap_trim(ad_state *S);

/* Headers (tensors, storages, graph nodes) from slabs, so an op allocates
 * nothing new in a loop; release takes the size that was asked for. */
void *ad_heap_alloc_header(ad_state *S, size_t size);
void ad_heap_release_header(ad_state *S, void *hdr, size_t size);
/* Storage kept inside its header (small tensors) counts against the memory
 * limit like any other: charge fails with the heap's out-of-memory error. */
int ad_heap_charge_host(ad_state *S, size_t nbytes);
void ad_heap_discharge_host(ad_state *S, size_t nbytes);
/* The bytes of a script object (string, list, dict, closure, cell, the VM's
 * stack and frames) as it is allocated or grown, and as it is freed or
 * shrunk: charge fails, with the memory-limit error, when they would pass
 * the limit together with the tensors. */
int ad_heap_charge_objects(ad_state *S, size_t nbytes);
void ad_heap_discharge_objects(ad_state *S, size_t nbytes);

#endif
