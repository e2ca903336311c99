"""Window operations on a session's hot window: anchors, selection, squash, diet and forge."""
from .anchors import Anchor, anchors
from .diet import DietOptions
from .forge import ForgeOptions, ForgeResult
from .select import EndSpec, Selector, parse_days, parse_moment

__all__ = ["Anchor", "anchors", "DietOptions", "ForgeOptions", "ForgeResult", "EndSpec", "Selector",
           "parse_days", "parse_moment"]
