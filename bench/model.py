#!/usr/bin/env python3
"""Scale model: predicted latency and cost of each TPC-H query at large scale
factors on N Lambda workers of M MB, from measured small-scale runs.

usage:
  model.py predict  --base SF1-profile.json --small SF0.1-profile.json --squall BIN --plans DIR
                    [--sf 100 1000] [--workers 1000] [--memory 1769] [--partitions 1000]
                    [--plan-sf 1000] [--two-level-min N] [--warm-footers] [--row-group-factor F]
  model.py validate --base SF1-profile.json --small SF0.1-profile.json --squall BIN --plans DIR
                    --measured SF10-profile.json
  model.py requests --base MEASURED-profile.json --squall BIN --plans DIR
  model.py settings --run-sf 1 --plan-sf 1000

Plans change with scale: a join's build side that is broadcast at SF1 is
shuffled at SF1000, and a key filter published at SF1 is too big to publish
there. `settings` prints the `-c` flags that plan a run at --run-sf as
--plan-sf would be planned (planning's absolute thresholds, broadcast and
key-filter sizes, divided by the ratio: model_stages.SCALED_SETTINGS); run
the base and small profiles with them and pass --plan-sf to predict, so the
stage graph and the per-stage figures are those of the target scale's plan.

`requests` checks the exchange-request formulas against a measured run:
with the run's own profile as the base (scale 1), it forms reduce tasks,
broadcast combining and ranged GETs as it would at scale and prints them
beside the tasks, GETs and PUTs the profile measured.

The *-profile.json files are what bench/run.py writes (squall's per-query
profile: per-stage tasks, task wall times, rows and bytes in and out, row
groups, exchange requests). --plans is a data folder whose staged plans
(`squall query "explain ..."`) give each stage's inputs (the stage graph).

What it uses, per stage of each query
  * work: the stage's summed task wall time at the base scale, less a fixed
    per-task overhead c0 (the 5th percentile of mean task time over all
    stages: a task that does almost nothing), on one core of this machine;
  * growth: how the stage's input volume (Parquet bytes scanned plus
    exchange bytes read) grew from the small to the base scale, as an
    exponent a (volume ~ SF^a, clamped to [0, 1]: every TPC-H table but
    nation and region grows linearly with SF and its joins follow foreign
    keys, so no stage's input grows faster than the data; a faster growth
    measured between two small scales is fixed costs and filters that cut a
    small scale more, and extrapolated 1,000x it would be absurd): a scan of
    lineitem grows ~1, the gather of Q1's four groups ~0. Work and bytes at scale SF = base x (SF/base)^a;
  * task counts: a scan stage gets its bytes at scale over --task-mb, at
    least --scan-min-tasks while each still reads --scan-min-task-mb (64 and
    16 MiB, squall.scan.min_tasks / min_task_bytes as sam-template.yaml
    deploys them), at most a task per row group: split.rs's rule
    (--scan-tasks-from-base: the base run's tasks grown with the scale, as
    the model did before 2026-12-08: a base run on 2 slots makes every scan
    at least 2 tasks, so a scan of a few MB at SF1 became 250 tasks of 18 MB
    at SF1000 where squall makes 17 of 256 MiB), hash stages get one task per
    --reduce-mb of exchange input, at most --partitions (squall forms them
    from the measured map outputs), gather stages one;
  * the stage graph: a stage starts when all its inputs are done.

Embedded prediction (validate): each stage takes max(one task, total work /
slots); the query's stage time is max(critical path, all work / slots); the
part of the base wall time the stages do not explain (planning,
coordination, result assembly) is kept fixed.

Lambda prediction (predict, model_lambda.py): each task = start (cold start
the first time an environment is used) + its reads + its CPU work (one
thread; Lambda gives a full vCPU from 1,769 MB, less below) + one PUT of its
output. Reads: one footer GET and a GET per row group it scans (its column
chunks coalesce into one, as measured on the TPC-H files); with read-ahead
(squall.scan.read_ahead_bytes, 8 MiB windows, 2 in flight) only the first
window, the task's first row group alone, is waited for and the rest
overlaps the CPU work (the task takes the longer of the two), without it every row group's round trip is waited out;
then one GET per map output of its exchange inputs (a reduce task's
contiguous range of partitions is one GET), 32 at a time, or as many as
fit squall.shuffle.fetch_budget_bytes (16 MiB) at the ranges' mean size, up
to 128 (fetches_in_flight in shuffle_read.rs: a gather of hundreds of tiny
outputs), each latency drawn from the distribution below, bytes at 80 MB/s.
Exchange bytes and the CPU of encoding them are the profile's: the inputs
are run with the deployed codec (`settings` adds it, zstd:1) and with the
deployed rows per map task and partition (`settings` sets
squall.shuffle.partitions to 125: deployed, a 256 MiB scan task writes
1,000 partitions, here a 32 MiB one writes 125; with the 2 partitions of
a 2-core machine, as before the tenth run, the cells were 60 times larger,
compressed better and carried their per-stream framing over more rows;
and squall.shuffle.coalesce_bytes to the deployed share per partition,
the aws backend's 256 MiB over 1,000: 32 MiB over 125). A read still unanswered
after hedge_after_ms (squall.store.hedge_after_ms, 500 ms) is sent again
and the first answer wins, as squall's store does (the second request is
counted as a GET). A stage that applies a key filter too big for the task
payload (squall.bloom.inline_max_bytes) has each task GET it first: the
filter's keys at the base scale grown like its source stage's output, as
an exact set (8 bytes a key) or a Bloom filter at 1% (filter.rs's sizing),
none past squall.bloom.max_keys. A stage waits for the key filters it
applies: for the whole source stage, or, where the run skipped the filter
before its stage ended (squall.bloom.early_release: a build task or the
merged sections had more than max_keys keys), for the fraction of the
source's tasks the run had accepted by then (measured at the base scale,
where a build stage has few tasks: an upper bound; --release-from takes
it from a run of the same plans with finer tasks); the coordinator GETs
each source task's key section up to then. A stage whose hash reads (m
map objects each, by its n tasks) sum to at least --two-level-min GETs
reads each of them through a two-level exchange when that at least halves
that read's requests: an a x b grid of combine
tasks (combine_grid, as the coordinator forms it: at least one per 64 MiB
moved, the grid with the fewest requests), m*b GETs and a*b PUTs, each task
regrouping bytes (no decoding: its reads and its write at 80 MB/s), then
at most a*(n + b - 1) GETs for the readers. Planning reads the footer of
each file the query's scans read (64 in flight, at the coordinator's 80
MB/s; a tail a quarter larger than the footers of the scan read so far,
as split.rs fetches it after its first 64 files, so about the footer's own
size) unless --warm-footers (a warm coordinator has them
cached: the process's footer cache, which registering a table the query
names and planning's statistics read through, planner/src/catalog/; a
table's registration reads nothing else of it but its listing). Files and row groups grow with the scale like the stage that
scans them (the base data's layout: files of a table that grows, such as
lineitem, grow linearly, nation's do not; --row-group-factor F: the
target's row groups are F times as large). Tasks are placed on N workers as they free up;
environments appear at 1,000 per 10 s; invocations are issued at the lower
of Lambda's side (3,000 per second, tree fan-out) and the coordinator's own
scheduling rate, measured with `squall bench scheduler --tasks 100000`
(no-op tasks over in-process seams: 30,241 tasks/s on a 2-core machine, dev
profile; so Lambda's side is the bound); S3 serves 5,500 GETs / 3,500 PUTs per
second per prefix. squall's exchange keys are spread over
`squall.shuffle.prefixes` shards, {prefix}/{shard}/{query}/s{stage}/t{task}/...,
a stage's tasks taking consecutive shards (planner/core/src/exchange.rs):
a stage's PUTs share min(prefixes, its tasks) prefixes, its exchange reads
min(prefixes, the map objects of each input) prefixes, and its scan reads
--s3-prefixes prefixes (an assumption: tables that are read this hard live
under prefixes S3 has split at least as finely). --s3-prefixes defaults to
the setting (`squall config`, so SQUALL_SHUFFLE_PREFIXES counts); 1 is the
layout before shards ({query}/s{stage}/..., all under one prefix, which S3
splits only after minutes of sustained load).
Cost: the predicted usage priced by `squall cost` (planner/src/cost.rs, the
same formula the profile reports), with the requests a query makes besides
its tasks' reads and writes, as cost.rs counts and estimates them: a footer
GET per file at planning, a HEAD per task attempt at its start and per
second it runs (stop-marker looks), one cleanup LIST per shard written to
(per 1,000 objects), a DELETE per object, SQS (CreateQueue, DeleteQueue, a
SendMessage per task, a ReceiveMessage and a DeleteMessageBatch per 10
reports, an idle long poll per second), and the coordinator function's and
the API's state polling (cost.rs's AwsEstimate). Monte Carlo with a fixed
seed.

Floor: beside each prediction, the same plans' cost with nothing waited
for (each task as long as the longer of its CPU work and its bytes at the
function's rate, the same requests): what only less CPU, fewer bytes or
fewer requests can lower. --function-mb-per-s varies the rate.
The published figures (see PARAMETERS) are inputs, not measurements of
this project: the GET tail shape in particular is an assumption.
"""
import argparse
import hashlib
import json
import math
import os
import random
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import stats  # noqa: E402

