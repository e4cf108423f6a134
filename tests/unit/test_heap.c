/* test_heap.c: TAP tests of the tensor heap: pooling, stats, the memory
 * limit and its message, header pooling. */
#include "tap.h"

#include "tensor/heap.h"
#include "tensor/tensor.h"

static void test_pool_reuse(void) {
    ad_state *S = test_state(0);
    ad_heap_stats st;
    uint64_t after_first = 0;
    int grew = 0;
    int64_t shape[2] = {32, 32};
    for (int i = 0; i < 100; i++) {
        ad_tensor *a = ad_tensor_zeros(S, AD_FLOAT32, 2, shape);
        ad_tensor *b = ad_tensor_full(S, AD_FLOAT64, 2, shape, 1.5);
        ad_tensor_decref(S, a);
        ad_tensor_decref(S, b);
        ad_heap_stats_get(S, &st);
        if (i == 0) after_first = st.system_allocs;
        else if (st.system_allocs != after_first) grew = 1;
    }
    ok(after_first == 2, "first iteration allocates two blocks (%llu)", (unsigned long long)after_first);
    ok(!grew, "later iterations call the system allocator no more");
    ok(st.pool_hits == 198, "pool hits counted (%llu)", (unsigned long long)st.pool_hits);
    ok(st.live_bytes == 0, "nothing live after the loop");
    ok(st.peak_bytes == 32 * 32 * 4 + 32 * 32 * 8, "peak is both tensors (%zu)", st.peak_bytes);
    ok(st.pooled_bytes == 4096 + 8192, "both blocks pooled (%zu)", st.pooled_bytes);
    ad_heap_trim(S);
    ad_heap_stats_get(S, &st);
    ok(st.pooled_bytes == 0, "trim empties the pool");
    test_state_close(S);
}

static void test_alignment_and_classes(void) {
    ad_state *S = test_state(0);
    size_t g1, g2, g3;
    void *a = ad_heap_alloc(S, 1, &g1);
    void *b = ad_heap_alloc(S, 100, &g2);
    void *c = ad_heap_alloc(S, 0, &g3);
    ok(a && b && c, "small allocations succeed");
    ok(((uintptr_t)a % 64) == 0 && ((uintptr_t)b % 64) == 0 && ((uintptr_t)c % 64) == 0, "64-byte aligned");
    ok(g1 == 64 && g2 == 128 && g3 == 64, "power-of-two granted sizes (%zu, %zu, %zu)", g1, g2, g3);
    memset(b, 0xab, g2); /* the whole granted block is usable */
    ad_heap_stats st;
    ad_heap_stats_get(S, &st);
    ok(st.live_bytes == 101, "live bytes count requested sizes (%zu)", st.live_bytes);
    ad_heap_release(S, a, g1);
    ad_heap_release(S, b, g2);
    ad_heap_release(S, c, g3);
    ad_heap_stats_get(S, &st);
    ok(st.live_bytes == 0 && st.pooled_bytes == 64 + 128 + 64, "released to the pool");
    void *d = ad_heap_alloc(S, 50, &g1);
    ad_heap_stats_get(S, &st);
    ok(d == a || d == c, "same class reuses a pooled block");
    ok(st.pool_hits == 1, "one pool hit");
    ad_heap_release(S, d, g1);
    test_state_close(S);
}

static void test_limit(void) {
    ad_state *S = test_state(10000);
    int64_t shape[1] = {1000};
    ad_tensor *a = ad_tensor_empty(S, AD_FLOAT32, 1, shape); /* 4000 bytes */
    ad_tensor *b = ad_tensor_empty(S, AD_FLOAT32, 1, shape);
    ok(a && b, "two tensors fit under the limit");
    ad_tensor *c = ad_tensor_empty(S, AD_FLOAT64, 1, shape);  /* 8000 more */
    ok(c == NULL, "third tensor is refused");
    ok(S->errcode == ADDSL_ENOMEM, "code is ADDSL_ENOMEM");
    ad_heap_stats st;
    ad_heap_stats_get(S, &st);
    ok(st.object_bytes >= 2 * AD_TENSOR_HEADER_SIZE(1), "the two tensors' headers count as other objects");
    /* the other objects as the refusal saw them: the third tensor's storage header included */
    const char *want = "out of memory: tensor heap limit of 10000 bytes reached (live 8000 bytes, other objects ";
    ok(strncmp(S->errmsg, want, strlen(want)) == 0 && strstr(S->errmsg, " bytes, requested 8000 bytes)"),
       "limit message: %s", S->errmsg);
    ad_tensor_decref(S, a);
    ad_clear_error(S);
    ad_tensor *d = ad_tensor_empty(S, AD_FLOAT32, 1, shape);
    ok(d != NULL, "freeing makes room again");
    ad_heap_stats_get(S, &st);
    ok(st.live_bytes == 8000, "live bytes after free and realloc (%zu)", st.live_bytes);
    ad_tensor_decref(S, b);
    ad_tensor_decref(S, d);
    ad_heap_stats_get(S, &st);
    ok(st.live_bytes == 0 && st.peak_bytes == 8000, "stats after freeing all");
    /* Pooled memory is dropped before the heap would hold more than the limit. */
    int64_t big[1] = {2000};
    ad_tensor *e = ad_tensor_empty(S, AD_FLOAT32, 1, big);
    ad_heap_stats_get(S, &st);
    ok(e && st.pooled_bytes == 0, "pool trimmed to stay under the limit (%zu pooled)", st.pooled_bytes);
    ad_tensor_decref(S, e);
    ad_heap_set_limit(S, 100);
    ok(ad_tensor_empty(S, AD_FLOAT32, 1, shape) == NULL, "set_limit lowers the limit");
    test_state_close(S);
}

