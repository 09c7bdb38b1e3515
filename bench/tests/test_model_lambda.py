"""The Lambda simulation's newer parts: scan read-ahead, the two-level
exchange's grid, and stages that only wait for a key filter."""
import math
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import model_lambda as ml  # noqa: E402
from test_model import query, stage  # noqa: E402


class Lambda(unittest.TestCase):
    def test_grid_is_the_coordinators(self):
        # planner/src/two_level_tests.rs: M = N = 1,000 and 100 GB make a
        # 44 x 34 grid at about 100,000 requests instead of 1,000,000.
        a, b, cost = ml.combine_grid(1000, 1000, 100e9, 64 * 2**20, 1000)
        self.assertEqual((a, b), (44, 34))
        self.assertLess(cost, 1000 * 1000 / 9)
        self.assertEqual(cost, ml.two_level_requests(1000, 1000, 44, 34, 14.0))
        # A small exchange: one combine task per group of map objects.
        self.assertEqual(ml.combine_grid(1000, 1000, 10 * 2**20, 64 * 2**20)[:2], (1, 1))
        # Never more groups than map objects.
        a, b, _ = ml.combine_grid(3, 2000, 2**40, 64 * 2**20, 2000)
        self.assertLessEqual(a, 3)

    def test_read_ahead_hides_fetches_behind_cpu(self):
        p = dict(ml.PARAMETERS)
        lat = ml.Latency(random.Random(1), p)
        mbps = p["function_mb_per_s"] * 1000.0
        before, overlapped, gets = ml.scan_io(lat, p, 256 * 2**20, 40, mbps)
        self.assertEqual(gets, 41)
        # Only the first window is waited for; the rest overlaps the decode.
        self.assertLess(before, 2 * 8 * 2**20 / mbps + 2000)
        self.assertGreater(overlapped, (256 - 8) * 2**20 / mbps)
        off = dict(p, read_ahead_bytes=0)
        waited, none, same = ml.scan_io(ml.Latency(random.Random(1), off), off, 256 * 2**20, 40, mbps)
        self.assertEqual((none, same), (0.0, 41))
        self.assertGreater(waited, 256 * 2**20 / mbps + 40 * 10)

    def test_two_level_exchange_cuts_gets_of_a_big_shuffle(self):
        # 2,000 map tasks shuffle 20 GB to 1,000 reduce tasks.
        base = query([stage(1, "scan", 2000, 600_000, scan=20 * 10**9, rg=2000, rows=10**9, bout=20 * 10**9),
                      stage(2, "hash x1000", 1000, 400_000, bin_=20 * 10**9, rows=4)], 400, 380)
        g = ({1: [], 2: [1]}, {1: {}, 2: {1: "hash"}})

        def run(two_level):
            p = dict(ml.PARAMETERS, s3_prefixes=16, two_level_min_requests=two_level)
            return ml.lambda_query(base, None, g, 1, 1000, 1769, 1000, 1.0, 10, random.Random(1), p,
                                   20.0, 24, reduce_mb=8)[1]

        flat, grid = run(0), run(100_000)
        self.assertEqual(flat["stages"][1]["exchange_gets"], 2000 * 1000)
        a, b, _ = ml.combine_grid(2000, 1000, 20 * 10**9, ml.PARAMETERS["combine_task_bytes"], 1000)
        self.assertEqual(grid["worker_invocations"], flat["worker_invocations"] + a * b)
        self.assertEqual(grid["stages"][1]["grids"], [(1, a, b, 2000 * b)])
        # Each reader meets a*(n + b - 1)/n combine outputs on average.
        self.assertEqual(grid["stages"][1]["exchange_gets"], 1000 * math.ceil(a * (1000 + b - 1) / 1000))
        self.assertLess(grid["s3_get"], flat["s3_get"] / 10)
        # Below the threshold, or where it would not save requests, no grid.
        self.assertEqual(run(10**8)["stages"][1]["grids"], [])

    def test_the_two_level_threshold_counts_a_stages_gets_over_its_inputs(self):
        # Two map stages of 2,000 tasks shuffle 10 GB each to one join stage
        # of 1,000 tasks: 2,000,000 direct GETs per input, 4,000,000 for
        # the stage. A threshold between the two grids both inputs.
        base = query([stage(1, "scan", 2000, 600_000, scan=10 * 10**9, rg=2000, rows=10**9, bout=10 * 10**9),
                      stage(2, "scan", 2000, 600_000, scan=10 * 10**9, rg=2000, rows=10**9, bout=10 * 10**9),
                      stage(3, "hash x1000", 1000, 400_000, bin_=20 * 10**9, rows=4)], 400, 380)
        g = ({1: [], 2: [], 3: [1, 2]}, {1: {}, 2: {}, 3: {1: "hash", 2: "hash"}})

        def grids(two_level):
            p = dict(ml.PARAMETERS, s3_prefixes=16, two_level_min_requests=two_level)
            u = ml.lambda_query(base, None, g, 1, 1000, 1769, 1000, 1.0, 10, random.Random(1), p,
                                20.0, 24, reduce_mb=8)[1]
            return [i for i, *_ in u["stages"][2]["grids"]]

        self.assertEqual(grids(3_000_000), [1, 2])
        self.assertEqual(grids(4_000_001), [])

    def test_small_reduce_stages_spread_while_tasks_read_enough(self):
        # 1 GB of exchange: 15 reduce tasks of 64 MiB, or 60 of 16 MiB+ when
        # min_tasks 64 holds only while each task reads 16 MiB; 100 MB: 6.
        def tasks(total, min_tasks, min_mb):
            base = query([stage(1, "scan", 100, 60_000, scan=total, rg=100, rows=10**7, bout=total),
                          stage(2, "hash x1000", 1000, 40_000, bin_=total, rows=4)], 400, 380)
            g = ({1: [], 2: [1]}, {1: {}, 2: {1: "hash"}})
            p = dict(ml.PARAMETERS, s3_prefixes=16, min_tasks=min_tasks, min_task_bytes=min_mb * 2**20)
            return ml.lambda_query(base, None, g, 1, 1000, 1769, 1000, 1.0, 10, random.Random(1), p,
                                   20.0, 24, reduce_mb=64)[1]["stages"][1]["tasks"]
        self.assertEqual(tasks(10**9, 1, 0), 15)
        self.assertEqual(tasks(10**9, 64, 16), 60)
        self.assertEqual(tasks(10**8, 64, 16), 6)
        self.assertEqual(tasks(10**5, 64, 16), 1)
        self.assertEqual(tasks(10**5, 64, 0), 64)

    def test_small_ranges_keep_more_gets_in_flight(self):
        p = dict(ml.PARAMETERS)
        # A gather of 929 outputs of a few hundred bytes: 128 at once, as
        # fetches_in_flight in shuffle_read.rs; large ranges keep the count.
        self.assertEqual(ml.fetches_in_flight(p, 929, 300), 128)
        self.assertEqual(ml.fetches_in_flight(p, 40, 300), 40)
        self.assertEqual(ml.fetches_in_flight(p, 929, 4 * 1024 * 1024), p["fetch_concurrency"])
        self.assertEqual(ml.fetches_in_flight(p, 929, 256 * 1024), 64)
        rng = random.Random(7)
        lat = ml.Latency(rng, p)
        slow = sum(lat.batches(929, p["fetch_concurrency"]) for _ in range(20))
        fast = sum(lat.batches(929, ml.fetches_in_flight(p, 929, 300)) for _ in range(20))
        self.assertLess(fast, slow / 2)

    def test_a_key_filter_wait_reads_nothing(self):
        # s2 waits for s1's key filter (an input in the graph, no read mode).
        base = query([stage(1, "scan", 4, 100, scan=1_000_000, rg=4, rows=1000),
                      stage(2, "scan", 8, 200, scan=2_000_000, rg=8, rows=1000)], 100, 90)
        g = ({1: [], 2: [1]}, {1: {}, 2: {}})
        p = dict(ml.PARAMETERS, s3_prefixes=16)
        _, u = ml.lambda_query(base, None, g, 1, 1000, 1769, 1000, 1.0, 10, random.Random(1), p, 0.0, 0)
        self.assertEqual([s["exchange_gets"] for s in u["stages"]], [0, 0])

    def test_a_dropped_filter_released_early_holds_nothing_up(self):
        base = query([stage(1, "scan", 4, 4000, scan=1_000_000, rg=4, rows=1000),
                      stage(2, "scan", 8, 200, scan=2_000_000, rg=8, rows=1000)], 100, 90)
        base["profile"]["filters"] = [{"source": 1, "kind": "none", "keys": 0}]
        g = ({1: [], 2: [1]}, {1: {}, 2: {}})

        def s2_start(release):
            p = dict(ml.PARAMETERS, s3_prefixes=16, release_skipped_filters=release)
            _, u = ml.lambda_query(base, None, g, 1, 1000, 1769, 1000, 1.0, 10, random.Random(1), p, 0.0, 0)
            return u["stages"][1]["start_ms"], u["stages"][0]["finish_ms"]

        waits, released = s2_start(False), s2_start(True)
        self.assertGreaterEqual(waits[0], waits[1])
        self.assertLess(released[0], released[1])

    def test_a_filter_released_after_some_build_tasks_starts_its_probe_then(self):
        # The run released s2 after 1 of s1's 4 tasks (squall.bloom.early_release).
        base = query([stage(1, "scan", 4, 4000, scan=1_000_000, rg=4, rows=1000),
                      stage(2, "scan", 8, 200, scan=2_000_000, rg=8, rows=1000)], 100, 90)
        g = ({1: [], 2: [1]}, {1: {}, 2: {}})
        p = dict(ml.PARAMETERS, s3_prefixes=16)

        def run(filters):
            base["profile"]["filters"] = filters
            _, u = ml.lambda_query(base, None, g, 1, 1000, 1769, 1000, 1.0, 10, random.Random(1), p, 0.0, 0)
            return u

        waited = run([{"source": 1, "kind": "none", "keys": 0, "tasks": 4}])
        early = run([{"source": 1, "kind": "none", "keys": 0, "tasks": 4, "released_after": 1}])
        s1, s2 = early["stages"]
        self.assertGreaterEqual(waited["stages"][1]["start_ms"], waited["stages"][0]["finish_ms"])
        self.assertLess(s2["start_ms"], s1["finish_ms"])
        self.assertGreaterEqual(s2["start_ms"], s1["start_ms"] + (s1["finish_ms"] - s1["start_ms"]) / 4)
        # The coordinator read one key section per build task, or up to the release.
        self.assertEqual(waited["s3_get"] - early["s3_get"], 3)

    def test_a_key_filter_past_the_payload_is_one_get_per_task(self):
        # s1 publishes 3,000 keys at the base scale: at scale 1,000 a Bloom
        # filter of 3 million keys (4 MiB), read by each of s2's 8 tasks.
        base = query([stage(1, "scan", 4, 100, scan=1_000_000, rg=4, rows=1000),
                      stage(2, "scan", 8, 200, scan=2_000_000, rg=8, rows=1000)], 100, 90)
        base["profile"]["filters"] = [{"source": 1, "kind": "bloom", "keys": 3000}]
        p = dict(ml.PARAMETERS, s3_prefixes=16)
        self.assertEqual(ml.key_filter_bytes(base, 1, 1000, p), 4 * 2**20)
        # Small filters travel in the payload; past max_keys there is none.
        self.assertLess(ml.key_filter_bytes(base, 1, 1, p), p["filter_inline_bytes"])
        self.assertEqual(ml.key_filter_bytes(base, 1, 10_000, p), 0.0)
        g = ({1: [], 2: [1]}, {1: {}, 2: {}})
        _, small = ml.lambda_query(base, None, g, 1, 1000, 1769, 1000, 1.0, 10, random.Random(1), p, 0.0, 0)
        self.assertEqual([s["filter_gets"] for s in small["stages"]], [0, 0])
        _, big = ml.lambda_query(base, None, g, 1000, 1000, 1769, 1000, 1.0, 10, random.Random(1), p, 0.0, 0)
        tasks = big["stages"][1]["tasks"]
        self.assertEqual(big["stages"][1]["filter_gets"], tasks)
        self.assertGreater(big["spent_ms"]["key filters"], tasks * 4 * 2**20 / (p["function_mb_per_s"] * 1000.0))
        # A scan task waits for the filter before its first window: its
        # length grows by at least the filter's bytes at the function's rate.
        base["profile"]["filters"] = []
        _, none = ml.lambda_query(base, None, g, 1000, 1000, 1769, 1000, 1.0, 10, random.Random(1), p, 0.0, 0)
        self.assertEqual(none["stages"][1]["filter_gets"], 0)
        self.assertGreater(big["stages"][1]["task_ms_mean"] - none["stages"][1]["task_ms_mean"],
                           4 * 2**20 / (p["function_mb_per_s"] * 1000.0))

    def test_hedged_reads_cut_the_tail(self):
        # Half the reads hit the 1-3 s tail; a hedged read is answered by
        # the second request unless that one hits the tail too.
        p = dict(ml.PARAMETERS, tail_prob=0.5)
        lat = ml.Latency(random.Random(3), p)
        hedged = [lat.get() for _ in range(4000)]
        fast = sum(1 for v in hedged if v < p["hedge_after_ms"] + 500.0) / len(hedged)
        self.assertGreater(fast, 0.7)
        off = dict(p, hedge_after_ms=0.0)
        lat = ml.Latency(random.Random(3), off)
        plain = [lat.get() for _ in range(4000)]
        self.assertLess(sum(1 for v in plain if v < p["hedge_after_ms"] + 500.0) / len(plain), 0.55)
        self.assertLess(sum(hedged) / len(hedged), 0.6 * sum(plain) / len(plain))
        self.assertAlmostEqual(ml.Latency(None, p).hedged_fraction(), 0.5, places=2)
        self.assertEqual(ml.Latency(None, off).hedged_fraction(), 0.0)


if __name__ == "__main__":
    unittest.main()
