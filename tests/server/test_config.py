"""Settings: defaults < TOML file < environment < test overrides, every bad value refused by
name and source, the example file in step with SETTINGS, and the instance's secret key."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pbem import create_app
from pbem.ground.config import SETTINGS, ConfigError, load_settings

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLE = ROOT / "config.example.toml"
TOP_LEVEL = {"SECRET_KEY", "BASE_URL", "DATABASE_URL", "INSTANCE_PATH", "MAX_CONTENT_LENGTH"}
SECTIONS = ("SQLITE", "SERVE", "LOG", "GAMES", "ADMIN", "SCHEDULER", "TALK", "MAIL", "SMTP",
            "NOTIFY")
DEFAULTS = {name: setting.default for name, setting in SETTINGS.items()}


def write(tmp_path: Path, text: str, name: str = "pbem.toml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# --- the example file -------------------------------------------------------------------------

def example_keys() -> dict[str, object]:
    """The example's keys under their flat names, checked to sit where the brief says."""
    data = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    flat = {}
    for key, value in data.items():
        if isinstance(value, dict):
            assert key.upper() in SECTIONS, f"unexpected section [{key}]"
            for inner, item in value.items():
                flat[f"{key}_{inner}".upper()] = item
        else:
            assert key.upper() in TOP_LEVEL, f"{key} belongs in a section"
            flat[key.upper()] = value
    return flat


def test_the_example_names_every_setting_with_its_default():
    flat = example_keys()
    assert set(flat) == set(SETTINGS), "config.example.toml and SETTINGS have drifted apart"
    for name, value in flat.items():
        assert type(value) is type(DEFAULTS[name]) and value == DEFAULTS[name], name
    assert flat["SECRET_KEY"] == "" and flat["SMTP_PASSWORD"] == ""


def test_the_example_loads_to_exactly_the_defaults():
    assert load_settings(environ={"PBEM_CONFIG": str(EXAMPLE)}) == DEFAULTS


def test_the_example_explains_every_key_and_its_environment_variable():
    text = EXAMPLE.read_text(encoding="utf-8")
    lines = text.splitlines()
    section = ""
    for number, line in enumerate(lines):
        if line.startswith("["):
            section = line.strip("[]") + "_"
            continue
        match = re.match(r"([a-z_]+) = ", line)
        if match:
            name = (section + match.group(1)).upper()
            assert lines[number - 1].startswith("#"), f"{name} has no comment above it"
            assert f"PBEM_{name}" in text, f"{name}: the environment form is not mentioned"
    for secret in ("PBEM_SECRET_KEY", "PBEM_SMTP_PASSWORD"):
        assert secret in text
    assert "PBEM_CONFIG" in text
    above = lines[:next(n for n, line in enumerate(lines) if line.startswith("mailbox_page"))]
    comment = " ".join(line.lstrip("# ") for line in above[-5:])
    assert "EVERY seat's secret link" in comment and "turn it off" in comment


# --- where values come from -------------------------------------------------------------------

def test_defaults_then_file_then_environment_then_overrides(tmp_path):
    path = write(tmp_path, """
base_url = "https://pbem.example.org"
[serve]
port = 6000
host = "0.0.0.0"
[mail]
backend = "smtp"
mailbox_page = false
[smtp]
host = "mail.example.org"
""")
    environ = {"PBEM_CONFIG": path, "PBEM_SERVE_PORT": "7000", "PBEM_SERVE_HOST": "::1",
               "PBEM_GAMES_DIGEST_HOURS": "12", "HOME": "/ignored", "PBEMX": "ignored"}
    values = load_settings(environ=environ, overrides={"SERVE_PORT": 8000, "TESTING": True})
    assert values["SERVE_PORT"] == 8000  # overrides beat the environment and the file
    assert values["SERVE_HOST"] == "::1"  # the environment beats the file
    assert values["GAMES_DIGEST_HOURS"] == 12  # the environment alone, parsed
    assert values["BASE_URL"] == "https://pbem.example.org"  # the file alone
    assert values["MAIL_BACKEND"] == "smtp" and values["MAIL_MAILBOX_PAGE"] is False
    assert values["SMTP_HOST"] == "mail.example.org"
    assert values["SMTP_PORT"] == DEFAULTS["SMTP_PORT"]  # nowhere: the default
    assert values["TESTING"] is True  # Flask's own keys pass through from overrides
    assert set(values) == set(SETTINGS) | {"TESTING"}


