"""The Lambda half of the scale model (model.py predict): one query's stages
run as tasks on N workers, from the per-stage figures of model_stages.py.
Every assumption is in model.py's docstring and in PARAMETERS below."""
import heapq
import math

from model_stages import scaled_tasks, stages_of, topo_key

PARAMETERS = {
    # S3 GET first-byte latency: lognormal, median and spread; plus a rare
    # multi-second tail (a slow or retried request). Published: median
    # ~20-40 ms, "multi-second tails".
    "get_median_ms": 30.0, "get_sigma": 0.6, "tail_prob": 0.001, "tail_ms": (1000.0, 3000.0),
    "hedge_after_ms": 500.0,            # squall.store.hedge_after_ms: a slow read is sent again
    "put_median_ms": 60.0, "put_sigma": 0.6,
    "function_mb_per_s": 80.0,          # sustained network per function
    "env_per_10s": 1000,                # new environments per function per 10 s
    "invokes_per_s": 3000.0,            # coordinator (tree) invocation rate, Lambda's side
    "coordinator_tasks_per_s": 30241.0, # measured: squall bench scheduler --tasks 100000 (2026-12-02)
    "cold_start_ms": 250.0,             # a Rust arm64 function's first invocation
    "warm_start_ms": 15.0,              # async invoke to handler, warm
    "s3_get_per_s": 5500.0, "s3_put_per_s": 3500.0,   # per prefix
    "stage_handoff_ms": 30.0,           # SQS message to the next stage's launch
    "vcpu_mb": 1769.0,                  # memory that buys one full vCPU
    "fetch_concurrency": 32,            # squall.shuffle.fetch_concurrency (sam-template.yaml)
    # More GETs in flight when a read's ranges are small (fetches_in_flight in
    # shuffle_read.rs): as many as fit squall.shuffle.fetch_budget_bytes, up to
    # 128 (MAX_FETCHES_IN_FLIGHT; a task's reads here are one partition each).
    "fetch_budget_bytes": 16 * 1024 * 1024, "max_fetches_in_flight": 128,
    # Reduce tasks: at least min_tasks while each reads min_task_bytes
    # (squall.shuffle.min_tasks / min_task_bytes, as sam-template.yaml
    # deploys them; 0 bytes = min_tasks whatever the bytes).
    "min_tasks": 64, "min_task_bytes": 16 * 1024 * 1024,
    "footer_concurrency": 128,          # planning's footer reads in flight after its first 64 (split.rs)
    "footer_bytes": 64 * 1024,          # the tail a footer read fetches first (split.rs)
    "coordinator_mb_per_s": 80.0,       # the coordinator function's network
    "warm_footers": False,              # footers cached by a warm coordinator (FooterCache)
    "combine_max_bytes": 64 * 1024 * 1024,  # squall.shuffle.combine_max_bytes
    # Scan read-ahead (squall.scan.read_ahead_bytes / _windows): a scan task
    # waits for its first window, then fetches while it decodes.
    "read_ahead_bytes": 8 * 1024 * 1024, "read_ahead_windows": 2,
    # Two-level exchange: a hash read of m map objects by n tasks with
    # m x n >= this many GETs goes through an a x b grid of combine tasks
    # (squall.shuffle.two_level_min_requests; 0 = never).
    "two_level_min_requests": 20_000,
    "combine_task_bytes": 64 * 1024 * 1024,   # bytes a combine task moves (squall.shuffle.target_task_bytes)
    "base_task_mb": 32,                 # scan task size of the base profile's run
    # Scan tasks at the target scale: None = the base run's tasks grown with
    # the scale (as `requests` checks them at the base scale), else
    # split.rs's rule: the stage's bytes over the target, at least
    # squall.scan.min_tasks while each still reads
    # squall.scan.min_task_bytes (predict: 64 and 16 MiB, as
    # sam-template.yaml deploys them).
    "scan_min_tasks": None,
    "scan_min_task_bytes": 0,
    "row_group_factor": 1.0,            # the target data's row groups this many times the base's
    "scan_threads": 1,                  # squall.scan.task_partitions
    # Key filters (squall.bloom.*): inline in the payload up to
    # inline_max_bytes, else one GET per probe task; exact sets up to
    # exact_max_keys keys, Bloom filters at fpp beyond; none past max_keys.
    "filter_inline_bytes": 128 * 1024, "filter_exact_max_keys": 16_384, "filter_fpp": 0.01,
    "filter_max_keys": 16_000_000,
}


