/* builtins.h: the builtin function tables, one per family, that the state
 * registers as globals at open, and the helpers the VM calls for operators,
 * indexing and tensor construction. */
#ifndef AD_BUILTINS_H
#define AD_BUILTINS_H

#include "../vm/value.h"
#include "../vm/tensor/tensor.h"

/* Each table ends with a {NULL, NULL, NULL} row. A row is
 *     {"name", bi_name, "params", "One paragraph.\nExample: code"},
 * where the doc string (ad_builtin_def.doc, vm/value.h) is what help(name)
 * prints: the paragraph, then one line of code that runs in a fresh state
 * (tests/api/help-examples.sh runs every example, in a scratch directory).
 * A row may leave doc out (the build allows it: -Wno-missing-field-initializers)
 * only when its public name is an op of the library (lib/NAME.ad), whose '#' comment is then the
 * doc, or when help treats the name as internal (vm/repl/help.c ad_help_internal);
 * tests/api/help-coverage.sh fails for any other public name without a doc. */
extern const ad_builtin_def ad_bi_core_defs[];        /* builtins/bi_core.c: print, len, str, range, assert, clock, exit, ... (VM side) */
extern const ad_builtin_def ad_bi_elementwise_defs[]; /* builtins/bi_elementwise.c */
extern const ad_builtin_def ad_bi_reduce_defs[];      /* builtins/bi_reduce.c */
extern const ad_builtin_def ad_bi_linalg_defs[];      /* builtins/bi_linalg.c */
extern const ad_builtin_def ad_bi_lapack_defs[];      /* builtins/bi_lapack.c: factorisations */
extern const ad_builtin_def ad_bi_loss_defs[];        /* builtins/bi_loss.c */
extern const ad_builtin_def ad_bi_shape_defs[];       /* builtins/bi_shape.c */
extern const ad_builtin_def ad_bi_create_defs[];      /* builtins/bi_create.c */
extern const ad_builtin_def ad_bi_tensor_defs[];      /* builtins/bi_tensor.c: numel, item, tolist, to, detach, ... */
extern const ad_builtin_def ad_bi_io_defs[];          /* builtins/system/npy.c: load, save */
extern const ad_builtin_def ad_bi_gc_defs[];          /* builtins/bi_gc.c: gc_collect, gc_stats */
extern const ad_builtin_def ad_bi_dict_defs[];        /* builtins/bi_dict.c: dict, keys, values, items, get, pop, update, copy */
extern const ad_builtin_def ad_bi_format_defs[];      /* builtins/bi_format.c: format, int, f-string helpers */
extern const ad_builtin_def ad_bi_string_defs[];      /* builtins/bi_string.c: Python's string methods */
extern const ad_builtin_def ad_bi_progress_defs[];    /* builtins/system/progress.c: progress */
extern const ad_builtin_def ad_bi_plot_defs[];        /* builtins/system/plot.c: plot, plot_is_available */
extern const ad_builtin_def ad_bi_fs_defs[];          /* builtins/bi_fs.c: makedirs */
extern const ad_builtin_def ad_bi_index_ops_defs[];   /* builtins/bi_index_ops.c: cummax, cummin, logcumsumexp, scatter_reduce, _index_check */
extern const ad_builtin_def ad_bi_random_defs[];      /* builtins/bi_random.c: poisson, multinomial */
extern const ad_builtin_def ad_bi_nn_defs[];          /* builtins/bi_nn.c: im2col, col2im */
extern const ad_builtin_def ad_bi_fft_defs[];         /* builtins/bi_fft.c: _fft_c2c */
extern const ad_builtin_def ad_bi_mpi_defs[];         /* builtins/bi_mpi.c: mpi_rank, mpi_size, barrier, raw collectives */
extern const ad_builtin_def ad_bi_autograd_defs[];    /* builtins/bi_autograd.c: backward, grad, jvp, op_info, all_ops, ... */
extern const ad_builtin_def ad_bi_autograd_index_defs[]; /* builtins/bi_autograd.c: index_get, index_add_at and helpers */
extern const ad_builtin_def ad_bi_gradfn_defs[];      /* builtins/bi_autograd.c: grad_fn.name() */
extern const ad_builtin_def ad_bi_device_defs[];      /* builtins/bi_device.c: cuda_is_available, cuda_device_count, cuda_synchronize */
extern const ad_builtin_def ad_bi_traj_defs[];        /* builtins/bi_traj.c: the trajectory steps over kernels/traj.c */

/* MPI (builtins/bi_mpi.c): the communicator at open, finalised at close when
 * the state initialised MPI; this process's rank and the number of ranks. */
