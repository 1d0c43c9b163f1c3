#!/usr/bin/env python3
"""Draws F1, F4 and F5 in float32 and in bf16 side by side, for Neuron and PyTorch, from two JSON
reports of the benchmarks (one run with --products full, one with --products bf16), as an SVG:
F1's test accuracy, F4's test loss and F5's exact validation loss after each epoch (F5: each
evaluation interval), one line per engine and precision, the time to the target in the legend.

    Benchmarks F1 F4 F5 --peers --kernels native --json full.json
    Benchmarks F1 F4 F5 --peers --kernels native --products bf16 --json bf16.json
    python3 Benchmarks/peers/plot_precision.py full.json bf16.json Benchmarks/precision.svg

Plain Python (json): no plotting library needed.
"""
import json
import sys

W, H = 1180, 470
PANEL_W, PANEL_H = 320, 280
LEFT, TOP, GAP = 70, 60, 70
# (engine, precision) → colour, dash, label
# PyTorch first, wide and faint, so that Neuron's lines stay visible where the curves coincide (F4's).
SERIES = [
    ("torch", "full", "#ff7f0e", "", "PyTorch float32"),
    ("torch", "bf16", "#ff7f0e", "6,4", "PyTorch autocast bf16"),
    ("neuron", "full", "#d62728", "", "Neuron float32"),
    ("neuron", "bf16", "#d62728", "6,4", "Neuron bf16 products"),
]


def curves(report, workload):
    """{engine: (values per epoch, seconds to the target or None)} for one report's workload."""
    if workload == "F1":
        part = report.get("fashion") or {}
        neuron = (part.get("neuronAccuracies"), part.get("neuronSeconds") if part.get("neuronReached") else None)
        peer = (part.get("peers") or {}).get("torch") or {}
        torch = (peer.get("accuracies"), peer.get("seconds") if peer.get("reached") else None)
    elif workload == "F4":
        part = report.get("transformerWords") or {}
        neuron = (part.get("neuronTestLosses"), part.get("neuronSeconds") if part.get("neuronReached") else None)
        peer = (part.get("peers") or {}).get("torch") or {}
        torch = (peer.get("testLosses"), peer.get("seconds") if peer.get("reached") else None)
    else:
        part = report.get("shakespeare") or {}
        neuron = (part.get("neuronValidationLosses"), part.get("neuronSeconds") if part.get("neuronReached") else None)
        peer = (part.get("peers") or {}).get("torch") or {}
        torch = (peer.get("validationLosses"), peer.get("seconds") if peer.get("reached") else None)
    return {"neuron": neuron, "torch": torch}, part.get("target")


def panel(out, x0, title, ylabel, series, target):
    values = [v for points, _ in series.values() for v in (points or [])]
    if not values:
        out.append(f'<text x="{x0 + PANEL_W / 2}" y="{TOP + PANEL_H / 2}" text-anchor="middle">{title}: no data</text>')
        return
    epochs = max(len(points or []) for points, _ in series.values())
    lo, hi = min(values + [target]), max(values + [target])
    pad = (hi - lo) * 0.08 or 0.01
    lo, hi = lo - pad, hi + pad

    def px(i):
        return x0 + (i + 0.5) / epochs * PANEL_W

    def py(v):
        return TOP + PANEL_H - (v - lo) / (hi - lo) * PANEL_H

    out.append(f'<text x="{x0 + PANEL_W / 2}" y="{TOP - 28}" text-anchor="middle" font-size="15" font-weight="bold">{title}</text>')
    out.append(f'<rect x="{x0}" y="{TOP}" width="{PANEL_W}" height="{PANEL_H}" fill="none" stroke="#444"/>')
    for k in range(6):
        v = lo + (hi - lo) * k / 5
        out.append(f'<line x1="{x0}" y1="{py(v):.1f}" x2="{x0 + PANEL_W}" y2="{py(v):.1f}" stroke="#e4e4e4"/>')
        out.append(f'<text x="{x0 - 6}" y="{py(v) + 4:.1f}" text-anchor="end" font-size="11">{v:.3f}</text>')
    for i in range(epochs):
        out.append(f'<text x="{px(i):.1f}" y="{TOP + PANEL_H + 16}" text-anchor="middle" font-size="11">{i + 1}</text>')
    out.append(f'<text x="{x0 + PANEL_W / 2}" y="{TOP + PANEL_H + 34}" text-anchor="middle" font-size="12">'
               f'{"evaluation interval" if title.startswith("F5") else "epoch"}</text>')
    out.append(f'<text x="{x0 - 52}" y="{TOP + PANEL_H / 2}" text-anchor="middle" font-size="12" '
               f'transform="rotate(-90 {x0 - 52} {TOP + PANEL_H / 2})">{ylabel}</text>')
    out.append(f'<line x1="{x0}" y1="{py(target):.1f}" x2="{x0 + PANEL_W}" y2="{py(target):.1f}" stroke="#555" '
               f'stroke-dasharray="2,3"/>')
    out.append(f'<text x="{x0 + PANEL_W - 4}" y="{py(target) - 4:.1f}" text-anchor="end" font-size="10" fill="#555">target {target}</text>')
    legend_y = TOP + PANEL_H + 52
    for n, (engine, precision, color, dash, label) in enumerate(SERIES):
        points, seconds = series.get((engine, precision), (None, None))
        if not points:
            continue
        path = " ".join(f"{'M' if i == 0 else 'L'}{px(i):.1f},{py(v):.1f}" for i, v in enumerate(points))
        width, opacity = (5, 0.45) if engine == "torch" else (2, 1)
        out.append(f'<path d="{path}" fill="none" stroke="{color}" stroke-width="{width}" stroke-opacity="{opacity}" '
                   f'stroke-dasharray="{dash}"/>')
        for i, v in enumerate(points):
            out.append(f'<circle cx="{px(i):.1f}" cy="{py(v):.1f}" r="2.5" fill="{color}"/>')
        y = legend_y + 16 * n
        out.append(f'<line x1="{x0}" y1="{y - 4}" x2="{x0 + 24}" y2="{y - 4}" stroke="{color}" stroke-width="{width}" '
                   f'stroke-opacity="{opacity}" stroke-dasharray="{dash}"/>')
        time = f"{seconds:.1f} s to the target" if seconds is not None else "target not reached"
        out.append(f'<text x="{x0 + 30}" y="{y}" font-size="11">{label}: {time}</text>')


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    reports = {}
    for precision, path in (("full", sys.argv[1]), ("bf16", sys.argv[2])):
        with open(path) as f:
            reports[precision] = json.load(f)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H + 70}" font-family="sans-serif">',
           f'<rect width="{W}" height="{H + 70}" fill="white"/>']
    panels = [("F1", "F1: Fashion-MNIST MLP", "test accuracy"), ("F4", "F4: GPT on words", "test loss (nats)"),
              ("F5", "F5: Shakespeare GPT", "exact validation loss (nats)")]
    for n, (workload, title, ylabel) in enumerate(panels):
        series, target = {}, None
        for precision, report in reports.items():
            found, target_here = curves(report, workload)
            target = target if target is not None else target_here
            for engine, values in found.items():
                series[(engine, precision)] = values
        if target is None:
            target = 0
        panel(out, LEFT + n * (PANEL_W + GAP), title, ylabel, series, target)
    out.append("</svg>")
    with open(sys.argv[3], "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
