#!/usr/bin/python3
"""Writes the memory benchmark's dashboard: one self-contained HTML page (inline SVG, no
script, no network) from a memory.json of scripts/bench/memory.py, and with --history
FOLDER the trend of every run kept there (one <date>-<commit>.json per run).

    memory_dashboard.py MEMORY.json OUT.html [--history FOLDER]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from dashboard import STYLE, bar_chart, esc, line_chart

MiB = 1 << 20


def mib(value: int | None) -> str:
    return "" if value is None else f"{value / MiB:,.1f} MiB"


def run_key(r: dict) -> str:
    return f"{r['case']} · {r['command']} · {r['cache']}"


def records_table(records: list[dict]) -> str:
    rows = ["<table><tr><th>case</th><th>command</th><th>cache</th><th>max RSS</th><th>RssAnon peak</th>"
            "<th>RssFile peak</th><th>budget</th><th>state</th><th>wall s</th><th>cache state</th></tr>"]
    for r in records:
        state = '<span class="ok">holds</span>' if r["holds"] else '<span class="bad">over</span>'
        rows.append(
            f"<tr><td>{esc(r['case'])}</td><td class=text>{esc(r['command'])}</td><td class=text>{esc(r['cache'])}</td>"
            f"<td>{mib(r['max_rss_bytes'])}</td><td>{mib(r.get('peak_rss_anon_bytes'))}</td>"
            f"<td>{mib(r.get('peak_rss_file_bytes'))}</td><td>{mib(r['budget_bytes'])}</td><td>{state}</td>"
            f"<td>{r['wall_s']:.2f}</td><td class=text>{esc(r.get('cache_state', ''))}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def case_charts(records: list[dict]) -> str:
    """Per case, max RSS of each command and cache state beside the case's budget."""
    out = []
    for case in dict.fromkeys(r["case"] for r in records):
        rows = [r for r in records if r["case"] == case]
        items = [(f"{r['command']} {r['cache']}", r["max_rss_bytes"] / MiB, "#1f77b4" if r["holds"] else "#d62728")
                 for r in rows]
        items.append(("budget", rows[0]["budget_bytes"] / MiB, "#7f7f7f"))
        out.append(bar_chart(case, items, "MiB", log=True, width=520))
    return f"<div class=charts>{''.join(out)}</div>"


def load_history(folder: Path) -> list[dict]:
    documents = []
    for path in sorted(folder.glob("*.json")):
        try:
            document = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(document, dict) and "records" in document and "meta" in document:
            documents.append(document)
    documents.sort(key=lambda d: d["meta"]["date"])
    return documents


def history_section(folder: Path) -> str:
    documents = load_history(folder)
    if not documents:
        return ""
    labels = [f"{d['meta']['date'][:16].replace('T', ' ')} · {d['meta']['commit']}" for d in documents]
    parts = [f"<h2>Trend over {len(documents)} runs kept in {esc(folder)}</h2>",
             "<p class=meta>Each point is one run of scripts/bench.sh --memory; hover for the figure. "
             "Runs with --quick use smaller models and show up as different cases. The dashed line is the "
             "case's budget in the newest run.</p><div class=charts>"]
    for case in dict.fromkeys(r["case"] for d in documents for r in d["records"]):
        keys = list(dict.fromkeys(run_key(r) for d in documents for r in d["records"] if r["case"] == case))
        series = {}
        for key in keys:
            values = []
            for d in documents:
                found = next((r for r in d["records"] if run_key(r) == key), None)
                values.append(None if found is None else found["max_rss_bytes"] / MiB)
            series[key.split(" · ", 1)[1]] = values
        budgets = [r["budget_bytes"] for d in documents for r in d["records"] if r["case"] == case]
        parts.append(line_chart(f"{case}: max RSS", labels, series, "MiB", limit=budgets[-1] / MiB))
    parts.append("</div>")
    return "".join(parts)


def page(document: dict, history: Path | None) -> str:
    meta = document["meta"]
    m = meta["machine"]
    records = document["records"]
    over = [r for r in records if not r["holds"]]
    timing = document.get("inspect_time")
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>onnxstream memory {esc(meta['commit'])}</title><style>{STYLE}</style></head><body>",
        "<h1>onnxstream memory benchmark</h1>",
        f"<p class=meta>commit <b>{esc(meta['commit'])}</b> · {esc(meta['date'])} · {esc(m['hostname'])}: "
        f"{esc(m['cpu'])}, {esc(m['cores'])} cores, {m['memory_bytes'] / (1 << 30):.1f} GiB, Linux {esc(m['kernel'])}, "
        f"{esc(meta.get('file_system', ''))} · load average before {esc(m.get('load_average'))} · "
        f"{'--quick (1/16 sizes)' if meta.get('quick') else 'full size'}</p>",
        f"<p class=meta>{esc(meta.get('sampling', ''))}. Budget: 24 MiB for the weight-heavy cases, "
        "2 × the .onnx file + 32 MiB for the metadata-heavy ones.</p>",
        f"<h2>Summary</h2><p>{len(records) - len(over)} of {len(records)} runs within budget"
        + ("" if not over else ": over in " + esc(", ".join(run_key(r) for r in over))) + ".</p>",
    ]
    if timing:
        held = timing["median_wall_s"] <= timing["limit_s"]
        parts.append(f"<p>inspect of the {esc(timing['case'])}: {timing['median_wall_s'] * 1000:.1f} ms median "
                     f"(limit {timing['limit_s'] * 1000:.0f} ms) "
                     f"{'<span class=ok>holds</span>' if held else '<span class=bad>over</span>'}</p>")
    parts += ["<h2>Runs</h2>", records_table(records), "<h2>Max RSS per case</h2>", case_charts(records)]
    if history:
        parts.append(history_section(history))
    parts.append("</body></html>\n")
    return "".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("memory", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--history", type=Path)
    args = parser.parse_args()
    args.output.write_text(page(json.loads(args.memory.read_text()), args.history))


if __name__ == "__main__":
    main()
