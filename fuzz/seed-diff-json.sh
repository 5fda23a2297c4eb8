#!/usr/bin/env bash
# Builds the seed corpus of the `diff_json` fuzz target: `profile --json` documents of
# /bin/true written by ldcost here (plain, --fork, --sample, --fork --no-exec), half of one,
# a minimal fork-only document and the same claiming schema version 1. Nothing is committed
# (fuzz/corpus is gitignored). Usage: fuzz/seed-diff-json.sh [DIR] (default
# fuzz/corpus/diff_json); needs what `ldcost profile` needs (ptrace, perf_event_open).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/corpus/diff_json}"
mkdir -p "$out"
(cd "$here/.." && cargo build -q)
ldcost="$here/../target/debug/ldcost"
"$ldcost" profile -n 3 --no-ld-debug --json "$out/true.json" /bin/true >/dev/null
"$ldcost" profile -n 3 --fork=50 --json "$out/fork.json" /bin/true >/dev/null
"$ldcost" profile -n 3 --sample --sample-runs 2 --json "$out/sample.json" /bin/true >/dev/null
"$ldcost" profile -n 2 --no-exec --fork=20 --json "$out/noexec.json" /bin/true >/dev/null
python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1] + "/"
t = open(d + "noexec.json").read()
open(d + "noexec.half.json", "w").write(t[: len(t) // 2])
doc = json.load(open(d + "fork.json"))
m = {k: doc[k] for k in ["schema_version", "tool", "command", "target"]}
m["deps"] = None
m["fork"] = doc["fork"]
open(d + "min-fork.json", "w").write(json.dumps(m))
m["schema_version"] = 1
open(d + "v1.json", "w").write(json.dumps(m))
PY
echo "seeds in $out: $(ls "$out" | wc -l)"
