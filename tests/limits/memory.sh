#!/bin/sh
# memory.sh: --memory-limit bounds the total bytes of live tensors, whichever way a script gathers them.
# Usage: memory.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
gather='let keep = []
for i in range(100) {
    append(keep, zeros([262144]))
}
print(len(keep))'
out=$("$addsl" --memory-limit 8M -e "$gather" 2>&1)
rc=$?
[ $rc -eq 1 ] || { echo "FAIL: 100 MB of tensors under --memory-limit 8M exited $rc"; fail=1; }
case $out in
*"tensor heap limit of 8388608 bytes reached"*) ;;
*) echo "FAIL: message: $out"; fail=1 ;;
esac
out=$("$addsl" --memory-limit 200M -e "$gather" 2>&1)
[ "$out" = 100 ] || { echo "FAIL: 100 MB of tensors under --memory-limit 200M: $out"; fail=1; }
out=$("$addsl" --memory-limit 8M -e 'for i in range(100) { let t = zeros([262144]) }
print("done")' 2>&1)
[ "$out" = done ] || { echo "FAIL: freed tensors should not count: $out"; fail=1; }
out=$("$addsl" --memory-limit 8M -e 'let c = ones([1024, 1024]) @ ones([1024, 1024])' 2>&1)
case $out in
*"tensor heap limit of 8388608 bytes reached"*) ;;
*) echo "FAIL: matmul result over the limit: $out"; fail=1 ;;
esac
exit $fail
