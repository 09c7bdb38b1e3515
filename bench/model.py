#!/usr/bin/env python3
"""Scale model: predicted latency and cost of each TPC-H query at large scale
factors on N Lambda workers of M MB, from measured small-scale runs.

usage:
  model.py predict  --base SF1-profile.json --small SF0.1-profile.json --squall BIN --plans DIR
                    [--sf 100 1000] [--workers 1000] [--memory 3008] [--partitions 256]
  model.py validate --base SF1-profile.json --small SF0.1-profile.json --squall BIN --plans DIR
                    --measured SF10-profile.json

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
  * task counts: scan stages grow with their row groups (squall splits by
    row groups toward a byte target, --task-mb), hash stages get one task per
    --reduce-mb of exchange input, at most --partitions (squall forms them
    from the measured map outputs), gather stages one;
  * the stage graph: a stage starts when all its inputs are done.

Embedded prediction (validate): each stage takes max(one task, total work /
slots); the query's stage time is max(critical path, all work / slots); the
part of the base wall time the stages do not explain (planning,
coordination, result assembly) is kept fixed.

Lambda prediction (predict): each task = start (cold start the first time an
environment is used) + its reads (sequential ranged GETs for the row groups
it scans, one footer GET, or one GET per map output of its inputs (a
reduce task's contiguous range of partitions is one GET), 32 at a
time, each latency drawn from the distribution below, bytes at 80 MB/s) + its
CPU work (one thread; Lambda gives a full vCPU from 1,769 MB, less below) +
one PUT of its output. Tasks are placed on N workers as they free up;
environments appear at 1,000 per 10 s; invocations are issued at the lower
of Lambda's side (3,000 per second, tree fan-out) and the coordinator's own
scheduling rate, measured with `squall bench scheduler --tasks 100000`
(no-op tasks over in-process seams: 34,888 tasks/s on a 2-core machine, dev
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

The published figures (see PARAMETERS) are inputs, not measurements of
this project: the GET tail shape in particular is an assumption.
"""
import argparse
import heapq
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

PARAMETERS = {
    # S3 GET first-byte latency: lognormal, median and spread; plus a rare
    # multi-second tail (a slow or retried request). Published: median
    # ~20-40 ms, "multi-second tails".
    "get_median_ms": 30.0, "get_sigma": 0.6, "tail_prob": 0.001, "tail_ms": (1000.0, 3000.0),
    "put_median_ms": 60.0, "put_sigma": 0.6,
    "function_mb_per_s": 80.0,          # sustained network per function
    "env_per_10s": 1000,                # new environments per function per 10 s
    "invokes_per_s": 3000.0,            # coordinator (tree) invocation rate, Lambda's side
    "coordinator_tasks_per_s": 34888.0, # measured: squall bench scheduler --tasks 100000
    "cold_start_ms": 250.0,             # a Rust arm64 function's first invocation
    "warm_start_ms": 15.0,              # async invoke to handler, warm
    "s3_get_per_s": 5500.0, "s3_put_per_s": 3500.0,   # per prefix
    "stage_handoff_ms": 30.0,           # SQS message to the next stage's launch
    "vcpu_mb": 1769.0,                  # memory that buys one full vCPU
    "fetch_concurrency": 32,            # squall.shuffle.fetch_concurrency (sam-template.yaml)
    "footer_concurrency": 32,           # coordinator footer reads in flight
    "combine_max_bytes": 64 * 1024 * 1024,  # squall.shuffle.combine_max_bytes
}


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


STAGE_RE = re.compile(r"^Stage s(\d+)(?: \(final\))? \[(.*?)\](?: <- (.*?))?(?:, (after key filter of .*))?$")


def stage_graph(squall, data, q, cache_dir=None):
    """{stage: [input stages]} from `squall query "explain ..."`."""
    cache = os.path.join(cache_dir, f"q{q:02d}.explain") if cache_dir else None
    if cache and os.path.exists(cache):
        with open(cache) as f:
            text = f.read()
    else:
        with open(os.path.join(QUERIES, f"q{q:02d}.sql")) as f:
            sql = f.read()
        text = subprocess.run([squall, "query", "--catalog", data, "explain " + strip_comments(sql)],
                              capture_output=True, text=True, check=True).stdout
        if cache:
            os.makedirs(cache_dir, exist_ok=True)
            with open(cache, "w") as f:
                f.write(text)
    return parse_explain(text)


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