QUERIES = os.path.join(HERE, "tpch", "queries")

from model_lambda import PARAMETERS, Latency, lambda_query, nonempty_fraction, overheads  # noqa: E402,F401


# ------------------------------------------------------------------ inputs
def load_profiles(path):
    with open(path) as f:
        doc = json.load(f)
    out = {}
    for q in doc["queries"]:
        if "profile" not in q and "stage_profiles" in q:
            # `squall tpch run --profile`: the profile's figures at top level.
            q = {"query": int(str(q["query"]).lstrip("q")), "wall_ms": q["wall_ms"],
                 "median_ms": q["wall_ms"], "profile": q}
        if q.get("profile"):
            out[int(q["query"])] = q
    return doc.get("scale_factor"), doc.get("ready", {}), out


STAGE_RE = re.compile(r"^Stage s(\d+)(?: \(final\))? \[(.*?)\](?: <- (.*?))?(?:, (after key filter of .*?))?"
                      r"(?:, read by .*)?$")


def stage_graph(squall, data, q, cache_dir=None, settings=()):
    """{stage: [input stages]} from `squall query "explain ..."` (with `-c` settings)."""
    return parse_explain(explain_text(squall, data, q, cache_dir, settings))


_EXPLAINED = {}


def explain_text(squall, data, q, cache_dir=None, settings=()):
    """`squall query "explain ..."` of query q (with `-c` settings), cached in cache_dir
    and, for this process, in memory (the stage graph and the scanned files read it)."""
    key = (squall, data, q, cache_dir, tuple(settings))
    if key not in _EXPLAINED:
        _EXPLAINED[key] = _explain_text(squall, data, q, cache_dir, settings)
    return _EXPLAINED[key]


