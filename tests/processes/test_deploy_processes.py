"""The deployment docs/deploy.md describes, run for real (issue 29, points 1 and 10; issue 34,
points 4, 7 and 8): nginx with deploy/nginx/pbem.conf and a self-signed certificate in front of
gunicorn started as deploy/systemd/pbem-web.service starts it, the scheduler as
deploy/systemd/pbem-scheduler.service starts it, and Debian's chromium through it all (the admin logs
in, a seat moves by clicking, table talk posts); then no live key in any log. Also gunicorn's
access log file and `pbem serve`'s request log, and `pbem serve` refusing trusted proxies on an
address others can reach.

Each program runs as a private instance: its own folder, free high ports. The tests wait for
what they can observe (a port, /health, a row, a page element), never for a fixed time.
"""

from __future__ import annotations

import datetime
import ipaddress
import math
import re
import shlex
import signal
import socket
import stat
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
import requests
from parts import require
from server import Mailbox, game_state, make_app, new_game
from sqlmodel import func, select
from test_my_games import _games_token
from test_pbem_cli import environment, free_port

from pbem.ground.db import reading
from pbem.ground.models import LoginFailure, MoveRecord, TalkMessage
from pbem.ground.tokens import new_token
from pbem.services.feeds import new_calendar_feed
from pbem.services.stewardship import address_key

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parent.parent.parent
DEPLOY = ROOT / "deploy"
PASSWORD = "a long enough password"
ADMIN = "boss@example.org"
TIMEOUT = 180  # seconds, for anything a busy machine may be slow at
SEEN = 60_000  # milliseconds, for what the browser is to show
BURST = 20  # requests at the login page at once from one address


def wait_for(check, seconds: float = TIMEOUT, what="the condition"):
    """`check()` once it is true; `what` (or what it returns) names it if it never is."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, \
            f"timed out waiting for {what() if callable(what) else what}"
        time.sleep(0.05)


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def unit_service(name: str) -> dict[str, str]:
    """The [Service] settings of a systemd unit in deploy/."""
    settings, section = {}, None
    for line in (DEPLOY / "systemd" / name).read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            settings[key] = value
    return settings


@contextmanager
def process(command: list[str], log: Path, env: dict, cwd: Path = ROOT, mask: int | None = None):
    """A program running until the block ends (SIGTERM, then SIGKILL), its output in `log`."""
    with log.open("ab") as out:
        running = subprocess.Popen(command, cwd=cwd, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, umask=-1 if mask is None else mask)
    try:
        yield running
    finally:
        running.send_signal(signal.SIGTERM)
        try:
            running.wait(60)
        except subprocess.TimeoutExpired:
            running.kill()
            running.wait(10)


def alive(running: subprocess.Popen, log: Path) -> bool:
    assert running.poll() is None, f"{running.args[:3]} stopped:\n{log.read_text()[-3000:]}"
    return True


def health(base: str, **options):
    try:
        return requests.get(f"{base}/health", timeout=10, **options)
    except requests.RequestException:
        return None


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for localhost (and 127.0.0.1), and its key, made now."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   # nginx and OpenSSL check it by the machine's real clock, which is not
                   # the tests' own when tests/clock_runs.py has moved that to another day.
                   .not_valid_before(datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC))
                   .not_valid_after(now + datetime.timedelta(days=3650))
                   .add_extension(x509.SubjectAlternativeName([
                       x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                       x509.DNSName("localhost")]), critical=False)
                   .sign(key, hashes.SHA256()))
    cert, private = folder / "cert.pem", folder / "key.pem"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    private.chmod(0o600)
    return cert, private


def nginx_binary() -> str:
    return require("nginx")  # skipped without it (failed in CI): tests/parts.py


def has_ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
        return True
    except OSError:
        return False


def nginx_site(folder: Path, http_port: int, https_port: int, app_port: int
               ) -> tuple[Path, Path]:
    """deploy/nginx/pbem.conf with this test's ports and paths (and nothing else changed), in
    a main configuration of its own: a private nginx. Returns that and its certificate."""
    cert, key = self_signed(folder)
    site = (DEPLOY / "nginx" / "pbem.conf").read_text()
    replaced = {
        "listen 80;": f"listen 127.0.0.1:{http_port};",
        "listen [::]:80;": f"listen [::1]:{http_port};",
        "listen 443 ": f"listen 127.0.0.1:{https_port} ",
        "listen [::]:443 ": f"listen [::1]:{https_port} ",
        "server_name games.example.org;": "server_name localhost;",
        "/etc/letsencrypt/live/games.example.org/fullchain.pem": str(cert),
        "/etc/letsencrypt/live/games.example.org/privkey.pem": str(key),
        "/var/log/nginx/pbem.access.log": str(folder / "access.log"),
        "http://127.0.0.1:8000": f"http://127.0.0.1:{app_port}",
    }
    for old, new in replaced.items():
        assert old in site, f"deploy/nginx/pbem.conf no longer has {old!r}: update this test"
        site = site.replace(old, new)
    if not has_ipv6():  # a machine without IPv6 cannot listen on it
        site = "\n".join(line for line in site.splitlines() if "[::1]" not in line)
    (folder / "site.conf").write_text(site)
    for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (folder / name).mkdir()
    main = folder / "nginx.conf"
    main.write_text(f"""
