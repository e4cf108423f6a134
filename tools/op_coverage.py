#!/usr/bin/env python3
"""op_coverage.py: how much of PyTorch's differentiable op surface addsl covers.

usage: tools/op_coverage.py DERIVATIVES_YAML [--addsl PATH] [--list absent|builtin|all]

DERIVATIVES_YAML is a copy of PyTorch's tools/autograd/derivatives.yaml (the
project does not ship one). Each entry is read for its name and whether any of
its input formulas is an actual derivative (not only not_implemented or
non_differentiable). Entries that cannot apply to addsl are left out, with the
reason counted: backend-specific kernels (cudnn, miopen, mkldnn, mps, ...),
sparse, quantized, nested and complex-only ops, backward formulas and in-place
twins (covered by their op), and private plumbing. The rest is mapped to the
name a user calls in addsl (torch.nn.functional's or torch.linalg's, say
native_layer_norm -> layer_norm) and looked up in a running addsl: an op or a
library function there is differentiable; a C builtin is not.
Prints a summary line and, with --list, the entries of that status.
"""
import argparse
import re
import subprocess
import sys

# Substrings of names that belong to a backend, a storage format or a dtype family addsl does not have.
SKIP_PARTS = {
    'backend': ['cudnn', 'miopen', 'mkldnn', 'mps', 'nnpack', 'vulkan', 'fbgemm', '_thnn_', 'flash_attention',
                'efficient_attention', 'cpu_fallback', 'slow_conv', 'convolution_overrideable', 'conv_tbc'],
    'sparse': ['sparse', '_coo', 'coalesce', 'csr', 'csc', 'bsr', 'bsc', 'to_dense', 'segment_reduce'],
    'quantized': ['quantiz', 'fake_quant', 'fused_moving_avg'],
    'nested': ['nested', 'to_padded_tensor'],
}
SKIP_NAMES = {
    'sparse': {'indices', 'values', '_indices', '_values', 'crow_indices', 'col_indices', 'ccol_indices', 'row_indices'},
    'complex-only': {'view_as_real', 'view_as_complex', 'real', 'imag', 'conj', '_conj', 'conj_physical',
                     '_conj_physical', 'polar', 'complex', 'angle', 'resolve_conj', 'resolve_neg', '_neg_view',
                     'linalg_eig', 'linalg_eigvals'},
    'private': {'_efficientzerotensor', '_lazy_clone', '_pin_memory', '_to_copy', '_reshape_alias', '_reshape_copy',
                '_unsafe_view', '_unsafe_index', '_unsafe_index_put', '_index_put_impl_', 'alias', 'lift',
                'lift_fresh', '_new_zeros_with_same_feature_meta', '_is_all_true', '_is_any_true',
                '_pack_padded_sequence', '_masked_softmax', '_standard_gamma', '_standard_gamma_grad',
                '_test_autograd_multiple_dispatch', '_test_autograd_multiple_dispatch_view',
                '_test_warn_in_autograd', 'slice_inverse', 'as_strided_', '_embedding_bag_dense_backward',
                '_log_softmax_backward_data', '_softmax_backward_data', '_conv_depthwise2d', 'conv_depthwise3d'},
}

# seed name -> the name addsl users call (after the generic rules below).
RENAME = {
    'convolution': 'conv2d', '_convolution': 'conv2d',
    'native_layer_norm': 'layer_norm', 'native_group_norm': 'group_norm', 'native_batch_norm': 'batch_norm',
    '_native_batch_norm_legit': 'batch_norm', '_native_batch_norm_legit_no_training': 'batch_norm',
    'native_dropout': 'dropout', '_fused_dropout': 'dropout',
    'max_pool2d_with_indices': 'max_pool2d', 'max_pool3d_with_indices': 'max_pool3d',
    'nll_loss_forward': 'nll_loss', 'nll_loss2d_forward': 'nll_loss',
    'multilabel_margin_loss_forward': 'multilabel_margin_loss', 'log_sigmoid_forward': 'log_sigmoid',
    'reflection_pad1d': 'pad', 'reflection_pad2d': 'pad', 'reflection_pad3d': 'pad',
    'replication_pad1d': 'pad', 'replication_pad2d': 'pad', 'replication_pad3d': 'pad', 'constant_pad_nd': 'pad',
    'im2col': 'unfold_im2col', 'col2im': 'fold',
    'affine_grid_generator': 'affine_grid', 'grid_sampler_2d': 'grid_sample', 'grid_sampler_3d': 'grid_sample',
    'rrelu_with_noise': 'rrelu', '_prelu_kernel': 'prelu', '_trilinear': 'bilinear',
    '_cdist_forward': 'cdist', '_euclidean_dist': 'cdist', '_pdist_forward': 'pdist',
    '_fft_c2c': 'fft_fft', '_fft_r2c': 'fft_rfft', '_fft_c2r': 'fft_irfft',
    '_linalg_det': 'linalg_det', '_linalg_eigh': 'linalg_eigh', '_linalg_slogdet': 'linalg_slogdet',
    '_linalg_solve_ex': 'linalg_solve', '_linalg_svd': 'linalg_svd',
    '_log_softmax': 'log_softmax', '_softmax': 'softmax', '_unique': 'unique', '_unique2': 'unique',
    'unique_dim': 'unique', 'unique_dim_consecutive': 'unique_consecutive',
    '_adaptive_avg_pool2d': 'adaptive_avg_pool2d', '_adaptive_avg_pool3d': 'adaptive_avg_pool3d',
    '_embedding_bag': 'embedding_bag', '_ctc_loss': 'ctc_loss', '_weight_norm_interface': '_weight_norm',
    '_scaled_dot_product_efficient_attention': 'scaled_dot_product_attention',
    '_scaled_dot_product_flash_attention': 'scaled_dot_product_attention',
    '_scaled_dot_product_flash_attention_for_cpu': 'scaled_dot_product_attention',
    'linalg_lu_factor_ex': 'linalg_lu_factor', 'linalg_inv_ex': 'linalg_inv', 'linalg_cholesky_ex': 'linalg_cholesky',
    'unsafe_split': 'split', 'unsafe_split_with_sizes': 'split_with_sizes', 'log_normal': 'log_normal_',
    # t[...] with tensors, and with a slice: the indexing op
    'index': 'index_get', 'slice': 'index_get',
    # Tensor.unfold(dimension, size, step), not nn.functional.unfold (im2col)
    'unfold': 'unfold_dimension', 'im2col': 'unfold',
}
UPSAMPLE = re.compile(r'^_?upsample_')


