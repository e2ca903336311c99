"""How results read on a terminal. Each function takes what the library returned and gives the text; where
the text itself is the product (the breath block, the handoff pack) the result renders itself."""

from __future__ import annotations

import json
from pathlib import Path

from ..settings import Settings
from ..transcript.chain import clip


def pct(value: float | None) -> str:
    return "?%" if value is None else f"{value:.1f}%"


def anchor_line(a) -> str:
    return f"  idx {a.idx:>5}  {a.short_uuid}  {a.time}  {a.preview}"


def anchors(path: Path, items: list) -> str:
    lines = [f"session {path.stem}  ({path})"]
    if not items:
        lines.append("  no real user messages or compaction summaries on the active chain")
    lines += [anchor_line(a) for a in items]
    return "\n".join(lines)


def rewrite(r) -> str:
    """A diet's or forge's result."""
    head = f"{r.mode} (dry run: nothing written)" if r.dry_run else f"{r.mode}: written"
    lines = [
        head,
        f"  source    {r.source_session}",
        f"  file      {r.source_path}",
        f"  kept      {r.events_kept}/{r.events_total} events, {r.turns_kept}/{r.turns_total} turns, "
        f"~{r.tokens_kept:,} tokens",
        f"  context   {pct(r.pct_before)} → ~{pct(r.pct_after)} of {r.window:,}",
        f"  thinking  {r.thinking_kept} block(s) kept"
        + (f", {r.thinking_dropped} dropped" if r.thinking_dropped else ""),
        f"  tools     {r.tool_pairs_kept} tool_use/tool_result pair(s) kept",
        f"  squashed  {r.payloads_squashed} payload(s), {r.images_squashed} image(s), "
        f"{r.chars_removed:,} characters removed",
    ]
    sel = r.selection
    if sel.get("days"):
        lines.append(f"  days      {', '.join(sel['days'])} (Asia/Shanghai)")
    for side in ("from", "to"):
        end = sel.get(side)
        if end:
            lines.append(
                f"  {side:<9} {end['requested']} → idx {end['idx']} (turn-aligned idx {end['turn_idx']})"
                f"  {end['when']}  {end['preview']}"
            )
    lines.append(f"  idx       {sel.get('kept_from_idx')} … {sel.get('kept_to_idx')}")
    if sel.get("turns_trimmed_for_max_kept"):
        lines.append(f"  trimmed   {sel['turns_trimmed_for_max_kept']} oldest turn(s) over --max-kept")
    if r.carried:
        names = {"summary": "the compaction summary", "request": "the cut turn's opening request"}
        lines.append(
            "  carried   " + " and ".join(names[c] for c in r.carried) + ", verbatim, in the first user "
            "message (what the model knew of the part cut away)"
        )
    if r.injected:
        lines.append("  handoff   injected as the first user event")
    lines.append(f"  new sid   {r.new_session}" + (" (preview)" if r.dry_run else ""))
    if not r.dry_run:
        lines.append(f"  new file  {r.new_path} ({r.bytes_after:,} bytes, was {r.bytes_before:,})")
        lines.append("  next      re-bind your bridge to the new sid (Claude Code: --resume " + r.new_session + ")")
    for w in r.warnings:
        lines.append(f"  warning   {w}")
    return "\n".join(lines)


def tunnel(r) -> str:
    lines = [
        f"tunnel ({r.mode}{', dry run: nothing written or re-bound' if r.dry_run else ''})",
        f"  session   {r.old_sid}",
        f"  bound     {r.bound_sid or '(no bridge, or unknown)'}",
    ]
    if r.backup:
        lines.append(f"  backup    {r.backup}")
    if r.forge:
        f = r.forge
        lines.append(
            f"  kept      {f['events_kept']}/{f['events_total']} events, ~{f['tokens_kept']:,} tokens, "
            f"{pct(f['pct_before'])} → ~{pct(f['pct_after'])}"
        )
    lines.append(f"  new sid   {r.new_sid}" + (" (preview)" if r.dry_run else ""))
    lines.append(f"  hold      {r.hold}")
    if r.handoff_preview:
        lines.append("  handoff   " + r.handoff_preview.replace("\n", "\n            "))
    lines += [f"  re-bind   {r.rebind}", f"  started   {'yes' if r.started else 'no'}", f"  nudge     {r.nudge}"]
    lines += [f"  warning   {w}" for w in r.warnings]
    return "\n".join(lines)


def bill(b, settings: Settings) -> str:
    rows = [
        f"{'day':<11}{'requests':>9}{'input':>10}{'cache+':>12}{'cache read':>13}{'output':>10}{'hit':>7}{'cost $':>10}"
    ]
    for d in b.days + [b.total]:
        hit = f"{d.hit_ratio:.0%}" if d.hit_ratio is not None else "-"
        rows.append(
            f"{d.day:<11}{d.requests:>9,}{d.input:>10,}{d.cache_creation:>12,}{d.cache_read:>13,}"
            f"{d.output:>10,}{hit:>7}{d.cost:>10.2f}"
            + (f"  swaps: {', '.join(d.swaps)}" if d.swaps and d.day != "total" else "")
            + (f"  background: {d.background_calls} calls ${d.background_cost:.3f}" if d.background_calls else "")
        )
    rows.append(
        "priced as: "
        + (", ".join(f"{m} → {p}" for m, p in sorted(b.models.items())) or "(no usage)")
        + f"; {b.files} transcript files under {settings.projects_dir}"
    )
    return "\n".join(rows)


