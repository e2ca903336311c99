"""Namespaces: one person or companion each, on one store.

`ombre namespace add NAME` makes a bearer token for a namespace and keeps only its SHA-256 in the store;
`ombre serve` answers a request with that token from that namespace's memories and no other. The token in
OMBRE_TOKEN (or none, on loopback) stays the key of OMBRE_NAMESPACE.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import threading
from dataclasses import replace
from typing import Callable

from ..settings import namespace_name
from .service import MemoryService


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def add(service: MemoryService, name: str) -> str:
    """A new token for namespace `name`; returned once, stored only as its digest."""
    token = "ombre-" + secrets.token_urlsafe(24)
    service.store.add_token(digest(token), namespace_name(name), dt.datetime.now(dt.timezone.utc).isoformat())
    return token


class Tenants:
    """The memory services one `ombre serve` answers from, one per namespace, sharing the loaded models."""

    def __init__(self, default: MemoryService, open_service: Callable[..., MemoryService]) -> None:
        self.default = default
        self._open = open_service
        self._services: dict[str, MemoryService] = {default.settings.namespace: default}
        self._known: dict[str, str] = {}  # token digest → namespace, as found (tokens are never reassigned)
        self._lock = threading.Lock()

    def namespace_of(self, token: str) -> str | None:
        """The namespace a bearer token opens; asked of the store once per token, not on every request."""
        if not token:
            return None
        key = digest(token)
        if key not in self._known:
            found = self.default.store.token_namespace(key)
            if found is None:
                return None  # not remembered: a token added later must work without a restart
            self._known[key] = found
        return self._known[key]

    def get(self, namespace: str) -> MemoryService:
        with self._lock:
            service = self._services.get(namespace)
            if service is None:
                service = self._open(
                    replace(self.default.settings, namespace=namespace), store=self.default.store.beside(namespace)
                )
                service.share_encoders(self.default)
                self._services[namespace] = service
            return service

    def close(self) -> None:
        with self._lock:
            for service in self._services.values():
                if service is not self.default:
                    service.close()
            self._services = {self.default.settings.namespace: self.default}
