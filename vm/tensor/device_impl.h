/* tensor/device_impl.h: the state behind vm/tensor/device.c, shared with vm/tensor/device_graph.c
 * (the launch stream, CUDA graph capture and the blocks a captured graph owns). */
#ifndef AD_DEVICE_IMPL_H
#define AD_DEVICE_IMPL_H

#include <stdbool.h>

#include "../../cuda/traj_cuda.h"
#include "tensor/device.h"

#define NCLASSES 48
#define MIN_CLASS 8 /* 256 bytes: the smallest block handed out */

typedef struct dev_bin { void **p; int n, cap; } dev_bin;

struct ad_device {
    void *dl;
    const addsl_cuda_api *api;
    bool tried;             /* the module was looked for (found or not) */
    char why[256];          /* why there is no GPU */
    dev_bin bins[NCLASSES];
    void *stream;           /* where launches go: NULL (the default stream), or cap_stream while capturing */
    void *cap_stream;       /* the state's capture stream, made on the first capture */
    ad_gpool *capture;      /* the pool of the graph being captured, or NULL */
    ad_gpool *pools;        /* the pools of the live graphs (their blocks are theirs) */
};

/* Pooled blocks: whether a captured graph owns 'p' (it then stays with that
 * graph); a block allocated while a graph is captured (vm/tensor/device_graph.c). */
bool ad_gpool_give_back(struct ad_device *d, void *p);
void *ad_gpool_take(ad_state *S, struct ad_device *d, int cls);
int ad_gpool_own(ad_state *S, struct ad_device *d, void *p, int cls);

#endif
