/* fuzz_program.c: libFuzzer target running whole scripts under the sandbox of
 * fuzz_common.h (64 MiB of tensors, depth 64, an instruction budget, no files). */
#include "fuzz_common.h"

#define FUZZ_REOPEN_EVERY 64 /* inputs per state: a script's globals outlive it */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One state serves many inputs (opening one compiles the op library); it is
 * renewed often so that what one script defines cannot steer the others far. */
static addsl_state *state;
static fuzz_budget budget;
static unsigned runs;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!state || ++runs % FUZZ_REOPEN_EVERY == 0 || getenv("FUZZ_FRESH")) {
        addsl_close(state);
        state = fuzz_open(&budget);
        if (!state) return 0;
    }
    char *src = fuzz_cstr(data, size);
    if (!src) return 0;
    budget.polls = 0;
    int rc = addsl_dostring(state, src, "<fuzz>");
    (void)addsl_errmsg(state);
    /* A script that redefines the operators or exits leaves the state odd. */
    if (rc == ADDSL_EXIT || rc == ADDSL_ENOMEM) { addsl_close(state); state = NULL; }
    free(src);
    return 0;
}
