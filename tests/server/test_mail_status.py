"""`pbem mail-status` for monitoring: the latest errors, and an exit status that says whether
mail gets out (0), fails (3: failed, bounced, unknown, or waiting for a retry after an error)
or is stuck (4: queued past its time, or claimed by a sender that made no progress)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from server import make_app, new_game
from sqlmodel import select
from test_mail_delivery import free_port
from test_pbem_cli import pbem

from pbem.ground.db import utcnow, writing
from pbem.ground.models import FAILED, QUEUED, SENDING, SENT, UNKNOWN, OutboxMessage
from pbem.scheduler.outbox import deliver_all_due

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

FAILING, STUCK = 3, 4


def status(app, *args: str):
    return app.test_cli_runner().invoke(args=["mail-status", *args])


def change(app, **values) -> None:
    """Set `values` on every outbox row."""
    with app.app_context(), writing() as session:
        for row in session.exec(select(OutboxMessage)):
            for name, value in values.items():
                setattr(row, name, value)
            session.add(row)


def test_the_mail_server_down_is_a_failure_with_its_error(tmp_path):
    """It printed "queued 2" and exited 0 with Postfix down; now it says why and exits 3."""
    instance = tmp_path / "instance"
    port = free_port()  # nothing listens there
    app = make_app(instance, MAIL_BACKEND="smtp", SMTP_HOST="127.0.0.1", SMTP_PORT=port,
                   SMTP_SECURITY="none", MAIL_BOARD_PICTURE=False)
    new_game(app, 3, "down")
    assert deliver_all_due(app)["retry"] == 3
    done = pbem(instance, "mail-status", PBEM_MAIL_BACKEND="smtp",
                PBEM_SMTP_PORT=str(port))  # as an operator's monitoring runs it
    assert done.returncode == FAILING, done.stdout + done.stderr
    assert "queued 3, sending 0, sent 0, failed 0, unknown 0" in done.stdout
    assert "waiting to be tried again after an error 3" in done.stdout
    lines = [line for line in done.stdout.splitlines() if line.startswith("retrying #")]
    assert len(lines) == 3 and all(f"cannot reach the SMTP server 127.0.0.1:{port}" in line
                                   for line in lines)
    assert "/seat/" not in done.stdout and "/me/" not in done.stdout


def test_all_sent_is_zero(app):
    new_game(app, 3, "fine")
    deliver_all_due(app)
    result = status(app)
    assert result.exit_code == 0, result.output
    assert "queued 0, sending 0, sent 3, failed 0, unknown 0" in result.output


def test_mail_queued_past_its_time_is_stuck(app):
    """No scheduler running: the mail waits past its time."""
    new_game(app, 3, "stuck")
    change(app, next_attempt_at=utcnow() - timedelta(minutes=11))
    result = status(app)
    assert result.exit_code == STUCK, result.output
    assert "queued over 10 minutes past their time 3" in result.output
    assert result.output.count("is the scheduler running?") == 3
    assert status(app, "--late", "15").exit_code == 0  # eleven minutes is not late enough


def test_a_claim_without_progress_is_stuck(app):
    new_game(app, 3, "claimed")
    change(app, status=SENDING, claim="gone", claimed_at=utcnow() - timedelta(minutes=11))
    result = status(app)
    assert result.exit_code == STUCK, result.output
    assert "claimed without progress for over 10 minutes 3" in result.output


@pytest.mark.parametrize("state", [FAILED, UNKNOWN])
def test_failed_or_unknown_mail_counts_for_the_window_it_happened_in(app, state):
    new_game(app, 3, "failed")
    deliver_all_due(app)
    change(app, status=state, last_error="SMTPRecipientsRefused: 550 5.1.1 User unknown",
           failed_at=utcnow() - timedelta(hours=30))
    assert status(app).exit_code == 0  # 30 hours ago: outside the last 24
    result = status(app, "--since", "48")
    assert result.exit_code == FAILING, result.output
    assert f"{state} #1 to " in result.output and "550 5.1.1 User unknown" in result.output
    assert status(app, "--since", "0").exit_code == FAILING  # ever


def test_stuck_outweighs_failing(app):
    new_game(app, 3, "both")
    change(app, status=QUEUED, last_error="SMTPServerDisconnected: gone", attempts=1,
           next_attempt_at=utcnow() - timedelta(hours=1))
    assert status(app).exit_code == STUCK


def test_sent_mail_has_no_error_lines(app):
    new_game(app, 3, "quiet")
    deliver_all_due(app)
    change(app, status=SENT)
    output = status(app).output.splitlines()
    assert len(output) == 2, output  # the counts and the summary
