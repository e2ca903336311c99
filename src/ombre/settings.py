"""One frozen settings object, read from the environment once and passed down.

Names and defaults follow the seed; nothing below this module reads `os.environ`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .clock import SHANGHAI, parse_timestamp
from .errors import UsageError


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise UsageError(
            f"{name}={raw!r} is not a whole number", hint=f"unset it or give an integer (default {default})"
        ) from None


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    return raw.strip().lower() not in {"0", "false", "no", "off"}


def _at_least(env: Mapping[str, str], name: str, default: int, least: int, why: str = "") -> int:
    n = _int(env, name, default)
    if n < least:
        raise UsageError(
            f"{name}={n} is too small" + (f": {why}" if why else ""), hint=f"give {least} or more (default {default})"
        )
    return n


def namespace_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", name):
        raise UsageError(
            f"{name!r} is not a namespace name",
            hint="use letters, digits, '-', '_' or '.', at most 64, e.g. mum or companion-2",
        )
    return name


def redact(url: str) -> str:
    """A database address without its password, for output that gets pasted into issues."""
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)


def database_url(url: str | None) -> str | None:
    if not url or not url.strip():
        return None
    if not url.startswith(("postgresql://", "postgres://")):
        raise UsageError(
            f"OMBRE_DB={url!r} is not a PostgreSQL address",
            hint="use postgresql://user:password@host:5432/dbname, or unset it for the SQLite file",
        )
    return url.strip()


def _zone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(
            f"OMBRE_TZ={name!r} is not a time zone", hint="use an IANA name such as Asia/Shanghai"
        ) from None
    return name


ENCODERS = ("e5", "use")
SETTINGS_FILE = "service.env"  # in OMBRE_HOME: KEY=VALUE lines, systemd's EnvironmentFile format


def env_pair(line: str) -> tuple[str, str] | None:
    """One KEY=VALUE line (one pair of quotes taken off the value); None for a blank line or a # comment."""
    key, eq, value = line.strip().partition("=")
    if not eq or key.startswith("#") or not key.strip():
        return None
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return key.strip(), value


def parse_env(text: str) -> dict[str, str]:
    return dict(pair for line in text.splitlines() if (pair := env_pair(line)))


def read_env_file(path: Path) -> dict[str, str]:
    """The KEY=VALUE lines of `path` (see env_pair); {} when absent."""
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} cannot be read: {exc}", hint="fix or remove it (KEY=VALUE lines)") from None
    return parse_env(text)


