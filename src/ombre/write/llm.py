"""Ask a model for structured JSON — or don't: the rules backend needs no model and is the default.

Backends: the Anthropic Messages API (official `anthropic` SDK) and any OpenAI-compatible chat-completions
endpoint (official `openai` SDK: Ollama, vLLM, DeepSeek, Qwen, …), configured from the environment
(OMBRE_LLM, OMBRE_LLM_BASE_URL, OMBRE_LLM_MODEL, OMBRE_LLM_API_KEY, OMBRE_LLM_TIMEOUT_MS). Every call has a
hard wall-clock deadline; a timeout, a 5xx, a refused connection or an answer that is not a JSON object is
a ModelError, which the caller turns into "write it as 未确认", never into an error the person sees.
"""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from functools import cached_property
from typing import Protocol

from ..errors import UsageError
from ..settings import Settings


class ModelError(Exception):
    """The model did not give a usable answer in time."""


class JsonModel(Protocol):
    name: str

    def ask(self, system: str, prompt: str) -> dict: ...


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
    def _client(self):  # noqa: ANN202
        # imported on the first question, not when configured: every command that opens the memory service
        # configures the arbiter, few of them ask, and the import costs over a second
        import anthropic

        return anthropic.Anthropic(**self._options)

    def ask(self, system: str, prompt: str) -> dict:
        client = self._client  # outside the deadline: the import is not the model's time

        def call() -> dict:
            reply = client.messages.create(model=self.model, max_tokens=1024, system=system,
                                                 messages=[{"role": "user", "content": prompt}])
            text = "".join(getattr(b, "text", "") for b in reply.content)
            return parse_json_object(text)

        return _with_deadline(call, self.timeout_s)


class OpenAIModel:
    def __init__(self, model: str, api_key: str, base_url: str | None, timeout_s: float) -> None:
        self.name = f"openai:{model}"
        self.model, self.timeout_s = model, timeout_s
        self._options = {"api_key": api_key, "base_url": base_url, "timeout": timeout_s, "max_retries": 0}

    @cached_property
    def _client(self):  # noqa: ANN202
        import openai  # on the first question, as AnthropicModel

        return openai.OpenAI(**self._options)

    def ask(self, system: str, prompt: str) -> dict:
        client = self._client  # outside the deadline: the import is not the model's time

        def call() -> dict:
            reply = client.chat.completions.create(
                model=self.model, messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                response_format={"type": "json_object"})
            return parse_json_object(reply.choices[0].message.content or "")

        return _with_deadline(call, self.timeout_s)


def from_settings(settings: Settings) -> JsonModel | None:
    """The configured model, or None for the rules backend."""
    kind = settings.llm
    if kind in ("", "rules", "none"):
        return None
    if kind not in ("anthropic", "openai"):
        raise UsageError(f"OMBRE_LLM={kind!r} is not a backend ombre knows", hint="use rules, anthropic or openai")
    if not settings.llm_model:
        raise UsageError(f"OMBRE_LLM={kind} needs OMBRE_LLM_MODEL", hint="the model name the endpoint serves")
    cls = AnthropicModel if kind == "anthropic" else OpenAIModel
    return cls(settings.llm_model, settings.llm_api_key or "none", settings.llm_base_url,
               settings.llm_timeout_ms / 1000)
