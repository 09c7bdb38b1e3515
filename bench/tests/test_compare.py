"""The cell-by-cell answer comparison every engine is checked with: `squall
tpch check` (the one answer checker), through bench/run.py's check_answer.
Needs SQUALL_BIN (the cargo test that runs these sets it)."""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import run  # noqa: E402

ROOT = os.path.join(HERE, "..", "..")


def write(dir, name, text):
    p = os.path.join(dir, name)
    with open(p, "w") as f:
        f.write(text)
    return p


class Compare(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def squall(self):
        binary = os.environ.get("SQUALL_BIN")
        if not binary:
            self.fail("set SQUALL_BIN to a squall binary (cargo test sets it)")
        return binary

    def cmp(self, expected, actual, sql=None):
        e = write(self.dir, "e.csv", expected)
        a = write(self.dir, "a.csv", actual)
        q = write(self.dir, "q.sql", sql) if sql is not None else None
        msg = run.check_answer(self.squall(), e, a, q)
        self.assertFalse(msg.startswith("ERROR"), msg)
        return msg == "ok", msg

    def test_equal_within_tolerances(self):
        exp = "k,money,avg,d,n\na,10.00,0.050144597,1995-03-15,1478493\n"
        act = "k,money,avg,d,n\na,10.004,0.050144,1995-03-15 00:00:00,1478493.0\n"
        ok, msg = self.cmp(exp, act, "select * from t order by k")
        self.assertTrue(ok, msg)

    def test_one_wrong_cell_fails_and_is_named(self):
        exp = "k,n\na,1478493\nb,2\n"
        act = "k,n\na,1478494\nb,2\n"
        ok, msg = self.cmp(exp, act, "select * from t order by k")
        self.assertFalse(ok)
        self.assertIn("1478494", msg)

    def test_money_off_by_more_than_a_cent_fails(self):
        ok, _ = self.cmp("k,m\na,10.00\n", "k,m\na,10.02\n", "select * from t order by k")
        self.assertFalse(ok)

    def test_row_count_and_nulls(self):
        ok, msg = self.cmp("k\na\nb\n", "k\na\n", "select k from t order by k")
        self.assertFalse(ok)
        self.assertIn("row count", msg)
        ok, _ = self.cmp("k,v\na,\n", "k,v\na,NULL\n", "select * from t order by k")
        self.assertTrue(ok)
        ok, _ = self.cmp("k,v\na,\n", "k,v\na,0\n", "select * from t order by k")
        self.assertFalse(ok)

    def test_order_matters_only_where_the_query_orders(self):
        ok, _ = self.cmp("k,v\na,1\nb,2\n", "k,v\nb,2\na,1\n", "select k, v from t")
        self.assertTrue(ok)
        ok, _ = self.cmp("k,v\na,1\nb,2\n", "k,v\nb,2\na,1\n", "select k, v from t order by k")
        self.assertFalse(ok)
        # Ties on the ORDER BY key may come in any order.
        ok, _ = self.cmp("k,v\na,1\na,2\n", "k,v\na,2\na,1\n", "select k, v from t order by k")
        self.assertTrue(ok)

    def test_carried_answer_equals_itself(self):
        answer = os.path.join(ROOT, "bench", "tpch", "answers", "sf1", "q01.csv")
        query = os.path.join(ROOT, "bench", "tpch", "queries", "q01.sql")
        self.assertEqual(run.check_answer(self.squall(), answer, answer, query), "ok")

    def test_unreadable_answer_is_an_error(self):
        e = write(self.dir, "e.csv", "k\na\n")
        msg = run.check_answer(self.squall(), e, os.path.join(self.dir, "none.csv"), None)
        self.assertTrue(msg.startswith("ERROR"), msg)


if __name__ == "__main__":
    unittest.main()
