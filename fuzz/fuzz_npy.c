/* fuzz_npy.c: libFuzzer target for load() on arbitrary .npy bytes; a tensor
 * that loads is then printed, reduced and converted, to reach its data. */
#include "fuzz_common.h"

#include "system/npy.h"
#include "state.h"
#include "tensor/tensor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_STATE_USES 256 /* inputs per state (see fuzz_state) */

static fuzz_budget budget;

static const char use_tensor[] =
    "print(x)\n"
    "print(x.shape, x.dtype, x.numel())\n"
    "let f = x.double()\n"
    "print(f.sum(), f.mean(), f.amax() if f.numel() > 0 else 0)\n"
    "print(x.float().long().bool().reshape([-1])[:3])\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    addsl_state *state = fuzz_state(&budget, FUZZ_STATE_USES, 0);
    if (!state) return 0;
    ad_tensor *t = NULL;
    if (ad_npy_parse(state, data, size, "<fuzz>.npy", &t) == ADDSL_OK) {
        if (addsl_set_global(state, "x", t) == ADDSL_OK) addsl_dostring(state, use_tensor, "<fuzz-use>");
        addsl_tensor_release(state, t);
        addsl_set_number(state, "x", 0); /* drop the global's reference */
    }
    return 0;
}