def _encoders(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get("OMBRE_ENCODERS")
    if raw is None or raw.strip() == "":
        return ENCODERS
    chosen = tuple(dict.fromkeys(k.strip().lower() for k in raw.split(",") if k.strip()))
    unknown = [k for k in chosen if k not in ENCODERS]
    if unknown or not chosen:
        raise UsageError(
            f"OMBRE_ENCODERS={raw!r} names no known encoder"
            if not chosen
            else f"OMBRE_ENCODERS names unknown encoder(s): {', '.join(unknown)}",
            hint="use e5, use or both (e5,use); OMBRE_VECTORS=0 turns vectors off",
        )
    return chosen


@dataclass(frozen=True)
class Settings:
    claude_home: Path
    ombre_home: Path
    claude_json: Path | None = None  # Claude Code's global config (user-scope MCP servers live here)
    user_home: Path | None = None  # $HOME: cc-connect looks for transcripts under it, whatever CLAUDE_CONFIG_DIR says
    auto_forge: bool = True
    context_window: int = 200_000
    diet_pct: int = 55
    forge_pct: int = 70
    idle_secs: int = 180
    forge_cooldown_mins: int = 90
    diet_cooldown_mins: int = 45
    max_per_day: int = 6
    forge_retain: int = 60_000
    diet_retain: int = 150_000
    diet_squash: int = 2_000
    forge_max_kept: int = 100_000
    ombre_hold: bool = True
    max_pinned: int = 20
    max_importance_10: int = 5
    max_importance_9: int = 20  # importance ≥ 9, tens included
    auto_hold_daily: int = 8
    max_content_chars: int = 4_000
    extra_types: tuple[str, ...] = ()
    use_vectors: bool = True  # OMBRE_VECTORS=0: keywords only, for machines too slow for the models
    encoders: tuple[str, ...] = ("e5", "use")  # OMBRE_ENCODERS: which bundled encoders recall uses
    # dual-zone injection: the per-turn block's budgets, and where the memory service listens
    memory_url: str = "http://127.0.0.1:8765"
    token: str | None = None
    inject_max_cards: int = 5
    inject_max_tokens: int = 1_800
    inject_timeout_ms: int = 5_000
    # how soon the hook would like its answer (process start included): recall leaves out the slower encoder
    # when it would not fit; the block still may take up to inject_timeout_ms
    inject_target_ms: int = 150
    session_start_max_tokens: int = 1_500
    just_now_mins: int = 120
    upstream: str = "https://api.anthropic.com"
    # the bridge that must be re-pointed after a swap (tunnel/bridges.py)
    bridge: str = "none"
    bridge_file: Path | None = None
    bridge_stop: str | None = None
    bridge_start: str | None = None
    bridge_bind: str | None = None
    bridge_status: str | None = None
    bridge_key: str | None = None
    bridge_nudge: str | None = None
    # cc-connect (tunnel/cc_connect.py): its config, which project, and that project's work dir; with these the
    # session file is found without OMBRE_BRIDGE_FILE, and a binding it would not resume is refused
    cc_connect_config: Path | None = None
    bridge_project: str | None = None
    bridge_work_dir: Path | None = None
    # the keeper: a band below each threshold that must be crossed before it fires again, and a
    # breaker that stops automatic runs after this many failures in a row
    hysteresis_pct: int = 3
    max_failures: int = 3
    backups_keep: int = 20  # session backups the tunnel keeps in OMBRE_HOME/backups
    # the model behind arbitration and distillation (write/llm.py); "rules" needs none and is the default
    llm: str = "rules"
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_timeout_ms: int = 5_000
    # a day's background model use (every backend); past either cap the rules answer until tomorrow
    llm_daily_calls: int = 200
    llm_daily_tokens: int = 300_000
    claude_bin: str = "claude"  # OMBRE_CLAUDE_BIN: the Claude Code CLI that OMBRE_LLM=claude-code asks
    db: str | None = None  # OMBRE_DB=postgresql://…: the PostgreSQL store; unset, the SQLite file in OMBRE_HOME
    namespace: str = "default"  # OMBRE_NAMESPACE: whose memories (one person or companion) this process uses
    # PostgreSQL's connection pool, shared by every namespace of a service: its bounds (a hold keeps one
    # connection for its lock while it reads and writes on another, so at least two) and how long a request
    # waits for a free connection before it fails
    pg_pool_min: int = 1
    pg_pool_max: int = 10
    pg_pool_timeout_ms: int = 10_000
    pg_hnsw_from: int = 5_000  # live vectors from which a namespace is searched by an HNSW index of its own
    tz: str = SHANGHAI.key  # OMBRE_TZ: the zone times are shown in to the person (stored times stay UTC)
    async_distill: bool = True  # ASYNC_DISTILL=0 turns background distillation off
    distill_warmup: bool = False  # OMBRE_DISTILL_WARMUP=1: a new session's recent turns are read too

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        """The process's environment over OMBRE_HOME/service.env: the file the service's unit reads too, so
        the CLI, the hooks and the service (its dashboard included) agree on what is kept there."""
        env = os.environ if env is None else env
        home = Path(env.get("HOME") or Path.home())
        ombre_home = Path(env["OMBRE_HOME"]) if env.get("OMBRE_HOME") else home / ".ombre"
        env = {**read_env_file(ombre_home.expanduser() / SETTINGS_FILE), **env}
        claude_home = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
        config_root = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home
        return cls(
            user_home=home.expanduser(),
            claude_home=claude_home.expanduser(),
            claude_json=(config_root / ".claude.json").expanduser(),
            ombre_home=ombre_home.expanduser(),
            auto_forge=_flag(env, "AUTO_FORGE", True),
            context_window=_int(env, "AUTO_FORGE_CONTEXT_WINDOW", 200_000),
            diet_pct=_int(env, "AUTO_FORGE_DIET_PCT", 55),
            forge_pct=_int(env, "AUTO_FORGE_PCT", 70),
            idle_secs=_int(env, "AUTO_FORGE_IDLE_SECS", 180),
            forge_cooldown_mins=_int(env, "AUTO_FORGE_COOLDOWN_MINS", 90),
            diet_cooldown_mins=_int(env, "AUTO_FORGE_DIET_COOLDOWN_MINS", 45),
            max_per_day=_int(env, "AUTO_FORGE_MAX_PER_DAY", 6),
            forge_retain=_int(env, "AUTO_FORGE_RETAIN", 60_000),
            diet_retain=_int(env, "AUTO_FORGE_DIET_RETAIN", 150_000),
            diet_squash=_int(env, "AUTO_FORGE_DIET_SQUASH", 2_000),
            forge_max_kept=_int(env, "AUTO_FORGE_MAX_KEPT", 100_000),
            ombre_hold=_flag(env, "FORGE_OMBRE_HOLD", True),
            max_pinned=_int(env, "OMBRE_MAX_PINNED", 20),
            max_importance_10=_int(env, "OMBRE_MAX_IMPORTANCE_10", 5),
            max_importance_9=_int(env, "OMBRE_MAX_IMPORTANCE_9", 20),
            auto_hold_daily=_int(env, "OMBRE_AUTO_HOLD_DAILY", 8),
            max_content_chars=_int(env, "OMBRE_MAX_CONTENT_CHARS", 4_000),
            extra_types=tuple(t.strip() for t in env.get("OMBRE_EXTRA_TYPES", "").split(",") if t.strip()),
            use_vectors=_flag(env, "OMBRE_VECTORS", True),
            encoders=_encoders(env),
            memory_url=(env.get("OMBRE_URL") or "http://127.0.0.1:8765").rstrip("/"),
            token=env.get("OMBRE_TOKEN") or None,
            inject_max_cards=_int(env, "OMBRE_INJECT_MAX_CARDS", 5),
            inject_max_tokens=_int(env, "OMBRE_INJECT_MAX_TOKENS", 1_800),
            inject_timeout_ms=_int(env, "OMBRE_INJECT_TIMEOUT_MS", 5_000),
            inject_target_ms=_int(env, "OMBRE_INJECT_TARGET_MS", 150),
            session_start_max_tokens=_int(env, "OMBRE_SESSION_START_MAX_TOKENS", 1_500),
            just_now_mins=_int(env, "OMBRE_JUST_NOW_MINS", 120),
            upstream=(env.get("OMBRE_UPSTREAM") or "https://api.anthropic.com").rstrip("/"),
            bridge=(env.get("OMBRE_BRIDGE") or "none").strip().lower(),
            bridge_file=Path(env["OMBRE_BRIDGE_FILE"]).expanduser() if env.get("OMBRE_BRIDGE_FILE") else None,
            bridge_stop=env.get("OMBRE_BRIDGE_STOP") or None,
            bridge_start=env.get("OMBRE_BRIDGE_START") or None,
            bridge_bind=env.get("OMBRE_BRIDGE_BIND") or None,
            bridge_status=env.get("OMBRE_BRIDGE_STATUS") or None,
            bridge_key=env.get("OMBRE_BRIDGE_KEY") or None,
            bridge_nudge=env.get("OMBRE_BRIDGE_NUDGE") or None,
            cc_connect_config=Path(
                env.get("OMBRE_CC_CONNECT_CONFIG") or home / ".cc-connect" / "config.toml"
            ).expanduser(),
            bridge_project=env.get("OMBRE_BRIDGE_PROJECT") or None,
            bridge_work_dir=(
                Path(env["OMBRE_BRIDGE_WORK_DIR"]).expanduser() if env.get("OMBRE_BRIDGE_WORK_DIR") else None
            ),
            hysteresis_pct=_int(env, "AUTO_FORGE_HYSTERESIS_PCT", 3),
            max_failures=_int(env, "AUTO_FORGE_MAX_FAILURES", 3),
            backups_keep=_int(env, "OMBRE_BACKUPS_KEEP", 20),
            llm=(env.get("OMBRE_LLM") or "rules").strip().lower(),
            llm_base_url=env.get("OMBRE_LLM_BASE_URL") or None,
            llm_model=env.get("OMBRE_LLM_MODEL") or None,
            llm_api_key=env.get("OMBRE_LLM_API_KEY") or None,
            llm_timeout_ms=_int(env, "OMBRE_LLM_TIMEOUT_MS", 5_000),
            llm_daily_calls=_int(env, "OMBRE_LLM_DAILY_CALLS", 200),
            llm_daily_tokens=_int(env, "OMBRE_LLM_DAILY_TOKENS", 300_000),
            claude_bin=env.get("OMBRE_CLAUDE_BIN") or "claude",
            db=database_url(env.get("OMBRE_DB")),
            namespace=namespace_name(env.get("OMBRE_NAMESPACE") or "default"),
            pg_pool_min=_at_least(env, "OMBRE_PG_POOL_MIN", 1, 0),
            pg_pool_max=_at_least(
                env, "OMBRE_PG_POOL_MAX", 10, 2, "a hold keeps one connection for its lock and works on another"
            ),
            pg_pool_timeout_ms=_at_least(env, "OMBRE_PG_POOL_TIMEOUT_MS", 10_000, 1),
            pg_hnsw_from=_at_least(env, "OMBRE_PG_HNSW_FROM", 5_000, 1),
            tz=_zone(env.get("OMBRE_TZ") or SHANGHAI.key),
            async_distill=_flag(env, "ASYNC_DISTILL", True),
            distill_warmup=_flag(env, "OMBRE_DISTILL_WARMUP", False),
        )

    def local(self, stamp: str | None) -> str:
        """A stored UTC time as the person reads it: their zone (OMBRE_TZ, default Asia/Shanghai), to the minute."""
        if not stamp:
            return "never"
        moment = parse_timestamp(stamp)
        return moment.astimezone(ZoneInfo(self.tz)).strftime("%Y-%m-%d %H:%M %Z") if moment else stamp

    @property
    def projects_dir(self) -> Path:
        return self.claude_home / "projects"

    @property
    def memory_db(self) -> Path:
        return self.ombre_home / "ombre.db"

    @property
    def history_log(self) -> Path:
        return self.ombre_home / "history.jsonl"

    @property
    def keeper_state(self) -> Path:
        return self.ombre_home / "keeper-state.json"

    @property
    def metrics_log(self) -> Path:
        return self.ombre_home / "metrics.jsonl"

    @property
    def distill_log(self) -> Path:
        return self.ombre_home / "distill.jsonl"

    @property
    def llm_ledger(self) -> Path:
        return self.ombre_home / "llm_ledger.jsonl"

    @property
    def backups_dir(self) -> Path:
        return self.ombre_home / "backups"

    @property
    def cache_dir(self) -> Path:
        """What ombre can make again from what it ships with (the distiller's fit of its examples): safe to delete."""
        return self.ombre_home / "cache"

    @property
    def database_label(self) -> str:
        """Where memories live, as shown to a person: the file, or the server address without its password."""
        return redact(self.db) if self.db else str(self.memory_db)

    def as_dict(self) -> dict:
        out = {
            f.name: (str(v) if isinstance(v := getattr(self, f.name), Path) else list(v) if isinstance(v, tuple) else v)
            for f in fields(self)
        }
        for secret in ("token", "llm_api_key"):
            if out[secret]:
                out[secret] = "***"  # config output gets pasted into issues
        if out["db"]:
            out["db"] = self.database_label
        return out