static void test_headers(void) {
    ad_state *S = test_state(0);
    void *a = ad_heap_alloc_header(S, sizeof(ad_tensor));
    ok(a != NULL && ((uintptr_t)a % 16) == 0, "header allocated, 16-byte aligned");
    ad_heap_release_header(S, a, sizeof(ad_tensor));
    void *b = ad_heap_alloc_header(S, sizeof(ad_tensor));
    ok(a == b, "released header is reused");
    /* sizes in the same 16-byte class share a free list; other classes do not */
    void *c = ad_heap_alloc_header(S, 33), *d = ad_heap_alloc_header(S, 40);
    ok(c && d && c != d && ((uintptr_t)d % 16) == 0, "two headers of one class, distinct and aligned");
    memset(c, 0xab, 33);
    memset(d, 0xcd, 40);
    ad_heap_release_header(S, c, 33);
    void *e = ad_heap_alloc_header(S, 48);
    ok(e == c, "a 48-byte request takes the released 33-byte slot (class 48)");
    void *f = ad_heap_alloc_header(S, 64);
    ok(f != c && f != d, "a 64-byte request does not");
    /* thousands of headers: more than one slab, every one usable */
    void *many[5000];
    int good = 1;
    for (int i = 0; i < 5000; i++) {
        many[i] = ad_heap_alloc_header(S, 96);
        if (!many[i]) { good = 0; break; }
        memset(many[i], i & 0xff, 96);
    }
    for (int i = 0; good && i < 5000; i++)
        if (((unsigned char *)many[i])[95] != (i & 0xff)) good = 0;
    ok(good, "5000 headers across slabs keep their contents");
    for (int i = 0; good && i < 5000; i += 2) ad_heap_release_header(S, many[i], 96);
    void *big = ad_heap_alloc_header(S, 5000);
    ok(big != NULL, "oversized header falls back to the allocator");
    memset(big, 0, 5000);
    ad_heap_release_header(S, big, 5000);
    /* headers never released: closing the heap frees their slabs (valgrind checks) */
    ok(ad_heap_alloc_header(S, 5000) != NULL && ad_heap_alloc_header(S, 80) != NULL, "headers left live at close");
    /* Leaked header and block: ad_heap_free still releases them (valgrind checks). */
    size_t g;
    ok(ad_heap_alloc(S, 300, &g) != NULL, "a block left live at close");
    test_state_close(S);
}

static void *counting_alloc(void *ud, void *p, size_t n) {
    if (n == 0) { free(p); return NULL; }
    if (!p) ++*(int64_t *)ud;
    return realloc(p, n);
}

static void test_steady_state(void) {
    ad_state *S = test_state(0);
    int64_t count_allocs = 0;
    S->cfg.alloc = counting_alloc;
    S->cfg.alloc_ud = &count_allocs;
    int64_t shape[2] = {8, 8};
    int64_t before = 0;
    for (int i = 0; i < 50; i++) {
        if (i == 1) before = count_allocs;
        ad_tensor *a = ad_tensor_zeros(S, AD_FLOAT32, 2, shape);
        ad_tensor *t = ad_tensor_transpose(S, a, 0, 1);
        ad_tensor *c = ad_tensor_contiguous(S, t);
        ad_tensor_decref(S, a);
        ad_tensor_decref(S, t);
        ad_tensor_decref(S, c);
    }
    ok(count_allocs == before, "no allocator calls after the first iteration (%lld extra)",
       (long long)(count_allocs - before));
    test_state_close(S);
}

/* Headers past several big slabs: from 1 MB on the next slab is allocated half-way through
 * the current one and mapped by a helper thread (vm/tensor/heap_prefault.c); every header keeps its
 * contents, the slabs come one allocator call each, and close frees the spare (valgrind). */
static void test_big_slabs(void) {
    ad_state *S = test_state(0);
    int64_t count_allocs = 0;
    S->cfg.alloc = counting_alloc;
    S->cfg.alloc_ud = &count_allocs;
    enum { N = 300000, SIZE = 64 };  /* 19.2 MB of headers: slabs of 64 KB ... 8 MB */
    unsigned char **p = malloc(N * sizeof *p);
    int good = p != NULL;
    for (int i = 0; good && i < N; i++) {
        if (!(p[i] = ad_heap_alloc_header(S, SIZE))) good = 0;
        else memset(p[i], i * 7 & 0xff, SIZE);
    }
    for (int i = 0; good && i < N; i++)
        if (p[i][0] != (i * 7 & 0xff) || p[i][SIZE - 1] != (i * 7 & 0xff)) good = 0;
    ok(good, "%d headers over pre-faulted slabs keep their contents", N);
    /* 64 KB + 128 KB + ... + 8 MB slabs, then 8 MB each, plus at most one spare ahead */
    ok(count_allocs >= 8 && count_allocs <= 12, "one allocator call per slab (%lld)", (long long)count_allocs);
    free(p);
    test_state_close(S);
}

int main(void) {
    plan(36);
    test_pool_reuse();
    test_alignment_and_classes();
    test_limit();
    test_headers();
    test_steady_state();
    test_big_slabs();
    return done_testing();
}