daemon off;
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log info;
events {{ worker_connections 256; }}
http {{
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    include {folder}/site.conf;
}}
""")
    return main, cert


def keys_in(text: str, keys: list[str]) -> list[str]:
    return [key for key in keys if key in text]


# --- nginx, gunicorn, the scheduler and chromium ------------------------------------------------

def test_the_documented_deployment_plays_through_nginx_in_chromium(tmp_path, browser):
    nginx = nginx_binary()
    folder = tmp_path / "nginx"
    folder.mkdir()
    http_port, https_port, app_port = free_port(), free_port(), free_port()
    # A name, not an address: browsers send it in the TLS handshake (SNI), without which the
    # site's default server refuses the handshake, as it should.
    base = f"https://localhost:{https_port}"
    instance = tmp_path / "instance"
    app = make_app(instance, BASE_URL=base, SERVE_TRUSTED_PROXIES=1)
    from pbem.services.stewardship import create_admin

    with app.app_context():
        create_admin(ADMIN, PASSWORD)
    created, tokens = new_game(app, 3, "behind-nginx", start=0)
    games_key = _games_token(Mailbox(app), "p0@example.org")
    with app.app_context():  # a calendar feed, polled through nginx below (issue 33)
        calendar_key = new_calendar_feed(games_key)
    config = tmp_path / "config.toml"  # /etc/pbem/config.toml, as the units name it
    config.write_text(f'base_url = "{base}"\n[serve]\ntrusted_proxies = 1\n')
    env = environment(instance, PBEM_CONFIG=str(config), PBEM_SECRET_KEY="deploy-test-secret",
                      PBEM_DATABASE_URL=app.config["DATABASE_URL"])

    web, scheduler = unit_service("pbem-web.service"), unit_service("pbem-scheduler.service")
    assert web["Environment"] == scheduler["Environment"] == \
        "PBEM_CONFIG=/etc/pbem/config.toml"
    assert web["WorkingDirectory"] == scheduler["WorkingDirectory"] == "/srv/pbem/app"
    web_command = web["ExecStart"]
    for old, new in {"/srv/pbem/venv/bin/gunicorn": f"{sys.executable} -m gunicorn",
                     "-w 4": "-w 2", "127.0.0.1:8000": f"127.0.0.1:{app_port}"}.items():
        assert old in web_command
        web_command = web_command.replace(old, new)
    assert web_command.endswith(" wsgi:app")
    assert scheduler["ExecStart"] == "/srv/pbem/venv/bin/pbem scheduler"
    logs = {name: tmp_path / f"{name}.log" for name in ("web", "scheduler", "nginx")}
    main, cert = nginx_site(folder, http_port, https_port, app_port)
    checked = subprocess.run([nginx, "-t", "-p", str(folder), "-e", str(folder / "error.log"),
                              "-c", str(main)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr

    with ExitStack() as running:
        gunicorn = running.enter_context(process(shlex.split(web_command), logs["web"], env))
        jobs = running.enter_context(process([sys.executable, "-m", "pbem", "scheduler"],
                                             logs["scheduler"], env))
        proxy = running.enter_context(process(
            [nginx, "-p", str(folder), "-e", str(folder / "error.log"), "-c", str(main)],
            logs["nginx"], env))
        wait_for(lambda: alive(proxy, logs["nginx"]) and listening(https_port), what="nginx")
        answers = []

        def healthy() -> bool:
            alive(gunicorn, logs["web"]) and alive(jobs, logs["scheduler"])
            answers.append(health(base, verify=str(cert)))
            return answers[-1] is not None and answers[-1].status_code == 200

        wait_for(healthy, what=lambda: "/health through nginx to say ok; it said "
                 + (answers[-1].text if answers[-1] is not None else "nothing"))
        # Plain http only sends browsers to https.
        plain = requests.get(f"http://127.0.0.1:{http_port}/seat/{tokens[1]}",
                             allow_redirects=False, timeout=30)
        assert plain.status_code == 301
        assert plain.headers["Location"].startswith("https://127.0.0.1")

        context = browser.new_context(ignore_https_errors=True,
                                      viewport={"width": 1280, "height": 900})
        context.set_default_timeout(TIMEOUT * 1000)
        try:
            page = context.new_page()
            _admin_logs_in(page, base)
            _seat_moves_and_talks(page, base, app, created.game_id, tokens)
            assert page.goto(f"{base}/me/{games_key}").status == 200
        finally:
            context.close()
        polled = requests.get(f"{base}/feeds/{calendar_key}/deadlines.ics", timeout=60,
                              verify=str(cert))
        assert polled.status_code == 200 and b"BEGIN:VCALENDAR" in polled.content
        again = requests.get(f"{base}/feeds/{calendar_key}/deadlines.ics", timeout=60,
                             verify=str(cert), headers={"If-None-Match": polled.headers["ETag"]})
        assert again.status_code == 304

        # nginx and the app agree on the client's address: a forged X-Forwarded-For is
        # replaced by nginx with the real one, which the login limit counts.
        _forged_login(base, cert)
        with reading(app) as session:
            addresses = session.exec(select(LoginFailure.address)).all()
        assert addresses in (["127.0.0.1"], [address_key("::1")])
        # A burst at the login page from one address, all at once: nginx refuses it past its
        # own limit (30 a minute, 10 at once) before the server sees it: through go at most
        # one request and its burst of 10 more, and one every 2 s the burst lasts.
        started = time.monotonic()
        with ThreadPoolExecutor(BURST) as pool:
            burst = list(pool.map(lambda _: requests.get(
                f"{base}/admin/login", timeout=60, verify=str(cert)), range(BURST)))
        lasted = time.monotonic() - started
        refused = [r for r in burst if r.status_code == 429 and "nginx" in r.text]
        statuses = [r.status_code for r in burst]
        assert 1 <= len(refused) < BURST, (statuses, lasted)
        assert BURST - len(refused) <= 10 + 1 + math.ceil(lasted / 2), (statuses, lasted)
        # So are the other pages anyone may use without a key (issue 42): asking for one's
        # link (/me) and starting a game (/new), 10 a minute and 5 at once, sharing one
        # count; the lobby, 60 a minute and 20 at once.
        for path, count, burst, per_second in [("/me", BURST, 5, 1 / 6),
                                               ("/new", BURST, 5, 1 / 6),
                                               ("/lobby", 30, 20, 1), ("/me/x/lobby", 30, 20, 1)]:
            _refused_beyond(f"{base}{path}", count, burst, per_second, cert)
        alive(gunicorn, logs["web"])
    secret = [*tokens, games_key, calendar_key]
    access = (folder / "access.log").read_text()
    assert "/seat/[hidden]/move" in access and "/me/[hidden]" in access
    assert "/feeds/[hidden]/deadlines.ics" in access
    assert 'seat/[hidden]" "Mozilla' in access  # a page opened from a seat page: its Referer
    for name, path in [("nginx", folder / "access.log"), *logs.items()]:
        assert keys_in(path.read_text(), secret) == [], f"a live key in {name}'s log"
    served = logs["web"].read_text()
    assert re.search(r'"POST /seat/\[hidden\]/move HTTP/1\.[01]" 303', served), served[-2000:]
    assert re.search(r" INFO pbem\.services\.moves: move: game \d+ seat 1 .+ \(player, via web\)",
                     served)
    assert re.search(r" INFO pbem\.ground\.logs: web \(gunicorn worker\) \(process \d+\): settings "
                     rf"from {re.escape(str(config))}", served)
    assert "refused a form" not in served, "a form was refused behind the proxy"


def _refused_beyond(url: str, count: int, burst: int, per_second: float, cert: Path) -> None:
    """`count` requests at `url` at once from one address: nginx refuses some (429, its own
    page), and lets through at most one, its burst and what its rate allows while they last."""
    started = time.monotonic()
    with ThreadPoolExecutor(count) as pool:
        answers = list(pool.map(lambda _: requests.get(url, timeout=60, verify=str(cert)),
                                range(count)))
    lasted = time.monotonic() - started
    statuses = [r.status_code for r in answers]
    refused = [r for r in answers if r.status_code == 429 and "nginx" in r.text]
    assert refused, (url, statuses, lasted)
    assert count - len(refused) <= burst + 1 + math.ceil(lasted * per_second), \
        (url, statuses, lasted)


def _admin_logs_in(page, base: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{base}/admin/login")
    page.get_by_label("Email").fill(ADMIN)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("button", name=f"Log out {ADMIN}")).to_be_visible(timeout=SEEN)
    page.get_by_role("button", name=f"Log out {ADMIN}").click()
    expect(page.get_by_text("You are logged out.")).to_be_visible(timeout=SEEN)


def _seat_moves_and_talks(page, base: str, app, game_id: int, tokens: list[str]) -> None:
    from browser_support import monastery_move
    from playwright.sync_api import expect

    _, state = game_state(app, game_id)
    move = monastery_move(state)
    page.goto(f"{base}/seat/{tokens[state.current]}")
    page.locator(f'svg [data-field="{move.pieces[0]}"].clickable').click()
    panel = page.locator("#map-choice")
    expect(panel).to_contain_text(f"a monastery at {move.pieces[0]}", timeout=SEEN)
    panel.get_by_role("button", name="Preview this placement").click()
    expect(page.get_by_role("heading", name="Confirm your move")).to_be_visible(timeout=SEEN)
    page.get_by_role("button", name="Confirm this move").click()
    expect(page.locator("#action").get_by_role(
        "button", name="Draw the top card of the deck")).to_be_visible(timeout=SEEN)

    def count(model):
        with reading(app) as session:
            return session.exec(select(func.count()).select_from(model)
                                .where(model.game_id == game_id)).one()

    wait_for(lambda: count(MoveRecord) == 1, what="the move's row")
    page.get_by_label("To", exact=True).select_option(value="all")
    page.get_by_label("Your message").fill("Hello from behind nginx")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".talk-thread .talk-body")).to_have_text("Hello from behind nginx",
                                                                  timeout=SEEN)
    wait_for(lambda: count(TalkMessage) == 1, what="the message's row")


def _forged_login(base: str, cert: Path) -> None:
    with requests.Session() as client:
        page = client.get(f"{base}/admin/login", timeout=60, verify=str(cert)).text
        token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        response = client.post(f"{base}/admin/login", timeout=60, allow_redirects=False,
                               verify=str(cert),
                               headers={"X-Forwarded-For": "198.51.100.66",
                                        "Referer": f"{base}/admin/login"},
                               data={"csrf_token": token, "email": ADMIN,
                                     "password": "not the password"})
    assert response.status_code == 401


# --- gunicorn's access log file: no keys, not 0666 ------------------------------------------------

def _secret_requests(base: str, keys: list[str], **options) -> None:
    """Requests to every kind of secret link (unknown keys: the log is what is looked at)."""
    seat, games, invite, manage, api = keys
    for method, path in [("GET", f"/seat/{seat}"), ("GET", f"/me/{games}"),
                         ("GET", f"/invite/{invite}"), ("POST", f"/invite/{invite}/accept"),
                         ("GET", f"/new/game/{manage}"), ("POST", f"/new/game/{manage}/confirm"),
                         ("GET", f"/api/v1/seat/{api}"), ("GET", f"//seat/{seat}")]:
        requests.request(method, f"{base}{path}", timeout=60, allow_redirects=False,
                         headers={"Referer": f"{base}/seat/{seat}"}, **options)


def test_gunicorns_access_log_holds_no_key_and_is_private_whatever_the_umask(tmp_path):
    instance = tmp_path / "instance"
    make_app(instance)
    port = free_port()
    access = tmp_path / "access.log"
    env = environment(instance, PBEM_SECRET_KEY="access-log-secret")
    log = tmp_path / "gunicorn.log"
    keys = [new_token() for _ in range(5)]
    with process([sys.executable, "-m", "gunicorn", "-w", "2", "-b", f"127.0.0.1:{port}",
                  "--access-logfile", str(access), "wsgi:app"], log, env, mask=0) as gunicorn:
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: alive(gunicorn, log) and health(base) is not None, what="gunicorn")
        _secret_requests(base, keys)
        # Both workers have started (each makes its own the file's mode on start)...
        wait_for(lambda: log.read_text().count("web (gunicorn worker)") >= 2,
                 what="both workers to start")
    text = access.read_text()
    assert keys_in(text + log.read_text(), keys) == []
    assert text.count("[hidden]") >= 8
    assert stat.S_IMODE(access.stat().st_mode) == 0o600


# --- gunicorn never faces the internet (issue 42, point 6) -------------------------------------

def test_gunicorn_listens_on_loopback_by_default_and_the_unit_does_too(tmp_path):
    """gunicorn started in the checkout reads its gunicorn.conf.py: 127.0.0.1 unless told
    otherwise; the unit's address is loopback too."""
    from server import database_url

    # --print-config loads the app, which refuses a database whose schema is not the code's.
    instance = tmp_path / "instance"
    env = environment(instance, PBEM_DATABASE_URL=database_url(instance))
    shown = subprocess.run([sys.executable, "-m", "gunicorn", "--print-config", "wsgi:app"],
                           cwd=ROOT, env=env, capture_output=True, text=True, check=True,
                           timeout=120)
    settings = dict(re.findall(r"^(\w+) +=  ?(.*)$", shown.stdout, re.MULTILINE))
    assert settings["config"] == "./gunicorn.conf.py"
    assert settings["bind"] == "['127.0.0.1:8000']"
    assert "on_starting" in settings["on_starting"]
    bound = re.findall(r"(?:-b|--bind)[ =](\S+)", unit_service("pbem-web.service")["ExecStart"])
    assert bound == ["127.0.0.1:8000"]


