"""The benchmark's arithmetic: medians, geomeans, ratios, and the summary of a run.

Pure functions over plain rows (dicts as written to the results CSV), so the
tests can check them without running an engine.

Rules:
  * a query that failed (wrong answer or error) on an engine has no time on
    that engine: it is counted as a failure, never averaged in;
  * an engine's geomean and total are over the queries it answered right;
  * squall's overall ratio to a peer is the geometric mean of the per-query
    ratios over the queries both answered right (which equals the ratio of
    the two engines' geomeans over that common set).
"""
import math
import statistics


def median(values):
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("median of no values")
    return statistics.median(vals)


def geomean(values):
    vals = [float(v) for v in values]
    if not vals:
        return None
    if any(v <= 0 for v in vals):
        raise ValueError(f"geomean needs positive values, got {vals}")
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def ratio(a, b):
    """a / b, or None when either is missing or b is zero."""
    if a is None or b is None or b == 0:
        return None
    return float(a) / float(b)


def passed(row):
    return row.get("check") == "ok"


def index_rows(rows):
    """{(engine, query): row}."""
    return {(r["engine"], int(r["query"])): r for r in rows}


def _num(row, key):
    v = row.get(key) if row else None
    if v in (None, ""):
        return None
    return float(v)


def summarize(rows, engines, base="squall", time_key="median_ms", mem_key="peak_rss_mb"):
    """Per-query and per-engine figures of one run.

    rows: one dict per (engine, query) with at least engine, query, check,
    median_ms and peak_rss_mb. Returns a dict:
      queries: [{query, <engine>_ms, <engine>_mb, <engine>_check,
                 ratio_<peer>, mem_ratio_<peer>}, ...]
      engines: {engine: {passed, failed, geomean_ms, total_ms, geomean_mb, max_mb}}
      ratios:  {peer: {time, memory, common}}  (squall / peer, over `common` queries)
    """
    by = index_rows(rows)
    queries = sorted({int(r["query"]) for r in rows})
    peers = [e for e in engines if e != base]
    out_q = []
    for q in queries:
        line = {"query": q}
        for e in engines:
            r = by.get((e, q))
            ok = r is not None and passed(r)
            line[f"{e}_check"] = r["check"] if r else "missing"
            line[f"{e}_ms"] = _num(r, time_key) if ok else None
            line[f"{e}_mb"] = _num(r, mem_key) if ok else None
        for p in peers:
            line[f"ratio_{p}"] = ratio(line[f"{base}_ms"], line[f"{p}_ms"])
            line[f"mem_ratio_{p}"] = ratio(line[f"{base}_mb"], line[f"{p}_mb"])
        out_q.append(line)
    out_e = {}
    for e in engines:
        times = [l[f"{e}_ms"] for l in out_q if l[f"{e}_ms"] is not None]
        mems = [l[f"{e}_mb"] for l in out_q if l[f"{e}_mb"] is not None]
        out_e[e] = {
            "passed": len(times),
            "failed": len(out_q) - len(times),
            "geomean_ms": geomean(times),
            "total_ms": sum(times) if times else None,
            "geomean_mb": geomean(mems),
            "max_mb": max(mems) if mems else None,
        }
    ratios = {}
    for p in peers:
        t = [l[f"ratio_{p}"] for l in out_q if l[f"ratio_{p}"] is not None]
        m = [l[f"mem_ratio_{p}"] for l in out_q if l[f"mem_ratio_{p}"] is not None]
        ratios[p] = {"time": geomean(t), "memory": geomean(m), "common": len(t)}
    return {"queries": out_q, "engines": out_e, "ratios": ratios}


def relative_error(predicted, measured):
    """(predicted - measured) / measured."""
    if predicted is None or measured in (None, 0):
        return None
    return (float(predicted) - float(measured)) / float(measured)
