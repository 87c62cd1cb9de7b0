#!/usr/bin/env python3
"""Draws the benchmark charts of docs/benchmarks.md as plain SVG, from the same
JSON the tables come from (scripts/bench_data.py). Standard library only.

    python3 scripts/bench_charts.py [--out docs/img]
    python3 scripts/bench_charts.py --check   # draw into a temporary folder, parse
        # every SVG, compare with docs/img/, and check that each image the
        # benchmark pages (docs/benchmarks.md, the RESULTS files) show exists

Charts:
  fairness.svg        waiting time of a large request amid small ones, every
                      language (median over the runs of each run's p50, p99 and
                      max; whisker: the p99 of the lowest and highest run)
  fairness-LANG.svg   the same for one language (the RESULTS files open with it)
  ratios-LANG.svg     volt-sem's time divided by each peer's, one dot per
                      scenario and peer (log axis, 1.0 marked, volt-sem faster
                      to the left; whisker: lowest to highest run)
  scaling.svg         throughput as threads, tokio workers and processes grow
                      (core/benches/results/scaling.json, `make bench-scaling`),
                      volt-sem against std, parking_lot, tokio, async-lock and
                      POSIX semaphores, with each one's fairness (fewest
                      operations of one thread over the most)
  redis.svg           the semaphore in Redis against redis-semaphore and
                      redis-py's Lock (redis/bench/results/redis.json): the
                      uncontended acquire + release, the hand-off, and the wait
                      of 8 clients on 2 permits (dot: median over the runs of
                      each run's p50; ring: p99; bar to the longest wait where
                      measured; whisker: the p50 of the lowest and highest run)
"""
import argparse
import math
import os
import re
import sys
import tempfile
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_data as bd  # noqa: E402

FONT = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\""
VOLT = "#1f6feb"  # volt-sem
PEER = "#57606a"
GRID = "#d0d7de"


class Svg:
    def __init__(self, width):
        self.width = width
        self.parts = []

    def text(self, x, y, s, size=12, anchor="start", weight="normal", color="#24292f", italic=False):
        style = ' font-style="italic"' if italic else ""
        self.parts.append(
            f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
            f'font-weight="{weight}" fill="{color}"{style}>{escape(s)}</text>'
        )

    def line(self, x1, y1, x2, y2, color=GRID, width=1, dash=None):
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" stroke-width="{width}"{d}/>'
        )

    def circle(self, x, y, r, fill, stroke=None):
        s = f' stroke="{stroke}" stroke-width="1.5"' if stroke else ""
        self.parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{fill}"{s}/>')

    def rect(self, x, y, w, h, fill):
        self.parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{fill}"/>')

    def render(self, height, title):
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{height:.0f}" '
            f'viewBox="0 0 {self.width} {height:.0f}" {FONT}>\n<title>{escape(title)}</title>\n'
            f'<rect width="100%" height="100%" fill="white"/>\n'
        )
        return head + "\n".join(self.parts) + "\n</svg>\n"


class LogAxis:
    def __init__(self, lo, hi, x0, x1):
        self.lo, self.hi, self.x0, self.x1 = math.log10(lo), math.log10(hi), x0, x1

    def x(self, v):
        v = min(max(v, 10**self.lo), 10**self.hi)
        return self.x0 + (math.log10(v) - self.lo) / (self.hi - self.lo) * (self.x1 - self.x0)

    def decades(self):
        return [10**e for e in range(round(self.lo), round(self.hi) + 1)]


def short_meta(doc):
    m = doc["meta"]
    return f"{m['date']}, commit {m['commit']}"


def load_note(doc):
    """The 1-minute load averages the run recorded (as bench_report's tables
    say them): whether the machine was quiet is part of every figure."""
    m = doc["meta"]
    loads = m.get("load") or [r.get("load") for res in doc.get("results", []) for r in res.get("runs", [])]
    firsts = [float(x.split()[0]) for x in loads if isinstance(x, str) and x]
    return f"load {min(firsts):.1f}-{max(firsts):.1f}" if firsts else "load not recorded"


# -- fairness -------------------------------------------------------------------


