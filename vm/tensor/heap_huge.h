/* tensor/heap_huge.h: which bytes of a big storage block the heap asks the kernel to
 * back with transparent huge pages, and the asking. */
#ifndef AD_HEAP_HUGE_H
#define AD_HEAP_HUGE_H

#include <stddef.h>

/* The huge page size the heap aligns to (x86-64 and 4 KB-page AArch64). */
#define AD_HEAP_HUGE ((size_t)2 << 20)

/* Bytes from the start of a block of 'granted' bytes whose first owner asked
 * for 'nbytes', to back with huge pages: a multiple of AD_HEAP_HUGE no larger
 * than 'granted', 0 for none. Such a block starts on an AD_HEAP_HUGE boundary. */
size_t ad_heap_huge_span(size_t nbytes, size_t granted);

/* Advises the kernel to back [p, p + span) with huge pages; p is aligned to
 * AD_HEAP_HUGE. Advice only: where the kernel cannot, nothing changes. */
void ad_heap_huge_advise(void *p, size_t span);

#endif