@pytest.mark.parametrize("address", ["0.0.0.0:{port}", "[::]:{port}", ":{port}"])
def test_gunicorn_refuses_to_listen_where_other_machines_reach_it(tmp_path, address):
    """Eight slow clients hold bare gunicorn's workers: it will not face the internet by
    mistake. It says why and what to do, and never listens."""
    instance = tmp_path / "instance"
    make_app(instance)
    port = free_port()
    done = subprocess.run([sys.executable, "-m", "gunicorn", "-w", "1", "-b",
                           address.format(port=port), "wsgi:app"], cwd=ROOT,
                          capture_output=True, text=True, check=False, timeout=120,
                          env=environment(instance))
    assert done.returncode == 1, done.stderr
    assert "which other machines can reach. gunicorn must not face the internet" in done.stderr
    assert "Listening at" not in done.stderr and not listening(port)


# --- pbem serve: its request log, and trusted proxies only on loopback ----------------------------

def test_serve_masks_keys_in_its_request_log(tmp_path):
    instance = tmp_path / "instance"
    make_app(instance)
    port = free_port()
    log = tmp_path / "serve.log"
    keys = [new_token() for _ in range(5)]
    env = environment(instance, PBEM_SERVE_TRUSTED_PROXIES="1")
    with process([sys.executable, "-m", "pbem", "serve", "--no-scheduler", "--port", str(port)],
                 log, env, cwd=tmp_path) as serve:
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: alive(serve, log) and health(base) is not None, what="pbem serve")
        _secret_requests(base, keys)
        wait_for(lambda: log.read_text().count("[hidden]") >= 8, what="the request log")
    text = log.read_text()
    assert keys_in(text, keys) == []
    assert "/invite/[hidden]/accept" in text and "/new/game/[hidden]/confirm" in text


