"""The runner's own logic: answer checks of a run, engine processes and their
peak memory, the report, and (with SQUALL_BIN set) the whole runner end to
end on tiny data with every engine. No timed assertions: times are only
checked to be present and positive."""
import csv
import datetime
import decimal
import json
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..")
sys.path.insert(0, BENCH)

import engines  # noqa: E402
import peer_driver  # noqa: E402
import report  # noqa: E402
import run  # noqa: E402

FAKE_DRIVER = r'''
import json, os, sys
print("not json: a stray line the runner ignores", flush=True)
print(json.dumps({"ready": True, "pid": os.getpid()}), flush=True)
hold = []
for line in sys.stdin:
    w = line.split()
    if w[0] == "quit":
        break
    if w[0] == "grow":
        hold.append(bytearray(int(w[1]) * 1024 * 1024))
        for i in range(0, len(hold[-1]), 4096):
            hold[-1][i] = 1
    if w[0] == "drop":
        hold.clear()
    print(json.dumps({"did": w[0]}), flush=True)
'''


class CheckRun(unittest.TestCase):
    def test_checks(self):
        with tempfile.TemporaryDirectory() as d:
            exp = os.path.join(d, "e.csv")
            good = os.path.join(d, "good.csv")
            bad = os.path.join(d, "bad.csv")
            for p, text in ((exp, "k,v\na,1.00\n"), (good, "k,v\na,1.001\n"), (bad, "k,v\na,2.00\n")):
                with open(p, "w") as f:
                    f.write(text)
            sql = os.path.join(d, "q.sql")
            with open(sql, "w") as f:
                f.write("select k, v from t order by k")
            binary = os.environ.get("SQUALL_BIN")
            if not binary:
                self.fail("set SQUALL_BIN to a squall binary (cargo test sets it)")

            def check(reply, actual):
                return run.check_run(binary, reply, exp, actual, sql)

            self.assertEqual(check({"wall_ms": 1}, good), "ok")
            self.assertTrue(check({"wall_ms": 1}, bad).startswith("MISMATCH"))
            self.assertTrue(check({"error": "boom"}, good).startswith("ERROR: boom"))
            # squall's own check must pass too, and the runner's too.
            self.assertTrue(check({"check": "MISMATCH: x"}, good).startswith("MISMATCH"))
            self.assertEqual(check({"check": "ok"}, good), "ok")
            self.assertTrue(check({"check": "ok"}, bad).startswith("MISMATCH"))
            # No answer written is an error, not a pass.
            missing = os.path.join(d, "none.csv")
            self.assertTrue(check({"wall_ms": 1}, missing).startswith("ERROR"))

    def test_rotation_alternates_engines(self):
        e = ["squall", "datafusion", "duckdb"]
        self.assertEqual(run.rotate(e, 0), e)
        self.assertEqual(run.rotate(e, 1), ["datafusion", "duckdb", "squall"])
        self.assertEqual(run.rotate(e, 4), ["datafusion", "duckdb", "squall"])
        firsts = {run.rotate(e, k)[0] for k in range(3)}
        self.assertEqual(firsts, set(e))


class PeerCsv(unittest.TestCase):
    def test_cells_as_the_answers_write_them(self):
        self.assertEqual(peer_driver.cell(None), "")
        self.assertEqual(peer_driver.cell(decimal.Decimal("37734107.00")), "37734107.00")
        self.assertEqual(peer_driver.cell(0.1), "0.1")
        self.assertEqual(peer_driver.cell(datetime.date(1995, 3, 15)), "1995-03-15")
        self.assertEqual(peer_driver.cell(True), "true")
        self.assertEqual(peer_driver.cell(7), "7")

    def test_arrow_table_to_rows(self):
        import pyarrow as pa
        t = pa.table({"a": [1, None], "b": ["x", "y"]})
        header, rows = peer_driver.to_rows(t)
        self.assertEqual(header, ["a", "b"])
        self.assertEqual(rows, [["1", "x"], ["", "y"]])


