"""What follows a move, told rather than called: the move path announces an event, and the
services that care about it listen (lila's `Bus`, in-process and small).

An event is published once, where it happens, and every listener runs at once, in the
publisher's transaction and in the order they subscribed: either all of what follows happens
or none does, as when the move path called each of them itself. Who listens to what is
written in one place, pbem/services/__init__.py, which runs whenever a service is first
imported (the web app, the scheduler, the command line, mail in, a test calling a service),
so no channel has to remember it.

Owns the events and the registry of listeners; imports nothing of the services, so that the
move path, which publishes, imports none of its listeners (ratings, tournaments, feeds, mail
beyond its own; tests/server/test_layers.py checks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

# --- the events ---------------------------------------------------------------------------------
# `session` is the publisher's: an ORM Session or the move path's Writer (pbem.ground.db), of
# which a listener uses `connection()` or passes it to the mail (pbem.services.mail); `game`
# and `seat` are an ORM object or the move path's plain row (pbem.ground.rows), whose changes
# the publisher writes.


@dataclass(frozen=True)
class GameFinished:
    """A game ended by its rules (its last move made): its status is finished."""

    session: Any
    game: Any
    now: datetime


@dataclass(frozen=True)
class TurnTimedOut:
    """The server played a seat's turn for it at its deadline: `lines`, what it played, in the
    seat's words."""

    session: Any
    game: Any
    seat: Any
    lines: list


@dataclass(frozen=True)
class UndoOvertaken:
    """A move was made while a request to take back a turn stood in the game (the move path
    cleared `game.undo_turn`)."""

    session: Any
    game: Any
    seats: list
    now: datetime


@dataclass(frozen=True)
class SeatHandedOver:
    """An organiser gave a seat to someone else (`new_name`: a person's name, or words for a
    computer player), told before the seat changes: `seat` still holds the one who played it
    (an ORM Seat)."""

    session: Any
    game: Any
    seat: Any
    new_name: Any
    now: datetime


# --- the registry -------------------------------------------------------------------------------

E = TypeVar("E")
_listeners: dict[type, list[Callable[[Any], None]]] = {}


def subscribe(kind: type[E], listener: Callable[[E], None]) -> None:
    """Call `listener` with every event of `kind` from now on (once, however often it is
    subscribed)."""
    listeners = _listeners.setdefault(kind, [])
    if listener not in listeners:
        listeners.append(listener)


def listeners(kind: type) -> list[Callable[[Any], None]]:
    """Who listens to `kind`, in the order they are called."""
    return list(_listeners.get(kind, ()))


def publish(event: object) -> None:
    """Tell every listener of the event's kind, in order, in the caller's transaction; an
    error in one goes up to the caller (whose transaction then changes nothing)."""
    for listener in _listeners.get(type(event), ()):
        listener(event)
