"""The move clock (pbem.ground.clock): deadlines that skip weekends and vacations, in any time zone.

Examples are written in local wall time, which is what players see; the properties check the
two functions against each other and against a slow count done a quarter of an hour at a time.
"""

from datetime import UTC, date, datetime, time, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.ground.clock import add_running_time, format_local, running_time_between, zone

BERLIN = ZoneInfo("Europe/Berlin")
HOUR, DAY = timedelta(hours=1), timedelta(days=1)


def local(zone_name, *fields):
    return datetime(*fields, tzinfo=ZoneInfo(zone_name))


def add_weekend(start, duration, tz, **kwargs):
    return add_running_time(start, duration, tz=tz, weekend_pause=True, **kwargs)


def wall(moment, zone_name):
    """The local wall time of `moment`, without its zone, for comparing with what players see."""
    return moment.astimezone(ZoneInfo(zone_name)).replace(tzinfo=None)


# No pause


@pytest.mark.parametrize("duration", [12 * HOUR, 14 * DAY, timedelta(0), timedelta(microseconds=1)])
@pytest.mark.parametrize("tz", ["UTC", "Europe/Berlin", "Asia/Kolkata"])
def test_without_pauses_the_clock_is_plain_addition(duration, tz):
    start = datetime(2026, 11, 20, 18, 0, tzinfo=BERLIN)  # a Friday evening
    end = add_running_time(start, duration, tz=tz)
    assert end == start + duration
    assert end.tzinfo is UTC
    assert running_time_between(start, end, tz=tz) == duration


def test_durations_are_elapsed_time_across_a_daylight_saving_change():
    start = local("Europe/Berlin", 2026, 3, 26, 10, 0)  # Thursday; clocks go forward on Sunday
    end = add_running_time(start, 3 * DAY, tz="Europe/Berlin")
    assert wall(end, "Europe/Berlin") == datetime(2026, 3, 29, 11, 0)  # 72 hours, not 3 dates


def test_end_before_start_has_no_running_time():
    start = datetime(2026, 5, 5, 12, tzinfo=UTC)
    assert running_time_between(start, start) == timedelta(0)
    assert running_time_between(start, start - HOUR) == timedelta(0)
    assert running_time_between(start, start - HOUR, weekend_pause=True) == timedelta(0)


# Weekend pause


def test_friday_evening_plus_twelve_hours_ends_monday_morning():
    start = local("Europe/Berlin", 2026, 11, 20, 18, 0)
    end = add_weekend(start, 12 * HOUR, "Europe/Berlin")
    assert wall(end, "Europe/Berlin") == datetime(2026, 11, 23, 6, 0)
    assert end == datetime(2026, 11, 23, 5, 0, tzinfo=UTC)
    assert running_time_between(start, end, tz="Europe/Berlin", weekend_pause=True) == 12 * HOUR


@pytest.mark.parametrize("start_fields", [(2026, 11, 21, 0, 0), (2026, 11, 21, 10, 30),
                                          (2026, 11, 22, 23, 59, 59, 999999)])
def test_a_weekend_start_begins_counting_at_monday_midnight(start_fields):
    start = local("Europe/Berlin", *start_fields)
    monday = local("Europe/Berlin", 2026, 11, 23, 0, 0)
    for duration in (timedelta(microseconds=1), HOUR, 12 * HOUR):
        assert add_weekend(start, duration, "Europe/Berlin") == monday + duration
    assert running_time_between(start, monday, tz="Europe/Berlin", weekend_pause=True) == (
        timedelta(0))


def test_a_zero_duration_is_its_start_even_when_the_clock_is_stopped():
    """Forced by the property add(s, between(s, e)) <= e for an e later in the same weekend."""
    start = local("Europe/Berlin", 2026, 11, 21, 10, 0)
    assert add_weekend(start, timedelta(0), "Europe/Berlin") == start


def test_counting_stops_at_saturday_midnight_exactly():
    start = local("Europe/Berlin", 2026, 11, 20, 18, 0)
    end = add_weekend(start, 6 * HOUR, "Europe/Berlin")
    assert wall(end, "Europe/Berlin") == datetime(2026, 11, 21, 0, 0)  # the earliest such moment


def test_three_days_from_thursday_morning_end_tuesday_morning():
    start = local("Europe/Berlin", 2026, 11, 19, 10, 0)
    end = add_weekend(start, 3 * DAY, "Europe/Berlin")
    assert wall(end, "Europe/Berlin") == datetime(2026, 11, 24, 10, 0)


def test_fourteen_days_skip_two_weekends():
    start = local("Europe/Berlin", 2026, 11, 19, 10, 0)  # Thursday
    end = add_weekend(start, 14 * DAY, "Europe/Berlin")
    assert wall(end, "Europe/Berlin") == datetime(2026, 12, 9, 10, 0)  # Wednesday, 20 dates on


