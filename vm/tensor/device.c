/* tensor/device.c: the CUDA module behind GPU tensors (loaded with dlopen on first
 * use, so the core never links CUDA), its pooled device memory, and the
 * copies between host and device. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cuda/tensor_cuda.h"
#include "../../cuda/traj_cuda.h"
#include "buf.h"
#include "tensor/device.h"
#include "tensor/device_impl.h"
#include "dlmodule.h"
#include "state.h"

const char *ad_device_name(int device) { return device == AD_DEV_CUDA ? "cuda:0" : "cpu"; }

int ad_device_mismatch(ad_state *S, int expected, int found) {
    return ad_error(S, "Expected all tensors to be on the same device, but found at least two devices, %s and %s!",
                    ad_device_name(expected), ad_device_name(found));
}

int ad_device_parse(ad_state *S, const char *s, int *device) {
    if (strcmp(s, "cpu") == 0) { *device = AD_DEV_CPU; return AD_OK; }
    if (strcmp(s, "cuda") == 0 || strcmp(s, "cuda:0") == 0) { *device = AD_DEV_CUDA; return AD_OK; }
    if (strncmp(s, "cuda:", 5) == 0) return ad_error(S, "CUDA error: invalid device ordinal (only cuda:0 is used, got '%s')", s);
    return ad_error(S, "Expected one of cpu, cuda device type at start of device string: %s", s);
}

static struct ad_device *dev_state(ad_state *S) {
    if (!S->device) S->device = ad_calloc(S, 1, sizeof(struct ad_device));
    return S->device;
}

static void *open_module(struct ad_device *d) {
    void *h = ad_dlmodule_open("addsl_cuda.so", "ADDSL_CUDA_MODULE", RTLD_NOW | RTLD_LOCAL, d->why, sizeof d->why);
    if (!h && !d->why[0])
        snprintf(d->why, sizeof d->why, "addsl was built without its CUDA module (addsl_cuda.so not found)");
    return h;
}

static void try_load(struct ad_device *d) {
    d->tried = true;
    d->dl = open_module(d);
    if (!d->dl) return;
    const addsl_cuda_api *(*get)(void);
    *(void **)&get = dlsym(d->dl, "addsl_cuda_get_api");
    const addsl_cuda_api *api = get ? get() : NULL;
    if (!api || api->version < ADDSL_CUDA_API_VERSION) {
        snprintf(d->why, sizeof d->why, "the CUDA module is too old (API version %d, need %d)",
                 api ? api->version : 0, ADDSL_CUDA_API_VERSION);
    } else if (api->device_count() <= 0) {
        snprintf(d->why, sizeof d->why, "no CUDA GPUs are available");
    } else {
        d->api = api;
        return;
    }
    dlclose(d->dl);
    d->dl = NULL;
}

const addsl_cuda_api *ad_cuda(ad_state *S) {
    struct ad_device *d = dev_state(S);
    if (!d) return NULL;
    if (!d->tried) try_load(d);
    if (!d->api) ad_error(S, "CUDA is not available: %s", d->why);
    return d->api;
}

bool ad_cuda_available(ad_state *S) {
    struct ad_device *d = dev_state(S);
    if (!d) { ad_clear_error(S); return false; }
    if (!d->tried) try_load(d);
    return d->api != NULL;
}

int ad_cuda_check(ad_state *S, int rc, const char *what) {
    if (rc == 0) return AD_OK;
    if (rc == ADDSL_CUDA_ENOKERNEL) return ad_error(S, "%s: not implemented for CUDA tensors (move them with .cpu())", what);
    if (rc == ADDSL_CUDA_EARG) return ad_error(S, "%s: bad arguments for the CUDA kernel", what);
    const addsl_cuda_api *api = S->device ? S->device->api : NULL;
    return ad_error(S, "CUDA error in %s: %s", what, api ? api->error_string(rc) : "unknown");
}

/* ---- pooled device memory ---- */

