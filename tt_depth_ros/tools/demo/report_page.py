"""demo_out/index.html: the demo's results on one page a person opens first.

Self-contained by design: every image (depth panels, benchmark and resource plots) is inlined as a
base64 `data:` URI, there is no script, stylesheet or font from anywhere else, so the page renders
offline and still shows everything when copied alone out of demo_out/. The PLY clouds, JSON
reports, logs and the recorded bag are linked by relative paths to the files beside it (only
those that exist). Each section has an id (weights, panels, accuracy, benchmark, resources,
files) so a browser test can find it; synthetic weights put a RANDOM-WEIGHTS banner on top.
"""
from __future__ import annotations

import base64
import html
import math
from pathlib import Path

SECTION_IDS = ('weights', 'panels', 'accuracy', 'benchmark', 'resources', 'files')

_STYLE = """
body{font-family:sans-serif;margin:1.5rem;color:#1b2733;max-width:1200px}
h1{font-size:1.5rem}h2{font-size:1.15rem;border-bottom:1px solid #ccd;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #ccd;padding:.25rem .5rem;
font-size:.85rem;text-align:right;overflow-wrap:anywhere;max-width:28rem}th{background:#eef1f5}td.l,th.l{text-align:left}
img{max-width:100%;display:block;margin:.3rem 0}.banner{background:#b00020;color:#fff;
padding:.7rem 1rem;font-weight:bold;font-size:1.05rem}.note{color:#5a5a6e;font-size:.85rem}
.plots{display:flex;flex-wrap:wrap;gap:1rem}.plots img{max-width:580px}
"""


def _esc(x) -> str:
    return html.escape(str(x), quote=True)


def _num(v) -> str:
    if isinstance(v, bool) or v is None:
        return '—' if v is None else str(v)
    if isinstance(v, (int, float)):
        if isinstance(v, float) and not math.isfinite(v):
            return '—'
        return f'{v:.4g}' if isinstance(v, float) else str(v)
    return _esc(v)


def _short(text: str, n: int = 110) -> str:
    """The start of a long note (the full text is in the demo report JSON)."""
    return text if len(text) <= n else text[:n].rstrip() + ' …'


def _imgs(paths: list, shown: int = 2) -> str:
    """The first `shown` images, the rest folded (still inlined) under one <details>."""
    head = ''.join(_img(p, Path(p).name) for p in paths[:shown])
    rest = paths[shown:]
    if not rest:
        return head
    return (head + f'<details><summary>{len(rest)} more frames</summary>'
            + ''.join(_img(p, Path(p).name) for p in rest) + '</details>')


def _img(path, alt: str) -> str:
    """An <img> with the PNG inlined (no file reference), or a note when it is missing."""
    p = Path(path)
    if not p.is_file():
        return f'<p class="note">({_esc(alt)}: not produced)</p>'
    data = base64.b64encode(p.read_bytes()).decode('ascii')
    return f'<img alt="{_esc(alt)}" src="data:image/png;base64,{data}">'


def _table(header: list[str], rows: list[list], left: int = 1) -> str:
    """An HTML table; the first `left` columns are text, the rest numbers."""
    def cells(row, tag):
        return ''.join(f'<{tag} class="l">{_esc(c)}</{tag}>' if i < left else
                       f'<{tag}>{c if tag == "th" else _num(c)}</{tag}>'
                       for i, c in enumerate(row))
    body = ''.join(f'<tr>{cells(r, "td")}</tr>' for r in rows)
    return f'<table><tr>{cells(header, "th")}</tr>{body}</table>'


def _weights_section(report: dict) -> str:
    rows = []
    for role, w in report['weights'].items():
        if isinstance(w, dict):
            rows.append([role, w['model'], 'real' if w['real'] else 'RANDOM (rule-v1)',
                         w['source'], w.get('stand_in_for') or '', Path(w['path']).name,
                         _short(w.get('note') or '')])
        else:
            rows.append([role, '', '', '', '', '', w])
    return ('<section id="weights"><h2>Weights used</h2>'
            + _table(['role', 'model', 'weights', 'source', 'stand-in for', 'file', 'note'],
                     rows, left=7) + '</section>')


def _panels_section(report: dict) -> str:
    depth = report['depth']
    out = ['<section id="panels"><h2>Depth: input | prediction | ground truth</h2>',
           '<p class="note">One colour scale per row, that of the ground truth; the bar gives it '
           'in metres. Metric depth, no scale alignment.</p>']
    out.append(_imgs(depth['panels']))
    any_ = report.get('anyview')
    if any_ and any_.get('panels'):
        out.append(f'<h3 id="anyview-panels">Relative model ({_esc(any_["model"])}): '
                   'input | aligned relative depth | ground truth</h3>'
                   '<p class="note">A relative model has no metres: each frame is scaled by one '
                   'median ratio to the ground truth for display, so its bar says "relative".</p>')
        out.append(_imgs(any_['panels']))
    return ''.join(out) + '</section>'


def _accuracy_section(report: dict) -> str:
    keys = ('frames', 'abs_rel', 'rmse_m', 'delta1', 'pred_coverage', 'sky_recall')
    rows = [['depth (metric, no alignment)', *(report['depth']['accuracy'].get(k) for k in keys)]]
    if report.get('anyview'):
        rows.append([f'{report["anyview"]["model"]} (median-aligned)',
                     *(report['anyview']['accuracy'].get(k) for k in keys)])
    out = ['<section id="accuracy"><h2>Accuracy against the sample bag\'s ground truth</h2>',
           _table(['output', 'frames', 'AbsRel', 'RMSE (m)', 'δ1', 'coverage', 'sky recall'],
                  rows)]
    pair = report.get('pair')
    if pair:
        errs = pair['pose_errors']
        mean = {k: sum(e[k] for e in errs) / len(errs) for k in errs[0]} if errs else {}
        out.append(_table(['pair node (stereo)', 'pairs', 'poses', 'rotation error (deg)',
                           'translation direction error (deg)'],
                          [['pose vs the rig', pair['pairs_sent'], pair['poses'],
                            mean.get('rot_err_deg'), mean.get('trans_dir_err_deg')]]))
    if report['random_weights']:
        out.append('<p class="note">RANDOM weights: these numbers show the pipeline runs, not '
                   'what the model can do.</p>')
    return ''.join(out) + '</section>'


