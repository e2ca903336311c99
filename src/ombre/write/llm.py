"""Ask a model for structured JSON — or don't: the rules backend needs no model and is the default.

Backends: the Anthropic Messages API (official `anthropic` SDK), any OpenAI-compatible chat-completions
endpoint (official `openai` SDK: Ollama, vLLM, DeepSeek, Qwen, …), and the Claude Code CLI the person
already runs (`claude -p`, its own login, no API key), configured from the environment (OMBRE_LLM,
OMBRE_LLM_BASE_URL, OMBRE_LLM_MODEL, OMBRE_LLM_API_KEY, OMBRE_LLM_TIMEOUT_MS, OMBRE_CLAUDE_BIN). Every call
has a hard wall-clock deadline; a timeout, a 5xx, a refused connection, a failing CLI or an answer that is
not a JSON object is a ModelError, which the caller turns into "the rules answer" or "write it as 未确认",
never into an error the person sees. Every call, whatever the backend, is written to a ledger in
OMBRE_HOME with its purpose, tokens and time, and a day's calls and tokens are capped
(OMBRE_LLM_DAILY_CALLS, OMBRE_LLM_DAILY_TOKENS): background spend is visible and bounded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Protocol

from .. import jsonl_log
from ..clock import now_utc, shanghai_date
from ..errors import UsageError
from ..settings import Settings
from ..wire import loads

LEDGER_MAX_BYTES = 2_000_000


class ModelError(Exception):
    """The model did not give a usable answer in time."""


class OverBudget(ModelError):
    """Today's cap on background model calls or tokens is reached: the rules answer until tomorrow."""


@dataclass
class Reply:
    text: str
    tokens_in: int = 0
    tokens_out: int = 0


class Backend(Protocol):
    name: str

    def reply(self, system: str, prompt: str) -> Reply: ...


class JsonModel(Protocol):
    name: str

    def ask(self, system: str, prompt: str, purpose: str = "") -> dict: ...


def parse_json_object(text: str) -> dict:
    """The first JSON object in a model's text (models wrap JSON in prose or code fences)."""
    start = text.find("{")
    while start != -1:
        try:
            value, _ = json.JSONDecoder().raw_decode(text[start:])
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    raise ModelError(f"the model's answer holds no JSON object: {text[:120]!r}")


def _with_deadline(call, timeout_s: float):
    # The SDKs' own timeouts are per read: a server that drips bytes could hold a call far longer.
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(call)
    try:
        return future.result(timeout=timeout_s)
    except FutureTimeout:
        raise ModelError(f"no answer within {timeout_s:.1f} s") from None
    except ModelError:
        raise
    except Exception as exc:  # noqa: BLE001 — every SDK failure is the same thing to the caller
        raise ModelError(f"{type(exc).__name__}: {exc}") from None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


class AnthropicModel:
    def __init__(self, model: str, api_key: str, base_url: str | None, timeout_s: float) -> None:
        self.name = f"anthropic:{model}"
        self.model, self.timeout_s = model, timeout_s
        self._options = {"api_key": api_key, "base_url": base_url, "timeout": timeout_s, "max_retries": 0}

    @cached_property
    def _client(self):
        # imported on the first question, not when configured: every command that opens the memory service
        # configures the arbiter, few of them ask, and the import costs over a second
        import anthropic

        return anthropic.Anthropic(**self._options)

    def reply(self, system: str, prompt: str) -> Reply:
        client = self._client  # outside the deadline: the import is not the model's time

        def call() -> Reply:
            reply = client.messages.create(
                model=self.model, max_tokens=1024, system=system, messages=[{"role": "user", "content": prompt}]
            )
            usage = reply.usage
            return Reply(
                "".join(getattr(b, "text", "") for b in reply.content),
                usage.input_tokens + (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0),
                usage.output_tokens,
            )

        return _with_deadline(call, self.timeout_s)


class OpenAIModel:
    def __init__(self, model: str, api_key: str, base_url: str | None, timeout_s: float) -> None:
        self.name = f"openai:{model}"
        self.model, self.timeout_s = model, timeout_s
        self._options = {"api_key": api_key, "base_url": base_url, "timeout": timeout_s, "max_retries": 0}

    @cached_property
    def _client(self):
        import openai  # on the first question, as AnthropicModel

        return openai.OpenAI(**self._options)

    def reply(self, system: str, prompt: str) -> Reply:
        client = self._client  # outside the deadline: the import is not the model's time

        def call() -> Reply:
            reply = client.chat.completions.create(
                model=self.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                response_format={"type": "json_object"},
            )
            usage = reply.usage
            return Reply(
                reply.choices[0].message.content or "",
                usage.prompt_tokens if usage else 0,
                usage.completion_tokens if usage else 0,
            )

        return _with_deadline(call, self.timeout_s)