def _explain_text(squall, data, q, cache_dir, settings):
    # A cached text is the plan of these data under these settings only.
    tag = hashlib.sha256(repr((os.path.abspath(data), tuple(settings))).encode()).hexdigest()[:16]
    cache = os.path.join(cache_dir, f"q{q:02d}-{tag}.explain") if cache_dir else None
    if cache and os.path.exists(cache):
        with open(cache) as f:
            text = f.read()
    else:
        with open(os.path.join(QUERIES, f"q{q:02d}.sql")) as f:
            sql = f.read()
        flags = [a for kv in settings for a in ("-c", kv)]
        text = subprocess.run([squall, "query", "--catalog", data, *flags, "explain " + strip_comments(sql)],
                              capture_output=True, text=True, check=True).stdout
        if cache:
            os.makedirs(cache_dir, exist_ok=True)
            with open(cache, "w") as f:
                f.write(text)
    return text


FILE_RE = re.compile(r"([^\s\[\],]+\.parquet)(?::\d+\.\.\d+)?")


FOOTER_PREFETCH_BYTES, FOOTER_MIN_PREFETCH_BYTES = 64 * 1024, 4 * 1024


def footer_hint(largest):
    """planner/src/split.rs's footer_hint: the tail fetched for a scan's
    files once footers of up to `largest` bytes have been read."""
    if largest is None:
        return FOOTER_PREFETCH_BYTES
    want = -(-(largest + largest // 4) // 4096) * 4096
    return min(max(want, FOOTER_MIN_PREFETCH_BYTES), FOOTER_PREFETCH_BYTES)


def footer_tail(path):
    """Bytes planning fetches for the footer of the file at `path` (as an
    EXPLAIN prints it) in a scan of many such files: the tail sized by its
    footer, and the rest of a footer longer than the largest tail. 64 KiB
    when the file cannot be read here."""
    for candidate in (path, "/" + path):
        try:
            with open(candidate, "rb") as f:
                f.seek(-8, os.SEEK_END)
                trailer = f.read(8)
        except OSError:
            continue
        if trailer[4:] != b"PAR1":
            break
        footer = int.from_bytes(trailer[:4], "little") + 8
        return max(footer_hint(footer), footer)
    return FOOTER_PREFETCH_BYTES


def plan_files(text):
    """{stage: set of Parquet files its scans read} of an EXPLAIN text: the
    files whose footers planning reads."""
    out, current = {}, None
    for line in text.splitlines():
        m = STAGE_RE.match(line.strip())
        if m:
            current = int(m.group(1))
            continue
        if current is not None and "DataSourceExec" in line:
            out.setdefault(current, set()).update(FILE_RE.findall(line))
    return out


READ_RE = re.compile(r"ShuffleReadExec: stage=(\d+), mode=(\w+)")
INPUT_RE = re.compile(r"^(?:after key filter of )?s(\d+)$")


def parse_explain(text):
    """{stage: [input stages]}, {stage: {input: read mode}} of an EXPLAIN text."""
    graph, modes, current = {}, {}, None
    for line in text.splitlines():
        m = STAGE_RE.match(line.strip())
        if m:
            current = int(m.group(1))
            # Inputs, and the stages whose key filters it waits for.
            parts = ((m.group(3) or "") + "," + (m.group(4) or "")).split(",")
            graph[current] = [int(i.group(1)) for i in (INPUT_RE.match(part.strip()) for part in parts) if i]
            modes[current] = {}
            continue
        r = READ_RE.search(line)
        if r and current is not None:
            modes[current][int(r.group(1))] = r.group(2)
    return graph, modes


def strip_comments(sql):
    return "\n".join(l for l in sql.splitlines() if not l.strip().startswith("--"))


from model_stages import (DEPLOYED_SCAN_MIN_TASK_BYTES, DEPLOYED_SCAN_MIN_TASKS,  # noqa: E402,F401
                          growth_exponent, scaled_settings, scaled_tasks, stages_of,
                          task_overhead_ms, topo_key, volume)

# ------------------------------------------------------------------ embedded (validation)
def embedded_stage_time(st, scale, slots, c0):
    g = scale ** st["alpha"]
    tasks = scaled_tasks(st, g)
    work = st["work_ms"] * g
    return max(work / tasks + c0, (work + tasks * c0) / slots), work + tasks * c0


def embedded_stages_ms(stages, graph, scale, slots, c0):
    graph = graph[0] if isinstance(graph, tuple) else graph
    finish, total = {}, 0.0
    by = {st["stage"]: st for st in stages}
    for sid in sorted(by, key=lambda s: topo_key(s, graph)):
        t, w = embedded_stage_time(by[sid], scale, slots, c0)
        total += w
        start = max([finish.get(i, 0.0) for i in graph.get(sid, [])] or [0.0])
        finish[sid] = start + t
    return max(max(finish.values() or [0.0]), total / slots)


def predict_embedded(base_q, small_q, graph, scale, slots, c0, scale_ratio):
    stages = stages_of(base_q, small_q, scale_ratio, c0)
    t_base = embedded_stages_ms(stages, graph, 1.0, slots, c0)
    t_scaled = embedded_stages_ms(stages, graph, scale, slots, c0)
    wall = base_q["median_ms"] or base_q["wall_ms"]
    fixed = max(wall - t_base, 0.0)
    return fixed + t_scaled * (wall - fixed) / t_base if t_base > 0 else wall


def default_prefixes(squall):
    """`squall.shuffle.prefixes` as `squall config` shows it (environment included)."""
    out = subprocess.run([squall, "config"], capture_output=True, text=True, check=True).stdout
    return prefixes_setting(out)


def prefixes_setting(config_text):
    """The `squall.shuffle.prefixes = N` line of `squall config`'s output (1 without one)."""
    m = re.search(r"^squall\.shuffle\.prefixes = (\d+)", config_text, re.M)
    return int(m.group(1)) if m else 1


def floor_ms(stages, mb_per_s):
    """Worker time of `stages` with nothing waited for: each task as long as
    the longer of its CPU work and its bytes (scanned, read, written) at
    `mb_per_s`; returned with the part of it the bytes add beyond the CPU."""
    total = beyond = 0.0
    for st in stages:
        moved = (st["scan_mb"] + st["in_mb"] + st["out_mb"]) / mb_per_s * 1000.0
        total += st["tasks"] * max(st["work_ms_per_task"], moved)
        beyond += st["tasks"] * max(moved - st["work_ms_per_task"], 0.0)
    return total, beyond


def price(squall, usages):
    """Price predicted usage with the Rust formula (`squall cost`)."""
    lines = "".join(json.dumps(u) + "\n" for u in usages)
    out = subprocess.run([squall, "cost"], input=lines, capture_output=True, text=True, check=True).stdout
    return [json.loads(l) for l in out.splitlines() if l.strip()]


# ------------------------------------------------------------------ commands
def common(args):
    sf_base, ready, base = load_profiles(args.base)
    sf_small, _, small = load_profiles(args.small) if args.small else (None, {}, {})
    ratio = (sf_base / sf_small) if sf_small else 10.0
    c0 = task_overhead_ms(base)
    settings = scaled_settings(sf_base, getattr(args, "plan_sf", None)) + list(args.config)
    graphs = {q: stage_graph(args.squall, args.plans, q, args.plan_cache, settings) for q in base}
    return sf_base, ready, base, small, ratio, c0, graphs


def cmd_validate(args):
    sf_base, ready, base, small, ratio, c0, graphs = common(args)
    sf_meas, _, measured = load_profiles(args.measured)
    slots = ready.get("worker_slots") or os.cpu_count()
    scale = sf_meas / sf_base
    print(f"embedded: predict SF{sf_meas:g} from SF{sf_base:g} (growth from SF{sf_base / ratio:g}); "
          f"{slots} slots, per-task overhead c0 = {c0:.1f} ms")
    print(f"{'query':>5} {'SF' + format(sf_base, 'g') + ' ms':>10} {'predicted':>10} {'measured':>10} {'error':>8}")
    errors, rows = [], []
    for q in sorted(base):
        pred = predict_embedded(base[q], small.get(q), graphs[q], scale, slots, c0, ratio)
        meas = measured.get(q, {}).get("median_ms")
        err = stats.relative_error(pred, meas)
        if err is not None:
            errors.append(err)
        rows.append({"query": q, "base_ms": base[q]["median_ms"], "predicted_ms": pred, "measured_ms": meas,
                     "error": err})
        print(f"  q{q:02d} {base[q]['median_ms']:>10.1f} {pred:>10.1f} "
              f"{(meas if meas is not None else float('nan')):>10.1f} "
              f"{(err * 100 if err is not None else float('nan')):>7.1f}%")
    if errors:
        abs_err = sorted(abs(e) for e in errors)
        ratios = [1 + e for e in errors]
        print(f"median |error| {stats.median(abs_err) * 100:.1f}%, max |error| {max(abs_err) * 100:.1f}%, "
              f"geomean predicted/measured {stats.geomean(ratios):.2f} over {len(errors)} queries")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"c0_ms": c0, "rows": rows}, f, indent=1)
    return 0