def fairness_chart(only=None):
    docs = [(name, bd.load(lang, "fairness")) for lang, name, _ in bd.LANGUAGES if only in (None, lang)]
    docs = [(n, d) for n, d in docs if d]
    if not docs:
        return None
    svg = Svg(1060)
    axis = LogAxis(1, 1e7, 290, 690)
    y = 20
    svg.text(12, y, "Waiting time of a large request (3 permits) amid small ones (1 permit)", 16, weight="bold")
    y += 20
    sc = docs[0][1]["scenario"]
    svg.text(12, y, f"Limit {sc['permits']}; {sc['small_clients']} small clients in a tight acquire-hold-release loop; "
             f"one large request every {sc['pause_ms']:g} ms. Shorter is better.", 12, color=PEER)
    y += 16
    runs = max(len(r["runs"]) for _, d in docs for r in d["results"])
    svg.text(12, y, f"Dot: median wait (p50); ring: p99; bar: longest wait. Each the median over {runs} runs; "
             "whisker: p99 of the best and worst run.", 12, color=PEER)
    y += 26
    top = y
    # axis labels at the top
    for v in axis.decades():
        label = bd.fmt_us(v).replace(".0 ", " ")
        svg.text(axis.x(v), y, label, 11, anchor="middle", color=PEER)
    svg.text(730, y, "small ones served first", 11, color=PEER)
    svg.text(990, y, "evenness", 11, color=PEER)
    y += 8
    grid_top = y
    rows = []
    for lang_name, doc in docs:
        variants = []
        for r in doc["results"]:
            if r["variant"] not in variants:
                variants.append(r["variant"])
        for variant in variants:
            y += 28
            svg.text(12, y, f"{lang_name}, {variant}", 13, weight="bold")
            for r in doc["results"]:
                if r["variant"] != variant:
                    continue
                y += 20
                rows.append((y, r))
                s = bd.fairness_summary(r)
                is_volt = r["impl"] in ("volt-sem", "volt_sem")
                color = VOLT if is_volt else PEER
                name = r["impl"] + ("" if r["weighted"] else " (3 x acquire(1))")
                svg.text(28, y + 4, name, 12, weight="bold" if is_volt else "normal", color=color)
                p50, p99, mx = s["p50"][0], s["p99"][0], s["max"][0]
                svg.line(axis.x(p50), y, axis.x(mx), y, color=color, width=2)
                svg.line(axis.x(mx), y - 6, axis.x(mx), y + 6, color=color, width=3)
                svg.line(axis.x(s["p99"][1]), y + 7, axis.x(s["p99"][2]), y + 7, color=color, width=1)
                for v in (s["p99"][1], s["p99"][2]):
                    svg.line(axis.x(v), y + 4, axis.x(v), y + 10, color=color, width=1)
                svg.circle(axis.x(p99), y, 4.5, "white", stroke=color)
                svg.circle(axis.x(p50), y, 4.5, color)
                if s["starved_total"]:
                    note = f"starved in {sum(1 for run in r['runs'] if run['starved'])} of {s['runs']} runs"
                    svg.text(730, y + 4, note, 11, color="#cf222e", weight="bold")
                elif s["overtaken_max"][2] == 0:
                    svg.text(730, y + 4, "none", 11, color=color)
                else:
                    mean = s["overtaken_mean"][0]
                    svg.text(730, y + 4, f"{mean:,.1f} per request (most {s['overtaken_max'][0]:,.0f})",
                             11, color=color)
                svg.text(990, y + 4, f"{s['jain'][0]:.2f}", 11, color=color)
    bottom = y + 12
    for v in axis.decades():
        svg.line(axis.x(v), grid_top, axis.x(v), bottom, color=GRID)
    y = bottom + 18
    notes = [
        "Small ones served first: small requests that asked after the large one and were served while it waited; "
        "mean per large request (most before one request).",
        "Evenness: Jain's index of the small clients' grants (1.00 = all got the same share).",
        f"Starved: a large request waited {sc.get('starved_after_s', 1):g} s and was served only because the small "
        "clients were then stopped (the bar ends there).",
        "Measured on a 2-core VM; " + "; ".join(f"{n}: {short_meta(d)}, {load_note(d)}" for n, d in docs) + ".",
    ]
    for n in notes:
        svg.text(12, y, n, 11, color=PEER)
        y += 15
    _ = top
    return svg.render(y + 4, "Waiting time of a large request amid small ones")


# -- ratios ---------------------------------------------------------------------


