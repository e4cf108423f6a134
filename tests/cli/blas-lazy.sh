#!/bin/sh
# blas-lazy.sh: OpenBLAS is opened on the first product or factorisation
# (builtins/system/blas_lazy.c), not at start-up: addsl does not list it as needed, a
# script without one never maps it, one with a product maps it and gets hand
# values; with the library gone, a product is an error at its line and column
# that says what to install, while the integer product (not BLAS) still runs.
# Usage: blas-lazy.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
case $addsl in /*) ;; */*) addsl=$(pwd)/$addsl ;; esac
fail=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99

ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }

if command -v readelf >/dev/null 2>&1; then
    libs=$(readelf -d "$addsl" | grep NEEDED)
    [ -n "$libs" ] && ! echo "$libs" | grep -q openblas && ok "addsl does not need libopenblas" \
        || bad "addsl's needed libraries: $libs"
    so=$(dirname "$addsl")/.libs/libaddsl.so
    if [ -f "$so" ]; then
        libs=$(readelf -d "$so" | grep NEEDED)
        [ -n "$libs" ] && ! echo "$libs" | grep -q openblas && ok "libaddsl.so does not need libopenblas" \
            || bad "libaddsl.so's needed libraries: $libs"
    fi
else
    echo "skip: no readelf to list the needed libraries"
fi

# glibc's loader names every file it maps under LD_DEBUG=files.
maps() { LD_DEBUG=files "$addsl" "$@" 2>&1 >/dev/null; }
if maps -e '1' | grep -q 'libc\.so'; then
    out=$("$addsl" -e 'let x = tensor([1.0], requires_grad=true); backward(sum(x * 2)); print(x.grad)')
    [ "$out" = "tensor([2.])" ] && ok "a backward pass without products runs" || bad "backward: $out"
    n=$(maps -e 'let x = tensor([1.0], requires_grad=true); backward(sum(x * 2))' | grep -c openblas)
    [ "$n" -eq 0 ] && ok "a script without a product never maps OpenBLAS" || bad "OpenBLAS mapped $n times"
    n=$(maps -e 'let a = ones([64, 64]); a @ a' | grep -c 'libopenblas.*dynamically loaded')
    [ "$n" -eq 1 ] && ok "a float product maps OpenBLAS once" || bad "a product mapped OpenBLAS $n times"
else
    echo "skip: LD_DEBUG=files names no file (not glibc's loader)"
fi

# 64 x 64 ones squared: every entry 64; inv of [[4, 7], [2, 6]] is [[0.6, -0.7], [-0.2, 0.4]];
# the dot products cover float32 and float64.
cat > prod.ad <<'AD'
let a = ones([64, 64], dtype=float32)
let p = a @ a
let i = linalg_inv(tensor([[4.0, 7.0], [2.0, 6.0]], dtype=float64))
let e = tensor([[0.6, -0.7], [-0.2, 0.4]], dtype=float64)
print(p.min().item(), p.max().item(), (i - e).abs().max().item() < 1e-12)
print(dot(tensor([1.0, 2.0, 3.0]), tensor([4.0, 5.0, 6.0])).item(), dot(tensor([0.5, 0.25], dtype=float64), tensor([2.0, 4.0], dtype=float64)).item())
AD
out=$("$addsl" prod.ad 2>&1)
[ "$out" = "64 64 true
32 2" ] && ok "products and an inverse through the loaded library" || bad "products: $out"

# A copy of addsl whose library path names a missing file (same length, so the
# binary stays intact).
sed 's/libopenblas\.so\.0/libopenblax.so.0/g' "$addsl" > addsl-nb && chmod +x addsl-nb
if cmp -s "$addsl" addsl-nb; then
    bad "no libopenblas.so.0 in addsl to redirect"
else
    printf 'let a = ones([64, 64])\nlet b = a @ a\n' > nb.ad
    ./addsl-nb nb.ad > nb.out 2> nb.err
    rc=$?
    [ $rc -eq 1 ] && grep -q '^nb\.ad:2:11: error: matmul(): matrix products and factorisations need OpenBLAS, which cannot be loaded: .*libopenblax\.so\.0.*(apt-get install libopenblas0-openmp)$' nb.err \
        && ok "a product without the library: the error at 2:11 says what to install" || { bad "missing library (rc $rc):"; cat nb.err; }
    out=$(./addsl-nb -e 'print(linalg_det(tensor([[1.0, 2.0], [3.0, 4.0]])))' 2>&1)
    case $out in *"error: linalg.det(): matrix products and factorisations need OpenBLAS"*) ok "a factorisation without the library is an error" ;;
        *) bad "factorisation without the library: $out" ;; esac
    out=$(./addsl-nb -e 'print(tensor([[1, 2], [3, 4]]) @ tensor([[5, 6], [7, 8]]))' 2>&1)
    [ "$out" = "tensor([[19, 22],
        [43, 50]])" ] && ok "the integer product runs without the library" || bad "integer product: $out"
fi
exit $fail
