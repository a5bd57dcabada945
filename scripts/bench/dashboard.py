#!/usr/bin/python3
"""Writes the benchmark dashboard: one self-contained HTML page (inline SVG, no script,
no network) from a results.json of scripts/bench/run.py, and with --history FOLDER the
trend of every run kept there (one <date>-<commit>.json per run); with --history-file
HISTORY.jsonl (one run per line, run.py appends to it) each row of the results table shows
its own earlier figures.

    dashboard.py RESULTS.json OUT.html [--history FOLDER] [--history-file HISTORY.jsonl]
"""
from __future__ import annotations

import argparse
import html
import json
import math
from pathlib import Path

MiB = 1 << 20
COLORS = {"onnxstream": "#1f77b4", "cp": "#7f7f7f", "cp+sync": "#bcbd22", "python-onnx": "#d62728", "before": "#ff7f0e",
          "no-simd": "#9467bd"}
SERIES_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


def esc(text) -> str:
    return html.escape(str(text), quote=True)


def fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 4, 5, 8 or 10 times a power of ten that is >= value, so
    that the axis' quarter ticks are round numbers."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 4, 5, 8, 10):
        if step * power >= value:
            return step * power
    return 10 * power


def bar_chart(title: str, items: list[tuple[str, float, str]], unit: str, log: bool = False, width: int = 460) -> str:
    """Horizontal bars, one per (label, value, color); log scale for values spanning decades."""
    row, left, right = 26, 110, 90
    height = 34 + row * len(items)
    values = [v for _, v, _ in items if v > 0]
    if not values:
        return ""
    top = max(values)
    bottom = min(values)
    span = width - left - right

    def scale(v: float) -> float:
        if v <= 0:
            return 0
        if log:
            lo = math.log10(bottom) - 0.3
            return span * (math.log10(v) - lo) / (math.log10(top) - lo) if top > bottom else span
        return span * v / top

    parts = [f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">',
             f'<text x="0" y="16" class="title">{esc(title)}{" (log scale)" if log else ""}</text>']
    for i, (label, value, color) in enumerate(items):
        y = 28 + i * row
        w = max(1.0, scale(value))
        parts.append(f'<text x="{left - 6}" y="{y + 15}" text-anchor="end">{esc(label)}</text>')
        parts.append(f'<rect x="{left}" y="{y + 3}" width="{w:.1f}" height="{row - 8}" fill="{color}">'
                     f'<title>{esc(label)}: {fmt(value)} {esc(unit)}</title></rect>')
        parts.append(f'<text x="{left + w + 5:.1f}" y="{y + 15}">{fmt(value)} {esc(unit)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def line_chart(title: str, labels: list[str], series: dict[str, list[float | None]], unit: str,
               limit: float | None = None, width: int = 680, height: int = 230) -> str:
    """One line per series over the runs (x: run, labelled "date · commit")."""
    left, right, top_margin, bottom_margin = 56, 210, 26, 46
    points = [v for values in series.values() for v in values if v is not None]
    if not points:
        return ""
    high = nice_ceiling(max(points + ([limit] if limit is not None else [])) * 1.05)
    low = 0.0
    plot_w, plot_h = width - left - right, height - top_margin - bottom_margin
    n = len(labels)

    def x(i: int) -> float:
        return left + (plot_w * i / (n - 1) if n > 1 else plot_w / 2)

    def y(v: float) -> float:
        return top_margin + plot_h * (1 - (v - low) / (high - low if high > low else 1))

    parts = [f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">',
             f'<text x="0" y="16" class="title">{esc(title)}</text>']
    for k in range(5):
        v = low + (high - low) * k / 4
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="grid"/>')
        parts.append(f'<text x="{left - 5}" y="{y(v) + 4:.1f}" text-anchor="end">{fmt(v)}</text>')
    if limit is not None:
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(limit):.1f}" y2="{y(limit):.1f}" class="limit"/>')
        parts.append(f'<text x="{left + 4}" y="{y(limit) - 4:.1f}" class="limitlabel">target {fmt(limit)}</text>')
    step = max(1, n // 8)
    for i, label in enumerate(labels):
        if i % step == 0 or i == n - 1:
            when, _, commit = label.partition(" · ")
            parts.append(f'<text x="{x(i):.1f}" y="{height - bottom_margin + 16}" text-anchor="middle" class="small">'
                         f'{esc(when)}</text>')
            parts.append(f'<text x="{x(i):.1f}" y="{height - bottom_margin + 30}" text-anchor="middle" class="small">'
                         f'{esc(commit)}</text>')
    for s, (name, values) in enumerate(series.items()):
        color = SERIES_COLORS[s % len(SERIES_COLORS)]
        path = " ".join(f"{'M' if j == 0 else 'L'}{x(i):.1f},{y(v):.1f}"
                        for j, (i, v) in enumerate((i, v) for i, v in enumerate(values) if v is not None))
        if path:
            parts.append(f'<path d="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for i, v in enumerate(values):
            if v is not None:
                parts.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3" fill="{color}">'
                             f'<title>{esc(name)} {esc(labels[i])}: {fmt(v)} {esc(unit)}</title></circle>')
        parts.append(f'<rect x="{left + plot_w + 8}" y="{top_margin + 18 * s + 20}" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{left + plot_w + 22}" y="{top_margin + 18 * s + 29}" class="small">{esc(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1400px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; } td, th { padding: 3px 10px; border-bottom: 1px solid #ddd; text-align: right; }
td:first-child, th:first-child, td.text { text-align: left; }
.ok { color: #1a7f37; font-weight: 600; } .bad { color: #cf222e; font-weight: 600; } .meta { color: #555; }
.charts { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
svg.chart text { font: 12px system-ui, sans-serif; fill: #222; } svg.chart text.title { font-weight: 600; font-size: 13px; }
svg.chart text.small { font-size: 10px; fill: #555; } svg.chart line.grid { stroke: #e5e5e5; }
svg.chart line.limit { stroke: #cf222e; stroke-dasharray: 5 4; } svg.chart text.limitlabel { fill: #cf222e; font-size: 10px; }
"""


def read_history(path: Path | None) -> list[dict]:
    """The runs of a history.jsonl, oldest first; lines that do not parse are skipped."""
    documents = []
    if path is None or not path.exists():
        return documents
    for line in path.read_text().splitlines():
        try:
            documents.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    documents.sort(key=lambda d: d.get("meta", {}).get("date", ""))
    return documents


def sparkline(values: list[float], width: int = 90, height: int = 18) -> str:
    """A small line of a row's wall time over the runs (the last point is this run)."""
    if len(values) < 2:
        return ""
    top, bottom = max(values), min(values)
    span = top - bottom or 1.0
    step = width / (len(values) - 1)
    points = " ".join(f"{i * step:.1f},{height - 2 - (v - bottom) / span * (height - 4):.1f}" for i, v in enumerate(values))
    return (f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}"><polyline points="{points}" '
            f'fill="none" stroke="#1f77b4" stroke-width="1.5"/></svg>')


def row_history(history: list[dict], r: dict) -> str:
    """The row's wall time in every run of the history with the same case and tool: a
    sparkline and the previous figure with its date and commit."""
    earlier = []
    for d in history:
        for h in d.get("records", []):
            if h.get("case") == r["case"] and h.get("tool") == r["tool"]:
                earlier.append((d["meta"].get("date", "")[:10], d["meta"].get("commit", ""), h["wall_s"],
                                h.get("peak_rss_bytes", 0)))
    if len(earlier) < 2:
        return ""
    date, commit, wall, rss = earlier[-2]
    title = "; ".join(f"{d} {c}: {w:.3f} s, {p / MiB:,.1f} MiB" for d, c, w, p in earlier)
    return (f'<span title="{esc(title)}">{sparkline([e[2] for e in earlier])} '
            f'{len(earlier)} runs; before: {wall:.3f} s, {rss / MiB:,.1f} MiB ({esc(date)} {esc(commit)})</span>')


def results_table(records: list[dict], history: list[dict] | None = None) -> str:
    rows = ["<table><tr><th>case</th><th>tool</th><th>wall s (median)</th><th>CPU s</th><th>user s</th><th>peak RSS</th>"
            "<th>budget</th><th>× cp</th><th>× cp+sync</th><th>runs (wall s)</th><th>history (wall s)</th></tr>"]
    for r in records:
        rss = r["peak_rss_bytes"] / MiB
        budget = ""
        if r.get("budget_bytes"):
            over = r["peak_rss_bytes"] > r["budget_bytes"]
            budget = f'<span class="{"bad" if over else "ok"}">{r["budget_bytes"] / MiB:,.0f} MiB</span>'
        rows.append(
            f"<tr><td>{esc(r['case'])}</td><td class=text>{esc(r['tool'])}</td><td>{r['wall_s']:.3f}</td>"
            f"<td>{r['cpu_s']:.3f}</td><td>{r.get('user_s', 0):.3f}</td><td>{rss:,.1f} MiB</td><td>{budget}</td>"
            f"<td>{'' if r.get('ratio_to_cp') is None else format(r['ratio_to_cp'], '.2f')}</td>"
            f"<td>{'' if r.get('ratio_to_cp_sync') is None else format(r['ratio_to_cp_sync'], '.2f')}</td>"
            f"<td class=text>{esc(', '.join(format(w, '.3f') for w in r.get('wall_runs_s', [])))}"
            f"{'<br><span class=meta>' + esc(r['note']) + '</span>' if r.get('note') else ''}</td>"
            f"<td class=text>{row_history(history or [], r)}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def targets_table(targets: list[dict]) -> str:
    rows = ["<table><tr><th>target</th><th>measured</th><th>limit</th><th>state</th></tr>"]
    for t in targets:
        if t["limit"] is None:
            state = '<span class="meta">measured</span>'
        else:
            state = '<span class="ok">holds</span>' if t["holds"] else '<span class="bad">does not hold</span>'
        limit = "" if t["limit"] is None else f"{t['limit']} {esc(t['unit'])}"
        rows.append(f"<tr><td>{esc(t['target'])}</td><td>{esc(t['value'])} {esc(t['unit'])}</td><td>{limit}</td><td>{state}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def micro_table(micro: list[dict]) -> str:
    if not micro:
        return "<p class=meta>No micro benchmarks in this run (build with -DONNXSTREAM_BUILD_BENCH=ON).</p>"
    rows = ["<table><tr><th>benchmark</th><th>CPU time</th><th>wall time</th><th>throughput</th><th>peak RSS</th></tr>"]
    for m in micro:
        rate = ""
        if "bytes_per_second" in m:
            rate = f"{m['bytes_per_second'] / 1e6:,.0f} MB/s"
        elif "items_per_second" in m:
            rate = f"{m['items_per_second'] / 1e6:,.2f} M items/s"
        rows.append(f"<tr><td>{esc(m['name'])}</td><td>{m['cpu_time']:,.3f} {esc(m['time_unit'])}</td>"
                    f"<td>{m['real_time']:,.3f} {esc(m['time_unit'])}</td><td>{rate}</td>"
                    f"<td>{m.get('peak_rss_MiB', 0):.1f} MiB</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def case_charts(records: list[dict]) -> str:
    out = []
    for case in dict.fromkeys(r["case"] for r in records):
        rows = [r for r in records if r["case"] == case]
        walls = [(r["tool"], r["wall_s"], COLORS.get(r["tool"], "#444")) for r in rows]
        rss = [(r["tool"], r["peak_rss_bytes"] / MiB, COLORS.get(r["tool"], "#444")) for r in rows]
        out.append(f"<h3>{esc(case)}</h3><div class=charts>{bar_chart('wall time (median)', walls, 's')}"
                   f"{bar_chart('peak RSS', rss, 'MiB', log=True)}</div>")
    return "".join(out)


def history_section(folder: Path) -> str:
    documents = []
    for path in sorted(folder.glob("*.json")):
        try:
            documents.append(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError):
            continue
    documents.sort(key=lambda d: d["meta"]["date"])
    if not documents:
        return ""
    labels = [f"{d['meta']['date'][:16].replace('T', ' ')} · {d['meta']['commit']}" for d in documents]
    cases = list(dict.fromkeys(r["case"] for d in documents for r in d["records"]))

    def value(d, case, tool, key):
        for r in d["records"]:
            if r["case"] == case and r["tool"] == tool:
                return r.get(key)
        return None

    parts = [f"<h2>Trend over {len(documents)} runs kept in {esc(folder)}</h2>",
             "<p class=meta>Each point is one run of scripts/bench.sh; hover for the figure. "
             "Runs with --quick use smaller inputs and show up as different cases.</p><div class=charts>"]
    ratio_series = {c: [value(d, c, "onnxstream", "ratio_to_cp") for d in documents] for c in cases
                    if not c.startswith("inspect")}
    parts.append(line_chart("onnxstream wall time / cp", labels, ratio_series, "x", limit=1.2))
    rss_series = {c: [None if (v := value(d, c, "onnxstream", "peak_rss_bytes")) is None else v / MiB for d in documents]
                  for c in cases}
    parts.append(line_chart("onnxstream peak RSS", labels, rss_series, "MiB", limit=24))
    wall_series = {c: [value(d, c, "onnxstream", "wall_s") for d in documents] for c in cases}
    parts.append(line_chart("onnxstream wall time", labels, wall_series, "s"))
    micro_names = list(dict.fromkeys(m["name"] for d in documents for m in d.get("micro", []) if "bytes_per_second" in m))
    if micro_names:
        micro_series = {n: [next((m["bytes_per_second"] / 1e6 for m in d.get("micro", []) if m["name"] == n), None)
                            for d in documents] for n in micro_names}
        parts.append(line_chart("micro benchmarks throughput", labels, micro_series, "MB/s"))
    parts.append("</div>")
    return "".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--history", type=Path)
    parser.add_argument("--history-file", type=Path)
    args = parser.parse_args()
    history = read_history(args.history_file)
    document = json.loads(args.results.read_text())
    meta = document["meta"]
    m = meta["machine"]
    page = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>onnxstream benchmarks {esc(meta['commit'])}</title><style>{STYLE}</style></head><body>",
        "<h1>onnxstream benchmarks</h1>",
        f"<p class=meta>commit <b>{esc(meta['commit'])}</b> · {esc(meta['date'])} · {esc(m['hostname'])}: "
        f"{esc(m['cpu'])}, {esc(m['cores'])} cores, {m['memory_bytes'] / (1 << 30):.1f} GiB, Linux {esc(m['kernel'])}, "
        f"{esc(meta.get('file_system', ''))} on {esc(meta.get('disk', 'unknown disk'))} · load average before {esc(m.get('load_average'))}, "
        f"after {esc(m.get('load_average_after'))} · {esc(meta['runs'])} runs per tool (python onnx: "
        f"{esc(meta['python_runs'])}), medians · {esc(meta.get('size', 'default' if meta.get('quick') else 'large'))} size"
        f"{' · before: ' + esc(meta['before']['label']) if meta.get('before') else ''}</p>",
        "<h2>Targets</h2>", targets_table(document.get("targets", [])),
        "<h2>Results</h2>", results_table(document["records"], history),
        "<p class=meta>cp: GNU cp of the same bytes (the data file; the model for split; the folder for repack). "
        "cp+sync: the same followed by sync of the copy, since onnxstream fsyncs its outputs before renaming them. "
        "python-onnx: Debian python3-onnx, onnx.save(onnx.load(m), out) (split and repack: save_as_external_data; "
        "inspect: onnx.load(m, load_external_data=False); verify: onnx.checker.check_model on the path; edit: load, "
        "rename, save; infer-shapes: onnx.shape_inference.infer_shapes_path). before: an older onnxstream binary "
        "(bench.sh --before REV). no-simd: ONNXSTREAM_SIMD=off, the portable conversion. Budget: the memory "
        "issue's 2 × .onnx + 32 MiB for metadata-heavy files. Peak RSS: ru_maxrss of the process (GNU time).</p>",
        case_charts(document["records"]),
        "<h2>Micro benchmarks</h2>", micro_table(document.get("micro", [])),
    ]
    if args.history:
        page.append(history_section(args.history))
    page.append("</body></html>\n")
    args.output.write_text("".join(page))


if __name__ == "__main__":
    main()
