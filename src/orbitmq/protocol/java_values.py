"""Header field values read the way Apache RocketMQ reads them: with Java's own parsers.

RocketMQ decodes every custom header field with `Integer.parseInt`, `Long.parseLong` and
`Boolean.parseBoolean` (RemotingCommand.decodeCommandCustomHeader), so whatever those accept is what a
field means, whichever client wrote it. The C++-core clients write booleans as "0"/"1"; Java reads both
as false, and so must we. Python's own `int()` is more liberal than Java (spaces, underscores), so it is
only called once the text has the shape Java accepts.

- `parse_boolean`: true only for "true" in any letter case; every other string ("1", "", "yes", " true")
  is false. It never fails.
- `parse_int` / `parse_long`: an optional '+' or '-', then one or more decimal digits (any Unicode
  decimal digit, as `Character.digit` takes them), within the 32/64-bit range; anything else raises
  `JavaNumberFormatError` (a ValueError), as Java throws NumberFormatException.
"""

from __future__ import annotations

from typing import Final

# Java's int and long ranges, as Final literals: compiled modules that import them get the numbers
# inlined (no module attribute lookup per use).
INT_MIN: Final = -2147483648
INT_MAX: Final = 2147483647
LONG_MIN: Final = -9223372036854775808
LONG_MAX: Final = 9223372036854775807


class JavaNumberFormatError(ValueError):
    """The text is not a number Java's Integer.parseInt / Long.parseLong would accept."""


def parse_boolean(text: str | None) -> bool:
    """Java's Boolean.parseBoolean: "true" ignoring case is true, everything else (None too) false."""
    return text is not None and len(text) == 4 and text.lower() == "true"


def _parse(text: str, low: int, high: int, what: str) -> int:
    digits = text[1:] if text[:1] in ("-", "+") else text
    # str.isdecimal is exactly the Unicode Nd category, which is what Character.digit(c, 10) accepts
    if not digits.isdecimal():
        raise JavaNumberFormatError(f"for input string: {text[:64]!r}")
    value = int(text)
    if not low <= value <= high:
        raise JavaNumberFormatError(f"for input string: {text[:64]!r} (out of {what} range)")
    return value


def parse_int(text: str) -> int:
    """Java's Integer.parseInt(text, 10)."""
    return _parse(text, INT_MIN, INT_MAX, "int")


def parse_long(text: str) -> int:
    """Java's Long.parseLong(text, 10)."""
    return _parse(text, LONG_MIN, LONG_MAX, "long")