def ratio_chart(lang, lang_name):
    doc = bd.load(lang, "throughput")
    if not doc:
        return None
    base = doc["baseline"]
    ref = set(doc.get("reference", []))
    entries = []
    for sc in doc["scenarios"]:
        peers = [p for p in sc["results"] if p != base and p not in ref]
        if base not in sc["results"] or not peers:
            continue
        title = sc["title"].replace("`", "") + (f" ({sc['loop']})" if sc.get("loop", "asyncio") != "asyncio" else "")
        entries.append((title, [(p, bd.ratios(sc, base, p)) for p in peers]))
    allr = [x for _, ps in entries for _, rs in ps for x in rs]
    lo = 10 ** math.floor(math.log10(min(allr + [0.5])))
    hi = 10 ** math.ceil(math.log10(max(allr + [2.0])))
    svg = Svg(900)
    axis = LogAxis(lo, hi, 370, 770)
    y = 20
    svg.text(12, y, f"{lang_name}: volt-sem's time per operation divided by each peer's", 16, weight="bold")
    y += 18
    svg.text(12, y, f"Dot: median of {doc['meta']['runs']} runs (each run measures every implementation, one after another); "
             "whisker: lowest to highest run.", 12, color=PEER)
    y += 16
    svg.text(12, y, f"Left of 1.0, volt-sem is faster. {doc['meta']['date']}, commit {doc['meta']['commit']}, "
             f"2-core VM, {load_note(doc)}.", 12, color=PEER)
    y += 26
    for v in axis.decades():
        svg.text(axis.x(v), y, f"{v:g}x", 11, anchor="middle", color=PEER)
    svg.text(axis.x(lo) , y - 14, "\u2190 volt-sem faster", 11, color=VOLT)
    svg.text(axis.x(hi), y - 14, "volt-sem slower \u2192", 11, anchor="end", color=PEER)
    grid_top = y + 6
    for title, peers in entries:
        y += 28
        svg.text(12, y, title, 12, weight="bold")
        for peer, rs in peers:
            y += 19
            med, mn, mx = bd.spread(rs)
            color = VOLT if med <= 1 else PEER
            svg.text(28, y + 4, f"vs {peer}", 12, color=PEER)
            svg.line(axis.x(mn), y, axis.x(mx), y, color=color, width=1.5)
            for v in (mn, mx):
                svg.line(axis.x(v), y - 4, axis.x(v), y + 4, color=color, width=1.5)
            svg.circle(axis.x(med), y, 5, color)
            svg.text(786, y + 4, bd.fmt_ratio(med), 12, color=color, weight="bold")
    bottom = y + 12
    for v in axis.decades():
        svg.line(axis.x(v), grid_top, axis.x(v), bottom, color=GRID)
    svg.line(axis.x(1), grid_top, axis.x(1), bottom, color="#24292f", width=1.5)
    svg.text(axis.x(1) + 4, bottom + 14, "1.0 = same time", 11, color="#24292f")
    return svg.render(bottom + 24, f"{lang_name}: volt-sem's time divided by each peer's")


# -- Redis ------------------------------------------------------------------------

REDIS_JSON = os.path.join(bd.ROOT, "redis", "bench", "results", "redis.json")
REDIS_PARTS = [
    ("uncontended", "Uncontended acquire(1) + release (PING: one round trip of the same client library)"),
    ("handoff", "Hand-off: release to the woken waiter running (BLPOP: the floor of a push wake-up)"),
    ("contended", "Wait for a grant, 8 clients in a loop on 2 permits (bar: the longest wait)"),
]


def redis_chart():
    if not os.path.exists(REDIS_JSON):
        return None
    import json

    with open(REDIS_JSON) as f:
        doc = json.load(f)
    runs = doc["runs"]
    svg = Svg(1000)
    axis = LogAxis(10, 1_000_000, 380, 900)
    y = 20
    svg.text(12, y, "A limit shared through Redis: volt-sem against redis-semaphore (Node) and redis-py's Lock",
             16, weight="bold")
    y += 18
    svg.text(12, y, f"Dot: median p50; ring: p99; each the median over {len(runs)} runs; whisker: the p50 of the "
                    "lowest and highest run. Log axis.", 12, color=PEER)
    y += 16
    svg.text(12, y, f"One local redis-server {doc['meta']['versions']['redis-server']}, loopback; "
                    f"{short_meta(doc)}, 2-core VM, {load_note(doc)}.", 12, color=PEER)
    y += 26
    for v in axis.decades():
        svg.text(axis.x(v), y, bd.fmt_us(v), 11, anchor="middle", color=PEER)
    grid_top = y + 6
    for part, title in REDIS_PARTS:
        y += 28
        svg.text(12, y, title, 13, weight="bold")
        for impl in runs[0][part]:
            if "(before)" in impl:
                continue  # the library before the work the JSON measured: in the tables only
            vals = [r[part][impl] for r in runs if impl in r.get(part, {})]
            y += 20
            p50, lo, hi = bd.spread([v["p50"] for v in vals])
            p99 = bd.spread([v["p99"] for v in vals])[0]
            is_volt = impl.startswith("volt-sem")
            reference = impl.startswith(("PING", "BLPOP"))
            color = VOLT if is_volt else PEER
            svg.text(28, y + 4, impl, 12, weight="bold" if is_volt else "normal",
                     color=color if not reference else "#8c959f")
            if "max" in vals[0]:
                mx = bd.spread([v["max"] for v in vals])[0]
                svg.line(axis.x(p50), y, axis.x(mx), y, color=color, width=2)
                svg.line(axis.x(mx), y - 6, axis.x(mx), y + 6, color=color, width=3)
            else:
                svg.line(axis.x(p50), y, axis.x(p99), y, color=color, width=1, dash="3,3")
            svg.line(axis.x(lo), y + 7, axis.x(hi), y + 7, color=color, width=1)
            svg.circle(axis.x(p99), y, 4.5, "white", stroke=color)
            svg.circle(axis.x(p50), y, 4.5, color if not reference else "#8c959f")
            svg.text(918, y + 4, bd.fmt_us(p50), 11, color=color)
    bottom = y + 12
    for v in axis.decades():
        svg.line(axis.x(v), grid_top, axis.x(v), bottom, color=GRID)
    svg.text(918, grid_top - 6, "p50", 11, color=PEER)
    return svg.render(bottom + 12, "A limit shared through Redis: volt-sem, redis-semaphore, redis-py's Lock")

