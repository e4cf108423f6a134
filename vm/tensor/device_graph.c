/* tensor/device_graph.c: CUDA graph capture for a state: the stream launches go to,
 * the capture itself, and the device blocks a captured graph owns. */
#include <string.h>

#include "tensor/device.h"
#include "tensor/device_impl.h"
#include "state.h"

void *ad_cuda_stream(const ad_state *S) { return S->device ? S->device->stream : NULL; }

bool ad_device_capturing(const ad_state *S) { return S->device && S->device->capture; }

int ad_device_capture_refuse(ad_state *S, const char *what) {
    return ad_error(S, "the program %s while its CUDA graph is captured", what);
}

/* ---- the blocks of live graphs ---- */

bool ad_gpool_give_back(struct ad_device *d, void *p) {
    for (ad_gpool *g = d->pools; g; g = g->next)
        for (int i = 0; i < g->n; i++)
            if (g->b[i].p == p) { g->b[i].free = true; return true; }
    return false;
}

void *ad_gpool_take(ad_state *S, struct ad_device *d, int cls) {
    (void)S;
    ad_gpool *g = d->capture;
    for (int i = 0; i < g->n; i++)
        if (g->b[i].free && g->b[i].cls == cls) { g->b[i].free = false; return g->b[i].p; }
    return NULL;
}

int ad_gpool_own(ad_state *S, struct ad_device *d, void *p, int cls) {
    ad_gpool *g = d->capture;
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 16;
        ad_gblock *nb = ad_realloc(S, g->b, (size_t)cap * sizeof *nb);
        if (!nb) return S->errcode ? S->errcode : ADDSL_ENOMEM;
        g->b = nb;
        g->cap = cap;
    }
    g->b[g->n++] = (ad_gblock){p, cls, false};
    return ADDSL_OK;
}

/* ---- capture ---- */

int ad_device_capture_begin(ad_state *S, ad_gpool *pool) {
    const addsl_cuda_api *api = ad_cuda(S);
    if (!api) return S->errcode;
    struct ad_device *d = S->device;
    if (d->capture) return ad_error(S, "a CUDA graph is already being captured");
    if (!d->cap_stream) {
        int rc = ad_cuda_check(S, api->stream_create(&d->cap_stream), "cudaStreamCreate");
        if (rc) return rc;
    }
    int rc = ad_cuda_check(S, api->capture_begin(d->cap_stream), "cudaStreamBeginCapture");
    if (rc) return rc;
    /* the pool is live at once: a block released during the capture is the
     * graph's (a later kernel of the capture may be recorded over it) */
    pool->next = d->pools;
    d->pools = pool;
    d->capture = pool;
    d->stream = d->cap_stream;
    return ADDSL_OK;
}

int ad_device_capture_end(ad_state *S, void **exec, size_t *nnodes) {
    struct ad_device *d = S->device;
    *exec = NULL;
    *nnodes = 0;
    if (!d || !d->capture) return ad_error(S, "no CUDA graph is being captured");
    d->capture = NULL;
    d->stream = NULL;
    return ad_cuda_check(S, d->api->capture_end(d->cap_stream, exec, nnodes), "CUDA graph capture");
}

int ad_device_graph_launch(ad_state *S, void *exec) {
    const addsl_cuda_api *api = ad_cuda(S);
    if (!api) return S->errcode;
    return ad_cuda_check(S, api->graph_launch(exec, ad_cuda_stream(S)), "cudaGraphLaunch");
}

void ad_device_graph_free(ad_state *S, void *exec) {
    if (exec && S->device && S->device->api) S->device->api->graph_destroy(exec);
}

void ad_device_pool_close(ad_state *S, ad_gpool *pool) {
    struct ad_device *d = S->device;
    if (!d) { ad_free(S, pool->b); memset(pool, 0, sizeof *pool); return; }
    for (ad_gpool **g = &d->pools; *g; g = &(*g)->next)
        if (*g == pool) { *g = pool->next; break; }
    if (d->capture == pool) { d->capture = NULL; d->stream = NULL; }
    for (int i = 0; i < pool->n; i++)
        if (pool->b[i].free) ad_device_release(S, pool->b[i].p, (size_t)1 << pool->b[i].cls);
    ad_free(S, pool->b);
    memset(pool, 0, sizeof *pool);
}