def test_the_weekend_is_in_the_games_zone_not_in_utc():
    start = local("Asia/Kolkata", 2026, 11, 20, 23, 0)  # Friday 17:30 UTC
    end = add_weekend(start, 2 * HOUR, "Asia/Kolkata")
    assert wall(end, "Asia/Kolkata") == datetime(2026, 11, 23, 1, 0)
    assert add_weekend(start, 2 * HOUR, "UTC") == start + 2 * HOUR


def test_the_weekend_is_saturday_and_sunday_even_where_it_is_friday_and_saturday():
    start = local("Asia/Riyadh", 2026, 11, 20, 10, 0)  # Friday
    end = add_weekend(start, DAY, "Asia/Riyadh")
    assert wall(end, "Asia/Riyadh") == datetime(2026, 11, 23, 10, 0)


# (zone, the Friday before a change on Sunday, the hours the clocks move on that Sunday)
DST_WEEKENDS = [
    ("Europe/Berlin", date(2026, 3, 27), 1),  # last Sunday of March: 02:00 -> 03:00
    ("Europe/Berlin", date(2026, 10, 23), -1),  # last Sunday of October: 03:00 -> 02:00
    ("America/New_York", date(2026, 3, 6), 1),  # second Sunday of March
    ("America/New_York", date(2026, 10, 30), -1),  # first Sunday of November
    ("Australia/Sydney", date(2026, 4, 3), -1),  # first Sunday of April: clocks go back
    ("Australia/Sydney", date(2026, 10, 2), 1),  # first Sunday of October: clocks go forward
]


def at(tz, day, hour=0):
    return datetime.combine(day, time(hour), tzinfo=ZoneInfo(tz))


@pytest.mark.parametrize("tz, friday, forward", DST_WEEKENDS)
def test_weekends_with_a_daylight_saving_change_keep_local_wall_times(tz, friday, forward):
    thursday, monday, tuesday = friday - DAY, friday + 3 * DAY, friday + 4 * DAY
    end = add_weekend(at(tz, friday, 18), 12 * HOUR, tz)
    assert wall(end, tz) == datetime.combine(monday, time(6))
    end = add_weekend(at(tz, thursday, 10), 3 * DAY, tz)
    assert wall(end, tz) == datetime.combine(tuesday, time(10))
    # Friday and Monday run, 24 hours each; the weekend of 47 or 49 hours does not.
    assert running_time_between(at(tz, friday), at(tz, tuesday), tz=tz, weekend_pause=True) == (
        2 * DAY)
    assert at(tz, tuesday).astimezone(UTC) - at(tz, friday).astimezone(UTC) == 4 * DAY - forward * HOUR
    # Without the weekend pause, 72 hours from Thursday 10:00 show another hour on Sunday.
    end = add_running_time(at(tz, thursday, 10), 3 * DAY, tz=tz)
    assert wall(end, tz) == datetime.combine(friday + 2 * DAY, time(10 + forward))


def test_a_weekday_with_23_hours_is_counted_as_23_hours():
    # Egypt moves its clocks from Friday 00:00 to 01:00 on the last Friday of April.
    start = local("Africa/Cairo", 2026, 4, 23, 10, 0)  # Thursday
    end = add_weekend(start, 3 * DAY, "Africa/Cairo")
    assert wall(end, "Africa/Cairo") == datetime(2026, 4, 28, 11, 0)  # Tuesday


def test_a_saturday_whose_midnight_is_skipped_begins_at_the_change():
    # Iran moved its clocks from Saturday 21 March 2020 00:00 to 01:00.
    saturday_begins = datetime(2020, 3, 20, 20, 30, tzinfo=UTC)
    assert wall(saturday_begins, "Asia/Tehran") == datetime(2020, 3, 21, 1, 0)
    end = add_weekend(saturday_begins - HOUR, 90 * timedelta(minutes=1), "Asia/Tehran")
    assert wall(end, "Asia/Tehran") == datetime(2020, 3, 23, 0, 30)
    assert add_weekend(saturday_begins - HOUR, HOUR, "Asia/Tehran") == saturday_begins


def test_a_sunday_with_a_repeated_last_hour_is_stopped_throughout():
    # Iran moved its clocks from Monday 21 September 2020 00:00 back to Sunday 23:00.
    start = local("Asia/Tehran", 2020, 9, 18, 23, 0)  # Friday
    end = add_weekend(start, 2 * HOUR, "Asia/Tehran")
    assert wall(end, "Asia/Tehran") == datetime(2020, 9, 21, 1, 0)
    assert end - start == 2 * HOUR + 2 * DAY + HOUR


# Pauses (vacations)


