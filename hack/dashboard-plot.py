#!/usr/bin/env python3
"""Draws the key panels of Baton's Grafana dashboard from a hack/dashboard-check.sh run as
one SVG (no plotting library: hand-made SVG, one small chart per panel, one line per series,
the values as Prometheus's /api/v1/query_range returned them every 2 s).

Usage: hack/dashboard-plot.py DIR/series.json OUT.svg
"""
import html
import json
import math
import sys

KEY_PANELS = [
    "Gates open now",
    "Workloads waiting for a gate",
    "Baton passes: by timeout and by failure",
    "Gate-open delay",
    "Time to admit, by priority class",
    "Worker connectivity",
    "Reconcile latency",
    "MultiKueue dispatched / admitted (upstream counters)",
]
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"]
W, H, PAD, COLS = 440, 210, 46, 2


def legend(fmt, metric):
    out = fmt
    for k, v in metric.items():
        out = out.replace("{{" + k + "}}", v)
    return out.replace("{{", "").replace("}}", "") or "value"


def chart(title, targets, t0, t1, ox, oy):
    lines = []
    for target in targets:
        for s in target["result"]:
            pts = [(float(t), float(v)) for t, v in s["values"] if not math.isnan(float(v))]
            if pts:
                lines.append((legend(target["legend"], s["metric"]), pts))
    vmax = max([v for _, pts in lines for _, v in pts] + [1e-9])
    vmax = vmax * 1.1 if vmax > 0 else 1
    x = lambda t: ox + PAD + (t - t0) / max(t1 - t0, 1) * (W - PAD - 12)
    y = lambda v: oy + H - 28 - v / vmax * (H - 62)
    out = [f'<rect x="{ox+4}" y="{oy+4}" width="{W-8}" height="{H-8}" fill="#fafafa" stroke="#ccc"/>',
           f'<text x="{ox+12}" y="{oy+22}" font-size="13" font-weight="bold">{html.escape(title)}</text>']
    for frac in (0, 0.5, 1):
        v = vmax / 1.1 * frac if vmax != 1 else frac
        out.append(f'<line x1="{ox+PAD}" x2="{ox+W-12}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e3e3e3"/>')
        out.append(f'<text x="{ox+PAD-4}" y="{y(v)+4:.1f}" font-size="10" text-anchor="end">{v:.3g}</text>')
    out.append(f'<text x="{ox+PAD}" y="{oy+H-12}" font-size="10">0 s</text>')
    out.append(f'<text x="{ox+W-12}" y="{oy+H-12}" font-size="10" text-anchor="end">{t1-t0:.0f} s</text>')
    if not lines:
        out.append(f'<text x="{ox+W/2}" y="{oy+H/2}" font-size="12" text-anchor="middle" fill="#888">no data</text>')
    for i, (name, pts) in enumerate(lines[:7]):
        c = COLOURS[i % len(COLOURS)]
        path = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in pts)
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.8" points="{path}"/>')
        out.append(f'<text x="{ox+PAD+8+(i%2)*190}" y="{oy+38+(i//2)*12}" font-size="10" fill="{c}">{html.escape(name[:34])}</text>')
    return out


def main():
    data = json.load(open(sys.argv[1]))
    t0, t1 = data["started"], data["end"]
    panels = [p for p in KEY_PANELS if p in data["panels"]]
    rows = math.ceil(len(panels) / COLS)
    body = []
    for i, title in enumerate(panels):
        body += chart(title, data["panels"][title], t0, t1, (i % COLS) * W, 30 + (i // COLS) * H)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{COLS*W}" height="{30+rows*H}" font-family="sans-serif">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="10" y="20" font-size="14">Baton dashboard, key panels: Prometheus query_range over a {t1-t0:.0f} s sandbox run (hack/dashboard-check.sh)</text>']
    svg += body + ["</svg>"]
    open(sys.argv[2], "w").write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
