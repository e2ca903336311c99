"""Claude Code session files: reader.py (streaming, lossless), chain.py (the active chain and its events),
lines.py (what one line says), tail.py (the person's last words, read from the end), sessions.py (lookup),
writer.py (temporary file, verify, rename).

Nothing is imported here, so the per-turn hook can import tail.py without the chain machinery."""
