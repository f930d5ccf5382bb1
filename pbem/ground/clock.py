"""The move clock of a correspondence game: when a deadline falls, and how much time has run.

This module owns the arithmetic of a clock that runs only at some times: it stops at the
weekend (if the game says so) and during pauses such as a player's vacation. It also owns
checking time zone names and writing a moment for people to read, in their own zone.

It does not own reading the current time, storing deadlines, sending reminders, or deciding what
happens when a deadline passes: those belong to the callers. Everything here is a pure function
of its arguments; there is no Flask, no database and no global clock.

Rules:

- Every datetime given must be timezone-aware (a naive one raises ValueError); every datetime
  returned is in UTC (`datetime.UTC`).
- Durations are elapsed time: 3 days is 72 hours of running clock, even when a daylight saving
  change makes a local day 23 or 25 hours long.
- The weekend is always Saturday and Sunday, in every zone: from the moment the local date
  becomes Saturday to the moment it becomes Monday (local midnight; if a daylight saving change
  skips midnight, the day begins when its first moment exists). Zones whose weekend is Friday and
  Saturday are not treated differently.
- A pause is a half-open interval [start, end). Pauses may overlap each other and the weekend;
  time stopped for several reasons is stopped once. Empty or inverted pauses are ignored.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["Pause", "add_running_time", "format_local", "running_time_between", "zone"]

Pause = tuple[datetime, datetime]
"""An interval [start, end) during which the clock does not run, such as a player's vacation."""

_ZONE_NAME = re.compile(r"[A-Za-z0-9_+\-]+(?:/[A-Za-z0-9_+\-]+)*")
_ZONE_NAME_MAX = 64
_ONE_MICROSECOND = timedelta(microseconds=1)
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")


def zone(name: str) -> ZoneInfo:
    """The IANA time zone called `name`; ValueError if there is none by that name."""
    if not isinstance(name, str):
        raise TypeError(f"a time zone name must be a string, not {type(name).__name__}")
    problem = ValueError(f"unknown time zone {name!r}; use a name like Europe/Berlin or UTC")
    if len(name) > _ZONE_NAME_MAX or not _ZONE_NAME.fullmatch(name):
        raise problem
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        # ValueError: a path-like key or a file in the zone directory that is not a zone.
        raise problem from None


def add_running_time(start: datetime, duration: timedelta, *, tz: str = "UTC",
                     weekend_pause: bool = False, pauses: Iterable[Pause] = ()) -> datetime:
    """The earliest moment at which `duration` of running clock time has passed since `start`.

    If `start` falls while the clock is stopped, counting begins when it runs again. A zero
    duration gives `start` itself (in UTC): no time has to pass.
    """
    cursor = check_utc(start, "start")
    if not isinstance(duration, timedelta):
        raise TypeError(f"duration must be a timedelta, not {type(duration).__name__}")
    if duration < timedelta(0):
        raise ValueError(f"duration must not be negative, got {duration}")
    if duration > datetime.max.replace(tzinfo=UTC) - cursor:  # the answer is never earlier
        raise OverflowError(f"{duration} after {cursor} is beyond the year 9999")
    remaining = duration
    stops = _stops(cursor, zone(tz), weekend_pause, pauses)
    if not remaining:
        return cursor
    for stop_start, stop_end in stops:
        if stop_start > cursor:
            available = stop_start - cursor
            if remaining <= available:
                return cursor + remaining
            remaining -= available
        cursor = max(cursor, stop_end)
    return cursor + remaining


def running_time_between(start: datetime, end: datetime, *, tz: str = "UTC",
                         weekend_pause: bool = False,
                         pauses: Iterable[Pause] = ()) -> timedelta:
    """How much running clock time lies in [start, end); zero if `end` is not after `start`."""
    start, end = check_utc(start, "start"), check_utc(end, "end")
    stops = _stops(start, zone(tz), weekend_pause, pauses)
    if end <= start:
        return timedelta(0)
    total = end - start
    for stop_start, stop_end in stops:
        if stop_start >= end:
            break
        total -= min(stop_end, end) - max(stop_start, start)
    return total


