/* tensor/heap_prefault.h: maps the heap's next big slab in the background, so the
 * first run of a long recorded loop does not wait for its page faults. */
#ifndef AD_HEAP_PREFAULT_H
#define AD_HEAP_PREFAULT_H

#include <stdbool.h>
#include <stddef.h>

#if defined(__linux__)
#include <pthread.h>
#endif

/* One slab being pre-faulted; zeroed means idle. */
typedef struct ad_prefault {
    void *p;
    size_t bytes;
    bool running;  /* a thread is mapping [p, p + bytes) */
#if defined(__linux__)
    pthread_t thread;
#endif
} ad_prefault;

/* Asks the kernel to map [p, p + bytes) writable: on a helper thread when
 * 'background' and one can be started, else now. It is advice: where the
 * kernel cannot (before Linux 5.14), the pages fault in as touched. */
void ad_prefault_start(ad_prefault *pf, void *p, size_t bytes, bool background);

/* Waits until the mapping started by ad_prefault_start is done (at once
 * when none runs); the range may then be used or freed. */
void ad_prefault_wait(ad_prefault *pf);

#endif