class ClaudeCodeModel:
    """The Claude Code CLI the person already runs, with its own login: one turn of `claude -p`, JSON out,
    no tools, no hooks, no MCP servers, and no session written (--no-session-persistence). It also runs
    from a folder of Ombre's own, so nothing it could leave behind lands in a project folder the keeper
    or a bridge watches (they pick "the newest session")."""

    def __init__(self, model: str, exe: str, workdir: Path, timeout_s: float) -> None:
        self.name = f"claude-code:{model}"
        self.model, self.exe, self.workdir, self.timeout_s = model, exe, workdir, timeout_s

    def command(self, system: str, prompt: str) -> list[str]:
        return [
            self.exe,
            "-p",
            prompt,
            "--output-format",
            "json",
            "--model",
            self.model,
            "--system-prompt",
            system,
            "--tools",
            "",
            "--max-turns",
            "1",
            "--no-session-persistence",
            "--strict-mcp-config",
            "--settings",
            json.dumps({"disableAllHooks": True}),
        ]

    def reply(self, system: str, prompt: str) -> Reply:
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            proc = subprocess.Popen(
                self.command(system, prompt),
                cwd=self.workdir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise ModelError(f"cannot run {self.exe!r}: {exc.strerror or exc}") from None
        try:
            out, err = proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the CLI's own children (node workers) go with it
            proc.communicate()
            raise ModelError(f"claude -p gave no answer within {self.timeout_s:.1f} s") from None
        try:
            result = loads(out, "claude -p's answer")
        except ValueError:
            tail = (err or out).decode("utf-8", "replace").strip()[-200:]
            raise ModelError(f"claude -p exited {proc.returncode} without a JSON result: {tail!r}") from None
        if not isinstance(result, dict) or result.get("is_error") or proc.returncode != 0:
            detail = result.get("result") if isinstance(result, dict) else result
            raise ModelError(f"claude -p failed (exit {proc.returncode}): {str(detail)[:200]}")
        usage = result.get("usage") or {}
        tokens_in = sum(
            int(usage.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        return Reply(str(result.get("result") or ""), tokens_in, int(usage.get("output_tokens") or 0))


class Ledger:
    """Every background model call, one JSON line each, and today's totals against the caps."""

    def __init__(self, path: Path, daily_calls: int, daily_tokens: int) -> None:
        self.path, self.daily_calls, self.daily_tokens = path, daily_calls, daily_tokens

    def today(self) -> dict:
        day = shanghai_date(now_utc())
        entries = [e for e in jsonl_log.read(self.path, limit=10_000) if e.get("day") == day]
        calls, tokens = len(entries), sum(int(e.get("tokens_in", 0)) + int(e.get("tokens_out", 0)) for e in entries)
        return {
            "day": day,
            "calls": calls,
            "tokens": tokens,
            "failed": sum(not e.get("ok") for e in entries),
            "daily_calls": self.daily_calls,
            "daily_tokens": self.daily_tokens,
            "over_cap": calls >= self.daily_calls or tokens >= self.daily_tokens,
        }

    def record(self, **entry: object) -> None:
        jsonl_log.append(self.path, {"day": shanghai_date(now_utc()), **entry}, max_bytes=LEDGER_MAX_BYTES)


class Budgeted:
    """A backend asked for JSON, within the day's caps, every call written to the ledger."""

    def __init__(self, backend: Backend, ledger: Ledger) -> None:
        self.backend, self.ledger, self.name = backend, ledger, backend.name

    def ask(self, system: str, prompt: str, purpose: str = "") -> dict:
        today = self.ledger.today()
        if today["over_cap"]:
            raise OverBudget(
                f"today's model budget is used up ({today['calls']}/{today['daily_calls']} calls, "
                f"{today['tokens']}/{today['daily_tokens']} tokens)"
            )
        started = time.monotonic()
        reply, error = None, None
        try:
            reply = self.backend.reply(system, prompt)
            return parse_json_object(reply.text)
        except ModelError as exc:
            error = str(exc)
            raise
        finally:
            self.ledger.record(
                backend=self.name,
                purpose=purpose,
                ok=error is None,
                error=error,
                tokens_in=reply.tokens_in if reply else 0,
                tokens_out=reply.tokens_out if reply else 0,
                ms=round((time.monotonic() - started) * 1000),
            )


BACKENDS = ("rules", "anthropic", "openai", "claude-code")


def ledger(settings: Settings) -> Ledger:
    return Ledger(settings.llm_ledger, settings.llm_daily_calls, settings.llm_daily_tokens)


def from_settings(settings: Settings) -> JsonModel | None:
    """The configured model, or None for the rules backend."""
    kind = settings.llm
    if kind in ("", "rules", "none"):
        return None
    if kind not in BACKENDS:
        raise UsageError(f"OMBRE_LLM={kind!r} is not a backend ombre knows", hint="use " + ", ".join(BACKENDS))
    timeout_s = settings.llm_timeout_ms / 1000
    if kind == "claude-code":
        backend: Backend = ClaudeCodeModel(
            settings.llm_model or "haiku", settings.claude_bin, settings.ombre_home / "claude-code-cwd", timeout_s
        )
    elif not settings.llm_model:
        raise UsageError(f"OMBRE_LLM={kind} needs OMBRE_LLM_MODEL", hint="the model name the endpoint serves")
    else:
        cls = AnthropicModel if kind == "anthropic" else OpenAIModel
        backend = cls(settings.llm_model, settings.llm_api_key or "none", settings.llm_base_url, timeout_s)
    return Budgeted(backend, ledger(settings))
