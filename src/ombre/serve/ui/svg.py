"""Plots as plain SVG, drawn on the server: nothing to download, nothing to build, readable offline.

One timeline shape serves both pages: points over time (each with a class, so a page or a test can count
them), horizontal lines (thresholds) and vertical marks (swaps).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT, PAD_L, PAD_R, PAD_T, PAD_B = 900, 260, 56, 16, 14, 30


@dataclass
class Point:
    at: dt.datetime
    y: float | None  # None: an event with no reading, drawn on the bottom edge
    cls: str
    title: str
    group: str = ""  # points of one group (a session) are joined by a line


@dataclass
class Rule:
    value: float  # a y value (horizontal) or a timestamp (vertical, seconds)
    label: str
    cls: str


def _fmt(y: float) -> str:
    return f"{y / 1e6:.1f}M" if y >= 1e6 else f"{y / 1e3:.0f}k" if y >= 1e4 else f"{y:g}"


def timeline(
    points: list[Point],
    *,
    y_max: float | None = None,
    hlines: Sequence[Rule] = (),
    vlines: Sequence[Rule] = (),
    label: str = "",
) -> str:
    if not points:
        return (
            f'<svg class="plot" viewBox="0 0 {WIDTH} 60" role="img" aria-label="{escape(label)}">'
            f'<text x="{PAD_L}" y="34" class="empty">—</text></svg>'
        )
    times = [p.at.timestamp() for p in points] + [v.value for v in vlines]
    t0, t1 = min(times), max(times)
    if t1 - t0 < 3600:  # one moment (or a few close ones): an hour around it, so the two time labels stand apart
        mid = (t0 + t1) / 2
        t0, t1 = mid - 1800, mid + 1800
    span = t1 - t0
    ys = [p.y for p in points if p.y is not None] + [h.value for h in hlines]
    top = y_max if y_max is not None else (max(ys) if ys else 1.0) * 1.05 or 1.0
    inner_w, inner_h = WIDTH - PAD_L - PAD_R, HEIGHT - PAD_T - PAD_B

    def x(t: float) -> float:
        return PAD_L + (t - t0) / span * inner_w

    def y(v: float) -> float:
        return PAD_T + inner_h - min(max(v, 0.0), top) / top * inner_h

    out = [
        f'<svg class="plot" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(label)}">',
        f'<line class="axis" x1="{PAD_L}" y1="{PAD_T + inner_h}" x2="{WIDTH - PAD_R}" y2="{PAD_T + inner_h}"/>',
        f'<line class="axis" x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{PAD_T + inner_h}"/>',
    ]
    for frac in (0.0, 0.5, 1.0):
        out.append(
            f'<text class="tick" x="{PAD_L - 6}" y="{y(top * frac) + 4:.1f}" text-anchor="end">'
            f"{_fmt(top * frac)}</text>"
        )
    for t, anchor in ((t0, "start"), (t1, "end")):
        stamp = dt.datetime.fromtimestamp(t, dt.timezone.utc).astimezone(points[0].at.tzinfo)
        out.append(
            f'<text class="tick" x="{x(t):.1f}" y="{HEIGHT - 8}" text-anchor="{anchor}">{stamp:%m-%d %H:%M}</text>'
        )
    for h in hlines:
        out.append(
            f'<line class="rule {h.cls}" x1="{PAD_L}" y1="{y(h.value):.1f}" x2="{WIDTH - PAD_R}" '
            f'y2="{y(h.value):.1f}"/><text class="rule-label" x="{WIDTH - PAD_R - 4}" '
            f'y="{y(h.value) - 4:.1f}" text-anchor="end">{escape(h.label)}</text>'
        )
    for v in vlines:
        out.append(
            f'<line class="mark {v.cls}" x1="{x(v.value):.1f}" y1="{PAD_T}" x2="{x(v.value):.1f}" '
            f'y2="{PAD_T + inner_h}"><title>{escape(v.label)}</title></line>'
        )
    groups: dict[str, list[tuple[dt.datetime, float]]] = {}  # only points with a reading join a line
    for p in points:
        if p.group and p.y is not None:
            groups.setdefault(p.group, []).append((p.at, p.y))
    for n, (name, members) in enumerate(sorted(groups.items())):
        path = " ".join(f"{x(at.timestamp()):.1f},{y(v):.1f}" for at, v in sorted(members, key=lambda m: m[0]))
        out.append(f'<polyline class="series s{n % 6}" points="{path}"><title>{escape(name)}</title></polyline>')
    for p in points:
        cy = y(p.y) if p.y is not None else PAD_T + inner_h
        cls = p.cls + ("" if p.y is not None else " noval")
        out.append(
            f'<circle class="pt {escape(cls)}" cx="{x(p.at.timestamp()):.1f}" cy="{cy:.1f}" r="3">'
            f"<title>{escape(p.title)}</title></circle>"
        )
    out.append("</svg>")
    return "".join(out)
