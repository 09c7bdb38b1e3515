#!/usr/bin/env python3
"""Summary of one benchmark run, from its CSV: a Markdown table and an SVG chart.

usage: report.py bench/results/<stamp>-sf1.csv

Writes <stamp>-sf1.md and <stamp>-sf1.svg beside the CSV (and reads the
<stamp>-sf1.json written with it, for the date, machine and versions, when
present). The chart has two panels: per-query median latency per engine
(log scale), and squall's latency ratio to each peer per query (log scale,
below 1 = squall faster). Failed queries are drawn as an X, never as a bar.
"""
import csv
import json
import math
import os
import sys
from html import escape

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import stats  # noqa: E402

COLORS = {"squall": "#1f6feb", "datafusion": "#d9822b", "duckdb": "#2da44e"}
LABELS = {"squall": "squall (embedded)", "datafusion": "DataFusion (single node)", "duckdb": "DuckDB"}


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def engines_of(rows):
    seen = []
    for r in rows:
        if r["engine"] not in seen:
            seen.append(r["engine"])
    return seen


def fmt(v, digits=1, suffix=""):
    if v is None:
        return "—"
    return f"{v:,.{digits}f}{suffix}"


def fmt_usd(v):
    if v in (None, ""):
        return "—"
    return f"${float(v):.7f}"


def markdown(rows, meta):
    names = engines_of(rows)
    peers = [n for n in names if n != "squall"]
    s = stats.summarize(rows, names)
    by = stats.index_rows(rows)
    out = []
    if meta:
        m = meta.get("machine", {})
        vers = ", ".join(v.get("version") or (f"squall {meta.get('squall_commit', '')}".strip()
                                              if n == "squall" else n)
                         for n, v in meta.get("engines", {}).items())
        out.append(f"TPC-H SF{meta.get('scale_factor', 0):g}, {meta.get('date', '')}, "
                   f"{m.get('cores', '?')} cores, {m.get('memory_gib', '?')} GiB, {m.get('cpu', '')}; "
                   f"median of {meta.get('runs', '?')} timed runs after one warm-up, engines alternated; "
                   f"{vers}.")
        if meta.get("load_average_start_end"):
            a, b = meta["load_average_start_end"]
            out.append("")
            out.append(f"Machine load average (1/5/15 min) at the start: {a[0]:.1f}/{a[1]:.1f}/{a[2]:.1f}, "
                       f"at the end: {b[0]:.1f}/{b[1]:.1f}/{b[2]:.1f} (other work on the machine slows every "
                       f"engine; alternation spreads it across them).")
        out.append("")
    head = ["query"] + [f"{n} ms" for n in names] + [f"squall/{p}" for p in peers]
    head += [f"{n} MB" for n in names] + [f"mem squall/{p}" for p in peers]
    head += ["tasks", "GETs", "PUTs", "msgs", "cost (USD)"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    for line in s["queries"]:
        q = line["query"]
        cells = [f"q{q:02d}"]
        for n in names:
            cells.append(fmt(line[f"{n}_ms"]) if line[f"{n}_ms"] is not None else "FAIL")
        for p in peers:
            cells.append(fmt(line[f"ratio_{p}"], 2))
        for n in names:
            cells.append(fmt(line[f"{n}_mb"], 0) if line[f"{n}_mb"] is not None else "FAIL")
        for p in peers:
            cells.append(fmt(line[f"mem_ratio_{p}"], 2))
        sq = by.get(("squall", q), {})
        cells += [sq.get("tasks", "") or "—", sq.get("s3_get_billed", "") or "—",
                  sq.get("s3_put_billed", "") or "—", sq.get("messages", "") or "—",
                  fmt_usd(sq.get("cost_usd"))]
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    out.append("")
    out.append("| engine | correct | geomean ms | total ms | geomean peak MB | max peak MB |")
    out.append("|---|---|---|---|---|---|")
    for n in names:
        e = s["engines"][n]
        out.append(f"| {LABELS.get(n, n)} | {e['passed']}/{e['passed'] + e['failed']} | {fmt(e['geomean_ms'])} | "
                   f"{fmt(e['total_ms'], 0)} | {fmt(e['geomean_mb'], 0)} | {fmt(e['max_mb'], 0)} |")
    out.append("")
    for p in peers:
        r = s["ratios"][p]
        out.append(f"- squall/{p}: time {fmt(r['time'], 2)}, peak memory {fmt(r['memory'], 2)} "
                   f"(geomean of per-query ratios over {r['common']} queries both answered right)")
    costs = [float(by[("squall", l["query"])]["cost_usd"]) for l in s["queries"]
             if by.get(("squall", l["query"]), {}).get("cost_usd")]
    if costs:
        out.append(f"- modelled AWS cost of the {len(costs)} squall queries: ${sum(costs):.6f} in all, "
                   f"${sum(costs) / len(costs):.7f} per query on average (planner/src/cost.rs)")
    return "\n".join(out) + "\n", s


def _log_y(v, lo, hi, top, height):
    v = min(max(v, lo), hi)
    return top + height * (1 - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)))


