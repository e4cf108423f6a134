/* fuzz_op.c: libFuzzer target for op definitions with arbitrary formulas.
 * The input's lines fill a template's backward formulas (self, other) and its
 * forward-mode formula (result); the op then runs forward, backward and jvp. */
#include <stdio.h>

#include "fuzz_common.h"

#define FUZZ_FORMULA_MAX 512 /* bytes per formula */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_STATE_USES 16 /* inputs per state (see fuzz_state) */

static fuzz_budget budget;

static const char template_text[] =
    "op f(self, other) {\n"
    "    forward: kernel(\"ad_mul\")\n"
    "    self: %.*s\n"
    "    other: %.*s\n"
    "    result: %.*s\n"
    "}\n"
    "let x = randn([2, 3], requires_grad=true)\n"
    "let y = randn([3], requires_grad=true)\n"
    "let z = f(x, y)\n"
    "z.sum().backward()\n"
    "print(x.grad, y.grad)\n"
    "print(grad(f(x, 2.0).sum(), [x]))\n"
    "print(jvp(fn(a) => f(a, y), x, ones([2, 3])))\n";


/* The next line of [*p, end), at most FUZZ_FORMULA_MAX bytes, or "grad" when none is left. */
static void next_line(const char **p, const char *end, const char **s, int *n) {
    const char *q = *p;
    while (q < end && *q != '\n') q++;
    if (*p >= end) { *s = "grad"; *n = 4; return; }
    *s = *p;
    *n = (int)(q - *p > FUZZ_FORMULA_MAX ? FUZZ_FORMULA_MAX : q - *p);
    *p = q < end ? q + 1 : q;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size && memchr(data, '\0', size)) return 0;
    const char *p = (const char *)data, *end = p + size, *s[3];
    int n[3];
    for (int i = 0; i < 3; i++) next_line(&p, end, &s[i], &n[i]);
    char src[sizeof template_text + 3 * FUZZ_FORMULA_MAX];
    snprintf(src, sizeof src, template_text, n[0], s[0], n[1], s[1], n[2], s[2]);
    addsl_state *S = fuzz_state(&budget, FUZZ_STATE_USES, 0);
    if (!S) return 0;
    int rc = addsl_dostring(S, src, "<fuzz-op>");
    if (rc == ADDSL_EXIT || rc == ADDSL_ENOMEM) fuzz_state(&budget, 0, 1);
    return 0;
}
