#!/bin/sh
# plot.sh: plot() writes PNG and SVG pictures that decode to the asked size with
# the series' colours inside the plot area (tests/plot_check.py), a grid of
# panels, a log axis; bad arguments are errors at the call's line and column.
# Skips (77) when addsl was built without cairo, after checking that message.
# Usage: plot.sh PATH-TO-ADDSL
addsl=${1:?usage: $0 PATH-TO-ADDSL}
case $addsl in /*) ;; */*) addsl=$(pwd)/$addsl ;; esac
here=$(cd "$(dirname "$0")/.." && pwd)
check_py=$here/plot_check.py
fail=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99

printf 'plot([1, 2], path="p.png")\n' > probe.ad
if ! "$addsl" probe.ad 2>probe.err; then
    if grep -q 'plot(): addsl was built without cairo (install libcairo2-dev and reconfigure)' probe.err; then
        echo "SKIP: built without cairo (the error says so)"; exit 77
    fi
    echo "FAIL: plot of a list:"; cat probe.err; exit 1
fi
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 to decode the pictures"; exit 77; }

ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }

# One panel, two labelled series, a title: the plot area is the picture less
# the margins (72 left, 16 right, 34 + 26 for the title on top, 46 below).
cat > one.ad <<'AD'
let t = linspace(0, 6.283, 200)
plot(sin(t), cos(t), path="one.png", labels=["sin", "cos"], title="waves", xlabel="step", ylabel="value")
plot(sin(t), cos(t) * 2.0, path="one.svg", labels=["sin", "2 cos"])
plot(t, path="small.PNG", size=[200, 120])
print("wrote")
AD
out=$("$addsl" one.ad 2>&1)
[ "$out" = wrote ] && ok "one panel runs" || bad "one panel: $out"
python3 "$check_py" png one.png 640 400 --box 74 62 622 352 --colors 2 --min 500 && ok "one.png decodes, two series drawn" || bad "one.png"
python3 "$check_py" svg one.svg --min-paths 4 && ok "one.svg is well-formed" || bad "one.svg"
python3 "$check_py" png small.PNG 200 120 --colors 1 && ok "size= and an upper-case extension" || bad "small.PNG"

# A grid: 2 x 2 with three panels, a log axis on the second (its values span
# 1e-3 .. 1e3, with a zero and a nan that leave gaps), series as a 2-D tensor's
# columns and as a list of numbers; the fourth cell stays blank.
cat > grid.ad <<'AD'
let k = arange(0, 50, dtype=float64)
let decay = 1000.0 * exp(-k * 0.28)
decay[10] = 0.0
decay[20] = nan
let cols = stack([sin(k * 0.2), cos(k * 0.2), k * 0.02], dim=1)
plot(cols, decay, [3, 1, 2], subplots=[2, 2], titles=["columns", "log", "list"],
     logy=[false, true, false], labels=[["a", "b", "c"], ["decay"], [none]], x=none, path="grid.png")
print(cols.shape)
AD
out=$("$addsl" grid.ad 2>&1)
[ "$out" = "[50, 3]" ] && ok "grid runs" || bad "grid: $out"
python3 "$check_py" png grid.png 1280 800 --colors 3 && ok "grid.png: three column series" || bad "grid.png"
python3 "$check_py" png grid.png 1280 800 --box 714 36 1262 352 --colors 1 && ok "grid.png: log panel drawn" || bad "grid.png log panel"
python3 "$check_py" png grid.png 1280 800 --box 74 436 622 752 --colors 1 && ok "grid.png: list panel drawn" || bad "grid.png list panel"
python3 "$check_py" png grid.png 1280 800 --box 640 400 1280 800 --min 0 && \
  ! python3 "$check_py" png grid.png 1280 800 --box 640 400 1280 800 --min 1 >/dev/null && ok "grid.png: empty cell blank" || bad "grid.png: fourth cell not blank"

# x= gives the abscissae; a constant series and an empty one still draw axes.
printf 'plot([2.03, 2.03, 2.03], x=[0.5, 1.0, 4.0], path="flat.png")\nplot([], path="empty.png")\n' > flat.ad
"$addsl" flat.ad && python3 "$check_py" png flat.png 640 400 --box 74 36 622 352 --colors 1 \
  && python3 "$check_py" png empty.png 640 400 --min 500 && ok "constant and empty series" || bad "constant/empty series"

# Errors: FILE:LINE:COL and a message that says what to change; no file is left.
expect_error() {    # expect_error NAME SCRIPT-LINE TEXT
    printf 'let t = zeros([4])\n%s\n' "$2" > "err_$1.ad"
    if "$addsl" "err_$1.ad" >/dev/null 2>"err_$1.txt"; then bad "$1: no error"
    elif grep -qF -- "err_$1.ad:2:1: error: $3" "err_$1.txt"; then ok "error: $1"
    else bad "$1: expected '$3', got: $(head -n 1 "err_$1.txt")"; fi
}
expect_error none 'plot(path="x.png")' 'plot(): nothing to plot (give one or more series'
expect_error ext 'plot(t, path="x.jpg")' "plot(): 'path' must end in .png or .svg, not 'x.jpg'"
expect_error rank 'plot(zeros([2, 2, 2]), path="x.png")' 'plot(): series 1 must be 1-D (or 2-D: one series per column), not 3-D'
expect_error xlen 'plot(t, x=[1, 2], path="x.png")' "plot(): 'x' has 2 values but series 1 of panel 1 has 4"
expect_error xkind 'plot(t, x="s", path="x.png")' "plot(): argument 'x' must be a tensor"
expect_error labels 'plot(t, t, labels=["a"], path="x.png")' "plot(): 'labels' has 1 names for 2 series"
expect_error room 'plot(t, t, t, subplots=[1, 2], path="x.png")' 'plot(): 3 panels given but subplots=[1, 2] has room for 2'
expect_error grid 'plot(t, subplots=[0, 2], path="x.png")' "plot(): 'subplots' must be [rows, cols] with 1 to 64 panels, not [0, 2]"
expect_error logy 'plot(t, t, subplots=[1, 2], logy=[true], path="x.png")' "plot(): 'logy' must be a bool or a list of 2 bools (one per panel)"
expect_error size 'plot(t, size=[10, 10], path="x.png")' "plot(): 'size' must be 64 to 8192 pixels each way, not [10, 10]"
expect_error dir 'plot(t, path="no/such/dir/x.png")' "plot(): cannot open 'no/such/dir/x.png'"
[ ! -e x.png ] && [ ! -e x.jpg ] && ok "no file after errors" || bad "a file was left by a failed plot"
printf 'plot([1, 2], path="sandboxed.png")\n' > deny.ad
if "$addsl" --sandbox deny.ad 2>deny.txt; then bad "--sandbox: plot wrote"
elif grep -qF "deny.ad:1:1: error: plot('sandboxed.png'): file access is disabled by the host (ADDSL_DENY_FILES)" deny.txt && [ ! -e sandboxed.png ]; then ok "--sandbox refuses plot"
else bad "--sandbox: $(head -n 1 deny.txt)"; fi
exit $fail
