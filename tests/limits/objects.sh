#!/bin/sh
# objects.sh: the memory limit counts what a script grows besides tensor
# data (issue 27, item 7): a string doubling, a list, a dict, closures, views,
# graph nodes and the VM's frames each stop at --memory-limit with the
# memory-limit error, where before they took memory until the machine's ran
# out (3M graph nodes: 950 MB; recursion at --max-depth 10^8: 10.7 GB).
# Usage: objects.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0

# stops NAME SCRIPT [FLAGS...]: the script ends, under --memory-limit 32M, in
# the memory-limit error, and under 200 MB of resident memory (ulimit -v would
# also catch it, but not portably)
stops() {
    name=$1 script=$2
    shift 2
    out=$("$addsl" --memory-limit 32M "$@" -e "$script" 2>&1 | head -c 600)
    case $out in
    *"out of memory: memory limit of 33554432 bytes reached"* | *"out of memory: tensor heap limit of 33554432 bytes reached"*) ;;
    *) echo "FAIL: $name: expected the memory-limit error, got: $out"; fail=1 ;;
    esac
}

stops "a string doubling" 'let s = "x"
while true { s = s + s }'
stops "a string built by f-strings" 'let s = "x"
while true { s = f"{s}{s}" }'
stops "a list growing" 'let l = []
while true { append(l, 1) }'
stops "a dict growing" 'let d = {}
let i = 0
while true { d[i] = i; i += 1 }'
stops "a list of closures" 'let fs = []
let i = 0
while true { let k = i; append(fs, fn() => k); i += 1 }'
stops "a list of views" 'let base = zeros([4])
let vs = []
while true { append(vs, base[1:]) }'
stops "graph nodes (3M would be 950 MB)" 'let x = tensor(1.0, requires_grad=true)
let y = x
for i in range(3000000) { y = y * 1.0 }
print(y)'
stops "recursion at --max-depth 10^8" 'fn f(n) { return f(n + 1) + 1 }
f(0)' --max-depth 100000000

# Under the limit the same kinds of objects work, and freed ones give their bytes back.
out=$("$addsl" --memory-limit 32M -e 'for r in range(50) {
    let l = []
    for i in range(20000) { append(l, i) }
    let d = {}
    for i in range(5000) { d[i] = str(i) }
}
print("done")' 2>&1)
[ "$out" = done ] || { echo "FAIL: freed lists and dicts should not count: $out"; fail=1; }
out=$("$addsl" --memory-limit 32M -e 'fn f(n) {
    if n == 0 { return 0 }
    return f(n - 1) + 1
}
print(f(150))' 2>&1)
[ "$out" = 150 ] || { echo "FAIL: recursion under the limit: $out"; fail=1; }
exit $fail