def test_a_two_day_pause_inside_a_three_day_deadline_pushes_it_two_days():
    start = datetime(2026, 11, 9, 12, 0, tzinfo=UTC)  # Monday
    vacation = (datetime(2026, 11, 10, 0, 0, tzinfo=UTC), datetime(2026, 11, 12, 0, 0, tzinfo=UTC))
    end = add_running_time(start, 3 * DAY, pauses=[vacation])
    assert end == start + 5 * DAY
    assert running_time_between(start, end, pauses=[vacation]) == 3 * DAY


def test_a_pause_overlapping_the_weekend_is_counted_once():
    start = local("Europe/Berlin", 2026, 11, 19, 10, 0)  # Thursday
    vacation = (local("Europe/Berlin", 2026, 11, 20, 0, 0), local("Europe/Berlin", 2026, 11, 22, 12))
    end = add_weekend(start, 3 * DAY, "Europe/Berlin", pauses=[vacation])
    # 14 hours on Thursday, then nothing until Monday 00:00, then 58 hours.
    assert wall(end, "Europe/Berlin") == datetime(2026, 11, 25, 10, 0)
    # A pause from Saturday into Monday stops only Monday's part more.
    vacation = (local("Europe/Berlin", 2026, 11, 21, 12), local("Europe/Berlin", 2026, 11, 23, 6))
    end = add_weekend(start, 3 * DAY, "Europe/Berlin", pauses=[vacation])
    assert wall(end, "Europe/Berlin") == datetime(2026, 11, 24, 16, 0)


def test_overlapping_touching_and_inverted_pauses():
    start = datetime(2026, 6, 1, 0, 0, tzinfo=UTC)
    pauses = [
        (start + 2 * DAY, start + 4 * DAY),
        (start + 3 * DAY, start + 5 * DAY),  # overlaps the first: one pause of 3 days
        (start + 5 * DAY, start + 6 * DAY),  # touches it: 4 days in all
        (start + DAY, start + DAY),  # empty
        (start + 9 * DAY, start + 8 * DAY),  # inverted
    ]
    assert add_running_time(start, 3 * DAY, pauses=pauses) == start + 7 * DAY
    assert running_time_between(start, start + 10 * DAY, pauses=pauses) == 6 * DAY


def test_a_start_inside_a_pause_begins_counting_when_it_ends():
    start = datetime(2026, 6, 2, 12, 0, tzinfo=UTC)
    vacation = (datetime(2026, 6, 2, 0, 0, tzinfo=UTC), datetime(2026, 6, 3, 0, 0, tzinfo=UTC))
    assert add_running_time(start, DAY, pauses=[vacation]) == datetime(2026, 6, 4, tzinfo=UTC)
    assert running_time_between(start, vacation[1], pauses=[vacation]) == timedelta(0)


def test_pauses_may_be_any_iterable_in_any_zone():
    start = datetime(2026, 6, 1, 0, 0, tzinfo=UTC)
    pauses = ((local(z, 2026, 6, 2), local(z, 2026, 6, 2) + HOUR) for z in ("Asia/Kolkata",))
    assert add_running_time(start, 2 * DAY, pauses=pauses) == start + 2 * DAY + HOUR


# Properties

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Sydney", "Asia/Kolkata"]
moments = st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2027, 12, 31, 23, 59),
                       timezones=st.sampled_from([UTC] + [ZoneInfo(z) for z in ZONES]))


@st.composite
def clocks(draw):
    """A start and the clock's settings, with pauses near the start (some empty or inverted)."""
    start = draw(moments)
    pauses = []
    for _ in range(draw(st.integers(0, 4))):
        begins = start.astimezone(UTC) + draw(st.timedeltas(-5 * DAY, 20 * DAY))
        pauses.append((begins, begins + draw(st.timedeltas(-DAY, 8 * DAY))))
    config = {"tz": draw(st.sampled_from(ZONES)), "weekend_pause": draw(st.booleans()),
              "pauses": pauses}
    return start, config


def stopped(moment, tz, weekend_pause, pauses):
    """Whether the clock is stopped at `moment`, from the local calendar date and the pauses."""
    if weekend_pause and moment.astimezone(ZoneInfo(tz)).weekday() >= 5:
        return True
    return any(begins <= moment < ends for begins, ends in pauses)


def counted(start, end, **config):
    """The running time in [start, end), counted piece by piece. Every boundary of a weekend in
    these zones falls on a quarter-hour in UTC, and every pause boundary is a cut."""
    if end <= start:
        return timedelta(0)
    quarter = timedelta(minutes=15)
    first = start.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    cuts = {start, end}
    cuts.update(first + k * quarter for k in range(int((end - first) / quarter) + 1))
    cuts.update(t for pause in config["pauses"] for t in pause)
    cuts = sorted(t for t in cuts if start <= t <= end)
    return sum((b - a for a, b in pairwise(cuts) if not stopped(a, **config)),
               timedelta(0))


