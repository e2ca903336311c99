"""Window operations on a session's hot window: anchors, selection, squash, diet and forge (one module a job)."""