def format_local(moment: datetime, tz: str | None) -> str:
    """`moment` for people: "Tuesday 24 November 2026, 14:30 (Europe/Berlin)".

    With no zone or "UTC": "Tuesday 24 November 2026, 13:30 UTC". Seconds are dropped, not
    rounded. English names whatever the process locale.
    """
    moment = check_utc(moment, "moment")
    if tz is None or tz == "UTC":
        local, suffix = moment, "UTC"
    else:
        local, suffix = moment.astimezone(zone(tz)), f"({tz})"
    return (f"{_DAYS[local.weekday()]} {local.day} {_MONTHS[local.month - 1]} {local.year}, "
            f"{local.hour:02d}:{local.minute:02d} {suffix}")


def check_utc(moment: datetime, what: str) -> datetime:
    """`moment` in UTC; TypeError or ValueError (naming `what`) unless it is an aware datetime."""
    if not isinstance(moment, datetime):
        raise TypeError(f"{what} must be a datetime, not {type(moment).__name__}")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{what} must be timezone-aware, got the naive {moment.isoformat()}")
    return moment.astimezone(UTC)


def _stops(after: datetime, tz: ZoneInfo, weekend_pause: bool,
           pauses: Iterable[Pause]) -> Iterator[Pause]:
    """The periods when the clock is stopped and which end after `after`, in UTC, in order,
    merged so that none overlaps or touches the next.

    Arguments are checked before the first period is asked for.
    """
    intervals = []
    for pause in pauses:
        pause_start, pause_end = pause
        pause_start = check_utc(pause_start, "a pause's start")
        pause_end = check_utc(pause_end, "a pause's end")
        if pause_start < pause_end and pause_end > after:
            intervals.append((pause_start, pause_end))
    intervals.sort()
    sources: list[Iterable[Pause]] = [intervals]
    if weekend_pause:
        sources.append(_weekends(after, tz))
    return _merged(after, heapq.merge(*sources))


def _merged(after: datetime, intervals: Iterator[Pause]) -> Iterator[Pause]:
    current: list[datetime] | None = None
    for start, end in intervals:
        if end <= after:
            continue
        if current is None:
            current = [start, end]
        elif start <= current[1]:
            current[1] = max(current[1], end)
        else:
            yield current[0], current[1]
            current = [start, end]
    if current is not None:
        yield current[0], current[1]


def _weekends(after: datetime, tz: ZoneInfo) -> Iterator[Pause]:
    """Every weekend in `tz` from the one in or before the local week of `after`, in UTC."""
    today = after.astimezone(tz).date()
    saturday = today - timedelta(days=(today.weekday() - 5) % 7)
    while True:
        try:
            weekend = _day_start(saturday, tz), _day_start(saturday + timedelta(days=2), tz)
        except OverflowError:  # the end of the calendar, year 9999
            return
        yield weekend
        try:
            saturday += timedelta(days=7)
        except OverflowError:
            return


def _day_start(day: date, tz: ZoneInfo) -> datetime:
    """The first moment (in UTC) at which the local date in `tz` is `day`.

    Usually local midnight. Where a daylight saving change skips midnight, the day begins at the
    change. Where midnight happens twice, the day begins at the first one.
    """
    midnight = datetime.combine(day, time(), tzinfo=tz)
    # fold=0 takes the earlier of two midnights, and for a skipped one the offset before the
    # change, which gives a moment at or after the change.
    latest = midnight.astimezone(UTC)
    if latest.astimezone(tz).replace(tzinfo=None) == midnight.replace(tzinfo=None):
        return latest
    # Midnight does not exist: the day begins at the change, in (earliest, latest]. Find it by
    # bisection to the microsecond; this happens once or twice a year in a few zones.
    earliest = midnight.replace(fold=1).astimezone(UTC)
    while latest - earliest > _ONE_MICROSECOND:
        middle = earliest + (latest - earliest) / 2
        if middle.astimezone(tz).date() >= day:
            latest = middle
        else:
            earliest = middle
    return latest
