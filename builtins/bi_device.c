/* bi_device.c: the builtins that ask about and wait for the GPU
 * (cuda_is_available, cuda_device_count, cuda_synchronize); the device layer
 * itself is vm/tensor/device.c. */
#include "builtins.h"
#include "state.h"
#include "tensor/device.h"
#include "tensor/device_impl.h"

static int bi_cuda_is_available(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argv; (void)argc;
    *out = ad_bool(ad_cuda_available(S));
    return AD_OK;
}

static int bi_cuda_device_count(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argv; (void)argc;
    *out = ad_int(ad_cuda_available(S) ? S->device->api->device_count() : 0);
    return AD_OK;
}

/* Waits for the GPU's queued work (for timing). */
static int bi_cuda_synchronize(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argv; (void)argc;
    const addsl_cuda_api *api = ad_cuda(S);
    if (!api) return S->errcode;
    *out = ad_none();
    return ad_cuda_check(S, api->synchronize(), "cuda_synchronize");
}

const ad_builtin_def ad_bi_device_defs[] = {
    {"cuda_is_available", bi_cuda_is_available, "",
         "True when the CUDA module is built in and a GPU is usable; x.to(\"cuda\") needs it."
         "\nExample: cuda_is_available()"},
    {"cuda_device_count", bi_cuda_device_count, "",
         "The number of usable GPUs (0 without the CUDA module)."
         "\nExample: cuda_device_count()"},
    {"cuda_synchronize", bi_cuda_synchronize, "",
         "Waits until the GPU has finished the queued work (for timing); does nothing without a "
         "GPU."
         "\nExample: if cuda_is_available() { cuda_synchronize() }"},
    {NULL, NULL, NULL},
};
