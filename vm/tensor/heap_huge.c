/* tensor/heap_huge.c: transparent huge pages for the heap's big storage blocks.
 * Why: an element-wise op over 1e6 float32 streams 12 MB, more than the
 * second-level TLB covers in 4 KB pages, and on the bench machine (a virtual
 * machine, where a TLB miss walks the guest's and the host's tables) those
 * misses were the 10 us, 15%, by which 'a * b' trailed a C loop and torch
 * (bench/RESULTS.md, issue 13). In 2 MB pages the same loop ran at the C
 * loop's best every time. Only blocks from AD_HEAP_HUGE on are advised, and
 * a pooled block keeps its pages across owners, so the cost is paid once. */
#include "tensor/heap_huge.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

/* A span rounded up past the owner's bytes may waste at most this fraction
 * of them (1/8): a 4e6-byte tensor (1e6 float32) gets both of its 2 MB pages
 * (194 KB unused), a 2.1 MB one only its first (rounding up would double it). */
#define HUGE_WASTE_SHIFT 3

size_t ad_heap_huge_span(size_t nbytes, size_t granted) {
    if (nbytes < AD_HEAP_HUGE || granted < AD_HEAP_HUGE) return 0;
    size_t down = nbytes & ~(AD_HEAP_HUGE - 1);
    size_t up = down == nbytes ? down : down + AD_HEAP_HUGE;
    size_t span = up - nbytes <= nbytes >> HUGE_WASTE_SHIFT ? up : down;
    size_t cap = granted & ~(AD_HEAP_HUGE - 1);
    return span < cap ? span : cap;
}

void ad_heap_huge_advise(void *p, size_t span) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (span) (void)madvise(p, span, MADV_HUGEPAGE);
#else
    (void)p; (void)span;
#endif
}
