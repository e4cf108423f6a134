/* test_heap_huge.c: TAP tests of the heap's huge page blocks (vm/tensor/heap_huge.c):
 * which bytes are advised, the alignment, and that such blocks pool as before. */
#include "tap.h"

#include <stdint.h>

#include "tensor/heap.h"
#include "tensor/heap_huge.h"

#define MB ((size_t)1 << 20)

/* Hand values of the span rule: whole huge pages over the owner's bytes,
 * rounded up while that wastes at most an eighth of them. */
static void test_span(void) {
    ok(ad_heap_huge_span(0, 64) == 0, "empty block: none");
    ok(ad_heap_huge_span(2 * MB - 1, 2 * MB) == 0, "below 2 MB: none");
    ok(ad_heap_huge_span(2 * MB, 2 * MB) == 2 * MB, "exactly 2 MB: one page");
    ok(ad_heap_huge_span(4000000, 4 * MB) == 4 * MB, "1e6 float32: both pages (194 KB unused)");
    ok(ad_heap_huge_span(8000000, 8 * MB) == 8 * MB, "1e6 float64: all four pages");
    ok(ad_heap_huge_span(2 * MB + 100000, 4 * MB) == 2 * MB, "2.1 MB: only the first page (rounding up doubles it)");
    ok(ad_heap_huge_span(3 * MB, 4 * MB) == 2 * MB, "3 MB: 1 MB more is over an eighth, the first page only");
    ok(ad_heap_huge_span(7 * MB + MB / 2, 8 * MB) == 8 * MB, "7.5 MB: rounded up (0.5 MB is under an eighth)");
    ok(ad_heap_huge_span(4000000, 3 * MB) == 2 * MB, "never past the granted bytes");
}

/* Whether the mapping holding p carries the MADV_HUGEPAGE flag ("hg" in
 * /proc/self/smaps); -1 where that cannot be read. */
static int advised_huge(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int in = 0, found = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {  /* a mapping's first line */
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
            continue;
        }
        if (in && strncmp(line, "VmFlags:", 8) == 0) {
            found = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    return found;
}

static void test_blocks(void) {
    ad_state *S = test_state(0);
    size_t g, gs;
    unsigned char *p = ad_heap_alloc(S, 4000000, &g);
    unsigned char *s = ad_heap_alloc(S, 100000, &gs);
    ok(p && s, "a big and a small block");
    ok(g == 4 * MB && ((uintptr_t)p % AD_HEAP_HUGE) == 0, "the big one starts on a 2 MB boundary (granted %zu)", g);
    ok(((uintptr_t)s % 64) == 0 && gs == 131072, "the small one as before: 64-byte aligned, 128 KB");
    int hp = advised_huge(p), hs = advised_huge(s);
    if (hp < 0) {
        ok(1, "# SKIP no /proc/self/smaps");
        ok(1, "# SKIP no /proc/self/smaps");
    } else {
        ok(hp == 1, "the big block is advised into huge pages");
        ok(hs == 0, "the small block is not");
    }
    /* the whole granted block is usable and keeps its bytes */
    for (size_t i = 0; i < g; i++) p[i] = (unsigned char)(i * 31 + 7);
    int good = 1;
    for (size_t i = 0; i < g; i += 4093) good &= p[i] == (unsigned char)(i * 31 + 7);
    good &= p[g - 1] == (unsigned char)((g - 1) * 31 + 7);
    ok(good, "all %zu granted bytes keep what was written", g);
    ad_heap_stats st;
    ad_heap_stats_get(S, &st);
    ok(st.live_bytes == 4000000 + 100000, "live bytes count the requested sizes (%zu)", st.live_bytes);
    ad_heap_release(S, p, g);
    unsigned char *q = ad_heap_alloc(S, 3 * MB, &g);
    ok(q == p, "a pooled big block is reused by the next owner of its class");
    ad_heap_stats_get(S, &st);
    ok(st.system_allocs == 2 && st.pool_hits == 1, "no new system block (%llu allocs, %llu hits)",
       (unsigned long long)st.system_allocs, (unsigned long long)st.pool_hits);
    ad_heap_release(S, q, g);
    ad_heap_release(S, s, gs);
    test_state_close(S);
}

/* ADDSL_NO_HUGE_PAGES, read when the state opens: big blocks as small ones. */
static void test_switch(void) {
    setenv("ADDSL_NO_HUGE_PAGES", "1", 1);
    ad_state *S = test_state(0);
    unsetenv("ADDSL_NO_HUGE_PAGES");
    size_t g;
    void *p = ad_heap_alloc(S, 4000000, &g);
    ok(p && (uintptr_t)p % 64 == 0, "switched off: a big block, 64-byte aligned");
    int hp = advised_huge(p);
    if (hp < 0) ok(1, "# SKIP no /proc/self/smaps");
    else ok(hp == 0, "switched off: not advised into huge pages");
    ad_heap_release(S, p, g);
    test_state_close(S);
}

int main(void) {
    plan(20);
    test_span();
    test_blocks();
    test_switch();
    return done_testing();
}