def cmd_predict(args):
    sf_base, ready, base, small, ratio, c0, graphs = common(args)
    settings = scaled_settings(sf_base, getattr(args, "plan_sf", None)) + list(args.config)
    # The files each query's scans read (their footers are read at planning),
    # each with the tail planning fetches for it.
    files = {q: {sid: {f: footer_tail(f) for f in paths}
                 for sid, paths in plan_files(explain_text(args.squall, args.plans, q, args.plan_cache,
                                                           settings)).items()}
             for q in base}
    # Where a filter was released early, the fraction of its build tasks
    # by then, from a run of the same plans with finer tasks if given.
    release = load_profiles(args.release_from)[2] if args.release_from else {}
    p = dict(PARAMETERS)
    p["s3_prefixes"] = args.s3_prefixes if args.s3_prefixes else default_prefixes(args.squall)
    p["combine_max_bytes"] = args.combine_mb * 1024 * 1024
    p["read_ahead_bytes"] = int(args.read_ahead_mb * 1024 * 1024)
    p["two_level_min_requests"] = args.two_level_min
    p["warm_footers"] = args.warm_footers
    p["row_group_factor"] = args.row_group_factor
    if args.function_mb_per_s:
        p["function_mb_per_s"] = args.function_mb_per_s
    p["scan_threads"] = args.scan_threads
    p["release_skipped_filters"] = args.release_skipped_filters
    p["fetch_budget_bytes"] = int(args.fetch_budget_mb * 1024 * 1024)
    p["min_tasks"] = args.min_tasks
    p["min_task_bytes"] = int(args.min_task_mb * 1024 * 1024)
    p["scan_min_tasks"] = None if args.scan_tasks_from_base else args.scan_min_tasks
    p["scan_min_task_bytes"] = int(args.scan_min_task_mb * 1024 * 1024)
    print(f"Lambda: {args.workers} workers x {args.memory} MB, {args.partitions} hash partitions, "
          f"{args.task_mb} MiB scan tasks ("
          + ("the base run's, grown" if args.scan_tasks_from_base else
             f"at least {args.scan_min_tasks} of {args.scan_min_task_mb:g} MiB")
          + f"), {args.reduce_mb} MiB reduce tasks (at least {args.min_tasks} "
          f"of {args.min_task_mb:g} MiB); "
          f"from SF{sf_base:g} profiles (c0 = {c0:.1f} ms per task); parameters: {json.dumps(p)}")
    # Per-row-group CPU cost of the scan stages, as measured.
    per_rg = [st["work_ms"] / st["row_groups"] for q in base
              for st in stages_of(base[q], small.get(q), ratio, c0) if st["is_scan"] and st["row_groups"]]
    if per_rg:
        print(f"measured scan CPU per row group: median {stats.median(per_rg):.1f} ms "
              f"(min {min(per_rg):.1f}, max {max(per_rg):.1f})")
    results = []
    for sf in args.sf:
        scale = sf / sf_base
        usages, lats, raw = [], [], []
        for q in sorted(base):
            rng = random.Random(args.seed * 1000 + q)
            plan_ms = max((base[q].get("wall_ms") or 0) - (base[q]["profile"].get("wall_ms") or 0), 0.0)
            latency, usage = lambda_query(base[q], small.get(q), graphs[q], scale, args.workers, args.memory,
                                          args.partitions, c0, ratio, rng, p, plan_ms, files[q], args.task_mb,
                                          args.reduce_mb, release.get(q))
            raw.append(usage)
            inputs = overheads(usage, latency)
            inputs.update({"worker_memory_mb": args.memory, "coordinator_ms": int(math.ceil(latency)),
                           "coordinator_memory_mb": args.coordinator_memory})
            usages.append(inputs)
            lats.append((q, latency))
        costs = price(args.squall, usages)
        print(f"\nSF{sf:g}: {'query':>5} {'latency s':>10} {'tasks':>7} {'GETs':>9} {'PUTs':>7} "
              f"{'GB-s':>9} {'cost USD':>10}")
        for (q, latency), u, c, r in zip(lats, usages, costs, raw):
            print(f"       q{q:02d} {latency / 1000:>10.2f} {u['worker_invocations']:>7} {u['s3_get']:>9} "
                  f"{u['s3_put']:>7} {c['lambda_gb_seconds']:>9.1f} {c['total_usd']:>10.4f}")
            results.append({"sf": sf, "query": q, "latency_s": latency / 1000, "usage": u, "cost": c,
                            "stages": r["stages"]})
        tot = sum(c["total_usd"] for c in costs)
        print(f"       all {sum(l for _, l in lats) / 1000:>10.2f} s in sequence, geomean "
              f"{stats.geomean([l / 1000 for _, l in lats]):.2f} s, ${tot:.4f} for the 22 queries")
        parts = {k: sum(c.get(k, 0.0) for c in costs) for k in
                 ("lambda_compute_usd", "lambda_requests_usd", "s3_get_usd", "s3_put_usd", "sqs_usd")}
        print("       cost by item: " + ", ".join(f"{k[:-4]} ${v:.4f} ({v / tot * 100:.0f}%)"
                                                  for k, v in parts.items() if tot > 0)
              + f"; {sum(u['s3_get'] for u in usages):,} GETs, {sum(u['s3_put'] for u in usages):,} PUTs, "
              f"slowest query {max(l for _, l in lats) / 1000:.1f} s")
        # The floor of these plans on this data layout: every task only as
        # long as the longer of its CPU work and its bytes (scanned, read,
        # written) at the function's rate, nothing waited for, the same
        # requests. What is left above it is waiting the execution could
        # still hide; the floor itself moves only with less CPU, fewer
        # bytes or fewer requests.
        rate = p["function_mb_per_s"]
        floors, bytes_bound = [], 0.0
        for u, r in zip(usages, raw):
            ms, beyond = floor_ms(r["stages"], rate)
            bytes_bound += beyond
            floors.append(dict(u, worker_ms=int(math.ceil(ms))))
        floor_costs = price(args.squall, floors)
        floor_total = sum(f["worker_ms"] for f in floors) or 1
        fparts = {k: sum(c.get(k, 0.0) for c in floor_costs)
                  for k in ("lambda_compute_usd", "s3_get_usd", "s3_put_usd")}
        print(f"       floor of these plans on this layout: ${sum(c['total_usd'] for c in floor_costs):.4f} "
              f"(tasks as long as the longer of their CPU and their bytes at {rate:g} MB/s, nothing waited, "
              f"the same requests; bytes beyond the CPU {bytes_bound / floor_total * 100:.0f}% of the time): "
              + ", ".join(f"{k[:-4]} ${v:.4f}" for k, v in fparts.items()))
        spent = {}
        for u in raw:
            for k, v in u.get("spent_ms", {}).items():
                spent[k] = spent.get(k, 0.0) + v
        billed = sum(spent.values()) or 1.0
        print("       worker time (stages' own tasks): " + ", ".join(
            f"{k} {v / 1000:,.0f} s ({v / billed * 100:.0f}%)" for k, v in spent.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"parameters": p, "workers": args.workers, "memory_mb": args.memory,
                       "partitions": args.partitions, "results": results}, f, indent=1)
    return 0