@settings(max_examples=150, deadline=None)
@given(clocks(), st.timedeltas(timedelta(0), 14 * DAY))
def test_the_running_time_until_a_deadline_is_its_duration(clock, duration):
    start, config = clock
    end = add_running_time(start, duration, **config)
    assert end.tzinfo is UTC
    assert end >= start.astimezone(UTC) + duration
    assert running_time_between(start, end, **config) == duration
    if duration:  # the earliest such moment: the clock ran just before it
        assert not stopped(end - timedelta(microseconds=1), **config)


@settings(max_examples=150, deadline=None)
@given(clocks(), st.timedeltas(-DAY, 20 * DAY))
def test_a_deadline_for_the_running_time_up_to_a_moment_is_not_after_it(clock, span):
    start, config = clock
    end = start.astimezone(UTC) + span
    running = running_time_between(start, end, **config)
    assert timedelta(0) <= running <= max(span, timedelta(0))
    deadline = add_running_time(start, running, **config)
    assert deadline <= max(start, end)  # never before the start, so only if the end is later
    assert running_time_between(start, deadline, **config) == running


@settings(max_examples=40, deadline=None)
@given(clocks(), st.timedeltas(-DAY, 16 * DAY))
def test_the_running_time_matches_a_count_piece_by_piece(clock, span):
    start, config = clock
    end = start.astimezone(UTC) + span
    assert running_time_between(start, end, **config) == counted(start, end, **config)


# Formatting


def test_format_local():
    moment = datetime(2026, 11, 24, 13, 30, 59, tzinfo=UTC)
    assert format_local(moment, "Europe/Berlin") == "Tuesday 24 November 2026, 14:30 (Europe/Berlin)"
    assert format_local(moment, None) == "Tuesday 24 November 2026, 13:30 UTC"
    assert format_local(moment, "UTC") == "Tuesday 24 November 2026, 13:30 UTC"
    assert format_local(moment.astimezone(BERLIN), None) == "Tuesday 24 November 2026, 13:30 UTC"
    assert format_local(moment, "Asia/Kolkata") == "Tuesday 24 November 2026, 19:00 (Asia/Kolkata)"
    assert format_local(datetime(2026, 3, 1, 0, 5, tzinfo=UTC), "America/New_York") == (
        "Saturday 28 February 2026, 19:05 (America/New_York)")


# Bad input

BAD_ZONES = ["Mars/Olympus", "", "../../etc/passwd", "x" * 100, "/etc/localtime", "Europe",
             "zone.tab", "Europe/Berlin ", "Europe/../Europe/Berlin", "a\0b"]


def test_zone_finds_iana_names():
    assert zone("Europe/Berlin") == BERLIN
    assert zone("UTC").key == "UTC"


@pytest.mark.parametrize("name", BAD_ZONES)
def test_unknown_zones_are_refused_with_a_hint(name):
    message = f"unknown time zone {name!r}; use a name like Europe/Berlin or UTC"
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for call in (lambda: zone(name),
                 lambda: add_running_time(start, DAY, tz=name),
                 lambda: add_running_time(start, timedelta(0), tz=name, weekend_pause=True),
                 lambda: running_time_between(start, start, tz=name),
                 lambda: format_local(start, name)):
        with pytest.raises(ValueError) as refused:
            call()
        assert str(refused.value) == message


def test_a_zone_name_must_be_a_string():
    with pytest.raises(TypeError):
        zone(None)


def test_naive_datetimes_are_refused():
    naive, aware = datetime(2026, 1, 1, 12), datetime(2026, 1, 1, 12, tzinfo=UTC)
    calls = [
        ("start", lambda: add_running_time(naive, DAY)),
        ("start", lambda: running_time_between(naive, aware)),
        ("end", lambda: running_time_between(aware, naive)),
        ("a pause's start", lambda: add_running_time(aware, DAY, pauses=[(naive, aware)])),
        ("a pause's end", lambda: running_time_between(aware, aware, pauses=[(aware, naive)])),
        ("moment", lambda: format_local(naive, "UTC")),
    ]
    for what, call in calls:
        with pytest.raises(ValueError, match=f"^{what} must be timezone-aware"):
            call()


def test_negative_durations_are_refused():
    with pytest.raises(ValueError, match="duration must not be negative"):
        add_running_time(datetime(2026, 1, 1, tzinfo=UTC), -timedelta(microseconds=1))


def test_a_duration_must_be_a_timedelta():
    with pytest.raises(TypeError):
        add_running_time(datetime(2026, 1, 1, tzinfo=UTC), 3600)