def test_environment_text_is_parsed_by_kind():
    values = load_settings(environ={"PBEM_MAIL_MAILBOX_PAGE": "Off", "PBEM_SERVE_PORT": " 8080 ",
                                    "PBEM_SMTP_USERNAME": "judge"})
    assert values["MAIL_MAILBOX_PAGE"] is False
    assert values["SERVE_PORT"] == 8080
    assert values["SMTP_USERNAME"] == "judge"
    for word, meaning in [("yes", True), ("1", True), ("TRUE", True), ("no", False),
                          ("0", False), ("false", False), ("on", True)]:
        assert load_settings(environ={"PBEM_MAIL_MAILBOX_PAGE": word})[
            "MAIL_MAILBOX_PAGE"] is meaning, word


def test_the_app_takes_its_settings_from_file_and_environment(tmp_path, monkeypatch):
    path = write(tmp_path, "[games]\ndigest_hours = 6\nmove_deadline_hours = 48\n")
    monkeypatch.setenv("PBEM_CONFIG", path)
    monkeypatch.setenv("PBEM_GAMES_MOVE_DEADLINE_HOURS", "24")
    monkeypatch.setenv("PBEM_BASE_URL", "https://pbem.example.org/")
    app = create_app({"INSTANCE_PATH": str(tmp_path / "instance"), "SECRET_KEY": "s"})
    assert app.config["GAMES_DIGEST_HOURS"] == 6
    assert app.config["GAMES_MOVE_DEADLINE_HOURS"] == 24
    assert app.config["BASE_URL"] == "https://pbem.example.org/"
    instance = tmp_path / "instance"
    assert app.config["DATABASE_URL"] == f"sqlite:///{instance / 'pbem.sqlite3'}"
    assert app.config["MAIL_FOLDER"] == str(instance / "mail")


# --- bad input: one ConfigError naming the setting and where it came from ---------------------

FILE_CASES = [
    # (TOML text, words the message must contain)
    ('[mail]\ncolour = "red"\n', ["unknown setting", "[mail] colour"]),
    ('nonsense = 1\n', ["unknown setting", "nonsense"]),
    ('[serve]\nport = "eighty"\n', ["SERVE_PORT", "[serve] port", "whole number"]),
    ('[serve]\nport = "8080"\n', ["SERVE_PORT", "[serve] port", "whole number"]),
    ('[serve]\nport = 80.5\n', ["SERVE_PORT", "whole number"]),
    ('[serve]\nport = true\n', ["SERVE_PORT", "whole number"]),
    ('[mail]\nmailbox_page = "maybe"\n', ["MAIL_MAILBOX_PAGE", "true or false"]),
    ('[mail]\nmailbox_page = 1\n', ["MAIL_MAILBOX_PAGE", "true or false"]),
    ('[smtp]\nhost = 25\n', ["SMTP_HOST", "[smtp] host", "text"]),
    ('[mail]\nbackend = "foo"\n', ["MAIL_BACKEND", "[mail] backend", "local, smtp", "'foo'"]),
    ('[smtp]\nsecurity = "ssl"\n', ["SMTP_SECURITY", "starttls, tls, none"]),
    ('[serve]\nport = 0\n', ["SERVE_PORT", "1 to 65535"]),
    ('[serve]\nport = 70000\n', ["SERVE_PORT", "1 to 65535"]),
    ('max_content_length = 10\n', ["MAX_CONTENT_LENGTH", "at least 1024"]),
    ('base_url = "pbem.example.org"\n', ["BASE_URL", "base_url in", "http:// or https://"]),
    ('[mail.extra]\nx = 1\n', ["unknown setting", "[mail] extra"]),
]


