/* tensor/device.h: GPU tensors' side of the core: the CUDA module loaded on first
 * use, its device memory pool, and the calls that move tensors across. */
#ifndef AD_DEVICE_H
#define AD_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "tensor/tensor.h"
#include "value.h"

struct addsl_cuda_api;

/* Device numbers of ad_storage.device. */
#define AD_DEV_CPU 0
#define AD_DEV_CUDA 1

static inline int ad_tensor_device(const ad_tensor *t) { return t->storage->device; }
/* "cpu" / "cuda:0" as torch prints a device. */
const char *ad_device_name(int device);
/* torch's error for operands on two devices (first the one the op runs on). */
int ad_device_mismatch(ad_state *S, int expected, int found);
/* Parses "cpu", "cuda", "cuda:0"; an error names the string. */
int ad_device_parse(ad_state *S, const char *s, int *device);

/* The loaded CUDA module (dlopen of addsl_cuda.so on the first call), or
 * NULL after an error that says why there is no GPU. */
const struct addsl_cuda_api *ad_cuda(ad_state *S);
/* Whether a GPU can be used; never sets an error. */
bool ad_cuda_available(ad_state *S);
/* Turns a module status into an error naming 'what'; AD_OK for 0. */
int ad_cuda_check(ad_state *S, int rc, const char *what);

/* Device blocks, pooled by power-of-two size class like the host heap
 * (cudaMalloc and cudaFree synchronise the device; a training loop must not
 * pay for them every iteration). */
void *ad_device_alloc(ad_state *S, size_t nbytes, size_t *granted);
void ad_device_release(ad_state *S, void *p, size_t granted);
void ad_device_close(ad_state *S);

/* t on 'device': a new reference to t when it is there already, else a
 * contiguous copy (requires_grad and the graph are not carried: callers that
 * differentiate go through the 'to_device' op of lib/). */
ad_tensor *ad_tensor_to_device(ad_state *S, ad_tensor *t, int device);

/* Whether builtin 'name' handles GPU tensors itself, for the tables that
 * do not take them whole (vm/vm.c table_on_device). */
bool ad_device_builtin_ok(const char *name);
/* An error when a GPU tensor is among the arguments (or inside a list
 * argument) of builtin 'name', which does not take them. */
int ad_device_refuse(ad_state *S, const char *name, const ad_value *args, int nargs, const struct ad_list *kw);

/* Device halves of tensor/tensor.c's strided copy and fill, on the layout it has
 * already checked and coalesced (n dims, strides in elements, pointers at
 * element 0 of each view, dtypes ad_dtype). */
int ad_device_copy(ad_state *S, void *dst, int ddt, const void *src, int sdt, int n, const int64_t *shape,
                   const int64_t *ds, const int64_t *ss);
int ad_device_fill(ad_state *S, void *dst, int dt, int n, const int64_t *shape, const int64_t *ds, double v);
/* 'bytes' of device memory read back to the host (waits for the GPU). */
int ad_device_read(ad_state *S, void *host, const void *dev, size_t bytes);

/* ---- CUDA graphs (vm/tensor/device_graph.c; used by vm/jit/replay_graph.c) ---- */

/* The stream every launcher passes to the module: NULL (the default stream)
 * except while a graph is captured. */
void *ad_cuda_stream(const ad_state *S);
/* Whether a graph is being captured: what would read device memory on the
 * host, or copy between host and device, refuses to run (an error naming
 * 'what'), since a captured program must not wait for the GPU. */
bool ad_device_capturing(const ad_state *S);
int ad_device_capture_refuse(ad_state *S, const char *what);

/* The device blocks a captured graph reads and writes: every block handed
 * out while it was captured. While the graph lives they are its own (a
 * tensor over one that is released leaves it to the graph, not to the
 * state's pool), so a replay never writes into memory someone else holds. */
typedef struct ad_gblock { void *p; int cls; bool free; } ad_gblock;
typedef struct ad_gpool {
    ad_gblock *b;
    int n, cap;
    struct ad_gpool *next;  /* the state's live pools */
} ad_gpool;

/* Starts capturing the launches of this state into a graph whose blocks go
 * to 'pool' (zeroed by the caller). */
int ad_device_capture_begin(ad_state *S, ad_gpool *pool);
/* Ends the capture (always) and instantiates it: *exec, its *nnodes. The
 * pool is live from here on (until ad_device_pool_close) even on error. */
int ad_device_capture_end(ad_state *S, void **exec, size_t *nnodes);
int ad_device_graph_launch(ad_state *S, void *exec);
void ad_device_graph_free(ad_state *S, void *exec);
/* Gives the pool's free blocks back to the state's pool and forgets the
 * rest (a tensor still over one releases it as any other), after the
 * graph that used them was freed. */
void ad_device_pool_close(ad_state *S, ad_gpool *pool);

#endif
