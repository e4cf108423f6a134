/* fuzz_program.c: libFuzzer target running whole scripts under the sandbox of
 * fuzz_common.h (64 MiB of tensors, depth 64, an instruction budget, no files). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_STATE_USES 16 /* inputs per state (see fuzz_state) */

static fuzz_budget budget;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    addsl_state *S = fuzz_state(&budget, FUZZ_STATE_USES, 0);
    char *src = fuzz_cstr(data, size);
    if (S && src) {
        int rc = addsl_dostring(S, src, "<fuzz>");
        (void)addsl_errmsg(S);
        /* After exit() or an allocation failure start afresh. */
        if (rc == ADDSL_EXIT || rc == ADDSL_ENOMEM) fuzz_state(&budget, 0, 1);
    }
    free(src);
    return 0;
}
