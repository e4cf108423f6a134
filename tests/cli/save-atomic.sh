#!/bin/sh
# save-atomic.sh: save() over a good file, killed with SIGKILL at random moments, never leaves a
# torn file: the target always loads, with the old contents or the whole new ones; and no
# temporary file outlives the next save.
# Usage: save-atomic.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
fail=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
target=$tmp/good.npy

"$addsl" -e "save(\"$target\", tensor([1.0, 2.0, 3.0]))" || { echo "FAIL: the first save"; exit 1; }
# 48M float32 (192 MB): long enough that most kills land while the new data is being written.
big="let t = ones(48000000)
save(\"$target\", t)"
killed=0
for delay in 0.05 0.1 0.15 0.2 0.3 0.4 0.6 0.8; do
    "$addsl" -e "$big" &
    pid=$!
    sleep "$delay"
    kill -9 "$pid" 2>/dev/null && killed=$((killed + 1))
    wait "$pid" 2>/dev/null
    out=$("$addsl" -e "let t = load(\"$target\")
print(t.shape[0], t[0].item(), t[-1].item())" 2>&1)
    case $out in
        "3 1 3"|"48000000 1 1") ;;
        *) echo "FAIL: after a kill at ${delay}s the file reads as: $out"; fail=1 ;;
    esac
    # put the small file back so the next kill lands on a good old file again
    "$addsl" -e "save(\"$target\", tensor([1.0, 2.0, 3.0]))"
done
echo "killed $killed of 8 saves mid-way or before"
# A killed save leaves no temporary file: a .npy is written unnamed (O_TMPFILE) where the file
# system allows, and every save first removes what killed saves to its name left (the .npz path,
# which libzip writes by name, and file systems without O_TMPFILE), so after the saves above none
# is left; before, each kill left a full-size .good.npy.XXXXXX (192 MB here).
left=$(find "$tmp" -name '.good.npy.*' | wc -l)
[ "$left" -eq 0 ] || { echo "FAIL: $left temporary files left by killed .npy saves: $(ls -A "$tmp")"; fail=1; }
# The same for .npz: each kill mid-way leaves libzip's file and ours; the next save sweeps them.
npz=$tmp/good.npz
"$addsl" -e "save(\"$npz\", {\"a\": tensor([1.0, 2.0, 3.0])})" || fail=1
stale=0
for delay in 0.5 1 1.5 2; do
    "$addsl" -e "save(\"$npz\", {\"a\": ones(48000000)})" &
    pid=$!
    sleep "$delay"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    stale=$((stale + $(find "$tmp" -name '.good.npz.*' | wc -l)))
    out=$("$addsl" -e "let t = load(\"$npz\")[\"a\"]
print(t.shape[0], t[0].item(), t[-1].item())" 2>&1)
    case $out in
        "3 1 3"|"48000000 1 1") ;;
        *) echo "FAIL: after a kill at ${delay}s the .npz reads as: $out"; fail=1 ;;
    esac
    "$addsl" -e "save(\"$npz\", {\"a\": tensor([1.0, 2.0, 3.0])})" || fail=1
    left=$(find "$tmp" -name '.good.npz.*' | wc -l)
    [ "$left" -eq 0 ] || { echo "FAIL: the save after a kill at ${delay}s left $left temporary files: $(ls -A "$tmp")"; fail=1; }
done
echo "killed .npz saves left $stale temporary files, all removed by the next save"