# ------------------------------------------------------------------ per-stage figures
def volume(s):
    return (s.get("scan_bytes") or 0) + (s.get("bytes_in_exchange") or 0)


def growth_exponent(base_stage, small_stage, scale_ratio):
    """a with volume ~ SF^a, from two scales; scans default to 1, others to 0."""
    default = 1.0 if base_stage.get("row_groups") else 0.0
    if small_stage is None:
        return default
    vb, vs = volume(base_stage), volume(small_stage)
    if vb <= 0 or vs <= 0:
        return default
    return min(max(math.log(vb / vs) / math.log(scale_ratio), 0.0), 1.0)


def task_overhead_ms(profiles):
    means = sorted(s["task_wall_ms_sum"] / s["tasks"] for p in profiles.values()
                   for s in p["profile"]["stage_profiles"] if s["tasks"])
    if not means:
        return 0.0
    return means[max(0, int(0.05 * len(means)) - 1)]


def stages_of(base, small, scale_ratio, c0):
    """Per stage: the figures the predictions scale."""
    small_by = {s["stage"]: s for s in (small or {}).get("profile", {}).get("stage_profiles", [])}
    out = []
    for s in base["profile"]["stage_profiles"]:
        a = growth_exponent(s, small_by.get(s["stage"]), scale_ratio)
        work = max(0.0, s["task_wall_ms_sum"] - s["tasks"] * c0)
        out.append({
            "stage": s["stage"], "layout": s["layout"], "tasks": s["tasks"], "alpha": a, "work_ms": work,
            "row_groups": s.get("row_groups") or 0, "scan_bytes": s.get("scan_bytes") or 0,
            "bytes_in": s.get("bytes_in_exchange") or 0, "bytes_out": s.get("bytes_out") or 0,
            "rows_out": s.get("rows_out") or 0,
            "is_scan": s["layout"] == "scan",
        })
    return out


def scaled_tasks(st, g):
    if st["is_scan"] and st["row_groups"] >= st["tasks"]:
        return max(st["tasks"], int(round(st["tasks"] * g)))
    return st["tasks"]


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


def topo_key(sid, graph, memo=None):
    memo = {} if memo is None else memo
    if sid in memo:
        return memo[sid]
    memo[sid] = 1 + max([topo_key(i, graph, memo) for i in graph.get(sid, [])] or [0])
    return memo[sid]


def predict_embedded(base_q, small_q, graph, scale, slots, c0, scale_ratio):
    stages = stages_of(base_q, small_q, scale_ratio, c0)
    t_base = embedded_stages_ms(stages, graph, 1.0, slots, c0)
    t_scaled = embedded_stages_ms(stages, graph, scale, slots, c0)
    wall = base_q["median_ms"] or base_q["wall_ms"]
    fixed = max(wall - t_base, 0.0)
    return fixed + t_scaled * (wall - fixed) / t_base if t_base > 0 else wall


# ------------------------------------------------------------------ Lambda (predict)
class Latency:
    def __init__(self, rng, p):
        self.rng, self.p = rng, p

    def _draw(self, median, sigma):
        v = median * math.exp(self.rng.gauss(0.0, sigma))
        if self.rng.random() < self.p["tail_prob"]:
            v += self.rng.uniform(*self.p["tail_ms"])
        return v

    def get(self):
        return self._draw(self.p["get_median_ms"], self.p["get_sigma"])

    def mean_max(self, k, n=4000):
        """Mean of the slowest of k concurrent GETs (sampled once per k)."""
        cache = self.__dict__.setdefault("_mean_max", {})
        if k not in cache:
            cache[k] = sum(max(self.get() for _ in range(k)) for _ in range(n)) / n
        return cache[k]

    def put(self):
        return self._draw(self.p["put_median_ms"], self.p["put_sigma"])


def nonempty_fraction(rows, partitions):
    """Expected share of `partitions` hash partitions that `rows` rows fill."""
    if partitions <= 1:
        return 1.0
    return 1.0 - (1.0 - 1.0 / partitions) ** max(rows, 0.0)


