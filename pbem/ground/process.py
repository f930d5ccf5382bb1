"""What every pbem process does once it has started and warmed up, before it serves
(`started`): the web workers (wsgi.py), `pbem serve`, the scheduler and its helper senders.
Imports nothing of pbem."""

from __future__ import annotations

import gc

YOUNG_OBJECTS = 10_000


def started() -> None:
    """Call once a server, scheduler or helper sender process has made its app and warmed up,
    before it serves: what start-up made (modules, templates, the schema, the boards) is left
    out of the garbage collector's full passes from then on (gc.freeze), which otherwise go
    over all of it again every few hundred requests, 60-80 ms in the middle of one. Garbage
    made until now is collected first.

    The collector's youngest generation is also collected less often (every 10,000 new
    objects instead of 700): a request makes a few thousand (a long game's more, its position
    being larger), so with Python's default a move late in a game paid for more collections
    than an early one, and the collections cost more than the little garbage they freed."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_OBJECTS, *gc.get_threshold()[1:])
