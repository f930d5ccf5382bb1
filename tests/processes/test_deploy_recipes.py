"""The deployment recipes agree with each other and with docs/deploy.md (issue 43, points 16,
17 and 18): the secrets file's owner and mode wherever they are named, the three systemd units'
settings and hardening, the install steps in their order, and an upgrade procedure that names
what changed in the recipes. tests/processes/test_deploy_processes.py and tests/processes/test_deploy_postfix.py
run the recipes for real (the pipe as Postfix runs it, reading the secrets file made as said
here); this reads them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
DEPLOY = ROOT / "deploy"
DOCS = ROOT / "docs" / "deploy.md"
SECRETS = "/etc/pbem/secrets.env"
UNITS = ("pbem-web.service", "pbem-scheduler.service", "pbem-mail-listener.service")
HARDENING = ("UMask", "NoNewPrivileges", "PrivateTmp", "ProtectSystem", "ProtectHome")
SHARED = ("User", "Group", "WorkingDirectory", "Environment", "EnvironmentFile", *HARDENING)


def recipes() -> dict[str, str]:
    """Every text an operator follows: the docs, the README and the files in deploy/, each as
    one line (a sentence may wrap anywhere)."""
    paths = [DOCS, ROOT / "README.md", *sorted(p for p in DEPLOY.rglob("*") if p.is_file())]
    return {str(p.relative_to(ROOT)): " ".join(p.read_text().split()) for p in paths}


def unit(name: str) -> dict[str, dict[str, str]]:
    """A systemd unit's settings by section."""
    sections: dict[str, dict[str, str]] = {}
    section = None
    for line in (DEPLOY / "systemd" / name).read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = sections.setdefault(line.strip("[]"), {})
        elif section is not None and "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            section[key] = value
    return sections


def section(title: str) -> str:
    """The text of a `## title` section of docs/deploy.md."""
    text = DOCS.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


# --- point 16: the secrets file ---------------------------------------------------------------

# A mode given to the secrets file ("secrets.env (mode 0600)", "chmod 0640 .../secrets.env"), not
# one named as what goes wrong ("with mode 0600 every reply is deferred").
MODE_NEAR = re.compile(r"secrets\.env\b.{0,160}?(?<!with )\b(?:mode|chmod) (0[0-7]{3})\b|"
                       r"\bchmod (0[0-7]{3}) /etc/pbem/secrets\.env")


def test_the_secrets_file_has_one_owner_and_mode_everywhere():
    """root:pbem 0640: systemd reads it as root, the Postfix pipe as pbem (0600 defers every
    reply with "not readable")."""
    modes: dict[str, set[str]] = {}
    for name, text in recipes().items():
        for before, after in MODE_NEAR.findall(text):
            modes.setdefault(name, set()).add(before or after)
    assert {"docs/deploy.md", "deploy/postfix/master.cf",
            "deploy/systemd/pbem-web.service"} <= set(modes)
    assert {name: found for name, found in modes.items() if found != {"0640"}} == {}
    for name in modes:
        assert "root:pbem" in recipes()[name], name
    steps = section("Installing")
    assert f"chown root:pbem {SECRETS} && chmod 0640 {SECRETS}" in steps


def test_every_process_reads_the_same_secrets_file():
    for name in UNITS:
        assert unit(name)["Service"]["EnvironmentFile"] == SECRETS, name
    pipe = " ".join((DEPLOY / "postfix" / "master.cf").read_text().split())
    assert f"--env-file {SECRETS}" in pipe and "user=pbem" in pipe


# --- point 18: the units and the install steps ------------------------------------------------

def test_the_three_units_share_their_settings_and_hardening():
    web = unit("pbem-web.service")
    for name in UNITS:
        settings = unit(name)
        assert {key: settings["Service"].get(key) for key in SHARED} == \
            {key: web["Service"][key] for key in SHARED}, name
        assert "postgresql.service" in settings["Unit"]["After"].split(), name
        assert settings["Service"]["UMask"] == "0077"
        assert settings["Install"]["WantedBy"] == "multi-user.target"


@pytest.mark.parametrize("name", UNITS)
def test_each_unit_is_installed_by_the_steps(name):
    steps = section("Installing")
    assert "deploy/systemd/*.service" in steps
    assert name.removesuffix(".service") in " ".join(steps.split())


def test_the_install_steps_are_one_ordered_list():
    """The system user, the database role, the settings, the secrets, init-db and create-admin
    as that user with the units' environment, the services, nginx, Postfix: in that order."""
    steps = section("Installing")
    numbered = re.findall(r"^(\d+)\. ", steps, re.MULTILINE)
    assert numbered == [str(n) for n in range(1, len(numbered) + 1)] and len(numbered) >= 8
    text = " ".join(steps[steps.index("\n1. "):].split())  # the list itself
    as_pbem = ("runuser -u pbem -- env PBEM_CONFIG=/etc/pbem/config.toml "
               f"/srv/pbem/venv/bin/pbem --env-file {SECRETS} ")
    order = ["useradd --system", "createuser pbem", "/etc/pbem/config.toml",
             f"chmod 0640 {SECRETS}", as_pbem + "init-db", as_pbem + "create-admin",
             "systemctl enable --now pbem-web pbem-scheduler pbem-mail-listener",
             "deploy/nginx/pbem.conf", "deploy/postfix/"]
    places = [text.find(words) for words in order]
    assert -1 not in places, [w for w, p in zip(order, places) if p < 0]
    assert places == sorted(places), order
    # The units' user, settings and secrets are the ones the steps make.
    web = unit("pbem-web.service")["Service"]
    assert web["User"] == "pbem" and web["Environment"] == "PBEM_CONFIG=/etc/pbem/config.toml"


# --- point 17: upgrading ----------------------------------------------------------------------

def test_the_upgrade_procedure_says_what_to_do_and_what_changed():
    whole = section("Upgrading")
    text = " ".join(whole.split())
    steps = re.findall(r"^(\d+)\. ", whole, re.MULTILINE)
    assert steps == ["1", "2", "3", "4", "5"]
    listed = " ".join(whole[whole.index("\n1. "):].split())
    order = ["pg_dump", "systemctl stop pbem-web pbem-scheduler pbem-mail-listener",
             "pip install -e /srv/pbem/app", "init-db", "systemctl daemon-reload",
             "systemctl start pbem-web pbem-scheduler pbem-mail-listener", "postqueue -f"]
    places = [listed.find(words) for words in order]
    assert -1 not in places, [w for w, p in zip(order, places) if p < 0]
    assert places == sorted(places), order
    # What changed in the recipes since the previous release (b57f441).
    for change in ("--env-file /etc/pbem/secrets.env", "relay_domains",
                   "pbem_destination_recipient_limit = 1", "pbem-mail-listener.service",
                   "deploy/nginx/pbem.conf", "wsgi:app", "root:pbem", "0640",
                   "postgresql.service", "b57f441"):
        assert change in text, change
    # What the new server says before init-db, as it says it (tests/processes/test_upgrade.py).
    assert "schema behind: run pbem init-db" in text and "not starting" in text
    # Old reply addresses: seat tokens in Postfix's log until old_link_days.
    assert "old_link_days" in text and "Postfix's log" in text
