#!/bin/sh
# Whole-process comparisons of ldcost against the public tools a user would reach for, timed
# by public tools only: hyperfine (wall, user and system time; interleaving is hyperfine's own
# warm-up + N runs per command) and GNU /usr/bin/time (peak RSS, "%M" KiB).
#
#   1. `ldcost deps --json - LIB` vs `readelf -rW LIB` vs `ldd LIB`, for libLLVM-15.so.1,
#      librustc_driver-*.so and libicudata.so.* (whichever exist; the missing are named).
#      Goal: ldcost >= 20x faster than readelf, end to end (mean wall).
#   2. `ldcost profile -n 5 /bin/true` vs `perf stat -r 5 /bin/true` vs
#      `env LD_DEBUG=statistics /bin/true` (glibc's own start-up statistics).
#      Goal: the profile answers in < 0.5 s (a default profile).
#
# Usage: benches/compare-tools.sh [RUNS]      (default 10; needs a release build:
#        cargo build --release, or LDCOST=/path/to/ldcost). Section 2 needs root (or ptrace
#        and perf permissions) for ldcost profile and perf stat. Output: markdown tables and
#        one "goal" line per comparison with PASS/FAIL. See docs/benchmarks.md.
set -u

RUNS=${1:-10}
HERE=$(cd "$(dirname "$0")/.." && pwd)
LDCOST=${LDCOST:-$HERE/target/release/ldcost}

if ! command -v hyperfine >/dev/null 2>&1; then
    echo "SKIP: hyperfine not installed (apt-get install hyperfine)"
    exit 0
fi
if [ ! -x /usr/bin/time ]; then
    echo "SKIP: /usr/bin/time not installed (apt-get install time)"
    exit 0
fi
if [ ! -x "$LDCOST" ]; then
    echo "SKIP: $LDCOST not built (cargo build --release, or set LDCOST)"
    exit 0
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM

# Peak RSS in MB of one run of the command given as arguments (output discarded).
peak_rss() {
    /usr/bin/time -f "%M" -o "$TMP/rss" "$@" >/dev/null 2>&1
    awk '{ printf "%.1f MB", $1 / 1024 }' "$TMP/rss"
}

# hyperfine over the commands given as arguments; leaves $TMP/hf.csv
# (command,mean,stddev,median,user,system,min,max; seconds).
bench() {
    hyperfine -N --warmup 2 --runs "$RUNS" --style none --export-csv "$TMP/hf.csv" "$@" >/dev/null 2>"$TMP/hf.err" ||
        { echo "hyperfine failed: $(head -n 3 "$TMP/hf.err")"; return 1; }
}

# Row N (1-based, after the header) of hf.csv as a markdown row, plus the peak RSS.
row() {
    awk -F, -v n="$1" -v rss="$2" -v label="$3" 'NR == n + 1 {
        printf "| %s | %.2f ms ± %.2f | %.2f ms | %.2f ms | %.2f ms | %s |\n",
            label, $2 * 1e3, $3 * 1e3, $4 * 1e3, ($5 + $6) * 1e3, $7 * 1e3, rss }' "$TMP/hf.csv"
}

# Mean of row N.
mean() { awk -F, -v n="$1" 'NR == n + 1 { print $2 }' "$TMP/hf.csv"; }

echo "compare-tools: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "ldcost: $LDCOST; hyperfine $(hyperfine --version | cut -d' ' -f2), $RUNS runs + 2 warm-up each"
echo

GOALS="$TMP/goals"
: >"$GOALS"

echo "## deps end to end"
echo
echo "| command | mean ± σ | median | user + sys | min | peak RSS |"
echo "|---|---:|---:|---:|---:|---:|"
MULTI=/usr/lib/x86_64-linux-gnu
SYSROOT=$(rustc --print sysroot 2>/dev/null || true)
DRIVER=$(ls "$SYSROOT"/lib/librustc_driver-*.so 2>/dev/null | head -n 1)
ICU=$(ls "$MULTI"/libicudata.so.* 2>/dev/null | awk '{ print length, $0 }' | sort -n | head -n 1 | cut -d' ' -f2)
for spec in "libLLVM-15.so.1:$MULTI/libLLVM-15.so.1" "librustc_driver-*.so:$DRIVER" "libicudata.so.*:$ICU"; do
    label=${spec%%:*}
    lib=${spec#*:}
    if [ -z "$lib" ] || [ ! -f "$lib" ]; then
        echo "| $label: not on this machine | | | | | |"
        echo "deps $label: not measured: no such file on this machine" >>"$GOALS"
        continue
    fi
    name=$(basename "$lib")
    bench "$LDCOST deps --json - $lib" "readelf -rW $lib" "ldd $lib" || continue
    row 1 "$(peak_rss "$LDCOST" deps --json - "$lib")" "\`ldcost deps --json - $name\`"
    row 2 "$(peak_rss readelf -rW "$lib")" "\`readelf -rW $name\`"
    row 3 "$(peak_rss ldd "$lib")" "\`ldd $name\`"
    awk -v l="$(mean 1)" -v r="$(mean 2)" -v d="$(mean 3)" -v name="$name" 'BEGIN {
        x = r / l
        printf "deps %s: readelf/ldcost = %.1fx, ldd/ldcost = %.1fx (goal >= 20x readelf): %s\n",
            name, x, d / l, (x >= 20 ? "PASS" : "FAIL") }' >>"$GOALS"
done
echo

echo "## profile /bin/true"
echo
echo "| command | mean ± σ | median | user + sys | min | peak RSS |"
echo "|---|---:|---:|---:|---:|---:|"
if "$LDCOST" profile -n 1 --quiet-target /bin/true >/dev/null 2>"$TMP/why"; then
    if bench "$LDCOST profile -n 5 /bin/true" "perf stat -r 5 /bin/true" "env LD_DEBUG=statistics /bin/true"; then
        row 1 "$(peak_rss "$LDCOST" profile -n 5 /bin/true)" "\`ldcost profile -n 5 /bin/true\`"
        row 2 "$(peak_rss perf stat -r 5 /bin/true)" "\`perf stat -r 5 /bin/true\`"
        row 3 "$(peak_rss env LD_DEBUG=statistics /bin/true)" "\`LD_DEBUG=statistics /bin/true\`"
        awk -v l="$(mean 1)" -v p="$(mean 2)" 'BEGIN {
            printf "profile -n 5 /bin/true: %.3f s, %.1fx perf stat -r 5 (goal < 0.5 s): %s\n",
                l, l / p, (l < 0.5 ? "PASS" : "FAIL") }' >>"$GOALS"
    fi
else
    echo "| ldcost profile cannot run here: $(head -n 1 "$TMP/why") | | | | | |"
    echo "profile: not measured: $(head -n 1 "$TMP/why")" >>"$GOALS"
fi
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$GOALS"
