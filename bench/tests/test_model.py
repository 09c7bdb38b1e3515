"""The scale model's arithmetic: stage graphs, growth exponents, the embedded
prediction's calibration, and the Lambda simulation's invariants."""
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import model  # noqa: E402
import model_stages  # noqa: E402


def stage(sid, layout, tasks, work, scan=0, rg=0, bin_=0, bout=100, rows=0):
    return {"stage": sid, "layout": layout, "tasks": tasks, "task_wall_ms_sum": work, "task_wall_ms_max": work,
            "scan_bytes": scan, "row_groups": rg, "bytes_in_exchange": bin_, "bytes_out": bout, "rows_out": rows}


def query(stages, wall, coord_wall=None):
    return {"median_ms": wall, "wall_ms": wall,
            "profile": {"wall_ms": coord_wall or wall, "stage_profiles": stages}}


class Model(unittest.TestCase):
    def test_explain_text(self):
        text = """Stage s1 [scan, 2 tasks]
  ShuffleWriteExec: hash=[a@0], partitions=2
Stage s2 [scan, 1 task]
  ShuffleWriteExec: passthrough
Stage s3 (final) [hash x2, 2 tasks] <- s1, s2
  HashJoinExec: mode=CollectLeft
    ShuffleReadExec: stage=2, mode=broadcast
    ShuffleReadExec: stage=1, mode=hash, hash=[a@0], partitions=2
"""
        graph, modes = model.parse_explain(text)
        self.assertEqual(graph, {1: [], 2: [], 3: [1, 2]})
        self.assertEqual(modes[3], {2: "broadcast", 1: "hash"})

    def test_plan_cache_keys_data_and_settings(self):
        # A cached EXPLAIN answers only for the data and settings it was made with.
        import subprocess
        import tempfile
        calls = []

        def fake_run(argv, **_):
            calls.append(argv)
            return subprocess.CompletedProcess(argv, 0, stdout=f"plan {len(calls)}")
        real = model.subprocess.run
        model.subprocess.run = fake_run
        try:
            with tempfile.TemporaryDirectory() as cache:
                a = model._explain_text("squall", "/data/a", 1, cache, ["k=1"])
                self.assertEqual(model._explain_text("squall", "/data/a", 1, cache, ["k=1"]), a)
                self.assertNotEqual(model._explain_text("squall", "/data/b", 1, cache, ["k=1"]), a)
                self.assertNotEqual(model._explain_text("squall", "/data/a", 1, cache, ["k=2"]), a)
        finally:
            model.subprocess.run = real
        self.assertEqual(len(calls), 3)

    def test_files_each_stage_scans(self):
        text = """Stage s1 [scan, 2 tasks]
  ShuffleWriteExec: hash=[a@0], partitions=2
    DataSourceExec: file_groups={2 groups: [[d/lineitem/part-0000.parquet:0..60, d/lineitem/part-0001.parquet:0..30], [d/lineitem/part-0001.parquet:30..60]]}, projection=[a], file_type=parquet
Stage s2 [scan, 1 task]
  ShuffleWriteExec: passthrough
    DataSourceExec: file_groups={1 group: [[d/nation/part-0000.parquet]]}, projection=[n], file_type=parquet
Stage s3 (final) [hash x2, 2 tasks] <- s1, s2
  ShuffleReadExec: stage=1, mode=hash, hash=[a@0], partitions=2
"""
        self.assertEqual(model.plan_files(text), {
            1: {"d/lineitem/part-0000.parquet", "d/lineitem/part-0001.parquet"},
            2: {"d/nation/part-0000.parquet"}})

    def test_footer_tail_is_split_rs(self):
        # planner/src/split.rs's footer_tail_follows_the_footers_read.
        self.assertEqual(model.footer_hint(None), 64 * 1024)
        self.assertEqual(model.footer_hint(35_056), 45_056)
        self.assertEqual(model.footer_hint(1_079), 4096)
        self.assertEqual(model.footer_hint(1 << 20), 64 * 1024)
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "a.parquet")
            with open(path, "wb") as f:
                f.write(b"PAR1" + b"x" * 100 + (30_000).to_bytes(4, "little") + b"PAR1")
            self.assertEqual(model.footer_tail(path), 40_960)
            with open(path, "wb") as f:
                f.write(b"PAR1" + (100_000).to_bytes(4, "little") + b"PAR1")
            self.assertEqual(model.footer_tail(path), 100_008)
            self.assertEqual(model.footer_tail(os.path.join(d, "missing.parquet")), 64 * 1024)

    def test_nonempty_partitions(self):
        self.assertAlmostEqual(model.nonempty_fraction(4, 1), 1.0)
        self.assertAlmostEqual(model.nonempty_fraction(1, 256), 1 / 256)
        self.assertGreater(model.nonempty_fraction(10_000, 256), 0.999)
        self.assertLess(model.nonempty_fraction(4, 256), 4 / 256 + 1e-12)

    def test_explain_lines(self):
        m = model.STAGE_RE.match("Stage s8 [hash x2, 2 tasks] <- s1, s2, s6")
        self.assertEqual(m.group(1), "8")
        self.assertEqual(m.group(3), "s1, s2, s6")
        m = model.STAGE_RE.match("Stage s10 (final) [single (gather), 1 task] <- s9")
        self.assertEqual((m.group(1), m.group(3)), ("10", "s9"))
        self.assertIsNone(model.STAGE_RE.match("Stage s1 [scan, 1 task]").group(3))
        # A stage that waits for another's key filter starts after it too.
        graph, _ = model.parse_explain("Stage s10 [hash x2, 2 tasks] <- s9, after key filter of s5\n"
                                       "Stage s11 [scan, 3 tasks], after key filter of s5, s6\n")
        self.assertEqual(graph, {10: [9, 5], 11: [5, 6]})
        # A stage run once for two identical ones names its readers.
        graph, _ = model.parse_explain("Stage s1 [scan, 2 tasks], read by s2, s5: planned 2 times, run once\n"
                                       "Stage s2 [hash x2, 2 tasks] <- s1\n"
                                       "Stage s5 [hash x2, 2 tasks] <- s1, s3, s4\n")
        self.assertEqual(graph, {1: [], 2: [1], 5: [1, 3, 4]})

    def test_runs_are_planned_staged_as_on_lambda(self):
        # The embedded default runs a query as one task; the model predicts
        # Lambda, so every run and plan it reads is staged as there.
        staged = ["squall.query.single_task_bytes=0", f"squall.bloom.max_build_rows={2 ** 62}"]
        self.assertEqual(model.scaled_settings(1, None), staged)
        self.assertEqual(model.scaled_settings(1, 1), staged)
        scaled = dict(kv.split("=") for kv in model.scaled_settings(1, 1000))
        self.assertEqual(scaled["squall.bloom.max_build_rows"], str(2 ** 62), "as the aws backend plans")
        self.assertEqual(scaled["squall.query.single_task_bytes"], str(32 * 1024 * 1024 // 1000))
        self.assertEqual(scaled["squall.bloom.max_keys"], "16000")
        self.assertEqual(scaled["squall.shuffle.compression"], "zstd:1", "as the stack deploys")
        # A map task's cells (rows per partition) as large as deployed:
        # 1,000 partitions of a 256 MiB scan task, here 32 MiB tasks.
        self.assertEqual(scaled["squall.shuffle.partitions"], "125")
        # and each partition's share of the coalescers' budget as deployed.
        self.assertEqual(scaled["squall.shuffle.coalesce_bytes"], str(32 * 1024 * 1024))

    def test_deployed_exchange_figures_are_the_templates(self):
        import re
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        template = open(os.path.join(root, "sam-template.yaml")).read()

        def default(name):
            m = re.search(rf"^  {name}:\n(?:    .*\n)*?    Default: \"?([^\"\n]+)\"?$", template, re.M)
            self.assertIsNotNone(m, name)
            return m.group(1)
        self.assertEqual(int(default("ShufflePartitions")), model_stages.DEPLOYED_PARTITIONS)
        self.assertEqual(int(default("ScanTaskBytes")), model_stages.DEPLOYED_SCAN_TASK_BYTES)
        self.assertEqual("squall.shuffle.compression=" + default("ExchangeCompression"),
                         model_stages.DEPLOYED_COMPRESSION)
        # Scan stages spread as deployed (the coordinator's environment).
        for name, value in (("SQUALL_SCAN_MIN_TASKS", model_stages.DEPLOYED_SCAN_MIN_TASKS),
                            ("SQUALL_SCAN_MIN_TASK_BYTES", model_stages.DEPLOYED_SCAN_MIN_TASK_BYTES)):
            m = re.search(rf"^ +{name}: \"(\d+)\"$", template, re.M)
            self.assertIsNotNone(m, name)
            self.assertEqual(int(m.group(1)), value, name)
        config = open(os.path.join(root, "planner", "core", "src", "config.rs")).read()
        m = re.search(r"pub const AWS_COALESCE_BYTES: usize = (\d+) \* 1024 \* 1024;", config)
        self.assertIsNotNone(m)
        self.assertEqual(int(m.group(1)) * 1024 * 1024, model_stages.DEPLOYED_COALESCE_BYTES)

    def test_floor_takes_the_longer_of_cpu_and_bytes(self):
        cpu_bound = {"tasks": 10, "work_ms_per_task": 500, "scan_mb": 8, "in_mb": 0, "out_mb": 0}
        byte_bound = {"tasks": 4, "work_ms_per_task": 100, "scan_mb": 60, "in_mb": 10, "out_mb": 10}
        total, beyond = model.floor_ms([cpu_bound, byte_bound], 80.0)
        # 10 x 500 ms of CPU (8 MB is 100 ms); 4 x 80 MB at 80 MB/s = 4 x 1 s.
        self.assertAlmostEqual(total, 5000 + 4000)
        self.assertAlmostEqual(beyond, 4 * 900)

    def test_growth_exponents(self):
        big = stage(1, "scan", 4, 100, scan=1000, rg=10)
        self.assertAlmostEqual(model.growth_exponent(big, stage(1, "scan", 1, 10, scan=100, rg=1), 10), 1.0)
        flat = stage(2, "single (gather)", 1, 1, bin_=50)
        self.assertAlmostEqual(model.growth_exponent(flat, stage(2, "single", 1, 1, bin_=50), 10), 0.0)
        self.assertEqual(model.growth_exponent(big, None, 10), 1.0)
        self.assertEqual(model.growth_exponent(flat, None, 10), 0.0)
        huge = stage(3, "hash x2", 2, 1, bin_=10 ** 9)
        # No stage's input grows faster than the data.
        self.assertEqual(model.growth_exponent(huge, stage(3, "hash x2", 2, 1, bin_=1), 10), 1.0)

    def test_topological_order(self):
        g = {1: [], 2: [], 3: [1, 2], 4: [3]}
        self.assertEqual(sorted(g, key=lambda s: model.topo_key(s, g)), [1, 2, 3, 4])

    def test_embedded_prediction_is_calibrated_and_grows(self):
        base = query([stage(1, "scan", 6, 600, scan=6000, rg=48), stage(2, "single (gather)", 1, 2, bin_=10)], 400)
        small = query([stage(1, "scan", 2, 60, scan=600, rg=5), stage(2, "single (gather)", 1, 2, bin_=10)], 60)
        g = {1: [], 2: [1]}
        same = model.predict_embedded(base, small, g, 1.0, 2, 1.0, 10)
        self.assertAlmostEqual(same, 400.0)
        ten = model.predict_embedded(base, small, g, 10.0, 2, 1.0, 10)
        self.assertGreater(ten, 2000)
        self.assertLess(ten, 4000 * 1.01)

    def test_lambda_simulation(self):
        base = query([stage(1, "scan", 6, 600, scan=6_000_000, rg=48, rows=6_000_000),
                      stage(2, "hash x2", 2, 40, bin_=1000, rows=4),
                      stage(3, "single (gather)", 1, 2, bin_=10)], 400, 380)
        small = query([stage(1, "scan", 2, 60, scan=600_000, rg=5, rows=600_000),
                       stage(2, "hash x2", 2, 8, bin_=100, rows=4),
                       stage(3, "single (gather)", 1, 2, bin_=10)], 60, 50)
        g = ({1: [], 2: [1], 3: [2]}, {2: {1: "hash"}, 3: {2: "gather"}})
        p = dict(model.PARAMETERS, two_level_min_requests=0)

        # One reduce task per partition (reduce_mb 0), as before coalescing.
        def run(scale, workers, seed=1, reduce_mb=0):
            return model.lambda_query(base, small, g, scale, workers, 3008, 64, 1.0, 10, random.Random(seed), p,
                                      20.0, 24, reduce_mb=reduce_mb)

        lat100, use100 = run(100, 1000)
        lat1000, use1000 = run(1000, 1000)
        self.assertEqual(use100["worker_invocations"], 600 + 64 + 1)
        self.assertEqual(use1000["worker_invocations"], 6000 + 64 + 1)
        # Every map output is read once per reduce task (M x R ranged GETs).
        self.assertGreaterEqual(use1000["s3_get"], 6000 * 64)
        # Bigger scan tasks: fewer map outputs, fewer GETs.
        _, fewer = model.lambda_query(base, small, g, 1000, 1000, 3008, 64, 1.0, 10, random.Random(1), p, 20.0, 24,
                                      task_mb=256, reduce_mb=0)
        # Reduce tasks from the exchange bytes: the 1 MB exchange is one task,
        # reading each map object once.
        _, coalesced = run(1000, 1000, reduce_mb=64)
        self.assertEqual(coalesced["worker_invocations"], 6000 + 1 + 1)
        self.assertLess(coalesced["s3_get"], use1000["s3_get"] / 5)
        self.assertEqual(fewer["worker_invocations"], 750 + 64 + 1)
        self.assertLess(fewer["s3_get"], use1000["s3_get"])
        # Scan tasks as split.rs deals them (predict): the 6 GB scan over
        # 256 MiB tasks is 23, or 64 with min_tasks 64 of at least 16 MiB
        # (a 1 MiB minimum still 64; 100 MiB: 58), not the base run's 6 grown.
        def split(min_tasks, min_mb):
            q = dict(p, scan_min_tasks=min_tasks, scan_min_task_bytes=int(min_mb * 1024 * 1024))
            return model.lambda_query(base, small, g, 1000, 1000, 3008, 64, 1.0, 10, random.Random(1), q,
                                      20.0, 24, task_mb=256, reduce_mb=64)[1]["worker_invocations"] - 2
        self.assertEqual(split(1, 0), 23)
        self.assertEqual(split(64, 16), 64)
        self.assertEqual(split(64, 100), 58)
        # Never more tasks than row groups (48,000 at this scale).
        self.assertEqual(split(10 ** 6, 0), 48_000)
        self.assertEqual(use1000["s3_put"], 6000 + 64 + 1)
        self.assertGreater(lat1000, lat100)
        # Fewer workers cannot make it faster; the same seed gives the same answer.
        self.assertGreaterEqual(run(100, 50)[0], lat100)
        self.assertEqual(run(100, 1000)[0], lat100)
        # Each object written is deleted; stop-marker looks at least one per task.
        self.assertEqual(use1000["s3_delete"], use1000["s3_put"])
        self.assertGreaterEqual(use1000["s3_head"], use1000["worker_invocations"])

    def test_exchange_spread_over_prefixes(self):
        base = query([stage(1, "scan", 6, 600, scan=6_000_000, rg=48, rows=6_000_000),
                      stage(2, "hash x2", 2, 40, bin_=1000, rows=4)], 400, 380)
        g = ({1: [], 2: [1]}, {2: {1: "hash"}})

        def run(prefixes):
            p = dict(model.PARAMETERS, s3_prefixes=prefixes, two_level_min_requests=0)
            return model.lambda_query(base, None, g, 1000, 1000, 3008, 256, 1.0, 10, random.Random(1), p,
                                      20.0, 24)

        one, used_one = run(1)
        sixteen, used_sixteen = run(16)
        # 6,000 map objects x 256 reduce tasks of GETs under one prefix are
        # throttled; over 16 prefixes they are served 16 times as fast.
        self.assertLess(sixteen, one)
        self.assertEqual(used_one["s3_get"], used_sixteen["s3_get"])
        # A cleanup LIST per shard written to.
        self.assertEqual((used_one["s3_list"], used_sixteen["s3_list"]), (7, 16))

    def test_overheads_are_cost_inputs(self):
        usage = {"worker_invocations": 25, "worker_ms": 1000.4, "s3_get": 100, "s3_head": 30, "s3_put": 25,
                 "s3_list": 3, "s3_delete": 25}
        c = model.overheads(usage, 2100.0)
        self.assertEqual(c["worker_ms"], 1001)
        # CreateQueue, DeleteQueue, 25 sends, 3 receives and 3 batch deletes, 3 idle polls.
        self.assertEqual(c["sqs_requests"], 2 + 25 + 6 + 3)
        self.assertEqual(c["api_invocations"], 2 + 3)
        # 5 polls: the coordinator's state and the API's.
        self.assertEqual(c["s3_get"], 100 + 1 + 5 + 2)
        self.assertEqual(c["s3_head"], 30 + 0 + (2 + 5) + 5)
        self.assertEqual(c["s3_put"], 25 + 1 + (3 + 5) + 1)
        self.assertEqual((c["s3_list"], c["s3_delete"]), (3, 25))

    def test_prefixes_follow_the_setting(self):
        text = "squall.shuffle.partitions = 0  (SQUALL_SHUFFLE_PARTITIONS)\n" \
               "squall.shuffle.prefixes = 16  (SQUALL_SHUFFLE_PREFIXES)\n    Key prefixes ...\n"
        self.assertEqual(model.prefixes_setting(text), 16)
        self.assertEqual(model.prefixes_setting(""), 1)


if __name__ == "__main__":
    unittest.main()