class Latency:
    def __init__(self, rng, p):
        self.rng, self.p = rng, p

    def _draw(self, median, sigma):
        v = median * math.exp(self.rng.gauss(0.0, sigma))
        if self.rng.random() < self.p["tail_prob"]:
            v += self.rng.uniform(*self.p["tail_ms"])
        return v

    def get(self):
        """A read's latency. A read still unanswered after hedge_after_ms is
        sent again and the first answer wins (squall.store.hedge_after_ms,
        planner/core/src/requests), so a tail draw costs at most the hedge
        delay plus a second read."""
        v = self._draw(self.p["get_median_ms"], self.p["get_sigma"])
        h = self.p["hedge_after_ms"]
        if 0 < h < v:
            v = min(v, h + self._draw(self.p["get_median_ms"], self.p["get_sigma"]))
        return v

    def hedged_fraction(self):
        """Share of reads that are sent twice: the tail, plus the lognormal
        body beyond the hedge delay."""
        p, h = self.p, self.p["hedge_after_ms"]
        if h <= 0:
            return 0.0
        body = 0.5 * math.erfc(math.log(h / p["get_median_ms"]) / (p["get_sigma"] * math.sqrt(2.0)))
        return p["tail_prob"] + body

    def mean_get(self):
        p = self.p
        tail = sum(p["tail_ms"]) / 2
        if p["hedge_after_ms"] > 0:
            tail = min(tail, p["hedge_after_ms"])
        return p["get_median_ms"] * math.exp(p["get_sigma"] ** 2 / 2) + p["tail_prob"] * tail

    def mean_max(self, k, n=4000):
        """Mean of the slowest of k concurrent GETs (sampled once per k)."""
        cache = self.__dict__.setdefault("_mean_max", {})
        if k not in cache:
            cache[k] = sum(max(self.get() for _ in range(k)) for _ in range(n)) / n
        return cache[k]

    def batches(self, gets, k):
        """Time to make `gets` GETs, k at a time."""
        if gets <= 0:
            return 0.0
        k = max(1, min(k, gets))
        rounds = math.ceil(gets / k)
        if rounds <= 32:
            return sum(max(self.get() for _ in range(k)) for _ in range(rounds))
        return rounds * self.mean_max(k)  # a sum of many rounds: its mean, from a sample

    def put(self):
        return self._draw(self.p["put_median_ms"], self.p["put_sigma"])