# A save that cannot even start (no such directory) writes nothing anywhere.
out=$("$addsl" -e "save(\"$tmp/no/such/dir/x.npy\", ones(2))" 2>&1)
[ $? -eq 1 ] || { echo "FAIL: a save into a missing directory did not fail"; fail=1; }
case $out in *"cannot open '$tmp/no/such/dir/x.npy'"*) ;; *) echo "FAIL: message: $out"; fail=1 ;; esac
# A save that fails midway (the file size limit, with SIGXFSZ ignored, makes a write fail with
# EFBIG after 512 KB) leaves the old .npy and .npz as they were, and no temporary file.
"$addsl" -e "save(\"$tmp/keep.npz\", {\"a\": tensor([4.0, 5.0])})" || fail=1
for save in "save(\"$target\", ones(1000000))" "save(\"$tmp/keep.npz\", {\"a\": ones(1000000)})"; do
    out=$( (trap '' XFSZ; ulimit -f 1024; "$addsl" -e "$save") 2>&1)
    case $out in *"cannot write '$tmp/"*"File too large"*) ;; *) echo "FAIL: a save past the size limit: $out"; fail=1 ;; esac
done
out=$("$addsl" -e "print(load(\"$target\"), load(\"$tmp/keep.npz\")[\"a\"])" 2>&1)
[ "$out" = "tensor([1., 2., 3.]) tensor([4., 5.])" ] || { echo "FAIL: a failed save changed the old file: $out"; fail=1; }
# A read-only directory (root writes there anyway, so only as another user).
if [ "$(id -u)" -ne 0 ]; then
    mkdir "$tmp/ro" && "$addsl" -e "save(\"$tmp/ro/x.npy\", ones(2))" && chmod a-w "$tmp/ro" || fail=1
    out=$("$addsl" -e "save(\"$tmp/ro/x.npy\", zeros(2))" 2>&1)
    case $out in *"cannot open '$tmp/ro/x.npy': Permission denied"*) ;; *) echo "FAIL: read-only dir: $out"; fail=1 ;; esac
    out=$("$addsl" -e "print(load(\"$tmp/ro/x.npy\"))" 2>&1)
    [ "$out" = "tensor([1., 1.])" ] || { echo "FAIL: read-only dir: the old file reads as $out"; fail=1; }
    chmod u+w "$tmp/ro"
fi
# A new file gets 0666 less the umask (as fopen gives it), a replaced one keeps its mode, and a
# save through a symlink replaces the file it points to, keeping the link.
(umask 077; "$addsl" -e "save(\"$tmp/private.npy\", ones(2)); save(\"$tmp/private.npz\", {\"a\": ones(2)})") || fail=1
chmod 640 "$target" && "$addsl" -e "save(\"$target\", tensor([1.0, 2.0, 3.0]))" || fail=1
modes=$(stat -c '%a' "$tmp/private.npy" "$tmp/private.npz" "$target" | tr '\n' ' ')
[ "$modes" = "600 600 640 " ] || { echo "FAIL: modes (umask 077 new .npy, .npz; a 640 file replaced): $modes"; fail=1; }
mkdir "$tmp/runs" && ln -s runs/w.npy "$tmp/latest.npy" || fail=1
"$addsl" -e "save(\"$tmp/runs/w.npy\", ones(2)); save(\"$tmp/latest.npy\", zeros(3))" || fail=1
out=$("$addsl" -e "print(load(\"$tmp/runs/w.npy\"))" 2>&1)
[ -L "$tmp/latest.npy" ] && [ "$out" = "tensor([0., 0., 0.])" ] || { echo "FAIL: save through a symlink: $out"; fail=1; }
# A refused value (a tensor to .npz) leaves the old file and no temporary file.
"$addsl" -e "save(\"$tmp/p.npz\", {\"a\": ones(2)})" || fail=1
"$addsl" -e "save(\"$tmp/p.npz\", ones(2))" 2>/dev/null && { echo "FAIL: a tensor was saved as .npz"; fail=1; }
out=$("$addsl" -e "print(load(\"$tmp/p.npz\")[\"a\"])" 2>&1)
[ "$out" = "tensor([1., 1.])" ] || { echo "FAIL: the old .npz is gone: $out"; fail=1; }
left=$(find "$tmp" -name '.*.np[yz].*' | wc -l)
[ "$left" -eq 0 ] || { echo "FAIL: $left temporary files left after failed saves"; fail=1; }
[ $fail -eq 0 ] && echo "PASS"
exit $fail