def svg_chart(summary, names, title):
    peers = [n for n in names if n != "squall"]
    qs = summary["queries"]
    left, right, panel_h, gap, top = 70, 20, 260, 80, 50
    width = max(900, left + right + len(qs) * 40)
    height = top + panel_h + gap + panel_h + 70
    plot_w = width - left - right
    slot = plot_w / max(len(qs), 1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>']

    # Panel 1: latency per engine, log scale.
    times = [l[f"{n}_ms"] for l in qs for n in names if l[f"{n}_ms"]]
    lo = 10 ** math.floor(math.log10(min(times))) if times else 1
    hi = 10 ** math.ceil(math.log10(max(times))) if times else 10
    if hi <= lo:
        hi = lo * 10
    t1 = top
    out.append(f'<text x="{left}" y="{t1 - 8}" font-size="12">median latency per query (ms, log scale)</text>')
    d = lo
    while d <= hi * 1.0001:
        y = _log_y(d, lo, hi, t1, panel_h)
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{d:g}</text>')
        d *= 10
    bw = slot * 0.8 / max(len(names), 1)
    for i, l in enumerate(qs):
        x0 = left + i * slot + slot * 0.1
        for k, n in enumerate(names):
            x = x0 + k * bw
            v = l[f"{n}_ms"]
            if v is None:
                y = t1 + panel_h - 10
                out.append(f'<text x="{x + bw / 2:.1f}" y="{y:.1f}" text-anchor="middle" fill="red">X</text>')
                continue
            y = _log_y(v, lo, hi, t1, panel_h)
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bw * 0.95:.1f}" height="{t1 + panel_h - y:.1f}" '
                       f'fill="{COLORS.get(n, "#888")}"><title>{n} q{l["query"]:02d}: {v:.1f} ms</title></rect>')
        out.append(f'<text x="{left + i * slot + slot / 2:.1f}" y="{t1 + panel_h + 14}" '
                   f'text-anchor="middle">q{l["query"]:02d}</text>')

    # Panel 2: squall / peer ratios, log scale around 1.
    t2 = top + panel_h + gap
    rs = [l[f"ratio_{p}"] for l in qs for p in peers if l[f"ratio_{p}"]]
    span = max([abs(math.log10(r)) for r in rs] + [math.log10(2)])
    span = math.ceil(span * 10) / 10
    rlo, rhi = 10 ** -span, 10 ** span
    out.append(f'<text x="{left}" y="{t2 - 8}" font-size="12">squall latency / peer latency '
               f'(log scale; below 1 = squall faster)</text>')
    for tick in (0.25, 0.5, 1, 2, 4, 8):
        if rlo <= tick <= rhi:
            y = _log_y(tick, rlo, rhi, t2, panel_h)
            color = "#888" if tick == 1 else "#ddd"
            out.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="{color}"/>')
            out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
    y1 = _log_y(1, rlo, rhi, t2, panel_h)
    bw2 = slot * 0.8 / max(len(peers), 1)
    for i, l in enumerate(qs):
        x0 = left + i * slot + slot * 0.1
        for k, p in enumerate(peers):
            x = x0 + k * bw2
            v = l[f"ratio_{p}"]
            if v is None:
                out.append(f'<text x="{x + bw2 / 2:.1f}" y="{y1 + 4:.1f}" text-anchor="middle" fill="red">X</text>')
                continue
            y = _log_y(v, rlo, rhi, t2, panel_h)
            top_y, h = (y, y1 - y) if y < y1 else (y1, y - y1)
            out.append(f'<rect x="{x:.1f}" y="{top_y:.1f}" width="{bw2 * 0.95:.1f}" height="{max(h, 0.5):.1f}" '
                       f'fill="{COLORS.get(p, "#888")}"><title>squall/{p} q{l["query"]:02d}: {v:.2f}</title></rect>')
        out.append(f'<text x="{left + i * slot + slot / 2:.1f}" y="{t2 + panel_h + 14}" '
                   f'text-anchor="middle">q{l["query"]:02d}</text>')

    # Legend.
    ly = height - 22
    x = left
    for n in names:
        out.append(f'<rect x="{x}" y="{ly - 9}" width="10" height="10" fill="{COLORS.get(n, "#888")}"/>')
        label = LABELS.get(n, n) if n == "squall" else f"{LABELS.get(n, n)} (ratio panel: squall/{n})"
        out.append(f'<text x="{x + 14}" y="{ly}">{escape(label)}</text>')
        x += 40 + 7 * len(label)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def render(csv_path):
    rows = read_rows(csv_path)
    stem = os.path.splitext(csv_path)[0]
    meta = None
    if os.path.exists(stem + ".json"):
        with open(stem + ".json") as f:
            meta = json.load(f)
    text, summary = markdown(rows, meta)
    md = stem + ".md"
    with open(md, "w") as f:
        f.write(text)
    sf = f"SF{meta['scale_factor']:g} " if meta else ""
    date = meta.get("date", "") if meta else ""
    svg = stem + ".svg"
    with open(svg, "w") as f:
        f.write(svg_chart(summary, engines_of(rows), f"squall vs peers, TPC-H {sf}{date}".strip()))
    return md, svg


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    md, svg = render(argv[1])
    print(open(md).read())
    print(f"summary: {md}\nchart:   {svg}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