def _benchmark_section(report: dict) -> tuple[str, str]:
    b = report.get('benchmark')
    if not b:
        none = '<p class="note">benchmark not run (--no-benchmark)</p>'
        return (f'<section id="benchmark"><h2>Benchmark</h2>{none}</section>',
                f'<section id="resources"><h2>Node resources</h2>{none}</section>')
    find = {k: next((p for p in b['plots'] if Path(p).stem.endswith(k)), '')
            for k in ('latency_cdf', 'throughput', 'resources')}
    rows = [[f'{p["rate_hz"]:g}', p['runs'], p['frames_sent'], p['missed_frames'],
             p['drop_percent'], p['output_fps']] for p in b.get('throughput_vs_rate', [])]
    r2b = b.get('ros2_benchmark') or {}
    head = r2b.get('headline_offered_rate_hz')
    peak = b.get('peak') or {}
    peak_line = (f'Peak sustainable rate (&lt;= 5 % drops): <b>{_num(peak["peak_rate_hz"])} Hz'
                 '</b>.' if peak.get('peak_rate_hz') is not None else
                 f'No sustainable rate found: every rate tried dropped more than 5 % (bracket '
                 f'{_esc(peak.get("bracket_hz"))} Hz).' if peak else 'Peak search not run.')
    bench = ('<section id="benchmark"><h2>Benchmark (depth node, fixed rates + peak search)</h2>'
             f'<p>{peak_line}</p>'
             '<div class="plots">' + _img(find['latency_cdf'], 'latency CDF per offered rate')
             + _img(find['throughput'], 'throughput vs offered rate') + '</div>'
             + _table(['offered (Hz)', 'runs', 'sent', 'missed', 'dropped (%)',
                       'output (fps)'], [[r[0], *r[1:]] for r in rows])
             + (f'<p class="note">ros2_benchmark layout at {_num(head)} Hz: mean frame rate '
                f'{_num(r2b.get("BasicPerformanceMetrics.MEAN_FRAME_RATE"))} fps, mean latency '
                f'{_num(r2b.get("BasicPerformanceMetrics.MEAN_LATENCY"))} ms, missed frames '
                f'{_num(r2b.get("BasicPerformanceMetrics.NUM_MISSED_FRAMES"))}.</p>'
                if r2b else '') + '</section>')
    res = ('<section id="resources"><h2>Node resources during the benchmark</h2>'
           + _img(find['resources'], 'node CPU and RSS') + '</section>')
    return bench, res


def _files_section(report: dict, out_dir: Path) -> str:
    cands = [(report['depth'].get('ply'), 'depth node cloud (PLY)'),
             ((report.get('pair') or {}).get('ply'), 'pair node fused cloud (PLY)'),
             (report.get('report_path'), 'demo report (JSON)'),
             ((report.get('benchmark') or {}).get('json'), 'benchmark report (JSON)'),
             ((report.get('benchmark') or {}).get('ros2_benchmark_json'),
              'benchmark, ros2_benchmark layout (JSON)'),
             (report['depth'].get('recorded_bag'), 'recorded node outputs (rosbag2 folder)'),
             (report['depth'].get('node_log'), 'depth node log'),
             (report.get('log_path'), 'demo log')]
    items = []
    for path, what in cands:
        if not path:
            continue
        p = Path(path)
        if p.exists() and p.resolve().parent == out_dir.resolve():
            href = p.name + ('/' if p.is_dir() else '')
            items.append(f'<li><a href="{_esc(href)}">{_esc(p.name)}</a> — {_esc(what)}</li>')
    return f'<section id="files"><h2>Files</h2><ul>{"".join(items)}</ul></section>'


def write_report_page(report: dict, out_dir: Path) -> Path:
    """Write out_dir/index.html from the demo's report dict (tools/demo/run.py).

    Args:
        report: the demo report (weights, depth, anyview, pair, benchmark, random_weights,
            report_path, log_path); paths may be absolute or relative to the working directory.
        out_dir: the demo's output folder; linked files must lie directly in it.

    Returns:
        The page's path.
    """
    out_dir = Path(out_dir)
    random = report['random_weights']
    banner = ('<div class="banner" id="random-weights-banner">RANDOM-WEIGHTS: real weights were '
              'not available, so the networks ran with synthetic rule-v1 weights. The pipeline '
              'is real; the depth values and accuracy are not.</div>' if random else '')
    bench, res = _benchmark_section(report)
    body = (banner + _weights_section(report) + _panels_section(report)
            + _accuracy_section(report) + bench + res + _files_section(report, out_dir))
    page = ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<title>tt_depth_ros demo report</title>'
            f'<style>{_STYLE}</style></head><body><h1>tt_depth_ros demo report</h1>'
            f'<p class="note">backend {_esc(report.get("backend_requested"))}; sample bag '
            f'{_esc(Path(report["sample_bag"]).name)}; demo wall time '
            f'{_num(report.get("wall_s"))} s</p>{body}</body></html>\n')
    path = out_dir / 'index.html'
    path.write_text(page, encoding='utf-8')
    return path
