"""Per-stage figures of a measured query profile, shared by the embedded
(model.py validate) and the Lambda (model_lambda.py) predictions."""
import math

# Planning's absolute size thresholds (planner/src/engine.rs, squall config):
# where a plan changes with scale. A run at SF s with each divided by
# target/s is planned as SF target would be (every TPC-H table but nation
# and region grows linearly, and so do the planner's estimates), so its
# profile has the stage graph the target scale runs.
SCALED_SETTINGS = {
    "datafusion.optimizer.hash_join_single_partition_threshold": 16 * 1024 * 1024,  # BROADCAST_MAX_BYTES
    "datafusion.optimizer.hash_join_single_partition_threshold_rows": 512 * 1024,   # BROADCAST_MAX_ROWS
    "squall.bloom.max_keys": 16_000_000,
    "squall.bloom.exact_max_keys": 16_384,
    "squall.bloom.inline_max_bytes": 128 * 1024,
}


# The aws backend runs a query as one task only when it reads less than this
# (AWS_SINGLE_TASK_BYTES); embedded, every query may be one task by default.
# The model predicts Lambda: a run planned as a larger scale takes the aws
# threshold scaled like the others, and a run at its own scale is planned
# staged throughout (0), as the profiles the model reads were run.
AWS_SINGLE_TASK_BYTES = 32 * 1024 * 1024

# The aws backend places key filters from build sides of any estimated size
# (squall.bloom.max_build_rows unset; embedded it is 16 million rows).
AWS_MAX_BUILD_ROWS = f"squall.bloom.max_build_rows={2 ** 62}"

# The exchange codec the stack deploys (sam-template.yaml ExchangeCompression):
# a run planned as a larger scale writes its exchange objects with it, so the
# profile measures the CPU and bytes Lambda's tasks would spend on them.
DEPLOYED_COMPRESSION = "squall.shuffle.compression=zstd:1"

# What one map task writes per hash partition (an exchange "cell") sets how
# well its bytes compress and how much of them is per-stream framing (each
# partition's IPC stream has its own schema and end marker, its buffers are
# compressed one by one). Deployed, a scan task reads ScanTaskBytes (256
# MiB) and writes ShufflePartitions (1,000) partitions; a run here reads 32
# MiB per scan task (squall.scan.target_task_bytes's default). A run planned
# as the larger scale writes 1,000 x 32 / 256 = 125 partitions, so that its
# cells hold as many rows as the deployed ones and the profile measures the
# CPU and bytes of cells that size (with 2 partitions, as the runs before
# the tenth, the cells were 60 times larger and compressed better).
# The batches a map task encodes follow its coalescers' budget
# (squall.shuffle.coalesce_bytes) shared by its partitions: deployed, the
# aws backend's 256 MiB (config.rs AWS_COALESCE_BYTES, for workers of 1,024
# MB or more) over 1,000 partitions; here the same budget per partition.
DEPLOYED_PARTITIONS = 1000
DEPLOYED_SCAN_TASK_BYTES = 256 * 1024 * 1024
DEPLOYED_COALESCE_BYTES = 256 * 1024 * 1024
# squall.scan.min_tasks and min_task_bytes as sam-template.yaml deploys them.
DEPLOYED_SCAN_MIN_TASKS = 64
DEPLOYED_SCAN_MIN_TASK_BYTES = 16 * 1024 * 1024
RUN_SCAN_TASK_BYTES = 32 * 1024 * 1024
RUN_PARTITIONS = DEPLOYED_PARTITIONS * RUN_SCAN_TASK_BYTES // DEPLOYED_SCAN_TASK_BYTES
CELL_PARTITIONS = f"squall.shuffle.partitions={RUN_PARTITIONS}"
CELL_COALESCE = f"squall.shuffle.coalesce_bytes={DEPLOYED_COALESCE_BYTES * RUN_PARTITIONS // DEPLOYED_PARTITIONS}"


def scaled_settings(run_sf, plan_sf):
    """["k=v", ...]: the settings that plan a run at run_sf as the aws backend
    would plan plan_sf (staged throughout when plan_sf is not larger)."""
    if not plan_sf or plan_sf <= run_sf:
        return ["squall.query.single_task_bytes=0", AWS_MAX_BUILD_ROWS]
    f = plan_sf / run_sf
    return [f"{k}={max(1, int(v / f))}" for k, v in SCALED_SETTINGS.items()] + [
        f"squall.query.single_task_bytes={max(1, int(AWS_SINGLE_TASK_BYTES / f))}",
        AWS_MAX_BUILD_ROWS, DEPLOYED_COMPRESSION, CELL_PARTITIONS, CELL_COALESCE]

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


def topo_key(sid, graph, memo=None):
    memo = {} if memo is None else memo
    if sid in memo:
        return memo[sid]
    memo[sid] = 1 + max([topo_key(i, graph, memo) for i in graph.get(sid, [])] or [0])
    return memo[sid]