class Processes(unittest.TestCase):
    def test_protocol_and_peak_memory_reset(self):
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "fake.py")
            with open(script, "w") as f:
                f.write(FAKE_DRIVER)
            p = engines.EngineProcess("fake", [sys.executable, script], os.path.join(d, "err"))
            try:
                self.assertEqual(p.ready["pid"], p.pid)
                self.assertEqual(p.ask("grow 200"), {"did": "grow"})
                self.assertEqual(p.ask("drop"), {"did": "drop"})
                rss, hwm = p.memory_mb()
                self.assertGreater(hwm, 150, "the high-water mark keeps the 200 MiB peak")
                p.reset_peak()
                rss2, hwm2 = p.memory_mb()
                self.assertLess(hwm2, 150, "clear_refs 5 resets VmHWM to the current RSS")
                self.assertEqual(p.ask("grow 50"), {"did": "grow"})
                _, hwm3 = p.memory_mb()
                self.assertGreater(hwm3, hwm2 + 30)
            finally:
                p.close()
            self.assertIsNotNone(p.proc.poll())

    def test_a_dead_engine_is_reported(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(engines.EngineDied):
                engines.EngineProcess("dead", [sys.executable, "-c", "pass"], os.path.join(d, "err"))


class Report(unittest.TestCase):
    def test_markdown_and_svg(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x-sf1.csv")
            rows = []
            for q, (s, f, k) in {1: (200, 100, 50), 2: (30, 60, 20)}.items():
                rows.append({"engine": "squall", "query": q, "check": "ok", "median_ms": s, "peak_rss_mb": 300,
                             "tasks": 9, "s3_get_billed": 40, "s3_put_billed": 9, "messages": 9,
                             "cost_usd": 0.0000123})
                rows.append({"engine": "datafusion", "query": q, "check": "ok", "median_ms": f, "peak_rss_mb": 200})
                rows.append({"engine": "duckdb", "query": q, "check": "ok" if q == 1 else "MISMATCH: x",
                             "median_ms": k, "peak_rss_mb": 100})
            with open(path, "w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=run.FIELDS, lineterminator="\n")
                w.writeheader()
                for r in rows:
                    w.writerow({k: r.get(k, "") for k in run.FIELDS})
            with open(os.path.join(d, "x-sf1.json"), "w") as fh:
                json.dump({"scale_factor": 1, "date": "2026-11-30", "runs": 5,
                           "machine": {"cores": 2, "memory_gib": 23.4}, "engines": {}}, fh)
            md, svg = report.render(path)
            with open(md) as fh:
                text = fh.read()
            self.assertIn("| q01 | 200.0 | 100.0 | 50.0 | 2.00 | 4.00 |", text)
            self.assertIn("FAIL", text)
            self.assertIn("squall/datafusion: time 1.00", text)  # sqrt(2 * 0.5)
            self.assertIn("over 1 queries", text)
            self.assertIn("$0.0000123", text)
            root = ET.parse(svg).getroot()
            self.assertTrue(root.tag.endswith("svg"))
            self.assertGreater(len(list(root.iter("{http://www.w3.org/2000/svg}rect"))), 6)


class EndToEnd(unittest.TestCase):
    """The whole runner with the real squall binary (SQUALL_BIN) and both
    peers on TPC-H SF 0.01: every engine's answers check, every file is written."""

    def test_runner_on_tiny_data(self):
        binary = os.environ.get("SQUALL_BIN")
        if not binary:
            if os.environ.get("BENCH_REQUIRE_E2E"):
                self.fail("SQUALL_BIN is not set")
            self.skipTest("SQUALL_BIN not set")
        with tempfile.TemporaryDirectory() as d:
            data = os.path.join(d, "sf0.01")
            out = os.path.join(d, "results")
            proc = subprocess.run(
                [sys.executable, os.path.join(BENCH, "run.py"), "--sf", "0.01", "--squall", binary,
                 "--data", data, "--runs", "2", "--queries", "1,3,13,15,22", "--out", out],
                capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            names = sorted(os.listdir(out))
            csvs = [n for n in names if n.endswith("-sf0.01.csv")]
            self.assertEqual(len(csvs), 1, names)
            stem = os.path.join(out, csvs[0][:-4])
            for ext in (".json", ".md", ".svg", "-profile.json"):
                self.assertTrue(os.path.exists(stem + ext), ext)
            self.assertFalse([n for n in names if n.endswith(".tmp")], "work folder left behind")
            with open(stem + ".csv") as f:
                rows = list(csv.DictReader(f))
            self.assertEqual(len(rows), 15)
            for r in rows:
                self.assertEqual(r["check"], "ok", r)
                self.assertGreater(float(r["median_ms"]), 0)
                self.assertGreater(float(r["peak_rss_mb"]), 0)
                self.assertEqual(len(r["runs_ms"].split(";")), 2)
            for r in rows:
                if r["engine"] == "squall":
                    self.assertGreater(float(r["cost_usd"]), 0)
                    self.assertGreater(int(r["tasks"]), 0)
                    # One exchange PUT per task with output (an empty output
                    # writes no object); the billed PUTs add the query's
                    # others (stop marker, state records, the API's).
                    self.assertGreater(int(r["s3_put"]), 0)
                    self.assertLessEqual(int(r["s3_put"]), int(r["tasks_launched"]))
                    self.assertGreater(int(r["s3_put_billed"]), int(r["s3_put"]))
            with open(stem + "-profile.json") as f:
                prof = json.load(f)
            self.assertEqual([p["query"] for p in prof["queries"]], [1, 3, 13, 15, 22])
            self.assertIn("squall/duckdb: time", proc.stdout)


if __name__ == "__main__":
    unittest.main()