def fetches_in_flight(p, gets, range_bytes):
    """GETs a read of `gets` ranges of about `range_bytes` each keeps in flight."""
    by_bytes = int(p["fetch_budget_bytes"] // max(1.0, range_bytes))
    return max(p["fetch_concurrency"], min(by_bytes, p["max_fetches_in_flight"], int(gets)))


def nonempty_fraction(rows, partitions):
    """Expected share of `partitions` hash partitions that `rows` rows fill."""
    if partitions <= 1:
        return 1.0
    return 1.0 - (1.0 - 1.0 / partitions) ** max(rows, 0.0)


def two_level_requests(m, n, a, b, weight):
    """Requests of a two-level exchange through an a x b grid, in GETs
    (planner/src/two_level.rs): m*b GETs of the combine tasks, at most
    a*(n + b - 1) of the readers (n contiguous reader ranges meet b
    contiguous combine ranges at most n + b - 1 times), and each combine
    task's PUT, invocation and completion message at `weight` GETs."""
    return m * b + a * (n + b - 1) + weight * a * b


def combine_grid(m, n, total_bytes, task_bytes, partitions=None, weight=14.0):
    """(a, b, two-level requests): the grid the coordinator forms for a hash
    read of m map objects by n tasks moving total_bytes (grid.rs and
    two_level.rs's choose_grid): at least k = total/task_bytes combine
    tasks, a = ceil(k/b), the b (up to k and the partitions) with the fewest
    requests."""
    m, n = max(1, m), max(1, n)
    k = max(1, math.ceil(total_bytes / max(1, task_bytes)))
    best = None
    for b in range(1, max(1, min(k, partitions or k)) + 1):
        a = min(m, max(1, math.ceil(k / b)))
        cost = two_level_requests(m, n, a, b, weight)
        reaches = a * b >= k
        key = (not reaches, cost if reaches else -(a * b))
        if best is None or key < best[0]:
            best = (key, a, b, cost)
    return best[1], best[2], best[3]


class Placement:
    """Tasks placed on workers: a warm environment when one is free first,
    else a new one (cold start), new ones ramping 1,000 per 10 s from the
    query's start; the coordinator issues invocations at a rate."""

    def __init__(self, workers, p):
        self.workers, self.p, self.envs = workers, p, 0
        self.rate = min(p["invokes_per_s"], p["coordinator_tasks_per_s"])

    def run(self, durations, start):
        free = [start] * min(self.envs, self.workers)
        heapq.heapify(free)
        ends = []
        for i, d in enumerate(durations):
            issue = start + i / self.rate * 1000.0
            warm = max(free[0], issue) + self.p["warm_start_ms"] if free else math.inf
            cold = math.inf
            if self.envs < self.workers:
                cold = max(issue, (self.envs // self.p["env_per_10s"]) * 10_000.0) + self.p["cold_start_ms"]
            if warm <= cold:
                heapq.heappop(free)
                begin = warm
            else:
                self.envs += 1
                begin = cold
            ends.append(begin + d)
            heapq.heappush(free, begin + d)
        return max(ends) - start if ends else 0.0


def scan_io(lat, p, scan_bytes, rg_per_task, mbps):
    """A scan task's reads: (time before its CPU work can start, time that
    overlaps it, GETs). One footer GET (a warm environment's cache is not
    counted on), then a GET per row group (its column chunks coalesce into
    one). With read-ahead, the first row group comes alone (the decoder
    starts on it: read_ahead.rs) and the rest in windows of read_ahead_bytes
    fetched while the task decodes; without, one row group at a time, each
    round trip waited out."""
    gets = 1 + rg_per_task
    w = p["read_ahead_bytes"]
    if w <= 0:
        return lat.get() + sum(lat.get() for _ in range(rg_per_task)) + scan_bytes / mbps, 0.0, gets
    first_bytes = min(w, scan_bytes / max(1, rg_per_task))
    windows = 1 + math.ceil(max(0.0, scan_bytes - first_bytes) / w)
    first = lat.get() + lat.get() + first_bytes / mbps
    rest = (scan_bytes - first_bytes) / mbps + (windows - 1) * lat.mean_get() / max(1, p["read_ahead_windows"])
    return first, rest, gets


def key_filter_bytes(base_q, source, growth, p):
    """Bytes of the key filter stage `source` publishes, its keys grown like
    the source's output: an exact set of 8-byte hashes up to
    filter_exact_max_keys keys, a split-block Bloom filter beyond (the bits
    Parquet's formula gives at filter_fpp, rounded up to a power of two of
    32-byte blocks, as planner/core/src/key_filter/filter.rs sizes it);
    0 when the filter is skipped at scale (more keys than filter_max_keys)."""
    keys = sum(f.get("keys") or 0 for f in base_q["profile"].get("filters") or []
               if f.get("source") == source and f.get("kind") in ("exact", "bloom"))
    keys *= growth
    if keys <= 0 or keys > p["filter_max_keys"]:
        return 0.0
    if keys <= p["filter_exact_max_keys"]:
        return 8.0 * keys
    bits = -8.0 * keys / math.log(1.0 - p["filter_fpp"] ** (1.0 / 8.0))
    return 32.0 * 2 ** math.ceil(math.log2(max(1.0, bits / 256.0)))


def lambda_query(base_q, small_q, plan, scale, workers, memory_mb, partitions, c0, scale_ratio, rng, p,
                 plan_ms, files_base, task_mb=32, reduce_mb=64, release_q=None):
    graph, modes = plan
    stages = stages_of(base_q, small_q, scale_ratio, c0)
    by = {st["stage"]: st for st in stages}
    skipped = {f.get("source") for f in base_q["profile"].get("filters") or [] if f.get("kind") == "none"}
    # Filters the run skipped before their stage ended (squall.bloom.early_release):
    # source -> the fraction of its build tasks accepted when it released its
    # probe stages. Measured at the base scale with the thresholds scaled, so
    # it is an upper bound at the target scale (more, smaller tasks reach
    # max_keys at a finer step); `release_q`, the same query run with finer
    # tasks (same plan, same stages), measures it at that finer step.
    released = {f["source"]: min(1.0, f["released_after"] / max(1, f.get("tasks") or 1))
                for f in (release_q or base_q)["profile"].get("filters") or [] if f.get("released_after")}
    speed = min(1.0, memory_mb / p["vcpu_mb"])
    mbps = p["function_mb_per_s"] * 1000.0  # bytes per ms = MB/s * 1e6 / 1e3
    lat = Latency(rng, p)
    place = Placement(workers, p)
    finish, tasks_of, began = {}, {}, {}
    watched = set()
    usage = {"worker_invocations": 0, "worker_ms": 0.0, "s3_get": 0, "s3_head": 0, "s3_put": 0,
             "s3_list": 0, "s3_delete": 0, "stages": []}
    prefixes = max(1, min(256, int(p.get("s3_prefixes", 1))))
    shards_used = 0

    def account(durations, puts_per_task=1):
        usage["worker_invocations"] += len(durations)
        usage["worker_ms"] += sum(durations)
        usage["s3_put"] += len(durations) * puts_per_task
        usage["s3_delete"] += len(durations) * puts_per_task
        # Stop-marker looks: one as a task starts, one per second it runs.
        usage["s3_head"] += sum(1 + int(d // 1000.0) for d in durations)

    # Planning: measured at the base scale, plus the coordinator's footer reads.
    if isinstance(files_base, dict):
        # {stage: files it scans}: each file grows like its stage's input.
        # A file given with its footer's tail (bytes planning fetches) is
        # read with that tail, others with footer_bytes.
        grown, tail = {}, {}
        for sid, paths in files_base.items():
            g = scale ** by[sid]["alpha"] if sid in by else scale
            for f in paths:
                grown[f] = max(grown.get(f, 0.0), g)
                tail[f] = paths[f] if isinstance(paths, dict) else p["footer_bytes"]
        files = sum(grown.values())
        footer_bytes = sum(grown[f] * tail[f] for f in grown)
    else:
        files = files_base * scale
        footer_bytes = files * p["footer_bytes"]
    if p["warm_footers"]:
        files, footer_bytes = 0, 0.0
    t0 = plan_ms + max(math.ceil(files / p["footer_concurrency"]) * p["get_median_ms"],
                       footer_bytes / (p["coordinator_mb_per_s"] * 1000.0))
    usage["s3_get"] += int(math.ceil(files))
    for sid in sorted(by, key=lambda s: topo_key(s, graph)):
        st = by[sid]
        g = scale ** st["alpha"]
        if st["is_scan"] and p.get("scan_min_tasks") is not None:
            # As split.rs deals row groups at the target: the stage's bytes
            # over task_mb, at least squall.scan.min_tasks, at most a task
            # per row group (capped below).
            total = st["scan_bytes"] * g
            least = p["scan_min_tasks"] if not p.get("scan_min_task_bytes") else \
                min(p["scan_min_tasks"], math.ceil(total / p["scan_min_task_bytes"]))
            n = max(least, math.ceil(total / (task_mb * 1024 * 1024)), 1)
            if st["row_groups"]:
                n = min(n, max(1, math.ceil(st["row_groups"] * g / p["row_group_factor"])))
        elif st["is_scan"]:
            # The base run's tasks, grown with the scale (`requests`: at the
            # base scale, exactly the tasks it ran).
            n = max(1, math.ceil(scaled_tasks(st, g) * p["base_task_mb"] / task_mb))
            if st["row_groups"]:
                n = min(n, max(1, math.ceil(st["row_groups"] * g / p["row_group_factor"])))
        elif st["layout"].startswith("hash"):
            # Reduce tasks are formed from the measured partition sizes: one
            # per reduce_mb of exchange input, at most the partitions.
            # (reduce_mb 0: one task per partition, as before coalescing.)
            total = st["bytes_in"] * g
            wanted = max(1, math.ceil(total / (reduce_mb * 1024 * 1024))) if reduce_mb > 0 else partitions
            # Spread (squall.shuffle.min_tasks with min_task_bytes): at least
            # min_tasks tasks while each still reads min_task_bytes.
            least = p["min_tasks"] if not p["min_task_bytes"] else \
                min(p["min_tasks"], math.ceil(total / p["min_task_bytes"]))
            wanted = max(wanted, least)
            n = min(partitions, wanted)
        else:
            n = 1
        tasks_of[sid] = n
        inputs = graph.get(sid, [])
        # What-if (release_skipped_filters): a key filter the run drops (more
        # keys than max_keys) releases its probe stage at once instead of
        # at its source stage's end: an upper bound for releasing it as soon
        # as the coordinator sees a build task overflow.
        waited = [i for i in inputs if not (p.get("release_skipped_filters") and i in skipped
                                            and i not in (modes.get(sid) or {}))]

        def ready(i):
            # A filter source releases its probe stage once its filter is
            # known to be skipped: after that fraction of its tasks.
            if i in released and i not in (modes.get(sid) or {}) and i in began:
                return began[i] + (finish[i] - began[i]) * released[i]
            return finish.get(i, t0)
        start = max([ready(i) for i in waited] or [t0]) + p["stage_handoff_ms"]
        began[sid] = start
        record = {"stage": sid, "tasks": n, "exchange_gets": 0, "scan_gets": 0, "combine_gets": 0,
                  "grids": []}
        # Ranged GETs per task: one per map output whose range for the task is
        # non-empty (a hash read takes its range of partitions, which a map
        # task with few rows may leave empty; a gather reads all). A broadcast
        # input the coordinator combined (squall.shuffle.combine_max_bytes) is
        # one GET per task, after the coordinator's m_i GETs and one PUT. A
        # hash read through a two-level exchange reads a combine outputs.
        map_outputs, combine_gets, combine_ms = 0.0, 0, 0.0
        # GETs per second the inputs' shards can serve together.
        exchange_rate = 0.0
        # What the stage reads (a key filter's stage is waited for, not read).
        reads = [i for i in inputs if i in modes[sid]] if sid in modes else inputs
        for i in reads:
            exchange_rate += p["s3_get_per_s"] * min(prefixes, tasks_of.get(i, 1))
        # The planner places combine stages where the reading stage's direct
        # GETs, summed over its hash reads, reach the threshold.
        # (of multi-task map stages by a multi-task stage, as it counts them).
        stage_direct = sum(tasks_of.get(i, 1) * n for i in reads
                           if modes.get(sid, {}).get(i) == "hash" and i in by
                           and tasks_of.get(i, 1) > 1 and n > 1)
        for i in reads:
            m_i = tasks_of.get(i, 1)
            mode = modes.get(sid, {}).get(i)
            if mode == "hash" and i in by:
                src = by[i]
                rows_per_map = src["rows_out"] * scale ** src["alpha"] / m_i
                reading = m_i * nonempty_fraction(rows_per_map, n)
                two = p["two_level_min_requests"]
                total = src["bytes_out"] * scale ** src["alpha"]
                # Placed where the planner expects that many GETs or more; formed
                # (not forwarded) where the grid at least halves the requests.
                if two > 0 and stage_direct >= two:
                    a, b, cost = combine_grid(m_i, n, total, p["combine_task_bytes"], partitions)
                else:
                    a, b, cost = 0, 0, math.inf
                if cost * 2 <= reading * n:
                    # A combine task regroups bytes (no decoding): its reads
                    # and its one write, each at the function's bandwidth.
                    per = total / (a * b)
                    k = fetches_in_flight(p, math.ceil(m_i / a), per / math.ceil(m_i / a))
                    durations = [lat.batches(math.ceil(m_i / a), k) + 2 * per / mbps
                                 + lat.put() for _ in range(a * b)]
                    begin = max(finish.get(i, t0), t0) + p["stage_handoff_ms"]
                    combine_ms = max(combine_ms, begin + place.run(durations, begin) - start)
                    account(durations)
                    usage["s3_get"] += m_i * b
                    record["grids"].append((i, a, b, m_i * b))
                    reading = a * (n + b - 1) / n
                map_outputs += reading
            elif (mode == "broadcast" and i in by and m_i * n > m_i + n + 1
                  and by[i]["bytes_out"] * scale ** by[i]["alpha"] <= p["combine_max_bytes"]):
                map_outputs += 1
                combine_gets += m_i
                k = min(p["fetch_concurrency"], m_i)
                combine_ms = max(combine_ms, math.ceil(m_i / k) * lat.mean_max(k) + p["put_median_ms"])
            else:
                map_outputs += m_i
        map_outputs = int(math.ceil(map_outputs))
        start += max(0.0, combine_ms)
        usage["s3_get"] += combine_gets
        usage["s3_put"] += 1 if combine_gets else 0
        record["combine_gets"] = combine_gets
        # A scan task reads with squall.scan.task_partitions threads (the
        # operators above its scan run per partition too), up to the vCPUs
        # its memory buys; other tasks run on one.
        threads = p["scan_threads"] if st["is_scan"] else 1
        work_per_task = st["work_ms"] * g / n / min(float(threads), memory_mb / p["vcpu_mb"], speed * threads)
        scan_bytes = st["scan_bytes"] * g / n
        in_bytes = st["bytes_in"] * g / n
        out_bytes = st["bytes_out"] * g / n
        rg_per_task = max(1, math.ceil(st["row_groups"] * g / p["row_group_factor"] / n)) if st["is_scan"] else 0
        durations, gets, scan_gets, filter_gets = [], 0, 0, 0
        spent = usage.setdefault("spent_ms", dict.fromkeys(
            ("scan first window", "exchange first GETs", "key filters", "CPU", "reads beyond the CPU",
             "output bytes", "PUT"), 0.0))
        # Key filters the stage applies: each task reads every one that does
        # not travel inside its payload (one GET of the whole filter).
        filter_bytes = [b for b in (key_filter_bytes(base_q, i, scale ** by[i]["alpha"] if i in by else scale, p)
                                    for i in inputs if i not in reads) if b > p["filter_inline_bytes"]]
        for _ in range(n):
            # Waited for before the CPU work starts: the first scan window,
            # the first round of exchange GETs. Overlapping it (the reads
            # stream: read-ahead, and a shuffle read's fetch_concurrency GETs
            # in flight as its batches are consumed): the rest of both, on
            # one network. After it: the output's bytes and its PUT.
            before, overlapped = 0.0, 0.0
            for b in filter_bytes:
                t = lat.get() + b / mbps
                before += t
                filter_gets += 1
                spent["key filters"] += t
            if st["is_scan"]:
                first, rest, k = scan_io(lat, p, scan_bytes, rg_per_task, mbps)
                before += first
                overlapped += rest
                scan_gets += k
                spent["scan first window"] += first
            if map_outputs:
                first = lat.get()
                k = fetches_in_flight(p, map_outputs, in_bytes / map_outputs)
                trips = max(0.0, lat.batches(map_outputs, k) - first)
                before += first
                overlapped += trips + in_bytes / mbps
                gets += map_outputs
                spent["exchange first GETs"] += first
            after = out_bytes / mbps
            put = lat.put()
            spent["output bytes"] += after
            spent["CPU"] += work_per_task
            spent["reads beyond the CPU"] += max(0.0, overlapped - work_per_task)
            spent["PUT"] += put
            durations.append(before + max(work_per_task, overlapped) + after + put)
        makespan = place.run(durations, start)
        # The per-prefix request rates bound the stage: its scan reads over
        # --s3-prefixes, its exchange reads over its inputs' shards, its PUTs
        # over the shards its own tasks take.
        floor = max(scan_gets / (p["s3_get_per_s"] * prefixes),
                    gets / exchange_rate if gets else 0.0,
                    n / (p["s3_put_per_s"] * min(prefixes, n))) * 1000.0
        finish[sid] = start + max(makespan, floor)
        shards_used = min(prefixes, shards_used + min(prefixes, n))
        account(durations)
        usage["s3_get"] += gets + scan_gets + filter_gets
        # The coordinator reads each build task's key section (one GET), up
        # to the task that released the probe stage.
        for i in inputs:
            if i not in reads and i not in watched:
                watched.add(i)
                usage["s3_get"] += int(math.ceil(tasks_of.get(i, 1) * released.get(i, 1.0)))
        record.update(exchange_gets=gets, scan_gets=scan_gets, filter_gets=filter_gets,
                      start_ms=round(start), finish_ms=round(finish[sid]),
                      task_ms_max=round(max(durations)), task_ms_mean=round(sum(durations) / n),
                      work_ms_per_task=round(work_per_task), in_mb=round(in_bytes / 1e6, 1),
                      out_mb=round(out_bytes / 1e6, 1), scan_mb=round(scan_bytes / 1e6, 1))
        usage["stages"].append(record)
    latency = max(finish.values()) + lat.get()  # the coordinator reads the result
    usage["s3_get"] += 1
    # Hedged reads are requests too.
    usage["s3_get"] += int(round(usage["s3_get"] * lat.hedged_fraction()))
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
