"""The benchmark's arithmetic: medians, geomeans, ratios, failures kept out of times."""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import stats  # noqa: E402


def row(engine, q, ms, mb=100.0, check="ok"):
    return {"engine": engine, "query": str(q), "check": check, "median_ms": str(ms), "peak_rss_mb": str(mb)}


class Arithmetic(unittest.TestCase):
    def test_median(self):
        self.assertEqual(stats.median([3, 1, 2]), 2)
        self.assertEqual(stats.median([4, 1, 2, 3]), 2.5)
        with self.assertRaises(ValueError):
            stats.median([])

    def test_geomean(self):
        self.assertAlmostEqual(stats.geomean([1, 100]), 10.0)
        self.assertAlmostEqual(stats.geomean([2, 8]), 4.0)
        self.assertAlmostEqual(stats.geomean([5]), 5.0)
        self.assertIsNone(stats.geomean([]))
        with self.assertRaises(ValueError):
            stats.geomean([1, 0])

    def test_ratio(self):
        self.assertEqual(stats.ratio(3, 2), 1.5)
        self.assertIsNone(stats.ratio(None, 2))
        self.assertIsNone(stats.ratio(1, None))
        self.assertIsNone(stats.ratio(1, 0))

    def test_relative_error(self):
        self.assertAlmostEqual(stats.relative_error(110, 100), 0.1)
        self.assertAlmostEqual(stats.relative_error(50, 100), -0.5)
        self.assertIsNone(stats.relative_error(1, 0))


class Summary(unittest.TestCase):
    engines = ["squall", "datafusion", "duckdb"]

    def test_ratios_and_geomeans(self):
        rows = [row("squall", 1, 200, 300), row("datafusion", 1, 100, 150), row("duckdb", 1, 50, 600),
                row("squall", 2, 50, 100), row("datafusion", 2, 100, 100), row("duckdb", 2, 25, 100)]
        s = stats.summarize(rows, self.engines)
        q1, q2 = s["queries"]
        self.assertAlmostEqual(q1["ratio_datafusion"], 2.0)
        self.assertAlmostEqual(q1["ratio_duckdb"], 4.0)
        self.assertAlmostEqual(q1["mem_ratio_datafusion"], 2.0)
        self.assertAlmostEqual(q1["mem_ratio_duckdb"], 0.5)
        self.assertAlmostEqual(q2["ratio_datafusion"], 0.5)
        # Overall ratio: geomean of per-query ratios = ratio of geomeans.
        self.assertAlmostEqual(s["ratios"]["datafusion"]["time"], 1.0)
        self.assertAlmostEqual(s["ratios"]["duckdb"]["time"], math.sqrt(4.0 * 2.0))
        self.assertAlmostEqual(s["ratios"]["duckdb"]["time"],
                               s["engines"]["squall"]["geomean_ms"] / s["engines"]["duckdb"]["geomean_ms"])
        self.assertEqual(s["engines"]["squall"]["total_ms"], 250)
        self.assertAlmostEqual(s["engines"]["squall"]["geomean_ms"], 100.0)
        self.assertEqual(s["engines"]["duckdb"]["max_mb"], 600)

    def test_a_wrong_answer_is_a_failure_not_a_time(self):
        rows = [row("squall", 1, 10), row("datafusion", 1, 20), row("duckdb", 1, 5, check="MISMATCH: row 1"),
                row("squall", 2, 40), row("datafusion", 2, 20), row("duckdb", 2, 10)]
        s = stats.summarize(rows, self.engines)
        q1 = s["queries"][0]
        self.assertIsNone(q1["duckdb_ms"])
        self.assertIsNone(q1["ratio_duckdb"])
        self.assertIsNone(q1["mem_ratio_duckdb"])
        self.assertEqual(s["engines"]["duckdb"]["passed"], 1)
        self.assertEqual(s["engines"]["duckdb"]["failed"], 1)
        self.assertEqual(s["engines"]["duckdb"]["total_ms"], 10)
        self.assertEqual(s["ratios"]["duckdb"]["common"], 1)
        self.assertAlmostEqual(s["ratios"]["duckdb"]["time"], 4.0)
        self.assertEqual(s["ratios"]["datafusion"]["common"], 2)

    def test_missing_engine_row_is_a_failure(self):
        rows = [row("squall", 1, 10), row("datafusion", 1, 20)]
        s = stats.summarize(rows, self.engines)
        self.assertEqual(s["queries"][0]["duckdb_check"], "missing")
        self.assertEqual(s["engines"]["duckdb"]["failed"], 1)
        self.assertIsNone(s["ratios"]["duckdb"]["time"])


if __name__ == "__main__":
    unittest.main()
