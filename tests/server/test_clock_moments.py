"""A turn's clock at the awkward moments of tests/clock_runs.py: month ends, the new year, 29
February, the daylight-saving nights of Europe and America, midnight UTC, and machine time zones
far from UTC (issue 47).

Each test moves this process's clock to its moment (time-machine) and the machine's time zone
to the moment's, plays the clock of one turn through (the invitation's deadline, the reminders,
the timeout, the next deadline, the calendar) and compares every date with one worked out here
from zoneinfo. tests/clock_runs.py runs whole test files at the same moments, with the clock of
every process moved.
"""

import os
import re
import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import time_machine
from clock_runs import MOMENTS
from server import field, game_state, module_app, new_game, text_of

from pbem.services.deadlines import TimeControl

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

DEADLINE_HOURS, REMINDERS = 72, (24, 2)
CALENDAR_LINK = re.compile(r"http://localhost/feeds/([A-Za-z0-9_-]{32})/deadlines\.ics")
GAMES_LINK = re.compile(r"https?://[^\s<>\"']+/me/([A-Za-z0-9_-]{32})")


@pytest.fixture(scope="module")
def shared_app(tmp_path_factory, database):
    """One app for the module: each moment plays a game of its own in it."""
    return module_app(tmp_path_factory, "clock-moments")


@contextmanager
def machine_zone(name: str):
    """The process's local time zone set to `name` (TZ), as a machine far from UTC has it."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = name
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TZ")
        else:
            os.environ["TZ"] = before
        time.tzset()


def in_words(moment: datetime, zone: str) -> str:
    """How a player in `zone` reads `moment`: "Sunday 31 October 2027, 03:50 (Europe/Berlin)"."""
    local = moment.astimezone(ZoneInfo(zone))
    suffix = "UTC" if zone == "UTC" else f"({zone})"
    return f"{local:%A} {local.day} {local:%B} {local.year}, {local:%H:%M} {suffix}"


@pytest.fixture(scope="module")
def shared_mailbox(shared_app):
    """The module's mail, each message parsed once."""
    from server import Mailbox

    return Mailbox(shared_app)


def _mails(mailbox, address: str, subject: str, game_id: int) -> list:
    return [m for m in mailbox.to(address)
            if subject in str(m["Subject"]) and f"#{game_id}" in str(m["Subject"])]


@pytest.mark.parametrize("name", list(MOMENTS))
def test_a_turns_clock_at_an_awkward_moment(shared_app, shared_mailbox, name):
    """Deadline, reminders, timeout, the next deadline and the calendar, in the game's zone."""
    from icalendar import Calendar

    from pbem.scheduler.jobs import handle_due_timers

    app, client = shared_app, shared_app.test_client()
    at, zone = MOMENTS[name]
    start = datetime.fromisoformat(at).replace(tzinfo=UTC)
    # Each moment's players are its own: the calendar lists only this game.
    with machine_zone(zone), time_machine.travel(start, tick=False) as traveller:
        created, _ = new_game(app, 3, f"clock-{name}", start=0, title=name,
                                   time=TimeControl(DEADLINE_HOURS, REMINDERS, False, zone))
        game_id = created.game_id
        people = [f"p{seat}@example.org" for seat in range(3)]
        game, state = game_state(app, game_id)
        deadline = start + timedelta(hours=DEADLINE_HOURS)  # elapsed hours, whatever DST does
        assert game.deadline_at == deadline
        (invited,) = _mails(shared_mailbox, people[0], "you start", game_id)
        assert in_words(deadline, zone) in text_of(invited)

        for hours in REMINDERS:
            due = deadline - timedelta(hours=hours)
            traveller.move_to(due - timedelta(seconds=1))
            with app.app_context():
                handle_due_timers(datetime.now(UTC))
            before = _mails(shared_mailbox, people[0], "Reminder", game_id)
            traveller.move_to(due)
            with app.app_context():
                handle_due_timers(datetime.now(UTC))
            after = _mails(shared_mailbox, people[0], "Reminder", game_id)
            assert len(after) == len(before) + 1, f"one reminder {hours} h before the deadline"
            assert in_words(deadline, zone) in text_of(after[-1])

        traveller.move_to(deadline)
        with app.app_context():
            handle_due_timers(datetime.now(UTC))
        game, state = game_state(app, game_id)
        assert game.turn > 1 and state.current != 0, "the timeout played seat 0's turn"
        following = deadline + timedelta(hours=DEADLINE_HOURS)
        assert game.deadline_at == following
        mover = people[state.current]
        (turn_mail,) = _mails(shared_mailbox, mover, "Your turn", game_id)
        assert in_words(following, zone) in text_of(turn_mail)

        games_token = GAMES_LINK.findall(text_of(turn_mail))[0]
        page = client.get(f"/me/{games_token}").get_data(as_text=True)
        assert client.post(f"/me/{games_token}/calendar",
                           data={"csrf_token": field(page, "csrf_token")}).status_code == 303
        (key,) = CALENDAR_LINK.findall(client.get(f"/me/{games_token}").get_data(as_text=True))
        calendar = Calendar.from_ical(client.get(f"/feeds/{key}/deadlines.ics").data)
        (event,) = [e for e in calendar.walk("VEVENT") if f"#{game_id}" in str(e["summary"])]
        assert event.decoded("dtstart") == following.replace(microsecond=0)