@pytest.mark.parametrize("text,words", FILE_CASES)
def test_a_bad_file_value_is_refused_by_name_and_file(tmp_path, text, words):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_settings(environ={"PBEM_CONFIG": path})
    message = str(caught.value)
    assert path in message
    for word in words:
        assert word in message
    assert "\n" not in message


ENV_CASES = [
    ("PBEM_MAIL_COLOUR", "red", ["unknown setting", "PBEM_MAIL_COLOUR", "environment"]),
    ("PBEM_SERVE_PORT", "eighty", ["SERVE_PORT", "whole number", "'eighty'"]),
    ("PBEM_SERVE_PORT", "0", ["SERVE_PORT", "1 to 65535"]),
    ("PBEM_MAIL_MAILBOX_PAGE", "maybe", ["MAIL_MAILBOX_PAGE", "true or false", "'maybe'"]),
    ("PBEM_MAIL_BACKEND", "foo", ["MAIL_BACKEND", "local, smtp"]),
    ("PBEM_BASE_URL", "ftp://example.org", ["BASE_URL", "http:// or https://"]),
    ("PBEM_MAIL_MAX_ATTEMPTS", "-1", ["MAIL_MAX_ATTEMPTS", "at least 1"]),
]


@pytest.mark.parametrize("key,value,words", ENV_CASES)
def test_a_bad_environment_value_is_refused_by_name_and_variable(key, value, words):
    with pytest.raises(ConfigError) as caught:
        load_settings(environ={key: value})
    message = str(caught.value)
    assert key in message
    for word in words:
        assert word in message


def test_a_bad_value_is_refused_even_when_a_later_source_would_replace_it(tmp_path):
    path = write(tmp_path, "[serve]\nport = 0\n")
    with pytest.raises(ConfigError, match=r"SERVE_PORT \(from \[serve\] port in "):
        load_settings(environ={"PBEM_CONFIG": path, "PBEM_SERVE_PORT": "8000"})


def test_a_wrong_override_is_refused_too():
    with pytest.raises(ConfigError, match=r"MAIL_BACKEND \(from the test configuration\)"):
        load_settings(environ={}, overrides={"MAIL_BACKEND": "pigeon"})


def test_secrets_are_not_repeated_in_messages(tmp_path):
    path = write(tmp_path, "[smtp]\npassword = 123456789\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(environ={"PBEM_CONFIG": path})
    assert "SMTP_PASSWORD" in str(caught.value) and "123456789" not in str(caught.value)


def test_a_missing_config_file_is_named(tmp_path):
    missing = str(tmp_path / "nowhere.toml")
    with pytest.raises(ConfigError) as caught:
        load_settings(environ={"PBEM_CONFIG": missing})
    message = str(caught.value)
    assert missing in message and "PBEM_CONFIG" in message
    assert "No such file" in message


def test_a_config_path_that_is_a_folder_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the config file") as caught:
        load_settings(environ={"PBEM_CONFIG": str(tmp_path)})
    assert str(tmp_path) in str(caught.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="file permissions do not stop root")
def test_an_unreadable_config_file_is_refused(tmp_path):
    path = write(tmp_path, "[serve]\nport = 6000\n")
    os.chmod(path, 0)
    with pytest.raises(ConfigError, match="cannot read the config file .*Permission denied"):
        load_settings(environ={"PBEM_CONFIG": path})


def test_invalid_toml_is_refused_with_its_place(tmp_path):
    path = write(tmp_path, "[serve]\nport = \n")
    with pytest.raises(ConfigError) as caught:
        load_settings(environ={"PBEM_CONFIG": path})
    message = str(caught.value)
    assert path in message and "not valid TOML" in message and "line 2" in message


def test_a_config_file_that_is_not_utf8_is_refused_in_one_line(tmp_path):
    """Found by fuzzing: a file saved as Latin-1 ended in a UnicodeDecodeError traceback."""
    path = tmp_path / "pbem.toml"
    path.write_bytes('[mail]\nfrom = "K\u00f6nig <koenig@example.org>"\n'.encode("latin-1"))
    with pytest.raises(ConfigError) as refused:
        load_settings(environ={"PBEM_CONFIG": str(path)})
    assert str(refused.value) == (f"the config file {path} is not valid TOML: it must be UTF-8 "
                                  "text, and byte 17 is not (save it as UTF-8)")


def test_create_app_refuses_bad_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("PBEM_SMTP_SECURITY", "maybe")
    with pytest.raises(ConfigError, match="SMTP_SECURITY"):
        create_app({"INSTANCE_PATH": str(tmp_path / "instance")})
    assert not (tmp_path / "instance").exists(), "nothing is made before the settings are good"


def clean_environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PBEM_", "FLASK_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**env, **extra}


