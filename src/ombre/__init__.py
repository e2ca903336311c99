"""Ombre: keep a long-running Claude Code companion the same person while its bill stays low."""

__version__ = "0.1.0"
