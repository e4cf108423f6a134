/* test_limits.c: the limits a host sets through addsl_config (instruction
 * budget, memory limit, depth, allocator) and the fixed string and list caps. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addsl.h"
#include "state.h"
#include "value.h"

static int run_planned = 0, run_count = 0, run_failed = 0;

static void check(int pass, const char *what) {
    run_count++;
    if (!pass) run_failed++;
    printf("%sok %d - %s\n", pass ? "" : "not ", run_count, what);
}

static void discard(void *ud, const char *text, size_t len, int is_err) {
    (void)ud; (void)text; (void)len; (void)is_err;
}

/* Stops the script after 'left' polls; counts the polls. */
typedef struct budget { long left, polls; } budget;

static int stop_after(void *ud) {
    budget *b = ud;
    b->polls++;
    return --b->left < 0;
}

/* A host allocator that refuses to hold more than 'cap' live bytes. */
typedef struct capped { size_t live, cap; } capped;

static void *capped_alloc(void *ud, void *p, size_t n) {
    capped *c = ud;
    size_t old = p ? malloc_usable_size(p) : 0;
    if (n == 0) { c->live -= old; free(p); return NULL; }
    if (n > old && c->live - old + n > c->cap) return NULL;
    void *q = realloc(p, n);
    if (!q) return NULL;
    c->live = c->live - old + malloc_usable_size(q);
    return q;
}

static addsl_state *open_with(addsl_config *cfg) {
    cfg->write = discard;
    return addsl_open(cfg);
}

static int has(addsl_state *S, const char *text) { return strstr(addsl_errmsg(S), text) != NULL; }

static void test_budget(void) {
    addsl_config cfg;
    addsl_config_init(&cfg);
    budget b = {10, 0};
    cfg.interrupt = stop_after;
    cfg.interrupt_ud = &b;
    cfg.interrupt_every = 100;
    addsl_state *S = open_with(&cfg);
    int rc = addsl_dostring(S, "while true { }", "<loop>");
    check(rc == ADDSL_EINTERRUPT && has(S, "interrupted by the host"), "an endless loop stops at the instruction budget");
    check(b.polls == 11, "the host was polled once per interrupt_every backward jumps");
    b.left = 5;
    rc = addsl_dostring(S, "fn f(n) { return n }\nlet i = 0\nwhile true { i = f(i) }", "<calls>");
    check(rc == ADDSL_EINTERRUPT, "a loop of calls stops at the budget");
    b.left = 5;
    rc = addsl_dostring(S, "fn g(n) { if n == 0 { return 0 }\n return g(n - 1) + g(n - 1) }\ng(40)", "<tree>");
    check(rc == ADDSL_EINTERRUPT, "exponential recursion stops at the budget");
    b.left = 1000;
    rc = addsl_dostring(S, "let x = 1 + 1", "<after>");
    check(rc == ADDSL_OK, "the state runs scripts again after an interrupt");
    addsl_close(S);
}

static void test_memory(void) {
    addsl_config cfg;
    addsl_config_init(&cfg);
    cfg.memory_limit = (size_t)1 << 20;
    addsl_state *S = open_with(&cfg);
    int rc = addsl_dostring(S, "let big = zeros([1000000])", "<big>");
    check(rc == ADDSL_ENOMEM && has(S, "tensor heap limit of 1048576 bytes reached"), "one tensor over memory_limit");
    rc = addsl_dostring(S, "let keep = []\nwhile true { append(keep, zeros([16384])) }", "<many>");
    check(rc == ADDSL_ENOMEM && has(S, "tensor heap limit of 1048576 bytes reached"), "many small tensors reach memory_limit together");
    rc = addsl_dostring(S, "keep = []\nlet again = zeros([200000])", "<again>");
    check(rc == ADDSL_OK, "freed tensors give their bytes back to the limit");
    addsl_close(S);
}

static void test_depth(void) {
    addsl_config cfg;
    addsl_config_init(&cfg);
    cfg.max_depth = 10;
    addsl_state *S = open_with(&cfg);
    int rc = addsl_dostring(S, "fn f(n) { return f(n + 1) }\nf(0)", "<deep>");
    check(rc == ADDSL_ERUNTIME && has(S, "stack overflow (more than 10 nested calls)"), "max_depth stops recursion");
    rc = addsl_dostring(S, "fn h(n) { if n == 0 { return 0 }\n return h(n - 1) }\nprint(h(8))", "<shallow>");
    check(rc == ADDSL_OK, "recursion within max_depth runs");
    addsl_close(S);
}

static void test_allocator_cap(void) {
    addsl_config cfg;
    addsl_config_init(&cfg);
    capped c = {0, (size_t)64 << 20};
    cfg.alloc = capped_alloc;
    cfg.alloc_ud = &c;
    addsl_state *S = open_with(&cfg);
    check(S != NULL, "a state opens under a capped allocator");
    if (!S) return;
    int rc = addsl_dostring(S, "let s = \"ab\"\nwhile true { s = s + s }", "<string>");
    check(rc == ADDSL_ENOMEM, "a doubling string stops at the host allocator's cap");
    rc = addsl_dostring(S, "let l = []\nwhile true { append(l, [1, 2, 3]) }", "<list>");
    check(rc == ADDSL_ENOMEM, "a growing list stops at the host allocator's cap");
    /* The failed list is still alive and holds the allocator at its cap; the
     * host grants a little room so the next chunk can compile and free it. */
    c.cap += (size_t)1 << 20;
    rc = addsl_dostring(S, "s = \"\"\nl = []\nlet ok = 1", "<after>");
    check(rc == ADDSL_OK, "the state runs after the allocator refused");
    addsl_close(S);
    check(c.live == 0, "every byte the state allocated was freed");
}

static void test_fixed_caps(void) {
    addsl_state *S = open_with(&(addsl_config){0});
    /* The length is checked before the (absent) data is read. */
    ad_str *s = ad_str_new(S, NULL, AD_MAX_STRING + 1);
    check(s == NULL && has(S, "string too long"), "strings are capped at AD_MAX_STRING bytes");
    ad_list *l = ad_list_new(S, AD_TLIST, AD_MAX_LIST + 1);
    check(l == NULL && has(S, "list too long"), "lists are capped at AD_MAX_LIST items");
    addsl_close(S);
}

int main(void) {
    run_planned = 17;
    printf("1..%d\n", run_planned);
    test_budget();
    test_memory();
    test_depth();
    test_allocator_cap();
    test_fixed_caps();
    return run_failed || run_count != run_planned;
}
