"""The mailbox page of the local mail backend: every message sent, with working links."""

import re

import pytest
from server import make_app, new_game, token_in

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL


def test_the_mailbox_lists_every_sent_message_newest_first(app, client, mailbox):
    """Each delivered message is listed, can be filtered by recipient, and opens with its link."""
    new_game(app, 3, "mailbox")
    mailbox.deliver()
    index = client.get("/mailbox/").get_data(as_text=True)
    assert index.count("You are invited to play") == 3
    only = client.get("/mailbox/?to=p1@example.org").get_data(as_text=True)
    assert only.count("You are invited to play") == 1 and "Player 1" in only
    (mail,) = mailbox.to("p1@example.org")
    name = next(p.stem for p in mailbox.folder.glob("*.eml")
                if "p1@example.org" in p.read_text())
    page = client.get(f"/mailbox/{name}").get_data(as_text=True)
    token = token_in(mail)
    assert f'<a href="http://localhost/seat/{token}">' in page
    html = client.get(f"/mailbox/{name}/html")
    assert html.status_code == 200 and token in html.get_data(as_text=True)
    assert "default-src 'none'" in html.headers["Content-Security-Policy"]


def test_mail_not_yet_delivered_is_shown_with_its_state(app, client):
    """Queued mail shows as not delivered until the sender has written it."""
    new_game(app, 3, "queued")
    page = client.get("/mailbox/").get_data(as_text=True)
    assert "Not delivered yet" in page and page.count("queued") >= 3


def test_the_mailbox_refuses_names_that_are_not_messages(client):
    """Only the numbered message files can be opened; anything else is not found."""
    for name in ("..%2Fsecret_key", "00000001", "abc", "0000000a", "00000001.eml"):
        assert client.get(f"/mailbox/{name}").status_code == 404


def test_no_mailbox_unless_mail_stays_local(tmp_path):
    """With SMTP delivery, or the page switched off, there is no mailbox page at all."""
    for config in ({"MAIL_BACKEND": "smtp"}, {"MAIL_MAILBOX_PAGE": False}):
        app = make_app(tmp_path / str(len(config)) / next(iter(config)), **config)
        client = app.test_client()
        assert client.get("/mailbox/").status_code == 404
        assert "mailbox" not in client.get("/").get_data(as_text=True).lower()


def test_the_front_page_points_newcomers_to_the_mailbox(client):
    """In the demo set-up the front page links to the mailbox."""
    page = client.get("/").get_data(as_text=True)
    assert 'href="/mailbox/"' in page


def test_request_logs_do_not_hold_seat_keys(app, client, caplog):
    """The web server's request log masks the secret in seat links."""
    import logging

    from werkzeug.serving import WSGIRequestHandler  # noqa: F401  (registers its logger)

    _, tokens = new_game(app, 3, "logs")
    with caplog.at_level(logging.INFO, logger="werkzeug"):
        logging.getLogger("werkzeug").info('"%s %s HTTP/1.1" %s -', "GET",
                                           f"/seat/{tokens[0]}", 200)
    assert "/seat/[hidden]" in caplog.text and tokens[0] not in caplog.text


# --- issue 19: this machine only, paged from the outbox, links without the full stop ------------

FROM_ELSEWHERE = {"REMOTE_ADDR": "192.0.2.44"}


def test_the_mailbox_answers_only_this_machine_unless_opened_to_others(tmp_path, app, client):
    assert client.get("/mailbox/").status_code == 200  # 127.0.0.1
    assert client.get("/mailbox/", environ_base={"REMOTE_ADDR": "::1"}).status_code == 200
    for environ, headers in ((FROM_ELSEWHERE, {}),
                             ({}, {"X-Forwarded-For": "203.0.113.9"}),  # a proxy on this machine
                             ({}, {"Forwarded": "for=203.0.113.9"})):
        for path in ("/mailbox/", "/mailbox/00000001", "/mailbox/00000001/html"):
            response = client.get(path, environ_base=environ, headers=headers)
            assert response.status_code == 403, (path, environ, headers)
            assert "mailbox_remote" in response.get_data(as_text=True)
    opened = make_app(tmp_path / "opened", MAIL_MAILBOX_REMOTE=True).test_client()
    assert opened.get("/mailbox/", environ_base=FROM_ELSEWHERE).status_code == 200
    # Behind a trusted proxy the client's own address counts.
    proxied = make_app(tmp_path / "proxied", SERVE_TRUSTED_PROXIES=1).test_client()
    assert proxied.get("/mailbox/", headers={"X-Forwarded-For": "203.0.113.9"}).status_code \
        == 403
    assert proxied.get("/mailbox/", headers={"X-Forwarded-For": "127.0.0.1"}).status_code == 200


