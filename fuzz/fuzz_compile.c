/* fuzz_compile.c: libFuzzer target for the lexer, parser and compiler.
 * Arbitrary bytes are compiled (never run) and the prototype is dropped. */
#include "fuzz_common.h"

#include "buf.h"
#include "codegen.h"
#include "state.h"
#include "vm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_STATE_USES 256 /* inputs per state (see fuzz_state) */

static fuzz_budget budget;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* Compiling runs nothing, but it adds global slots: renew the state now and then. */
    addsl_state *S = fuzz_state(&budget, FUZZ_STATE_USES, 0);
    if (!S) return 0;
    if (size > FUZZ_MAX_INPUT) size = FUZZ_MAX_INPUT;
    /* Embedded NUL bytes stay (the compiler takes a length), but the scanner
     * reads src[len] as its sentinel, so the copy is NUL-terminated. */
    char *src = fuzz_cstr(data, size);
    if (!src) return 0;
    ad_proto *p = ad_compile(S, src, size, "<fuzz>", size > 0 && data[0] == '>');
    if (p) {
        ad_buf out;
        ad_buf_init(&out, S);
        ad_vm_disasm(S, p, &out);
        ad_buf_free(&out);
        ad_proto_decref(S, p);
    }
    ad_compile_incomplete(src, size);
    free(src);
    return 0;
}