static int size_class(size_t n) {
    int c = MIN_CLASS;
    while (c < NCLASSES - 1 && ((size_t)1 << c) < n) c++;
    return c;
}

void *ad_device_alloc(ad_state *S, size_t nbytes, size_t *granted) {
    const addsl_cuda_api *api = ad_cuda(S);
    if (!api) return NULL;
    int c = size_class(nbytes);
    size_t sz = (size_t)1 << c;
    if (sz < nbytes) { ad_error(S, "out of memory: %zu bytes on the GPU", nbytes); return NULL; }
    struct ad_device *d = S->device;
    dev_bin *b = &d->bins[c];
    *granted = sz;
    /* while a graph is captured, its own blocks first, and every block it
     * gets becomes its own (vm/tensor/device_graph.c) */
    void *p = d->capture ? ad_gpool_take(S, d, c) : NULL;
    if (p) return p;
    if (b->n > 0) p = b->p[--b->n];
    int rc = p ? 0 : api->malloc_(&p, sz);
    if (rc && !d->capture) {
        /* Give the cached blocks back to the driver and try once more
         * (not while capturing: cudaFree waits for the device). */
        for (int k = 0; k < NCLASSES; k++) {
            dev_bin *o = &d->bins[k];
            while (o->n > 0) api->free_(o->p[--o->n]);
        }
        rc = api->malloc_(&p, sz);
    }
    if (rc) {
        ad_error(S, "CUDA out of memory: tried to allocate %zu bytes (%s)", nbytes, api->error_string(rc));
        return NULL;
    }
    if (d->capture && ad_gpool_own(S, d, p, c)) { api->free_(p); return NULL; }
    return p;
}

void ad_device_release(ad_state *S, void *p, size_t granted) {
    struct ad_device *d = S->device;
    if (!d || !d->api || !p) return;
    if (d->pools && ad_gpool_give_back(d, p)) return;
    int c = size_class(granted);
    dev_bin *b = &d->bins[c];
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 8;
        void **np = ad_realloc(S, b->p, (size_t)cap * sizeof *np);
        if (!np) { ad_clear_error(S); d->api->free_(p); return; }
        b->p = np;
        b->cap = cap;
    }
    b->p[b->n++] = p;
}

void ad_device_close(ad_state *S) {
    struct ad_device *d = S->device;
    if (!d) return;
    for (int k = 0; k < NCLASSES; k++) {
        dev_bin *b = &d->bins[k];
        while (d->api && b->n > 0) d->api->free_(b->p[--b->n]);
        ad_free(S, b->p);
    }
    if (d->api && d->cap_stream) d->api->stream_destroy(d->cap_stream);
    if (d->dl) dlclose(d->dl);
    ad_free(S, d);
    S->device = NULL;
}

/* ---- copies ---- */

int ad_device_copy(ad_state *S, void *dst, int ddt, const void *src, int sdt, int n, const int64_t *shape,
                   const int64_t *ds, const int64_t *ss) {
    const addsl_cuda_api *api = ad_cuda(S);
    if (!api) return S->errcode;
    return ad_cuda_check(S, api->copy_strided(dst, ddt, ds, src, sdt, ss, n, shape, ad_cuda_stream(S)), "copy");
}

int ad_device_fill(ad_state *S, void *dst, int dt, int n, const int64_t *shape, const int64_t *ds, double v) {
    const addsl_cuda_api *api = ad_cuda(S);
    if (!api) return S->errcode;
    return ad_cuda_check(S, api->fill(dst, dt, ds, n, shape, v, ad_cuda_stream(S)), "fill");
}

int ad_device_read(ad_state *S, void *host, const void *dev, size_t bytes) {
    if (ad_device_capturing(S)) return ad_device_capture_refuse(S, "reads GPU memory on the host (.item(), a host-side check)");
    const addsl_cuda_api *api = ad_cuda(S);
    if (!api) return S->errcode;
    return ad_cuda_check(S, api->to_host(host, dev, bytes), "item");
}

