#!/usr/bin/env python3
"""squall's memory across the 22 TPC-H queries, one process, back to back.

    python3 bench/memory_walk.py --squall target/release/squall --sf 10 \\
        [--config squall.KEY=VALUE]... [--against bench/results/STAMP-sf10.csv] \\
        [--runs 2] [--in-process-reference]

One `squall tpch driver` runs each query once as a warm-up and then `--runs`
times, with no other engine between runs, so whatever a run leaves resident
shows in the next one's peak. Per query it prints the resident memory before
the first timed run (`base`) and the largest peak of the timed runs, measured
as `bench/run.py` does (`clear_refs`, then `VmHWM`). With `--against`, each
peak is divided by DataFusion's peak for the same query in that benchmark
CSV, and the geomean of those ratios is printed.

Answers are not checked here (`bench/run.py` does that): each run is handed
an empty expected answer, so the driver computes no reference. With
`--in-process-reference` it is handed none, and computes single-node
DataFusion's answer in its own process on the warm-up run, as the runner's
driver did before it took its oracle's answers: the difference between the
two walks is what that reference run left in squall's memory.
"""
import argparse
import csv
import math
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import engines as eng  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--squall", required=True)
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--data", help="data folder (default data/tpch/sf{SF})")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--queries", default="", help="comma-separated query numbers (default all 22)")
    ap.add_argument("--config", action="append", default=[])
    ap.add_argument("--against", help="a bench/run.py CSV with DataFusion's peaks")
    ap.add_argument("--in-process-reference", action="store_true")
    args = ap.parse_args()
    data = args.data or os.path.join("data", "tpch", f"sf{args.sf:g}")
    queries = [int(q) for q in args.queries.split(",") if q] or list(range(1, 23))
    peers = {}
    if args.against:
        with open(args.against) as f:
            for r in csv.DictReader(f):
                if r["engine"] == "datafusion" and r.get("peak_rss_mb"):
                    peers[int(r["query"])] = float(r["peak_rss_mb"])
    with tempfile.TemporaryDirectory() as work:
        empty = os.path.join(work, "empty.csv")
        open(empty, "w").close()
        actual = os.path.join(work, "actual.csv")
        p = eng.squall(args.squall, args.sf, data, args.config, os.path.join(work, "squall.stderr"))
        ratios = []
        try:
            for q in queries:
                command = f"run {q} {actual}" + ("" if args.in_process_reference else f" {empty}")
                peaks, times, base = [], [], None
                for r in range(args.runs + 1):
                    if r == 1:
                        base = p.memory_mb()[0]
                    p.reset_peak()
                    reply = p.ask(command)
                    if "error" in reply:
                        raise SystemExit(f"q{q:02d}: {reply['error']}")
                    if r > 0:
                        peaks.append(p.memory_mb()[1])
                        times.append(reply.get("wall_ms", 0.0))
                peak = max(peaks)
                line = f"q{q:02d} {min(times):9.1f} ms  base {base:7.0f} MB  peak {peak:7.0f} MB"
                if q in peers:
                    ratios.append(peak / peers[q])
                    line += f"  datafusion {peers[q]:7.0f} MB  ratio {peak / peers[q]:.2f}"
                print(line, flush=True)
        finally:
            p.close()
    if ratios:
        g = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"squall/datafusion peak memory: {g:.3f} (geomean over {len(ratios)} queries)")


if __name__ == "__main__":
    main()
