"""Dual-zone injection: the per-turn block, the Claude Code hooks, the gateway and the installer."""