def parse_seed(path):
    """[(name, differentiable)] for each entry, in file order (overloads merged)."""
    entries, cur = {}, None
    for line in open(path, encoding='utf-8'):
        m = re.match(r'^- name: ([A-Za-z0-9_]+)(\.[A-Za-z0-9_]+)?\(', line)
        if m:
            cur = m.group(1)
            entries.setdefault(cur, False)
            continue
        m = re.match(r'^\s*([A-Za-z0-9_, ]+): (.*)$', line)
        if cur and m:
            key, val = m.group(1).strip(), m.group(2).strip()
            if key in ('dispatch', 'output_differentiability', 'result') or key.startswith('result'):
                continue
            if not (val.startswith('not_implemented') or val == 'non_differentiable'):
                entries[cur] = True
    return entries


def skip_reason(name):
    for reason, names in SKIP_NAMES.items():
        if name in names:
            return reason
    for reason, parts in SKIP_PARTS.items():
        if any(p in name for p in parts):
            return reason
    if name.startswith('_foreach') or name.startswith('_test'):
        return 'private'
    if name.endswith('_backward') or name.endswith('_backward_data') or '_backward_' in name:
        return 'backward formula'
    if name.endswith('_') and not name.startswith('_'):
        return 'in-place twin'
    return None


def addsl_name(name):
    if name in RENAME:
        return RENAME[name]
    if UPSAMPLE.match(name) and name.endswith('_aa'):
        return 'interpolate(antialias=true)'   # interpolate refuses antialias: counted absent
    if UPSAMPLE.match(name):
        return 'interpolate'
    if name.startswith('special_'):
        return name
    return name.lstrip('_')


def addsl_kinds(addsl):
    """{name: 'op' | 'function' | 'builtin'} of every public and internal global in addsl."""
    src = 'for n in dir() { print(n) }'
    names = subprocess.run([addsl, '-e', src], capture_output=True, text=True, check=True).stdout.split()
    script = '\n'.join('print("%s", type(%s))' % (n, n) for n in names if re.match(r'^[A-Za-z_][A-Za-z0-9_]*$', n))
    out = subprocess.run([addsl, '-e', script], capture_output=True, text=True, check=True).stdout
    # the ops behind operators (t[...] is index_get) are internal names, not in dir()
    internal = subprocess.run([addsl, '-e', 'for o in all_ops(internal=true) { print(op_name(o)) }'],
                              capture_output=True, text=True, check=True).stdout.split()
    kinds = {n: 'op' for n in internal}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            kinds[parts[0]] = parts[1]
    return kinds


def lookup(kinds, name):
    """The addsl kind for a mapped name, trying torch.special's and torch.linalg's alternative spellings."""
    cands = [name]
    if name.startswith('special_'):
        cands.append(name[len('special_'):])
    if name.startswith('linalg_'):
        cands.append(name[len('linalg_'):])
    else:
        cands.append('linalg_' + name)
    for c in cands:
        if c in kinds:
            return c, kinds[c]
    return None, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('seed', help="a copy of PyTorch's tools/autograd/derivatives.yaml")
    ap.add_argument('--addsl', default='./addsl', help='the interpreter to ask (default ./addsl)')
    ap.add_argument('--list', choices=['absent', 'builtin', 'all'], help='also list the entries of this status')
    a = ap.parse_args()
    entries = parse_seed(a.seed)
    kinds = addsl_kinds(a.addsl)
    skipped, rows = {}, []
    for name, diff in sorted(entries.items()):
        r = skip_reason(name)
        if r is None and not diff:
            r = 'not differentiable in torch'
        if r:
            skipped[r] = skipped.get(r, 0) + 1
            continue
        target = addsl_name(name)
        found, kind = lookup(kinds, target)
        status = 'absent' if kind is None else ('builtin' if kind == 'builtin' else 'differentiable')
        rows.append((name, target, found, status))
    n = len(rows)
    nd = sum(1 for r in rows if r[3] == 'differentiable')
    nb = sum(1 for r in rows if r[3] == 'builtin')
    print('op_coverage: %d applicable entries of %d: %d differentiable in addsl (%.1f%%), %d builtins without gradient, %d absent'
          % (n, len(entries), nd, 100.0 * nd / n if n else 0.0, nb, n - nd - nb))
    print('op_coverage: left out: ' + ', '.join('%s %d' % (k, v) for k, v in sorted(skipped.items())))
    if a.list:
        for name, target, found, status in rows:
            if a.list == 'all' or status == a.list or (a.list == 'absent' and status == 'absent'):
                print('%-40s %-32s %s' % (name, found or target, status))
    return 0


if __name__ == '__main__':
    sys.exit(main())