def test_the_mailbox_pages_through_the_mail_without_reading_every_file(app, client, mailbox):
    from pbem.web.mailbox import PAGE

    for i in range(18):  # 54 invitations
        new_game(app, 3, f"page-{i}")
    mailbox.deliver()
    files = sorted(mailbox.folder.glob("*.eml"))
    assert len(files) == 54
    for path in files[:-1]:  # the list is read from the outbox table, not from the files
        path.write_bytes(b"not a mail at all")
    first = client.get("/mailbox/").get_data(as_text=True)
    assert first.count("You are invited to play") == PAGE
    assert "00000054" in first and "00000004" not in first
    older = re.search(r'href="(/mailbox/\?before=\d+)">Older mail', first).group(1)
    second = client.get(older.replace("&amp;", "&")).get_data(as_text=True)
    assert second.count("You are invited to play") == 4
    assert "00000004" in second and "00000005" not in second and "Older mail" not in second
    assert "Newest mail" in second
    only = client.get("/mailbox/?to=P1@example.org").get_data(as_text=True)
    assert only.count("You are invited to play") == 18 and "Older mail" not in only
    assert client.get("/mailbox/?before=1").status_code == 200
    assert client.get("/mailbox/?before=99999999999999999999").status_code == 200


def test_a_link_at_the_end_of_a_sentence_leaves_the_full_stop_out():
    from pbem.web.mailbox import linkify

    html = str(linkify("This mail was sent by http://127.0.0.1:5000. See (http://x.org/a)."))
    assert '<a href="http://127.0.0.1:5000">http://127.0.0.1:5000</a>. See' in html
    assert '(<a href="http://x.org/a">http://x.org/a</a>).' in html


def test_the_demo_plays_by_reply_from_the_mailbox_page(app, client, mailbox):
    """Issue 43, point 13: with mail kept in the local folder and no reply domain set (the
    demo's set-up), each mail still has a reply address, and the mailbox page's Reply button
    sends the reply written there through the same reading as a mail: the move is made and
    the server's answer shows in the mailbox."""
    from server import field, game_state

    import engine

    assert app.config["MAIL_REPLY_DOMAIN"] == "" and app.config["MAIL_BACKEND"] == "local"
    new_game(app, 3, "reply-here")
    mailbox.deliver()
    game, state = game_state(app)
    starter = f"p{state.current}@example.org"
    (invitation,) = mailbox.to(starter)
    assert re.fullmatch(r"play\+[\w-]{32}@mailbox\.localhost", str(invitation["Reply-To"]))
    name = next(p.stem for p in mailbox.folder.glob("*.eml") if starter in p.read_text())
    page = client.get(f"/mailbox/{name}").get_data(as_text=True)
    assert f'href="/mailbox/{name}/reply"' in page
    form = client.get(f"/mailbox/{name}/reply").get_data(as_text=True)
    assert "&gt; " in form and "mailbox.localhost" in form
    move = str(engine.legal_moves(state)[0])
    sent = client.post(f"/mailbox/{name}/reply", data={
        "csrf_token": field(form, "csrf_token"), "body": f"{move}\n\n> the quoted mail\n"})
    assert sent.status_code == 303
    after, moved = game_state(app)
    assert after.turn == game.turn + 1 and moved.ply == state.ply + 1
    with app.app_context():
        from sqlmodel import select

        from pbem.ground.db import reading
        from pbem.ground.models import MoveRecord
        with reading() as session:
            record = session.exec(select(MoveRecord).order_by(MoveRecord.number.desc())).first()
    assert (record.notation, record.via) == (move, "email")
    answers = [m for m in mailbox.to(starter) if str(m["Subject"]).startswith(
        ("[", "Re:")) and m is not invitation]
    assert answers, "the server answered the reply"
    assert "went to the server" in client.get(sent.headers["Location"]).get_data(as_text=True)
    # A mail without a reply address (none to reply to) has no Reply button.
    assert client.get("/mailbox/99999999/reply").status_code == 404


def test_mail_that_really_goes_out_needs_its_reply_domain(tmp_path):
    """The mailbox's own reply domain is for mail kept in the local folder only."""
    from pbem.services.mail import reply_address

    app = make_app(tmp_path / "instance", MAIL_BACKEND="smtp")
    with app.app_context():
        assert reply_address("k" * 32) is None
    app = make_app(tmp_path / "other", MAIL_REPLY_DOMAIN="games.example.org")
    with app.app_context():
        assert reply_address("k" * 32) == f"play+{'k' * 32}@games.example.org"


def test_the_readme_says_near_the_top_how_to_choose_the_port_the_admin_and_replies(app):
    """Issue 43, point 13: the port, the admin's password and replying were only in --help and
    docs/running-games.md; the README says them before the first game is played, and every
    command and option it names there exists."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent.parent / "README.md").read_text()
    top = readme.split("## Play your first game", 1)[0]
    assert "--port" in top and "create-admin" in top and "*Reply*" in top
    assert "PBEM_MAIL_REPLY_DOMAIN" in top and "mailbox.localhost" in top
    runner = app.test_cli_runner()
    named = re.findall(r"python3 -m pbem ([a-z-]+)((?: --[a-z-]+)*)", top)
    named.append(("create-admin", " --password-stdin"))
    assert {"demo", "serve", "create-admin"} <= {command for command, _ in named}, named
    for command, options in named:
        helped = runner.invoke(args=[command, "--help"])
        assert helped.exit_code == 0, (command, helped.output)
        for option in options.split():
            assert option in helped.output, (command, option)
