#!/bin/sh
# gc_memory_limit.sh: tensors held only by reference cycles are freed by the
# collector while the loop runs, so they do not add up against
# --memory-limit: 100000 dicts that each hold themselves and 4 KB of tensor
# (400 MB in all) run under a limit of 32 MB. Before the collector the run
# died of "tensor heap limit ... reached".
# Usage: gc_memory_limit.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
out=$("$addsl" --memory-limit 32M -e 'for i in range(100000) { let d = {"p": zeros(1000)}; d["s"] = d }
print("done")' 2>&1)
rc=$?
if [ $rc -ne 0 ] || [ "$out" != done ]; then
    echo "FAIL: cycles holding tensors under --memory-limit 32M exited $rc: $out"
    exit 1
fi
# What stays reachable still counts: the same tensors kept in a list do not fit.
out=$("$addsl" --memory-limit 32M -e 'let keep = []
for i in range(100000) { let d = {"p": zeros(1000)}; d["s"] = d; append(keep, d) }' 2>&1)
case $out in
*"tensor heap limit of 33554432 bytes reached"*) ;;
*) echo "FAIL: reachable cycles should hit the limit: $out"; exit 1 ;;
esac
echo "PASS"
