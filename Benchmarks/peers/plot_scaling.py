#!/usr/bin/env python3
"""Draws Benchmarks/scaling.csv (written by `swift run -c release Benchmarks scaling --peers`) as
an SVG: time per training step against the batch size (left) and against the width (right),
log–log, one line per engine, the sgemm ceiling's time for the same flops dashed.

    python3 Benchmarks/peers/plot_scaling.py Benchmarks/scaling.csv Benchmarks/scaling.svg

Plain Python (csv, math): no plotting library needed.
"""
import csv
import math
import sys

COLORS = {"neuron": "#d62728", "jax": "#1f77b4", "numpy": "#2ca02c", "torch": "#ff7f0e",
          "sgemm ceiling": "#7f7f7f"}
LABELS = {"neuron": "Neuron", "jax": "JAX (jit)", "numpy": "NumPy", "torch": "PyTorch",
          "sgemm ceiling": "sgemm ceiling (same flops)"}
W, H = 1010, 430
PANEL_W, PANEL_H = 400, 300
LEFT, TOP = 80, 60


def fmt_seconds(s):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if s >= scale:
            v = s / scale
            return f"{v:g} {unit}"
    return f"{s:g} s"


def panel(out, x0, title, xlabel, points, xkey):
    """points: {engine: [(x, median)]}"""
    xs = [x for series in points.values() for x, _ in series]
    ys = [y for series in points.values() for _, y in series]
    lx0, lx1 = math.log10(min(xs)), math.log10(max(xs))
    ly0, ly1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    if lx1 == lx0:
        lx1 = lx0 + 1

    def px(x):
        return x0 + (math.log10(x) - lx0) / (lx1 - lx0) * PANEL_W

    def py(y):
        return TOP + PANEL_H - (math.log10(y) - ly0) / (ly1 - ly0) * PANEL_H

    out.append(f'<text x="{x0 + PANEL_W / 2}" y="{TOP - 22}" text-anchor="middle" font-size="15" '
               f'font-weight="bold">{title}</text>')
    out.append(f'<rect x="{x0}" y="{TOP}" width="{PANEL_W}" height="{PANEL_H}" fill="none" stroke="#444"/>')
    for e in range(ly0, ly1 + 1):
        y = py(10 ** e)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + PANEL_W}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">'
                   f'{fmt_seconds(10 ** e)}</text>')
    for x in sorted(set(xs)):
        out.append(f'<line x1="{px(x):.1f}" y1="{TOP + PANEL_H}" x2="{px(x):.1f}" y2="{TOP + PANEL_H + 4}" stroke="#444"/>')
        out.append(f'<text x="{px(x):.1f}" y="{TOP + PANEL_H + 17}" text-anchor="middle" font-size="11">{x}</text>')
    out.append(f'<text x="{x0 + PANEL_W / 2}" y="{TOP + PANEL_H + 36}" text-anchor="middle" font-size="12">{xlabel}</text>')
    out.append(f'<text x="{x0 - 58}" y="{TOP + PANEL_H / 2}" text-anchor="middle" font-size="12" '
               f'transform="rotate(-90 {x0 - 58} {TOP + PANEL_H / 2})">time per step (median)</text>')
    for engine, series in points.items():
        series = sorted(series)
        color = COLORS.get(engine, "#000")
        dash = ' stroke-dasharray="5,4"' if engine == "sgemm ceiling" else ""
        path = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y) in enumerate(series))
        out.append(f'<path d="{path}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        if engine != "sgemm ceiling":
            for x, y in series:
                out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}">'
                           f'<title>{LABELS.get(engine, engine)}, {xkey} {x}: {fmt_seconds(y)}</title></circle>')


def main():
    if len(sys.argv) != 3:
        print("usage: plot_scaling.py SCALING.csv OUT.svg", file=sys.stderr)
        return 2
    with open(sys.argv[1], newline="") as f:
        rows = list(csv.DictReader(f))
    need = {"sweep", "batch", "width", "engine", "median_s"}
    if not rows or not need <= set(rows[0]):
        print(f"plot_scaling: {sys.argv[1]}: expected a header with {sorted(need)}", file=sys.stderr)
        return 1
    sweeps = {"batch": {}, "width": {}}
    for r in rows:
        key = "batch" if r["sweep"] == "batch" else "width"
        x = int(r[key])
        sweeps[r["sweep"]].setdefault(r["engine"], []).append((x, float(r["median_s"])))
    engines = [e for e in COLORS if any(e in s for s in sweeps.values())]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           'font-family="Helvetica, Arial, sans-serif">', f'<rect width="{W}" height="{H}" fill="white"/>']
    panel(out, LEFT, "784-256-128-10 against the batch", "batch size", sweeps["batch"], "batch")
    panel(out, LEFT + PANEL_W + 100, "width-width-width, batch 64, against the width", "width",
          sweeps["width"], "width")
    lx = LEFT
    for engine in engines:
        color = COLORS[engine]
        dash = ' stroke-dasharray="5,4"' if engine == "sgemm ceiling" else ""
        out.append(f'<line x1="{lx}" y1="{H - 18}" x2="{lx + 24}" y2="{H - 18}" stroke="{color}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{lx + 30}" y="{H - 14}" font-size="12">{LABELS.get(engine, engine)}</text>')
        lx += 40 + 7.5 * len(LABELS.get(engine, engine))
    out.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
