"""What a process keeps from one request to the next: a bounded map of the latest entries.

The move path makes the same parts again and again (a parsed position, a seat's view of it, the
log's entries in a reader's words); each is kept here under a key that says everything it is
made of, so it is never stale, only missing. Unlike functools.lru_cache, a value can be put in
by whoever made it (a move knows the position it wrote and the lines it rendered before any
request asks for them). This module knows nothing of what it keeps.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any


class Kept:
    """The latest `size` values by key (the least recently used go first); safe for threads.
    A value made twice by two threads at once is kept once; both are equal by construction."""

    def __init__(self, size: int):
        self.size = size
        self._values: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            value = self._values.get(key, self)
            if value is self:
                return default
            self._values.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any) -> Any:
        """Keep `value` under `key`; returns it."""
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            if len(self._values) > self.size:
                self._values.popitem(last=False)
        return value

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The value kept under `key`, or `make()`'s, kept."""
        value = self.get(key, self)
        return self.put(key, make()) if value is self else value

    def __len__(self) -> int:
        return len(self._values)
