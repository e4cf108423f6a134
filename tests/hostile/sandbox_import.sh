#!/bin/sh
# sandbox_import.sh: import under --sandbox reads only .ad files in the importing file's directory
# or below it, and no import anywhere reads a FIFO, a device or an oversized file (issue 27, item 2).
# Usage: sandbox_import.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
. "$(dirname "$0")/../cli/lib.sh"
make_tmp
command -v timeout >/dev/null 2>&1 || { echo "SKIP: no 'timeout' command"; exit 77; }

# run NAME WANT-STATUS WANT-TEXT ARGS...: stdout and stderr of addsl ARGS (10 s at most).
run() {
    name=$1 want_rc=$2 want=$3
    shift 3
    out=$(timeout 10 "$addsl" "$@" 2>&1)
    rc=$?
    [ "$rc" = "$want_rc" ] || { echo "FAIL: $name: exit $rc, expected $want_rc: $out"; fail=1; }
    case $out in *"$want"*) ;; *) echo "FAIL: $name: expected '$want' in: $out"; fail=1 ;; esac
}
refused='file access is disabled by the host (ADDSL_DENY_FILES); a sandboxed script imports only .ad files in its own directory or below it'

# The secret lies outside the project; the project's own files import each other.
echo 'let secret = 4242' > "$tmp/secret.ad"
mkdir -p "$tmp/proj/sub"
echo 'let v = 1' > "$tmp/proj/sub/x.ad"
echo 'import "y.ad" as y
let w = y.u + 1' > "$tmp/proj/lib.ad"
echo 'let u = 1' > "$tmp/proj/y.ad"
printf 'import "sub/x.ad" as x\nimport "lib.ad" as l\nprint(x.v, l.w)\n' > "$tmp/proj/main.ad"
run "project imports" 0 "1 2" --sandbox "$tmp/proj/main.ad"

# 1. -e has no directory: nothing is imported, and the refusal quotes nothing of the file.
run "-e /etc/passwd" 1 'cannot import "/etc/passwd": file access is disabled by the host (ADDSL_DENY_FILES); code that is not in a file' \
    --sandbox -e 'import "/etc/passwd" as m'
case $out in *root:*) echo "FAIL: the refusal quotes /etc/passwd: $out"; fail=1 ;; esac
run "-e a readable .ad" 1 'imports nothing' --sandbox -e "import \"$tmp/secret.ad\" as m
print(m.secret)"
case $out in *4242*) echo "FAIL: a global of a refused module was read: $out"; fail=1 ;; esac

# 2. From a file: absolute paths, '..', symlinks named *.ad that lead out, non-.ad names.
ln -s "$tmp/secret.ad" "$tmp/proj/link.ad"
ln -s /etc/passwd "$tmp/proj/passwd.ad"
ln -s "$tmp/proj/sub" "$tmp/proj/subl"
echo 'secret text' > "$tmp/proj/notes.txt"
for imp in "$tmp/secret.ad" ../secret.ad sub/../../secret.ad link.ad passwd.ad notes.txt; do
    printf 'import "%s" as m\nprint(m.secret)\n' "$imp" > "$tmp/proj/m.ad"
    run "import \"$imp\"" 1 "cannot import \"$imp\": $refused" --sandbox "$tmp/proj/m.ad"
    case $out in *4242*|*root:*|*"secret text"*) echo "FAIL: import \"$imp\" leaked: $out"; fail=1 ;; esac
done
# A symlink that stays inside the project is the file it points to.
printf 'import "subl/x.ad" as m\nprint(m.v)\n' > "$tmp/proj/m.ad"
run "symlink inside" 0 1 --sandbox "$tmp/proj/m.ad"

# 3. /dev/zero and a FIFO: refused at once, sandbox or not, without reading a byte or blocking.
ln -s /dev/zero "$tmp/proj/zero.ad"
mkfifo "$tmp/proj/fifo.ad" || exit 99
for imp in zero.ad fifo.ad; do
    printf 'import "%s" as m\n' "$imp" > "$tmp/proj/m.ad"
    run "import $imp" 1 "cannot import \"$imp\": not a regular file" "$tmp/proj/m.ad"
done
run "--sandbox import fifo.ad" 1 'cannot import "fifo.ad": not a regular file' --sandbox "$tmp/proj/m.ad"
run "import /dev/zero" 1 'cannot import "/dev/zero": not a regular file' -e 'import "/dev/zero" as m'

# 4. A source file has at most AD_MAX_SOURCE (64 MiB) bytes: a sparse 100 MB file is refused by its size.
truncate -s 100M "$tmp/proj/big.ad" 2>/dev/null || dd if=/dev/zero of="$tmp/proj/big.ad" bs=1 count=0 seek=100M 2>/dev/null
printf 'import "big.ad" as m\n' > "$tmp/proj/m.ad"
run "import big.ad" 1 'cannot import "big.ad": the file is longer than 67108864 bytes, the limit for a source file (AD_MAX_SOURCE)' "$tmp/proj/m.ad"
run "addsl big.ad" 1 "cannot read '$tmp/proj/big.ad': the file is longer than 67108864 bytes" "$tmp/proj/big.ad"

# 5. Outside the sandbox an import's errors quote its file as before.
printf 'let = 1\n' > "$tmp/bad.ad"
run "unsandboxed syntax error" 1 "let = 1" -e "import \"$tmp/bad.ad\" as m"
[ $fail -eq 0 ] && echo PASS
exit $fail