def hold(r) -> str:
    head = (
        f"held {r.id} ({r.status}, importance {r.importance}{', pinned' if r.pinned else ''})"
        if r.stored
        else f"not held: {r.decision}"
    )
    verdict = []
    if r.arbitration:
        a = r.arbitration
        verdict = [
            f"  verdict  {a['action']}"
            + (f" → {a['target']}" if a.get("target") else "")
            + f" (by {a['by']})"
            + (f": {a['reason']}" if a.get("reason") else "")
        ]
    return "\n".join(
        [head]
        + verdict
        + [f"  reason   {x}" for x in r.reasons]
        + [f"  warning  {x}" for x in r.warnings]
        + [f"  scarcity {x}" for x in r.scarcity]
    )


def breath(text: str, degraded: list[str]) -> str:
    return "\n".join([text] + [f"  degraded {d}" for d in degraded])


def memory_line(m) -> str:
    flags = ("📌" if m.pinned else "") + ("[archived]" if m.archived else "")
    status = "" if m.status == "confirmed" else "（未确认）"
    return f"{m.id}  {m.type}{status} i{m.importance} {flags} {clip(m.content, 60)}"  # one row, whatever the text


def json_block(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


def memory_trace(report: dict, settings: Settings) -> str:
    m = report["memory"]
    lines = [
        f"{m['id']}  {m['type']}  {m['content']}" + (f"（情境：{m['situation']}）" if m["situation"] else ""),
        f"  current   {'yes' if report['current'] else 'no'}",
    ]
    lines += [f"  conflict  with {c}" for c in m["conflicts"]]
    lines += [
        f"  {settings.local(t['at'])}  {t['action']} {t['other']}  by {t['by']}"
        + (f"  原话「{t['quote']}」" if t.get("quote") else "")
        + (f"  ({t['reason']})" if t.get("reason") else "")
        for t in report["trace"]
    ]
    lines += [f"  replaced by {r['id']}: {r['content']}" for r in report["replaced_by"]]
    return "\n".join(lines)


def bridge_status(report: dict) -> str:
    lines = [
        f"bridge   {report['bridge']}",
        f"bound    {report['bound_sid'] or '?'}",
        f"newest   {report['newest_sid'] or '(none written)'}",
    ]
    if report["differ"]:
        lines.append(f"differ   yes: the bridge still resumes an older session (ombre rebind {report['newest_sid']})")
    return "\n".join(lines)


def keeper_status(report: dict, settings: Settings) -> str:
    r = report["reading"] or {}
    lines = [
        f"auto      {'on' if report['auto_forge'] else 'off (AUTO_FORGE=0)'}",
        f"session   {r.get('session', '?')}  used {pct(r.get('used_pct'))}",
        f"diet      last {settings.local(report['last_diet'])}, cooldown {report['diet_cooldown_left_min']} min left",
        f"forge     last {settings.local(report['last_forge'])}, cooldown {report['forge_cooldown_left_min']} min left",
        *(
            [f"seeded    {settings.local(report['seeded'])} (cooldowns started, nothing ran)"]
            if report["seeded"]
            else []
        ),
        f"today     {report['today']}/{report['max_per_day']} runs",
        f"breaker   {'OPEN (ombre keeper reset)' if report['breaker'] else 'closed'}, "
        f"{report['failures_in_a_row']} failure(s) in a row",
        f"bound     {report['bound_sid'] or '?'}  newest written {report['newest_sid'] or '?'}"
        + ("" if report["bound_is_newest"] else "  ← DIFFER"),
    ]
    lines += [
        f"refused   {r['mode']} of {r['session']} ({r['at']}): {r['reason']}; skipped until the session changes"
        for r in report["refused"]
    ]
    lines += [
        f"  {o.get('at', '')}  {o.get('decision', '?'):<7} {o.get('mode', '')} "
        f"{o.get('reason') or o.get('error') or o.get('new_sid') or ''}"
        for o in report["last_outcomes"]
    ]
    return "\n".join(lines)


def distilled(result, *, dry_run: bool, explain: bool) -> str:
    lines = [
        f"distill {result.session}: {'ran' if result.ran else 'did not run'} ({result.reason})"
        + (" — dry run, nothing written" if dry_run else "")
    ]
    lines += [f"  candidate [{c['type']}] {c['content']}  原话「{c['quote']}」" for c in result.candidates]
    lines += [
        f"  held {h['decision']}: {h['content']}" + (f"  ({'；'.join(h['reasons'])})" if h["reasons"] else "")
        for h in result.held
    ]
    if result.explain:
        lines.append("  how the rules read each clause:")
        lines += [
            f"    [{r['act']}] 「{r['clause']}」 — {r['why']}"
            + (f"; taken back by {r['taken_back']}" if r.get("taken_back") else "")
            + (f"; left out: {r['left_out']}" if r.get("left_out") else "")
            for r in result.explain
        ]
    elif explain and result.ran:
        lines.append("  how the rules read each clause: nothing of the person's to read")
    return "\n".join(lines)


def model_spend(m: dict) -> str:
    line = (
        f"model     {m['backend']}: {m['calls']}/{m['daily_calls']} calls, {m['tokens']}/{m['daily_tokens']} "
        f"tokens today ({m['failed']} failed)"
    )
    return line + ("  — over the cap: the rules answer until tomorrow" if m["over_cap"] else "")


def distill_status(report: dict, settings: Settings) -> str:
    lines = [
        f"enabled   {'yes' if report['enabled'] else 'no (ASYNC_DISTILL=0)'}",
        f"today     {report['auto_holds_today']}/{report['daily_cap']} automatic holds",
        model_spend(report["model"]),
    ]
    if "session" in report:
        lines.append(
            f"session   {report['session']}  cursor {(report['cursor'] or {}).get('uuid', 'none')}"
            f"  new person turns {report['new_person_turns']}"
        )
    lines += [
        f"  {settings.local(o.get('at'))}  {'ran' if o.get('ran') else 'skip'}  {o.get('reason', '')}"
        for o in report["last_outcomes"]
    ]
    return "\n".join(lines)


def install_plan(changed: list, backups: list, *, dry_run: bool, install: bool, notes: str) -> str:
    """What `install claude-code` / `uninstall claude-code` changed (or would), then `notes`."""
    if not changed:
        return f"nothing to {'install' if install else 'uninstall'}: Claude Code is already set up that way" + notes
    lines = ["would change:" if dry_run else "changed:"] + [f"  {c.path}  ({c.what})" for c in changed]
    if dry_run:
        lines += ["", *(c.diff() for c in changed)]
    lines += [f"  backup {b}" for b in backups]
    return "\n".join(lines) + notes


def units_plan(changed: list, *, dry_run: bool, install: bool, units: list[str], how_to_enable: str) -> str:
    """What `install service` / `uninstall service` wrote or removed (or would)."""
    if not changed:
        return "nothing to change: the units are already " + ("there" if install else "gone")
    if install:
        lines = ["would write:" if dry_run else "wrote:"]
    else:
        lines = ["would remove:" if dry_run else "removed:"]
    lines += [f"  {c.path}" for c in changed]
    if dry_run:
        lines += ["", *(c.diff() for c in changed)]
    elif install:
        lines += ["", how_to_enable]
    else:
        lines += ["", "stop them first if they run: systemctl --user disable --now " + " ".join(units)]
    return "\n".join(lines)


def brain_import(r) -> str:
    """What `memories import --from ombre-brain` did, or would do: counts, then every list a person checks."""
    verb = "would import" if r.dry_run else "imported"
    total = sum(r.by_type.values())
    lines = [
        f"{verb} {total} memories from Ombre-Brain ({r.source})"
        + ("" if r.dry_run else f"; {r.embedded} vectors computed")
    ]
    if r.by_type:
        lines.append("  by type: " + ", ".join(f"{k} {v}" for k, v in sorted(r.by_type.items(), key=lambda x: -x[1])))
        lines.append("  from:    " + ", ".join(f"{k} {v}" for k, v in sorted(r.by_origin.items(), key=lambda x: -x[1])))
        lines.append(f"  evidence: {r.quoted} quoted from their source files, {r.unconfirmed} left 未确认")
    if r.pinned:
        lines.append(f"pinned ({len(r.pinned)}): " + "; ".join(r.pinned))
    if r.kept_at_10:
        lines.append(
            f"pinned there, past our cap of pinned memories, kept at importance 10 ({len(r.kept_at_10)}): "
            + "; ".join(r.kept_at_10)
        )
    if r.sealed:
        lines.append(
            f"letters sealed there ({len(r.sealed)}): kept verbatim, never shown unasked; "
            "`ombre breath --domain letter` reads them"
        )
        lines += [f"  {path}: {why}" for path, why in r.sealed]
    for title, rows in (("archived", r.archived), ("skipped", r.skipped), ("refused", r.refused)):
        if rows:
            lines.append(f"{title} ({len(rows)}):")
            lines += [f"  {path}: {why}" for path, why in rows[:200]]
            if len(rows) > 200:
                lines.append(f"  … and {len(rows) - 200} more (--json lists them all)")
    lines += [f"note: {n}" for n in r.notes]
    if r.refused:
        lines.append(
            f"{len(r.refused)} file(s) refused (listed above); the others "
            + ("would import." if r.dry_run else "are in. Fix those and run again: what is in is skipped.")
        )
    return "\n".join(lines)
