"""The `pbem` commands that run as processes: the web server with its sender thread
(`serve`), the scheduler with its helper senders (`scheduler`, and `run-jobs` once), and the
SMTP listener for replies (`mail-listener`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from typing import cast

import click
from flask import current_app
from flask.cli import with_appcontext

from ..ground.config import check_settings, links_here, served_url
from ..ground.process import forget_serving, record_serving, started
from .common import need_schema, one_line_errors, site_base


@click.command("serve")
@click.option("--host", help="Address to listen on (default: SERVE_HOST).")
@click.option("--port", type=click.IntRange(1, 65535), help="Port (default: SERVE_PORT).")
@click.option("--scheduler/--no-scheduler", default=True, show_default=True,
              help="Also start `pbem scheduler` in a process of its own.")
@one_line_errors
@with_appcontext
def serve_command(host, port, scheduler):
    """Run the web server with a mail sender beside it, and the scheduler in a process of its
    own (single machine; see README for more)."""
    from werkzeug.serving import make_server

    from ..scheduler.outbox import SenderThread, request_stop
    from ..web.mailbox import describe_access, is_enabled
    from .strict_http import StrictRequestHandler

    need_schema()
    app = current_app._get_current_object()
    check_settings(app, "serve")
    host = host or app.config["SERVE_HOST"]
    port = port or app.config["SERVE_PORT"]
    if app.config["SERVE_TRUSTED_PROXIES"] and not is_loopback(host):
        raise click.ClickException(
            f"[serve] trusted_proxies is {app.config['SERVE_TRUSTED_PROXIES']}, so the server "
            "believes the client's address in X-Forwarded-For, but it would listen on "
            f"{host}, where clients can reach it without the proxy and send that header "
            "themselves (and so escape every limit per address). Listen on this machine "
            "only ([serve] host = \"127.0.0.1\", with the proxy on this machine), or set "
            "[serve] trusted_proxies = 0 when there is no proxy.")
    # No base URL of another server (or `demo --port` chose this one): links lead here.
    ours = links_here(app.config) or app.config["BASE_URL"].rstrip("/") == served_url(host, port)
    if ours:
        app.config["BASE_URL"] = served_url(host, port)
    # The address is taken before anything says the server runs or starts beside it.
    try:
        server = make_server(host, port, app, threaded=True,
                             request_handler=StrictRequestHandler)
    except OSError as exc:
        raise click.ClickException(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}. Another program (another "
            "pbem serve?) may be using the port: stop it, or choose another with --port or "
            "[serve] port.") from None
    if ours:  # the commands of this instance (create-admin, mail-listener, ...) link here too
        record_serving(app.instance_path, app.config["BASE_URL"])
    sender = SenderThread(app)
    app.extensions["pbem_sender"] = sender
    sender.start()
    click.echo(f"Serving on {served_url(host, port)}/  (stop with Ctrl-C)")
    if is_enabled(app):
        click.echo(f"Mailbox: {site_base()}/mailbox/ ({describe_access(app)})")
    # A plain `kill` must stop the scheduler beside us too: turn SIGTERM into a clean exit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    child = lifeline = None
    if scheduler:
        # The child watches the read end of this pipe: when this process ends, however it
        # ends (even by SIGKILL), the pipe closes and the scheduler stops.
        watched, lifeline = os.pipe()
        # Its mails' links lead where this server listens, whatever its settings say.
        child = subprocess.Popen([sys.executable, "-m", "pbem", "scheduler", "--parent-pipe",
                                  str(watched)], pass_fds=(watched,),
                                 env={**os.environ, "PBEM_BASE_URL": app.config["BASE_URL"]})
        os.close(watched)
        click.echo(f"Scheduler running beside it (process {child.pid}).")
    started()
    try:
        server.serve_forever()
    finally:
        forget_serving(app.instance_path)
        server.server_close()
        request_stop(app)
        sender.wake()
        if child is not None:
            child.terminate()
            child.wait(60)
            os.close(lifeline)
        sender.join(60)


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is this machine's loopback (127.0.0.0/8, ::1)."""
    import ipaddress
    import socket

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        # an IPv4 or IPv6 address (typeshed allows an int for other families)
        found = {cast(str, info[4][0]) for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(found) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback
                               for a in found)


def _die_with_parent(app, pipe: int) -> None:
    """Stop as on SIGTERM when the process that started this one ends: at once by the
    kernel's parent-death signal on Linux, and everywhere when `pipe`, whose other end only
    the parent holds, reaches its end."""
    from ..scheduler.outbox import request_stop
    from ..scheduler.senders import sigterm_when_parent_ends

    sigterm_when_parent_ends()

    def watch():
        try:
            while os.read(pipe, 1):
                pass
        except OSError:
            pass
        request_stop(app)

    threading.Thread(target=watch, name="pbem-parent-watch", daemon=True).start()


def _stop_on_signals(app) -> None:
    """SIGTERM and Ctrl-C ask the work in hand to finish its timer or mail and give the rest
    of its claims back (instead of leaving them claimed, a turn half played). The handler only
    sets a flag: it may run at any moment in the main thread, so it takes no lock there."""
    from ..scheduler.outbox import request_stop

    handler = lambda *_: request_stop(app)
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


@click.command("scheduler")
@click.option("--parent-pipe", type=int, hidden=True,
              help="A pipe whose end means the parent (`pbem serve`) has gone: stop then.")