int ad_mpi_open(ad_state *S);
void ad_mpi_close(ad_state *S);
int ad_mpi_rank(const ad_state *S);
int ad_mpi_size(const ad_state *S);

/* float(x) of a number, bool or string (Python's float(); tensors take .float()). */
int ad_bi_float_value(ad_state *S, ad_value v, ad_value *out);
/* bool(x): Python's truth value (a one-element tensor's item); the VM calls it
 * when the dtype 'bool' is called. */
struct ad_list;
int ad_bi_truth(ad_state *S, const ad_value *args, int nargs, const struct ad_list *kw, ad_value *out);

/* Operators the VM dispatches to when an operand is a tensor. Both operands
 * may be tensors or numbers/bools (Python-scalar promotion rules apply). */
int ad_bi_add(ad_state *S, ad_value a, ad_value b, ad_value *out);
int ad_bi_sub(ad_state *S, ad_value a, ad_value b, ad_value *out);
int ad_bi_mul(ad_state *S, ad_value a, ad_value b, ad_value *out);
int ad_bi_div(ad_state *S, ad_value a, ad_value b, ad_value *out);
int ad_bi_rem(ad_state *S, ad_value a, ad_value b, ad_value *out);   /* % : torch.remainder */
int ad_bi_pow(ad_state *S, ad_value a, ad_value b, ad_value *out);
int ad_bi_matmul(ad_state *S, ad_value a, ad_value b, ad_value *out);
/* c = a b + beta c for CPU matrices a [M, K], b [K, N] (any strides) and a
 * contiguous c [M, N], by the calls matmul makes for them (the same bits):
 * the backward engine's path for a product's gradient (vm/autograd/engine.c). */
int ad_linalg_gemm2d(ad_state *S, ad_tensor *a, ad_tensor *b, ad_tensor *c, double beta);
int ad_bi_neg(ad_state *S, ad_value a, ad_value *out);
/* Comparisons: AD_CMP_EQ.. give bool tensors. */
enum { AD_CMP_EQ, AD_CMP_NE, AD_CMP_LT, AD_CMP_LE, AD_CMP_GT, AD_CMP_GE };
int ad_bi_compare(ad_state *S, int cmp, ad_value a, ad_value b, ad_value *out);

/* t[idx...]: idx are ints, slices, none (new axis), ellipsis, int/bool tensors or int lists. */
int ad_bi_index_get(ad_state *S, ad_tensor *t, int n, const ad_value *idx, ad_value *out);
/* t[idx...] = v (v a tensor or number, broadcast); writes in place, bumps the version. */
int ad_bi_index_set(ad_state *S, ad_tensor *t, int n, const ad_value *idx, ad_value v);

/* A tensor from a number, bool, or nested list/tuple of them; dtype -1 infers
 * it (ints -> int64, any float -> float32, all bools -> bool). */
int ad_tensor_from_value(ad_state *S, ad_value v, int dtype, ad_tensor **out);
/* The error code of a failed call that set one (runtime error otherwise). */
int ad_fail(ad_state *S);
/* *out = t (reference stolen), or the error when t is NULL. */
int ad_ret_tensor(ad_state *S, ad_tensor *t, ad_value *out);
/* *out = (a, b), stealing both tensors; either may be NULL after an error (then both are released). */
int ad_ret_pair(ad_state *S, ad_tensor *a, ad_tensor *b, ad_value *out);
/* "Float", "Double", "Long", "Bool": dtype names in PyTorch's messages. */
const char *ad_torch_dtype_name(ad_dtype dt);

/* C entry points of bi_reduce.c for other builtins (bi_loss.c). 'ndims' < 0 (or 0)
 * reduces every dim; 'dtype' < 0 keeps torch's default result dtype.
 * Each returns a new reference or NULL after ad_error. */
ad_tensor *ad_reduce_sum(ad_state *S, ad_tensor *t, int ndims, const int64_t *dims,
                         bool keepdim, int dtype);
ad_tensor *ad_reduce_mean(ad_state *S, ad_tensor *t, int ndims, const int64_t *dims,
                          bool keepdim, int dtype);
/* softmax (or log_softmax when 'log') of a float tensor along 'dim'. */
ad_tensor *ad_reduce_softmax(ad_state *S, ad_tensor *t, int64_t dim, bool log, const char *fn);

/* t.tolist() / a 0-d tensor's Python value. */
int ad_tensor_to_value(ad_state *S, const ad_tensor *t, ad_value *out);

#endif
