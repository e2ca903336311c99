"""Claude Code session files: streaming reader, active chain and events, token estimates, lookup, writer."""
from .chain import Entry, Transcript, scan
from .sessions import find_session, project_dir_name
from ..tokens import context_pct, estimate_text, usage_context

__all__ = ["Entry", "Transcript", "scan", "find_session", "project_dir_name", "context_pct", "estimate_text",
           "usage_context"]
