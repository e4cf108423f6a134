/* fuzz_compile.c: libFuzzer target for the lexer, parser and compiler.
 * Arbitrary bytes are compiled (never run) and the prototype is dropped. */
#include "fuzz_common.h"

#include "buf.h"
#include "compile.h"
#include "state.h"
#include "vm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_budget b = {0};
    /* A fresh state per input: compiling creates global slots that would pile up. */
    addsl_state *S = fuzz_open(&b);
    if (!S) return 0;
    if (size > FUZZ_MAX_INPUT) size = FUZZ_MAX_INPUT;
    /* Embedded NUL bytes stay: the compiler takes an explicit length. */
    ad_proto *p = ad_compile(S, (const char *)data, size, "<fuzz>", size > 0 && data[0] == '>');
    if (p) {
        ad_buf out;
        ad_buf_init(&out, S);
        ad_vm_disasm(S, p, &out);
        ad_buf_free(&out);
        ad_proto_decref(S, p);
    }
    ad_compile_incomplete((const char *)data, size);
    addsl_close(S);
    return 0;
}