@pytest.mark.parametrize("command", [
    [sys.executable, "-m", "pbem", "send-mail"],
    [sys.executable, "-m", "flask", "--app", "pbem", "send-mail"],
])
def test_the_command_line_reports_a_bad_setting_in_one_line(tmp_path, command):
    instance = tmp_path / "instance"
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          check=False, env=clean_environment(PBEM_MAIL_BACKEND="carrier-pigeon",
                                                PBEM_INSTANCE_PATH=str(instance)))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        ("Error: MAIL_BACKEND (from PBEM_MAIL_BACKEND) must be one of local, smtp; "
         "it is 'carrier-pigeon'")]
    assert not instance.exists()


def test_help_works_despite_a_bad_setting(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pbem", "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False,
                          env=clean_environment(PBEM_SERVE_PORT="many",
                                                PBEM_INSTANCE_PATH=str(tmp_path / "i")))
    assert done.returncode == 0
    assert "Traceback" not in done.stderr, done.stderr
    assert "send-mail" in done.stdout and "init-db" in done.stdout


# --- the instance's secret key ----------------------------------------------------------------

def test_the_instance_secret_is_made_once_private_and_shared(tmp_path):
    instance = tmp_path / "instance"
    first = create_app({"INSTANCE_PATH": str(instance)})
    key_file = instance / "secret_key"
    assert key_file.is_file()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    made = key_file.stat().st_mtime_ns, key_file.read_text()
    assert re.fullmatch(r"[0-9a-f]{64}\n?", made[1])
    second = create_app({"INSTANCE_PATH": str(instance)})
    assert first.config["SECRET_KEY"] == second.config["SECRET_KEY"] == made[1].strip()
    assert (key_file.stat().st_mtime_ns, key_file.read_text()) == made, "not made again"
    assert sorted(p.name for p in instance.iterdir() if p.name != "translations") == [
        "secret_key"], "no temporary left"
    other = create_app({"INSTANCE_PATH": str(tmp_path / "other")})
    assert other.config["SECRET_KEY"] != first.config["SECRET_KEY"]


def test_a_secret_from_the_environment_makes_no_file(tmp_path, monkeypatch):
    monkeypatch.setenv("PBEM_SECRET_KEY", "from-the-environment")
    app = create_app({"INSTANCE_PATH": str(tmp_path / "instance")})
    assert app.config["SECRET_KEY"] == "from-the-environment"
    assert not (tmp_path / "instance" / "secret_key").exists()


def test_session_cookies_are_lax_and_secure_behind_https(tmp_path):
    """The session cookie is SameSite=Lax, HttpOnly, and Secure when the site is https."""
    from pbem import create_app

    plain = create_app({"INSTANCE_PATH": str(tmp_path / "a"), "SECRET_KEY": "k"})
    https = create_app({"INSTANCE_PATH": str(tmp_path / "b"), "SECRET_KEY": "k",
                        "BASE_URL": "https://games.example.org"})
    assert plain.config["SESSION_COOKIE_SAMESITE"] == "Lax"
    assert plain.config["SESSION_COOKIE_HTTPONLY"] is True
    assert plain.config["SESSION_COOKIE_SECURE"] is False
    assert https.config["SESSION_COOKIE_SECURE"] is True