def cmd_requests(args):
    """The exchange requests the model predicts for a measured run, against
    those measured: the run's own profile is the base (scale 1, its stage
    graph, rows and bytes), and the model forms its reduce tasks and the
    GETs and PUTs of every stage as it would at scale."""
    _, _, base, _, _, c0, graphs = common(args)
    p = dict(PARAMETERS)
    p["s3_prefixes"] = 16
    p["combine_max_bytes"] = args.combine_mb * 1024 * 1024
    p["two_level_min_requests"] = args.two_level_min
    # As the proxy runs: reduce tasks from bytes alone, at least one.
    p["min_tasks"], p["min_task_bytes"] = 1, 0
    print(f"exchange requests predicted for {args.base} ({args.partitions} partitions, "
          f"{args.reduce_mb} MiB reduce tasks, broadcasts combined up to {args.combine_mb} MiB)")
    print(f"{'query':>5} {'tasks':>7} {'predicted':>9} {'GETs':>9} {'predicted':>9} {'error':>7} "
          f"{'PUTs':>7} {'predicted':>9}")
    totals = [0, 0, 0, 0, 0, 0]
    rows = []
    for q in sorted(base):
        prof = base[q]["profile"]
        _, usage = lambda_query(base[q], None, graphs[q], 1.0, args.workers, 3008, args.partitions, c0, 10.0,
                                random.Random(args.seed * 1000 + q), p, 0.0, 0, task_mb=p["base_task_mb"],
                                reduce_mb=args.reduce_mb)
        stages = {s["stage"]: s for s in prof["stage_profiles"]}
        tasks = sum(s["tasks"] for s in stages.values())
        gets = sum(s.get("get_requests") or 0 for s in stages.values()) + (prof.get("combine_get_requests") or 0)
        puts = sum(s.get("put_requests") or 0 for s in stages.values())
        p_tasks = sum(r["tasks"] for r in usage["stages"])
        p_gets = sum(r["exchange_gets"] + r["combine_gets"] for r in usage["stages"])
        p_puts = p_tasks
        err = stats.relative_error(p_gets, gets)
        rows.append({"query": q, "tasks": tasks, "predicted_tasks": p_tasks, "gets": gets, "predicted_gets": p_gets,
                     "puts": puts, "predicted_puts": p_puts})
        for k, v in enumerate((tasks, p_tasks, gets, p_gets, puts, p_puts)):
            totals[k] += v
        print(f"  q{q:02d} {tasks:>7} {p_tasks:>9} {gets:>9} {p_gets:>9} "
              f"{(err * 100 if err is not None else float('nan')):>6.1f}% {puts:>7} {p_puts:>9}")
    t = totals
    print(f"  all {t[0]:>7} {t[1]:>9} {t[2]:>9} {t[3]:>9} "
          f"{(stats.relative_error(t[3], t[2]) or 0) * 100:>6.1f}% {t[4]:>7} {t[5]:>9}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows}, f, indent=1)
    return 0


def cmd_settings(args):
    """The `-c` flags that plan a run at --run-sf as --plan-sf would be planned."""
    print(" ".join(f"-c {kv}" for kv in scaled_settings(args.run_sf, args.plan_sf)))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    st = sub.add_parser("settings")
    st.add_argument("--run-sf", type=float, required=True)
    st.add_argument("--plan-sf", type=float, required=True)
    for name in ("predict", "validate", "requests"):
        s = sub.add_parser(name)
        s.add_argument("--base", required=True, help="profile JSON of the base scale (bench/run.py)")
        s.add_argument("--small", help="profile JSON of a 10x smaller scale (growth exponents)")
        s.add_argument("--squall", required=True, help="the squall binary (explain, cost)")
        s.add_argument("--plans", required=True, help="data folder of the base scale (for explain)")
        s.add_argument("--plan-cache", help="folder to keep explain outputs in")
        s.add_argument("--json", help="write the predictions here")
        s.add_argument("--plan-sf", type=float,
                       help="the profiles were run planned as this scale (model.py settings): explain likewise")
        s.add_argument("-c", "--config", action="append", default=[], metavar="KEY=VALUE",
                       help="a setting the profiles were run with besides `settings`' (explain likewise)")
        if name == "validate":
            s.add_argument("--measured", required=True, help="profile JSON of the scale to predict")
        if name == "requests":
            s.add_argument("--workers", type=int, default=1000)
            s.add_argument("--partitions", type=int, default=1000)
            s.add_argument("--reduce-mb", type=float, default=64)
            s.add_argument("--combine-mb", type=int, default=64)
            s.add_argument("--two-level-min", type=int, default=0)
            s.add_argument("--seed", type=int, default=7)
        if name == "predict":
            s.add_argument("--sf", type=float, nargs="+", default=[100, 1000])
            s.add_argument("--workers", type=int, default=1000)
            s.add_argument("--memory", type=int, default=1769,
                           help="worker function MB (1,769, sam-template.yaml's WorkerMemorySize)")
            s.add_argument("--coordinator-memory", type=int, default=1024)
            s.add_argument("--partitions", type=int, default=1000,
                           help="squall.shuffle.partitions (the deployed default)")
            s.add_argument("--release-skipped-filters", action="store_true",
                           help="what-if: a key filter the run dropped does not hold up its probe stage "
                                "(an upper bound for releasing it at the first build task that overflows)")
            s.add_argument("--release-from", metavar="PROFILE",
                           help="profile of the base run's plans run with finer tasks (e.g. -c "
                                "squall.scan.target_task_bytes=1048576 -c squall.shuffle.target_task_bytes=1048576): "
                                "where a key filter was released early, the fraction of its build tasks "
                                "accepted by then comes from it (closer to the target scale's many tasks)")
            s.add_argument("--min-tasks", type=int, default=64,
                           help="squall.shuffle.min_tasks (the deployed default)")
            s.add_argument("--min-task-mb", type=float, default=16,
                           help="squall.shuffle.min_task_bytes in MiB (the deployed default; 0 = min_tasks "
                                "whatever the bytes)")
            s.add_argument("--fetch-budget-mb", type=float, default=16,
                           help="squall.shuffle.fetch_budget_bytes in MiB (0 = fetch_concurrency GETs in flight "
                                "however small the ranges)")
            s.add_argument("--read-ahead-mb", type=float, default=8,
                           help="squall.scan.read_ahead_bytes in MiB (0 = a row group at a time)")
            s.add_argument("--two-level-min", type=int, default=20_000,
                           help="squall.shuffle.two_level_min_requests (0 = never; the default is the setting's)")
            s.add_argument("--scan-threads", type=int, default=1,
                           help="squall.scan.task_partitions: threads a scan task runs on (up to its vCPUs)")
            s.add_argument("--row-group-factor", type=float, default=1.0,
                           help="the target data's row groups are this many times as large as the base's")
            s.add_argument("--function-mb-per-s", type=float, default=None,
                           help="a function's S3 transfer rate in MB/s (an assumption: 80 unless given)")
            s.add_argument("--warm-footers", action="store_true",
                           help="the coordinator has the tables' footers cached (a warm coordinator)")
            s.add_argument("--scan-min-tasks", type=int, default=DEPLOYED_SCAN_MIN_TASKS,
                           help="squall.scan.min_tasks at the target (64, as sam-template.yaml deploys it)")
            s.add_argument("--scan-min-task-mb", type=float,
                           default=DEPLOYED_SCAN_MIN_TASK_BYTES / (1024 * 1024),
                           help="squall.scan.min_task_bytes in MiB: --scan-min-tasks only while each "
                                "task still reads this much (16, as sam-template.yaml deploys it)")
            s.add_argument("--scan-tasks-from-base", action="store_true",
                           help="scan tasks as the base run's grown with the scale (the model before "
                                "it followed split.rs's rule; base runs with 2 slots made every scan 2 tasks)")
            s.add_argument("--task-mb", type=float, default=256,
                           help="squall.scan.target_task_bytes in MiB (the deployed default)")
            s.add_argument("--reduce-mb", type=float, default=64,
                           help="squall.shuffle.target_task_bytes in MiB (the deployed default; 0 = a task per partition)")
            s.add_argument("--combine-mb", type=int, default=64,
                           help="squall.shuffle.combine_max_bytes in MiB (0 = broadcasts never combined)")
            s.add_argument("--seed", type=int, default=7)
            s.add_argument("--s3-prefixes", type=int, default=None,
                           help="S3 prefixes exchange keys spread over (each 5,500 GET/s, 3,500 PUT/s); "
                                "default squall.shuffle.prefixes as `squall config` shows it")
    args = ap.parse_args(argv)
    return {"predict": cmd_predict, "validate": cmd_validate, "requests": cmd_requests,
            "settings": cmd_settings}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
