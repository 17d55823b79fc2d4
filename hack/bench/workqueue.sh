#!/usr/bin/env bash
# Benchmarks crates/runtime/workqueue against client-go's util/workqueue, back to back on the
# same machine, and prints median ops/s for each scenario, Rust vs Go, and the ratio.
#
#   bash hack/bench/workqueue.sh            # full run: a few minutes
#   ROUNDS=3 GO_COUNT=5 bash hack/bench/workqueue.sh  # alternate Rust/Go 3 times
#
# Rust: criterion (crates/runtime/workqueue/benches/workqueue.rs); the median is criterion's
# median time per iteration (target/criterion/<id>/new/estimates.json) turned into
# elements/s with the benchmark's Throughput::Elements.
# Go: testing.B (hack/bench/workqueue-go), -cpu 2, GO_COUNT runs of GO_BENCHTIME each;
# the median is over the runs' "elems/s" metrics.
# With ROUNDS > 1 the whole Rust-then-Go pass is repeated; the summary shows the
# median over the rounds of each round's median, and each round's ratio.
# Logs, per-round results and the summary are kept in $OUT
# (default: target/bench/workqueue/<UTC timestamp>, one directory per run).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
ROUNDS="${ROUNDS:-1}"
GO_COUNT="${GO_COUNT:-10}"
GO_BENCHTIME="${GO_BENCHTIME:-1s}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
OUT="${OUT:-$TARGET_DIR/bench/workqueue/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT"

say() { printf '\n=== %s\n' "$*"; }

{
  echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host:    $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "memory:  $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
  echo "commit:  $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates/runtime/workqueue/src || echo ' (crates/runtime/workqueue/src modified)')"
  echo "rustc:   $(rustc --version)"
  echo "go:      $(go version)"
  echo "client-go: $(cd hack/bench/workqueue-go && go list -m -f '{{.Version}}' k8s.io/client-go)"
} | tee "$OUT/machine.txt"

# Build first so compilation does not overlap the measurements.
say "building"
cargo bench -p kcr-workqueue --bench workqueue --no-run 2>&1 | tail -n 2
(cd hack/bench/workqueue-go && go test -c -o "$OUT/workqueue-go.test" .)

# Rust then Go, ROUNDS times: on a shared machine the load drifts, and alternating
# keeps each Rust/Go pair a few minutes apart at most.
: > "$OUT/load.txt"
for round in $(seq 1 "$ROUNDS"); do
  dir="$OUT/round-$round"
  rm -rf "$dir" && mkdir -p "$dir"
  load="$(uptime | sed 's/.*load average: //')"
  say "round $round/$ROUNDS: rust (criterion); load: $load"
  echo "round $round: load before rust: $load" >> "$OUT/load.txt"
  # Old results would be picked up for a benchmark that no longer runs: start clean.
  for group in single_worker dedup_heavy two_producers_two_workers add_after_100k_pending; do
    rm -rf "${TARGET_DIR:?}/criterion/$group"
  done
  cargo bench -p kcr-workqueue --bench workqueue 2>&1 | tee "$dir/rust.log" | grep -E '^[a-z_]+/|thrpt:' || true
  mkdir -p "$dir/criterion"
  for group in single_worker dedup_heavy two_producers_two_workers add_after_100k_pending; do
    cp -r "$TARGET_DIR/criterion/$group" "$dir/criterion/"
  done

  load="$(uptime | sed 's/.*load average: //')"
  say "round $round/$ROUNDS: go (client-go); load: $load"
  echo "round $round: load before go:   $load" >> "$OUT/load.txt"
  (cd hack/bench/workqueue-go && "$OUT/workqueue-go.test" -test.run '^$' -test.bench . \
    -test.cpu 2 -test.benchtime "$GO_BENCHTIME" -test.count "$GO_COUNT") 2>&1 | tee "$dir/go.log"
done
echo "end:           load: $(uptime | sed 's/.*load average: //')" >> "$OUT/load.txt"

say "summary (median ops/s; ratio = Rust / client-go, > 1 means Rust is faster)"
python3 - "$OUT" "$ROUNDS" <<'EOF' | tee "$OUT/summary.md"
import json, re, statistics, sys
from pathlib import Path

out, rounds = Path(sys.argv[1]), int(sys.argv[2])
# (criterion id, Go benchmark, what one element is)
rows = [
    ("single_worker/arc_str", "SingleWorker", "add+get+done cycle"),
    ("single_worker/arc_str_owned", "SingleWorker", "the same with add(key.clone())"),
    ("single_worker/string", "SingleWorker", "add+get+done cycle, String keys (stored as a clone)"),
    ("single_worker/rate_limited", "SingleWorkerRateLimited", "add+get+forget+done cycle"),
    ("dedup_heavy/arc_str", "DedupHeavy", "add (10 per key, then get+done)"),
    ("two_producers_two_workers/arc_str", "TwoProducersTwoWorkers", "key added and processed"),
    ("add_after_100k_pending/new_item", "AddAfterNew100kPending", "add_after of a new key"),
    ("add_after_100k_pending/readd_waiting", "AddAfterReadd100kPending", "add_after of a waiting key"),
]

def rust_ops(rnd, bench_id):
    d = out / f"round-{rnd}" / "criterion" / bench_id / "new"
    try:
        median_ns = json.loads((d / "estimates.json").read_text())["median"]["point_estimate"]
        elements = json.loads((d / "benchmark.json").read_text())["throughput"]["Elements"]
    except (OSError, KeyError, TypeError):
        return None
    return elements * 1e9 / median_ns

def go_ops(rnd):
    runs = {}
    for line in (out / f"round-{rnd}" / "go.log").read_text().splitlines():
        m = re.match(r"Benchmark(\w+?)(?:-\d+)?\s+\d+\s+.*?([\d.e+]+) elems/s", line)
        if m:
            runs.setdefault(m.group(1), []).append(float(m.group(2)))
    return {name: statistics.median(v) for name, v in runs.items()}

def fmt(x):
    return "n/a" if x is None else f"{x:,.0f}"

def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

go = [go_ops(r) for r in range(1, rounds + 1)]
per_round = " | ".join(f"round {r}" for r in range(1, rounds + 1))
print(f"| scenario (one op = ...) | Rust median ops/s | client-go median ops/s | ratio | {per_round} |")
print("|---|---:|---:|---:|" + "---:|" * rounds)
for bench_id, go_name, unit in rows:
    rs = [rust_ops(r, bench_id) for r in range(1, rounds + 1)]
    gs = [g.get(go_name) for g in go]
    r, g = median(rs), median(gs)
    ratio = f"{r / g:.2f}x" if r and g else "n/a"
    each = " | ".join(f"{a / b:.2f}x" if a and b else "n/a" for a, b in zip(rs, gs))
    print(f"| `{bench_id}` ({unit}) | {fmt(r)} | {fmt(g)} | {ratio} | {each} |")
r = median([rust_ops(n, "single_worker/arc_str") for n in range(1, rounds + 1)])
if r is not None:
    verdict = "MET" if r >= 1_000_000 else "MISSED"
    print(f"\nTarget >= 1,000,000 add+get+done cycles/s, single worker: {verdict} ({fmt(r)}/s)")
EOF
cat "$OUT/load.txt"
