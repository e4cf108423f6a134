/* graph.c: CUDA graph capture and replay for the loadable module: a stream
 * the caller owns, capture of what is launched on it, and the graph's launch. */
#include <cuda_runtime.h>

#include "traj_cuda.h"

#define EXPORT __attribute__((visibility("default")))

/* A blocking stream (not cudaStreamNonBlocking): work on the legacy default
 * stream stays ordered with it, and a synchronous copy or memset issued
 * while it captures is refused by the runtime instead of running outside
 * the graph. */
EXPORT int addsl_cuda_stream_create(void **s) {
    cudaStream_t st = NULL;
    cudaError_t rc = cudaStreamCreate(&st);
    *s = rc == cudaSuccess ? (void *)st : NULL;
    return (int)rc;
}

EXPORT int addsl_cuda_stream_destroy(void *s) { return s ? (int)cudaStreamDestroy((cudaStream_t)s) : 0; }

/* Relaxed: the pool may still cudaMalloc a block it has not got while the
 * program is captured (cudaMalloc enqueues nothing on the stream). */
EXPORT int addsl_cuda_capture_begin(void *s) {
    return (int)cudaStreamBeginCapture((cudaStream_t)s, cudaStreamCaptureModeRelaxed);
}

/* Ends the capture on 's' (always, also after a failed launch inside it)
 * and instantiates what it recorded; *exec is NULL on error. */
EXPORT int addsl_cuda_capture_end(void *s, void **exec, size_t *nnodes) {
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    *exec = NULL;
    *nnodes = 0;
    cudaError_t rc = cudaStreamEndCapture((cudaStream_t)s, &g);
    if (rc == cudaSuccess && !g) rc = cudaErrorStreamCaptureInvalidated;
    if (rc == cudaSuccess) rc = cudaGraphGetNodes(g, NULL, nnodes);
    if (rc == cudaSuccess) rc = cudaGraphInstantiate(&x, g, 0);
    if (g) (void)cudaGraphDestroy(g);
    if (rc != cudaSuccess) {
        (void)cudaGetLastError(); /* a capture error is not sticky: clear it */
        return (int)rc;
    }
    *exec = (void *)x;
    return 0;
}

EXPORT int addsl_cuda_graph_launch(void *exec, void *stream) {
    return (int)cudaGraphLaunch((cudaGraphExec_t)exec, (cudaStream_t)stream);
}

EXPORT int addsl_cuda_graph_destroy(void *exec) {
    return exec ? (int)cudaGraphExecDestroy((cudaGraphExec_t)exec) : 0;
}
