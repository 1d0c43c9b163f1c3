#!/usr/bin/env python3
"""The products' CSV (every round of every library) as markdown: per shape, each library's best
round (the lowest median), the fastest marked; then each workload's products summed per step.

    python3 summarize.py products.csv > table.md
"""
import csv
import sys
from collections import defaultdict

rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["library"] != "library"]
libraries = list(dict.fromkeys(r["library"] for r in rows))  # in the order they ran
shapes = {}  # shape number -> its row (dimensions, issued by)
best = {}  # (library, shape) -> the row of its best round
medians = defaultdict(list)  # (library, shape) -> every round's median
failed = {}  # (library, shape) -> status and error of a shape that was not timed
for r in rows:
    key = (r["library"], int(r["shape"]))
    shapes.setdefault(key[1], r)
    if r["status"] != "ok":
        failed[key] = f'{r["status"]} (error {r["max_error"]})'
        continue
    medians[key].append(float(r["median_us"]))
    if key not in best or float(r["median_us"]) < float(best[key]["median_us"]):
        best[key] = r


def us(t):
    return f"{t:.2f}" if t < 10 else f"{t:.1f}" if t < 1000 else f"{t:,.0f}"


def uses(text):  # "W4:1 W5:3" -> [("W4", 1), ("W5", 3)]
    return [(w, int(n)) for w, n in (u.split(":") for u in text.split())]


print("Libraries (each in its own process):\n")
print("| library | version | kernels | threads | rounds | round-to-round spread (median over shapes of worst / best) |")
print("|---|---|---|---|---|---|")
for lib in libraries:
    r = next(r for r in rows if r["library"] == lib)
    spreads = sorted(max(m) / min(m) for (l, _), m in medians.items() if l == lib and len(m) > 1)
    spread = f"{spreads[len(spreads) // 2]:.2f}×" if spreads else "–"
    rounds = len({x["round"] for x in rows if x["library"] == lib})
    print(f'| {lib} | {r["version"]} | {r["kernels"]} | {r["threads"]} | {rounds} | {spread} |')

print("\nMedian µs of single calls (GFLOP/s, 2mnk/t), each library's best round; **bold**: the fastest.")
print("A failed check is shown as FAIL and was not timed.\n")
print("| # | m × n × k | op | α | β | issued by (× a step) | " + " | ".join(libraries) + " |")
print("|---|---|---|---|---|---|" + "---|" * len(libraries))
for n, s in sorted(shapes.items()):
    times = {lib: float(best[(lib, n)]["median_us"]) for lib in libraries if (lib, n) in best}
    fastest = min(times, key=times.get) if times else None
    cells = []
    for lib in libraries:
        if (lib, n) in failed:
            cells.append(failed[(lib, n)])
        elif lib not in times:
            cells.append("–")
        else:
            cell = f'{us(times[lib])} ({float(best[(lib, n)]["gflops_median"]):.0f})'
            cells.append(f"**{cell}**" if lib == fastest else cell)
    issued = ", ".join(f"{w} ×{c}" for w, c in uses(s["used_by"]))
    print(f'| {n} | {s["m"]} × {s["n"]} × {s["k"]} | {s["ta"]}{s["tb"]} | {s["alpha"]} | {s["beta"]} | {issued} | ' + " | ".join(cells) + " |")

# A step's products: Σ count × median over the shapes a workload issues (each product timed alone,
# so caches hold what a step's neighbouring work would have evicted: a floor, not a step).
print("\nEach workload's products in one step, Σ count × median, in µs (the products timed alone, not a step):\n")
print("| workload | products a step | " + " | ".join(libraries) + " |")
print("|---|---|" + "---|" * len(libraries))
workloads = list(dict.fromkeys(w for s in shapes.values() for w, _ in uses(s["used_by"]) if w != "ceiling"))
for w in workloads:
    mine = [(n, c) for n, s in shapes.items() for x, c in uses(s["used_by"]) if x == w]
    sums = {}
    for lib in libraries:
        if all((lib, n) in best for n, _ in mine):
            sums[lib] = sum(c * float(best[(lib, n)]["median_us"]) for n, c in mine)
    fastest = min(sums, key=sums.get) if sums else None
    cells = [("**" + us(sums[l]) + "**" if l == fastest else us(sums[l])) if l in sums else "incomplete" for l in libraries]
    print(f"| {w} | {sum(c for _, c in mine)} | " + " | ".join(cells) + " |")