# -- scaling ----------------------------------------------------------------------

SCALING_JSON = os.path.join(bd.ROOT, "core", "benches", "results", "scaling.json")
SCALING_PARTS = [
    ("mutex", "Blocking mutex, ~40 ns critical section", "threads"),
    ("tokio", "tokio: 4 tasks a worker on 2 permits", "workers"),
    ("processes", "Processes on one named permit", "processes"),
]
DASHES = [None, "2,3", "8,3,2,3", "10,4", "1,2"]


def scaling_chart():
    if not os.path.exists(SCALING_JSON):
        return None
    import json

    with open(SCALING_JSON) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    meta = next((r["meta"] for r in rows if "meta" in r), {})
    rows = [r for r in rows if "bench" in r]
    if not rows:
        return None
    svg = Svg(1000)
    y = 20
    svg.text(12, y, "Scaling: operations per second as threads, workers and processes grow", 16, weight="bold")
    y += 18
    svg.text(12, y, "Log axes. Next to each point of the largest count: its fairness (the fewest operations of one "
                    "thread, task or process over the most; 1.00 = all alike).", 12, color=PEER)
    y += 16
    svg.text(12, y, f"{meta.get('date', '?')}, commit {meta.get('commit', '?')}, {meta.get('cores', '?')} cores; "
                    "one run, every implementation one after another.", 12, color=PEER)
    y += 20
    top = y
    width, gap, height = 300, 30, 230
    lo = min(r["ops_per_sec"] for r in rows if r["ops_per_sec"] > 0)
    hi = max(r["ops_per_sec"] for r in rows)
    ylo, yhi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))

    def ypos(v):
        v = min(max(v, ylo), yhi)
        return top + 20 + height - (math.log10(v) - math.log10(ylo)) / (math.log10(yhi) - math.log10(ylo)) * height

    bottom = top + 20 + height
    for i, (bench, title, unit) in enumerate(SCALING_PARTS):
        part = [r for r in rows if r["bench"] == bench]
        x0 = 60 + i * (width + gap)
        svg.text(x0, top + 8, title, 12, weight="bold")
        if not part:
            continue
        ns = sorted({r["n"] for r in part})
        span = max(math.log2(ns[-1]) - math.log2(ns[0]), 1)

        def xpos(n):
            return x0 + 10 + (math.log2(n) - math.log2(ns[0])) / span * (width - 80)

        for n in ns:
            svg.line(xpos(n), top + 20, xpos(n), bottom, color=GRID)
            svg.text(xpos(n), bottom + 14, str(n), 11, anchor="middle", color=PEER)
        svg.text(x0 + (width - 60) / 2, bottom + 28, unit, 11, anchor="middle", color=PEER)
        e = math.log10(ylo)
        while e <= math.log10(yhi) + 1e-9:
            svg.line(x0, ypos(10**e), x0 + width - 60, ypos(10**e), color=GRID)
            if i == 0:
                v = 10**e
                tick = f"{v / 1e6:g}M" if v >= 1e6 else f"{v / 1e3:g}k" if v >= 1e3 else f"{v:g}"
                svg.text(x0 - 6, ypos(v) + 4, tick, 10, anchor="end", color=PEER)
            e += 1
        impls = list(dict.fromkeys(r["impl"] for r in part))
        labelled = []  # y of the fairness labels drawn, to keep them apart
        for k, impl in enumerate(impls):
            pts = sorted((r["n"], r["ops_per_sec"], r["fairness"]) for r in part if r["impl"] == impl)
            color = VOLT if impl == "volt-sem" else PEER
            dash = None if impl == "volt-sem" else DASHES[1 + (k - 1) % (len(DASHES) - 1)]
            for (n1, v1, _), (n2, v2, _) in zip(pts, pts[1:]):
                svg.line(xpos(n1), ypos(v1), xpos(n2), ypos(v2), color=color, width=2 if color == VOLT else 1.2,
                         dash=dash)
            for n, v, _ in pts:
                svg.circle(xpos(n), ypos(v), 3.5 if color == VOLT else 2.5, color)
            n, v, fair = pts[-1]
            ly = ypos(v) + 4
            while any(abs(ly - other) < 11 for other in labelled):
                ly += 11
            labelled.append(ly)
            svg.text(xpos(n) + 6, ly, f"{fair:.2f}", 10, color=color)
            ly = bottom + 44 + k * 15
            svg.line(x0, ly - 4, x0 + 24, ly - 4, color=color, width=2 if color == VOLT else 1.2, dash=dash)
            svg.text(x0 + 30, ly, impl, 11, color=color, weight="bold" if color == VOLT else "normal")
    legend_rows = max(len({r["impl"] for r in rows if r["bench"] == b}) for b, _, _ in SCALING_PARTS)
    return svg.render(bottom + 44 + legend_rows * 15 + 6, "Scaling: operations per second as threads, workers and "
                      "processes grow")


