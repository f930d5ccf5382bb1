"""Mail addresses written for the outbox (pbem.services.mail.formatted_address): a plain address and
name written directly, exactly as the standard library's Address writes them."""

from __future__ import annotations

from email.headerregistry import Address

import pytest

from pbem.services.mail import formatted_address, one_line

NAMES = ["Player 1", "Anna", "", "Jürgen Groß", "J. Smith", 'Ann "the fox" Lee', "Bob (club)",
         "a,b", "x:y", "semi;colon", "at@name", "back\\slash", "[br]", "tab\there", "<angle>",
         "  spaced   out  ", "日本語の名前", "line\u2028break", "O'Neil", "dash-name_under"]
EMAILS = ["p1@example.org", "g100p2@example.org", "first.last@sub.example.co.uk",
          "a+tag@example.org", "x_y-z@ex-ample.org", "O'Neil@example.org", "weird..dots@example.org",
          ".lead@example.org", "trail.@example.org", "quoted\"x@example.org",
          "jürgen@example.org", "user@[127.0.0.1]", "user@localhost"]


def test_an_address_is_written_as_the_standard_library_writes_it():
    """Every name and address, plain or not, gives the same text as Address does (and an
    address the library refuses is refused all the same)."""
    for name in NAMES:
        for email in EMAILS:
            try:
                expected = str(Address(display_name=one_line(name), addr_spec=email))
            except Exception as exc:
                with pytest.raises(type(exc)):
                    formatted_address(name, email)
                continue
            assert formatted_address(name, email) == expected, (name, email)