/* Host <-> device through a contiguous staging tensor on the source side. */
ad_tensor *ad_tensor_to_device(ad_state *S, ad_tensor *t, int device) {
    if (ad_tensor_device(t) == device) { ad_tensor_incref(t); return t; }
    if (ad_device_capturing(S)) { ad_device_capture_refuse(S, "copies between host and GPU (.cpu(), .cuda(), printing)"); return NULL; }
    const addsl_cuda_api *api = ad_cuda(S);
    if (!api) return NULL;
    ad_tensor *c = ad_tensor_contiguous(S, t);
    if (!c) return NULL;
    ad_tensor *r = ad_tensor_empty_on(S, t->dtype, t->ndim, t->shape, device);
    if (!r) { ad_tensor_decref(S, c); return NULL; }
    size_t bytes = (size_t)t->numel * ad_dtype_size(t->dtype);
    int rc = 0;
    if (bytes)
        rc = device == AD_DEV_CUDA ? api->to_device(ad_tensor_data(r), ad_tensor_data(c), bytes)
                                   : api->to_host(ad_tensor_data(r), ad_tensor_data(c), bytes);
    ad_tensor_decref(S, c);
    if (rc) { ad_tensor_decref(S, r); ad_cuda_check(S, rc, device == AD_DEV_CUDA ? "cuda()" : "cpu()"); return NULL; }
    return r;
}

/* ---- which builtins take GPU tensors ---- */

/* Builtins outside the tables that take GPU tensors whole (vm/vm.c
 * table_on_device) that handle GPU tensors:
 * they only make views, go through the device-aware copies and kernels, or
 * read metadata. Sorted (bsearch). */
static const char *const device_builtins[] = {
    "_index_check", "_inplace", "_inplace_write", "addmm", "addmv", "addr", "amax", "amin", "arange", "backward", "baddbmm", "bmm",
    "broadcast_to", "cat", "clone", "concat", "concatenate", "contiguous", "copy_", "detach", "dim",
    "dot", "double", "element_size", "empty", "empty_like", "expand", "expand_as", "eye", "fill_",
    "flatten", "float", "full", "full_like", "grad", "index_add_at", "index_get", "int",
    "is_contiguous", "is_floating_point", "item", "linspace", "long", "manual_seed", "matmul",
    "max", "mean", "min", "mm", "moveaxis", "movedim", "mv", "narrow", "numel", "ones", "ones_like",
    "outer", "permute", "prod", "rand", "rand_like", "randint", "randn", "randn_like",
    "requires_grad_", "reshape", "reshape_as", "select", "size", "squeeze", "stack", "stride",
    "sum", "swapaxes", "swapdims", "t", "tensor", "to", "transpose", "type_as", "unflatten",
    "unsqueeze", "view", "view_as", "zero_", "zeros", "zeros_like",
};

static int cmp_name(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

bool ad_device_builtin_ok(const char *name) {
    const char *key = name;
    return bsearch(&key, device_builtins, sizeof device_builtins / sizeof device_builtins[0], sizeof device_builtins[0],
                   cmp_name) != NULL;
}

static bool on_gpu(ad_value v) {
    if (v.t == AD_TTENSOR) return ad_tensor_device(v.u.tensor) != AD_DEV_CPU;
    if (v.t == AD_TLIST || v.t == AD_TTUPLE)
        for (int64_t i = 0; i < v.u.l->len; i++)
            if (v.u.l->items[i].t == AD_TTENSOR && ad_tensor_device(v.u.l->items[i].u.tensor)) return true;
    return false;
}

int ad_device_refuse(ad_state *S, const char *name, const ad_value *args, int nargs, const struct ad_list *kw) {
    bool gpu = false;
    for (int i = 0; i < nargs && !gpu; i++) gpu = on_gpu(args[i]);
    for (int64_t i = 0; kw && i < kw->len && !gpu; i++) gpu = on_gpu(kw->items[i]);
    if (!gpu) return AD_OK;
    return ad_error(S, "%s(): not implemented for CUDA tensors (move them with .cpu())", name);
}