def lambda_query(base_q, small_q, plan, scale, workers, memory_mb, partitions, c0, scale_ratio, rng, p,
                 plan_ms, files_base, task_mb=32, reduce_mb=64):
    graph, modes = plan
    stages = stages_of(base_q, small_q, scale_ratio, c0)
    by = {st["stage"]: st for st in stages}
    speed = min(1.0, memory_mb / p["vcpu_mb"])
    mbps = p["function_mb_per_s"] * 1000.0  # bytes per ms = MB/s * 1e6 / 1e3
    lat = Latency(rng, p)
    envs_created = 0
    finish, tasks_of = {}, {}
    usage = {"worker_invocations": 0, "worker_ms": 0.0, "s3_get": 0, "s3_head": 0, "s3_put": 0,
             "s3_list": 0, "s3_delete": 0}
    prefixes = max(1, min(256, int(p.get("s3_prefixes", 1))))
    shards_used = 0
    # Planning: measured at the base scale, plus the coordinator's footer reads.
    files = files_base * scale
    t0 = plan_ms + math.ceil(files / p["footer_concurrency"]) * p["get_median_ms"]
    usage["s3_get"] += int(math.ceil(files))
    for sid in sorted(by, key=lambda s: topo_key(s, graph)):
        st = by[sid]
        g = scale ** st["alpha"]
        if st["is_scan"]:
            n = max(1, math.ceil(scaled_tasks(st, g) * 32 / task_mb))
        elif st["layout"].startswith("hash"):
            # Reduce tasks are formed from the measured partition sizes: one
            # per reduce_mb of exchange input, at most the partitions.
            # (reduce_mb 0: one task per partition, as before coalescing.)
            n = partitions if reduce_mb <= 0 else \
                min(partitions, max(1, math.ceil(st["bytes_in"] * g / (reduce_mb * 1024 * 1024))))
        else:
            n = 1
        tasks_of[sid] = n
        inputs = graph.get(sid, [])
        start = max([finish.get(i, t0) for i in inputs] or [t0]) + p["stage_handoff_ms"]
        # Ranged GETs per task: one per map output whose range for the task is
        # non-empty (a hash read takes its range of partitions, which a map
        # task with few rows may leave empty; a gather reads all). A broadcast
        # input the coordinator combined (squall.shuffle.combine_max_bytes) is
        # one GET per task, after the coordinator's m_i GETs and one PUT.
        map_outputs, combine_gets, combine_ms = 0.0, 0, 0.0
        # GETs per second the inputs' shards can serve together.
        exchange_rate = 0.0
        # What the stage reads (a key filter's stage is waited for, not read).
        reads = [i for i in inputs if i in modes[sid]] if modes.get(sid) else inputs
        for i in reads:
            exchange_rate += p["s3_get_per_s"] * min(prefixes, tasks_of.get(i, 1))
        for i in reads:
            m_i = tasks_of.get(i, 1)
            mode = modes.get(sid, {}).get(i)
            if mode == "hash" and i in by:
                src = by[i]
                rows_per_map = src["rows_out"] * scale ** src["alpha"] / m_i
                map_outputs += m_i * nonempty_fraction(rows_per_map, n)
            elif (mode == "broadcast" and i in by and m_i * n > m_i + n + 1
                  and by[i]["bytes_out"] * scale ** by[i]["alpha"] <= p["combine_max_bytes"]):
                map_outputs += 1
                combine_gets += m_i
                k = min(p["fetch_concurrency"], m_i)
                combine_ms = max(combine_ms, math.ceil(m_i / k) * lat.mean_max(k) + p["put_median_ms"])
            else:
                map_outputs += m_i
        map_outputs = int(math.ceil(map_outputs))
        start += combine_ms
        usage["s3_get"] += combine_gets
        usage["s3_put"] += 1 if combine_gets else 0
        work_per_task = st["work_ms"] * g / n / speed
        scan_bytes = st["scan_bytes"] * g / n
        in_bytes = st["bytes_in"] * g / n
        out_bytes = st["bytes_out"] * g / n
        rg_per_task = max(1, math.ceil(st["row_groups"] * g / n)) if st["is_scan"] else 0
        durations, gets, scan_gets = [], 0, 0
        for _ in range(n):
            io = 0.0
            if st["is_scan"]:
                io += lat.get() + sum(lat.get() for _ in range(rg_per_task))
                scan_gets += 1 + rg_per_task
            if map_outputs:
                k = min(p["fetch_concurrency"], map_outputs)
                batches = math.ceil(map_outputs / k)
                if batches <= 32:
                    for _b in range(batches):
                        io += max(lat.get() for _ in range(k))
                else:  # a sum of many batches: its mean, from a sample
                    io += batches * lat.mean_max(k)
                gets += map_outputs
            io += (scan_bytes + in_bytes + out_bytes) / mbps
            durations.append(io + work_per_task + lat.put())
        # Place tasks on workers: a warm environment when one is free first,
        # else a new one (cold start), new ones ramping 1,000 per 10 s from
        # the query's start; the coordinator issues invocations at a rate.
        free = [start] * min(envs_created, workers)
        heapq.heapify(free)
        ends = []
        for i, d in enumerate(durations):
            issue = start + i / min(p["invokes_per_s"], p["coordinator_tasks_per_s"]) * 1000.0
            warm = max(free[0], issue) + p["warm_start_ms"] if free else math.inf
            cold = math.inf
            if envs_created < workers:
                cold = max(issue, (envs_created // p["env_per_10s"]) * 10_000.0) + p["cold_start_ms"]
            if warm <= cold:
                heapq.heappop(free)
                begin = warm
            else:
                envs_created += 1
                begin = cold
            ends.append(begin + d)
            heapq.heappush(free, begin + d)
        makespan = max(ends) - start
        # The per-prefix request rates bound the stage: its scan reads over
        # --s3-prefixes, its exchange reads over its inputs' shards, its PUTs
        # over the shards its own tasks take.
        floor = max(scan_gets / (p["s3_get_per_s"] * prefixes),
                    gets / exchange_rate if gets else 0.0,
                    n / (p["s3_put_per_s"] * min(prefixes, n))) * 1000.0
        finish[sid] = start + max(makespan, floor)
        shards_used = min(prefixes, shards_used + min(prefixes, n))
        usage["worker_invocations"] += n
        usage["worker_ms"] += sum(durations)
        usage["s3_get"] += gets + scan_gets
        usage["s3_put"] += n
        usage["s3_delete"] += n
        # Stop-marker looks: one as a task starts, one per second it runs.
        usage["s3_head"] += sum(1 + int(d // 1000.0) for d in durations)
    latency = max(finish.values()) + lat.get()  # the coordinator reads the result
    usage["s3_get"] += 1
    # Cleanup: a LIST per shard written to (per 1,000 objects in it).
    usage["s3_list"] += max(shards_used, math.ceil(usage["s3_delete"] / 1000))
    return latency, usage


def overheads(usage, latency_ms, state_poll_ms=500.0):
    """What a query asks of SQS, the coordinator function's state and the API
    besides its tasks' reads and writes, as planner/src/cost.rs counts and
    estimates them (AwsEstimate): into `usage`, returned as CostInputs."""
    n = usage["worker_invocations"]
    polls = math.ceil(latency_ms / state_poll_ms)
    batches = math.ceil(n / 10)
    sqs = 2 + n + 2 * batches + math.ceil(latency_ms / 1000.0)
    stop = {"head": 0, "put": 1}                                   # the stop marker
    state = {"get": 1, "head": 2 + polls, "put": 3 + min(polls, n)}  # coordinator function
    api = {"get": polls + 2, "head": polls, "put": 1}               # the client's polls
    return {
        "worker_invocations": n, "worker_ms": int(math.ceil(usage["worker_ms"])),
        "api_invocations": 2 + math.ceil(latency_ms / 1000.0),
        "s3_get": usage["s3_get"] + state["get"] + api["get"],
        "s3_head": usage["s3_head"] + stop["head"] + state["head"] + api["head"],
        "s3_put": usage["s3_put"] + stop["put"] + state["put"] + api["put"],
        "s3_list": usage["s3_list"], "s3_delete": usage["s3_delete"], "sqs_requests": sqs,
    }


def default_prefixes(squall):
    """`squall.shuffle.prefixes` as `squall config` shows it (environment included)."""
    out = subprocess.run([squall, "config"], capture_output=True, text=True, check=True).stdout
    return prefixes_setting(out)


def prefixes_setting(config_text):
    """The `squall.shuffle.prefixes = N` line of `squall config`'s output (1 without one)."""
    m = re.search(r"^squall\.shuffle\.prefixes = (\d+)", config_text, re.M)
    return int(m.group(1)) if m else 1


def price(squall, usages):
    """Price predicted usage with the Rust formula (`squall cost`)."""
    lines = "".join(json.dumps(u) + "\n" for u in usages)
    out = subprocess.run([squall, "cost"], input=lines, capture_output=True, text=True, check=True).stdout
    return [json.loads(l) for l in out.splitlines() if l.strip()]


def footer_files(data):
    n = 0
    for root, _dirs, files in os.walk(data):
        n += sum(1 for f in files if f.endswith(".parquet"))
    return n


# ------------------------------------------------------------------ commands
def common(args):
    sf_base, ready, base = load_profiles(args.base)
    sf_small, _, small = load_profiles(args.small) if args.small else (None, {}, {})
    ratio = (sf_base / sf_small) if sf_small else 10.0
    c0 = task_overhead_ms(base)
    graphs = {q: stage_graph(args.squall, args.plans, q, args.plan_cache) for q in base}
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
    files = footer_files(args.plans)
    p = dict(PARAMETERS)
    p["s3_prefixes"] = args.s3_prefixes if args.s3_prefixes else default_prefixes(args.squall)
    p["combine_max_bytes"] = args.combine_mb * 1024 * 1024
    print(f"Lambda: {args.workers} workers x {args.memory} MB, {args.partitions} hash partitions, "
          f"{args.task_mb} MiB scan tasks, {args.reduce_mb} MiB reduce tasks; "
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
        usages, lats = [], []
        for q in sorted(base):
            rng = random.Random(args.seed * 1000 + q)
            plan_ms = max((base[q].get("wall_ms") or 0) - (base[q]["profile"].get("wall_ms") or 0), 0.0)
            latency, usage = lambda_query(base[q], small.get(q), graphs[q], scale, args.workers, args.memory,
                                          args.partitions, c0, ratio, rng, p, plan_ms, files, args.task_mb,
                                          args.reduce_mb)
            inputs = overheads(usage, latency)
            inputs.update({"worker_memory_mb": args.memory, "coordinator_ms": int(math.ceil(latency)),
                           "coordinator_memory_mb": args.coordinator_memory})
            usages.append(inputs)
            lats.append((q, latency))
        costs = price(args.squall, usages)
        print(f"\nSF{sf:g}: {'query':>5} {'latency s':>10} {'tasks':>7} {'GETs':>9} {'PUTs':>7} "
              f"{'GB-s':>9} {'cost USD':>10}")
        for (q, latency), u, c in zip(lats, usages, costs):
            print(f"       q{q:02d} {latency / 1000:>10.2f} {u['worker_invocations']:>7} {u['s3_get']:>9} "
                  f"{u['s3_put']:>7} {c['lambda_gb_seconds']:>9.1f} {c['total_usd']:>10.4f}")
            results.append({"sf": sf, "query": q, "latency_s": latency / 1000, "usage": u, "cost": c})
        tot = sum(c["total_usd"] for c in costs)
        print(f"       all {sum(l for _, l in lats) / 1000:>10.2f} s in sequence, geomean "
              f"{stats.geomean([l / 1000 for _, l in lats]):.2f} s, ${tot:.4f} for the 22 queries")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"parameters": p, "workers": args.workers, "memory_mb": args.memory,
                       "partitions": args.partitions, "results": results}, f, indent=1)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("predict", "validate"):
        s = sub.add_parser(name)
        s.add_argument("--base", required=True, help="profile JSON of the base scale (bench/run.py)")
        s.add_argument("--small", help="profile JSON of a 10x smaller scale (growth exponents)")
        s.add_argument("--squall", required=True, help="the squall binary (explain, cost)")
        s.add_argument("--plans", required=True, help="data folder of the base scale (for explain)")
        s.add_argument("--plan-cache", help="folder to keep explain outputs in")
        s.add_argument("--json", help="write the predictions here")
        if name == "validate":
            s.add_argument("--measured", required=True, help="profile JSON of the scale to predict")
        else:
            s.add_argument("--sf", type=float, nargs="+", default=[100, 1000])
            s.add_argument("--workers", type=int, default=1000)
            s.add_argument("--memory", type=int, default=3008)
            s.add_argument("--coordinator-memory", type=int, default=1024)
            s.add_argument("--partitions", type=int, default=1000,
                           help="squall.shuffle.partitions (the deployed default)")
            s.add_argument("--task-mb", type=int, default=256,
                           help="squall.scan.target_task_bytes in MiB (the deployed default)")
            s.add_argument("--reduce-mb", type=int, default=64,
                           help="squall.shuffle.target_task_bytes in MiB (the deployed default; 0 = a task per partition)")
            s.add_argument("--combine-mb", type=int, default=64,
                           help="squall.shuffle.combine_max_bytes in MiB (0 = broadcasts never combined)")
            s.add_argument("--seed", type=int, default=7)
            s.add_argument("--s3-prefixes", type=int, default=None,
                           help="S3 prefixes exchange keys spread over (each 5,500 GET/s, 3,500 PUT/s); "
                                "default squall.shuffle.prefixes as `squall config` shows it")
    args = ap.parse_args(argv)
    return {"predict": cmd_predict, "validate": cmd_validate}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