def _raw_answer(port: int, request: bytes) -> bytes:
    """The status line `pbem serve` answers a request sent as these very bytes with."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
        conn.sendall(request)
        answer = b""
        while b"\r\n" not in answer:
            chunk = conn.recv(4096)
            if not chunk:
                break
            answer += chunk
    return answer.split(b"\r\n", 1)[0]


MALFORMED = {
    "obs-fold": b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-A: one\r\n two\r\n\r\n",
    "obs-fold by tab": b"GET /health HTTP/1.1\r\nHost: localhost\r\n\tX-B: b\r\n\r\n",
    "bare LF in the header": b"GET /health HTTP/1.1\r\nHost: localhost\nX-C: c\r\n\r\n",
    "bare LF at the end": b"GET /health HTTP/1.1\r\nHost: localhost\r\n\n",
    "bare LF request line": b"GET /health HTTP/1.1\nHost: localhost\r\n\r\n",
    "space before colon": b"GET /health HTTP/1.1\r\nHost : localhost\r\n\r\n",
    "no colon": b"GET /health HTTP/1.1\r\nHost: localhost\r\nno colon here\r\n\r\n",
}


def test_serve_refuses_folded_and_bare_lf_headers_as_gunicorn_does(tmp_path):
    """obs-fold, a bare LF and a header line without its colon are 400, as gunicorn and nginx
    answer them (a proxy that read them otherwise could smuggle a request past the server)."""
    instance = tmp_path / "instance"
    make_app(instance)
    port = free_port()
    log = tmp_path / "serve.log"
    with process([sys.executable, "-m", "pbem", "serve", "--no-scheduler", "--port", str(port)],
                 log, environment(instance), cwd=tmp_path) as serve:
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: alive(serve, log) and health(base) is not None, what="pbem serve")
        good = b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Fine: yes\r\nConnection: close" \
               b"\r\n\r\n"
        assert _raw_answer(port, good).split(b" ")[1] in (b"200", b"503")
        answers = {name: _raw_answer(port, raw) for name, raw in MALFORMED.items()}
        assert all(a.startswith(b"HTTP/1.1 400 ") for a in answers.values()), answers
        alive(serve, log)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10"])
def test_serve_refuses_trusted_proxies_on_an_address_others_can_reach(tmp_path, host):
    instance = tmp_path / "instance"
    make_app(instance)
    done = subprocess.run([sys.executable, "-m", "pbem", "serve", "--host", host, "--port",
                           str(free_port())], cwd=tmp_path, capture_output=True, text=True, check=False,
                          timeout=120, env=environment(instance,
                                                       PBEM_SERVE_TRUSTED_PROXIES="1"))
    assert done.returncode == 1 and done.stdout == ""
    assert f"[serve] trusted_proxies is 1, so the server believes the client's address in " \
           f"X-Forwarded-For, but it would listen on {host}" in done.stderr
    assert 'Listen on this machine only ([serve] host = "127.0.0.1"' in done.stderr


def test_loopback_names_are_told_from_others():
    from pbem.cli.processes import is_loopback

    assert all(map(is_loopback, ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.0.2.1", "example.invalid", ""]))
