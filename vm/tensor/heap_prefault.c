/* tensor/heap_prefault.c: pre-faulting of the heap's big slabs, on a helper thread.
 * Why: a fresh page costs a fault, and on a virtual machine whose host takes
 * freed memory back (free page reporting, as on the benchmark machine) one
 * more fault on the host; for a first run of 400k recorded ops that was up to
 * 0.2 us per op, as much as the op itself. The main thread carves the
 * current slab while a helper maps the next one on another core. No huge
 * pages: there, after a large process had exited, mapping 100 MB as huge
 * pages took 35-340 ms against 40-140 ms as small pages (bench/RESULTS.md). */
#include "tensor/heap_prefault.h"

#include <stdint.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
static void populate(void *p, size_t bytes) {
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0) return;
    uintptr_t lo = (uintptr_t)p, hi = lo + bytes;
    uintptr_t plo = (lo + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1), phi = hi & ~(uintptr_t)(pg - 1);
    if (phi > plo) (void)madvise((void *)plo, phi - plo, MADV_POPULATE_WRITE);
}

static void *populate_main(void *arg) {
    ad_prefault *pf = arg;
    populate(pf->p, pf->bytes);
    return NULL;
}
#endif

void ad_prefault_start(ad_prefault *pf, void *p, size_t bytes, bool background) {
    ad_prefault_wait(pf);
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    pf->p = p;
    pf->bytes = bytes;
    if (background && pthread_create(&pf->thread, NULL, populate_main, pf) == 0) {
        pf->running = true;
        return;
    }
    populate(p, bytes);
#else
    (void)p; (void)bytes; (void)background;
#endif
}

void ad_prefault_wait(ad_prefault *pf) {
#if defined(__linux__)
    if (pf->running) (void)pthread_join(pf->thread, NULL);
#endif
    memset(pf, 0, sizeof *pf);
}