def charts():
    out = {"fairness.svg": fairness_chart()}
    for lang, name, _ in bd.LANGUAGES:
        out[f"fairness-{lang}.svg"] = fairness_chart(lang)
        out[f"ratios-{lang}.svg"] = ratio_chart(lang, name)
    out["redis.svg"] = redis_chart()
    out["scaling.svg"] = scaling_chart()
    return {k: v for k, v in out.items() if v is not None}


def write(folder):
    os.makedirs(folder, exist_ok=True)
    made = charts()
    for name, text in made.items():
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)
    return made


def check():
    """Draws every chart from the checked-in JSON, parses each as SVG, and checks
    that every image docs/benchmarks.md shows exists. Exit status 1 on a problem."""
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        made = write(tmp)
        expected = {"fairness.svg"} | {f"{kind}-{lang}.svg" for lang, _, _ in bd.LANGUAGES
                                       for kind in ("fairness", "ratios")} | {"redis.svg", "scaling.svg"}
        for name in sorted(expected - set(made)):
            problems.append(f"{name}: not drawn (its JSON is missing)")
        for name in made:
            root = ET.parse(os.path.join(tmp, name)).getroot()
            if root.tag != "{http://www.w3.org/2000/svg}svg":
                problems.append(f"{name}: root element is {root.tag}, not svg")
            if not any(el.tag.endswith("circle") for el in root.iter()):
                problems.append(f"{name}: no data point drawn")
            checked_in = os.path.join(bd.ROOT, "docs", "img", name)
            if not os.path.exists(checked_in):
                problems.append(f"docs/img/{name}: missing (run python3 scripts/bench_charts.py)")
            elif open(checked_in).read() != made[name]:
                problems.append(f"docs/img/{name}: differs from what the JSON draws (run python3 scripts/bench_charts.py)")
    images = 0
    for rel, first in [("docs/benchmarks.md", "fairness.svg"),
                       ("bindings-python/bench/RESULTS.md", "fairness-python.svg"),
                       ("bindings-node/bench/RESULTS.md", "fairness-node.svg")]:
        page = os.path.join(bd.ROOT, rel)
        with open(page) as f:
            shown = re.findall(r"!\[[^\]]*\]\(([^)]+\.svg)\)", f.read())
        images += len(shown)
        if not shown or os.path.basename(shown[0]) != first:
            problems.append(f"{rel}: the first chart is not {first}")
        for img in shown:
            if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(page), img))):
                problems.append(f"{rel} shows {img}, which does not exist")
    for p in problems:
        print("bench_charts:", p, file=sys.stderr)
    if not problems:
        print(f"bench_charts: {len(made)} charts drawn and parsed; the {images} images the benchmark pages show exist")
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(bd.ROOT, "docs", "img"))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if args.check:
        sys.exit(check())
    for name in write(args.out):
        print(os.path.join(args.out, name))


if __name__ == "__main__":
    main()
