"""Window swapping end to end: the handoff pack, bridges, the tunnel and the keeper."""
