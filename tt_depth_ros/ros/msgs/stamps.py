"""builtin_interfaces/Time <-> integer nanoseconds: the one key every stamp lookup uses."""
from __future__ import annotations

from typing import Any

NS_PER_S = 1_000_000_000


def stamp_to_ns(stamp: Any) -> int:
    """builtin_interfaces/Time (anything with `sec`, `nanosec`) -> integer nanoseconds."""
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)