@one_line_errors
@with_appcontext
def scheduler_command(parent_pipe):
    """Run the scheduler: every SCHEDULER_TICK_SECONDS, reminders, timeouts and mail. SIGTERM
    (or Ctrl-C) finishes the timer and mail in hand and gives the rest back, then stops."""
    from apscheduler.schedulers.background import BackgroundScheduler

    from ..ground.db import utcnow
    from ..scheduler.outbox import stop_event
    from ..scheduler.senders import HelperPool, warm_up

    need_schema()
    app = current_app._get_current_object()
    check_settings(app, "scheduler")
    stop = stop_event(app)
    _stop_on_signals(app)
    if parent_pipe is not None:
        _die_with_parent(app, parent_pipe)
    tick = app.config["SCHEDULER_TICK_SECONDS"]
    # The helper senders start now, from this (main) thread, and warm up beside this process:
    # the first run, and any backlog of mail later, finds them ready (pbem.scheduler.senders).
    pool = HelperPool(app)
    pool.start()
    warm_up(app)
    started()
    if not pool.wait_ready(HELPERS_READY_SECONDS):
        app.logger.warning("the helper senders did not say they were ready within %d s; the "
                           "scheduler runs on (a helper that has ended is started again at "
                           "the next backlog)", HELPERS_READY_SECONDS)
    scheduler = BackgroundScheduler(timezone="UTC")
    scheduler.add_job(_tick, "interval", seconds=tick, args=[app, pool], id="pbem-jobs",
                      max_instances=1, coalesce=True, next_run_time=utcnow())
    # Chat and push notices beside the run, every tick: not behind a backlog of mail, which a
    # run delivers until none is due (the run delivers notices too: `pbem run-jobs`).
    scheduler.add_job(_notices_tick, "interval", seconds=tick, args=[app], id="pbem-notices",
                      max_instances=1, coalesce=True, next_run_time=utcnow())
    scheduler.start()
    app.logger.info("Scheduler: running the job every %s s (stop with Ctrl-C)", tick)
    try:
        while not stop.is_set():
            time.sleep(0.2)
        scheduler.shutdown(wait=True)  # the run in hand finishes its item, gives back the rest
    finally:
        pool.close()
    app.logger.info("Scheduler stopped.")


HELPERS_READY_SECONDS = 60  # how long a starting scheduler waits for its helper senders


def _tick(app, pool=None) -> None:
    from sqlalchemy.exc import InterfaceError, OperationalError

    from ..scheduler.jobs import run_jobs

    try:
        run_jobs(app, pool=pool)
    except (OperationalError, InterfaceError) as exc:
        # The database down or unreachable: one line a tick, not a traceback, until it is back.
        reason = " ".join(str(exc.orig).split())
        app.logger.error("the scheduler job failed: the database failed (%s); tried again in "
                         "%s s", reason, app.config["SCHEDULER_TICK_SECONDS"])
    except Exception:  # the next tick tries again; the error is in the log
        app.logger.exception("the scheduler job failed")


def _notices_tick(app) -> None:
    from sqlalchemy.exc import InterfaceError, OperationalError

    from ..scheduler.notices import deliver_notices

    try:
        deliver_notices(app)
    except (OperationalError, InterfaceError):
        pass  # the database is down: the main job's tick says so, in one line a tick
    except Exception:  # the next tick tries again; the error is in the log
        app.logger.exception("the delivery of notices failed")


def _parse_now(text: str | None):
    from ..ground.db import utcnow

    if text is None:
        return utcnow()
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise click.ClickException(f"--now: {text!r} is not a time like "
                                   "2026-11-21T18:00:00+00:00") from None
    if moment.tzinfo is None:
        raise click.ClickException("--now: give the time zone too, like "
                                   "2026-11-21T18:00:00+01:00 or ...Z")
    return moment.astimezone(UTC)


@click.command("run-jobs")
@click.option("--now", "now_text", metavar="ISO-8601",
              help="Act as if it were this time (for tests and operators).")
@click.option("--simulated", is_flag=True,
              help="The --now time is simulated (a jump ahead to see reminders and timeouts): "
                   "it is not taken for the scheduler's run, so it neither looks like an "
                   "outage nor hides one.")
@one_line_errors
@with_appcontext
def run_jobs_command(now_text, simulated):
    """Run the scheduler's job once: reminders, timeouts and mail that are due."""
    from ..scheduler.jobs import run_jobs

    if simulated and not now_text:
        raise click.UsageError("--simulated needs --now, the time to act at")
    now = _parse_now(now_text)
    need_schema()
    _stop_on_signals(current_app._get_current_object())
    counts = run_jobs(current_app._get_current_object(), now, simulated=simulated)
    click.echo(", ".join(f"{key.replace('_', ' ')} {value}" for key, value in counts.items()))


@click.command("mail-listener")
@click.option("--host", default=None, help="Default: MAIL_LISTEN_HOST ([mail] listen_host).")
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="Default: MAIL_LISTEN_PORT ([mail] listen_port).")
@one_line_errors
@with_appcontext
def mail_listener_command(host, port):
    """Receive players' replies over SMTP (for a mail server to hand them to) until stopped."""
    import threading

    from ..mailin.listener import start_listener

    need_schema()
    app = current_app._get_current_object()
    check_settings(app, "mail-listener", replies_arrive=True)
    host = host or app.config["MAIL_LISTEN_HOST"]
    port = port or app.config["MAIL_LISTEN_PORT"]
    try:
        controller = start_listener(app, host, port)
    except (OSError, RuntimeError) as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc}") from None
    app.logger.info("Reading replies by SMTP on %s:%s; Ctrl-C stops.", host, port)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        controller.stop()
