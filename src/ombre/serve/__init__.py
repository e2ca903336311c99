"""Servers: HTTP (FastAPI) and MCP (official SDK), thin adapters over the memory service."""
