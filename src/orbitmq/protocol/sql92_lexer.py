"""The SQL92 selector's tokenizer (protocol/sql92.py): keywords, identifiers, numbers, quoted strings,
symbols; comments skipped.

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from orbitmq.protocol.sql92_values import SqlParseError

KEYWORDS: Final = frozenset({"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS"})
_SYMBOLS: Final = ("<>", ">=", "<=", "=", ">", "<", "(", ")", ",", "+", "-")
_WHITESPACE: Final = " \t\n\r\f"


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "keyword" | "id" | "int" | "float" | "string" | "symbol" | "eof"
    text: str  # keyword upper-cased; string literal unquoted; else the source text
    pos: int


def _is_id_start(c: str) -> bool:
    return ("a" <= c <= "z") or ("A" <= c <= "Z") or c in "_$"


def _is_id_part(c: str) -> bool:
    return _is_id_start(c) or "0" <= c <= "9"


def _digits(text: str, i: int) -> int:
    while i < len(text) and "0" <= text[i] <= "9":
        i += 1
    return i


def _exponent(text: str, i: int) -> int:
    """End of an exponent (`E[+-]digits`) starting at i, or i when there is none."""
    if i < len(text) and text[i] in "eE":
        j = i + 1
        if j < len(text) and text[j] in "+-":
            j += 1
        k = _digits(text, j)
        if k > j:
            return k
    return i


class Tokenizer:
    """Produces tokens on demand, as RocketMQ's generated token manager does (so text after the
    expression is never examined)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def _skip(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c in _WHITESPACE:
                self.pos += 1
            elif text.startswith("--", self.pos):
                # A line comment needs its line end (RocketMQ's LINE_COMMENT token does too).
                ends = [e for e in (text.find("\n", self.pos), text.find("\r", self.pos)) if e >= 0]
                if not ends:
                    return
                self.pos = min(ends) + 1
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise SqlParseError(f"unterminated comment at position {self.pos}")
                self.pos = end + 2
            else:
                return

    def next(self) -> Token:
        self._skip()
        text, start = self.text, self.pos
        if start >= len(text):
            return Token("eof", "", start)
        c = text[start]
        if c == "'":
            return self._string(start)
        if "0" <= c <= "9" or (c == "." and start + 1 < len(text) and "0" <= text[start + 1] <= "9"):
            return self._number(start)
        if _is_id_start(c):
            end = start + 1
            while end < len(text) and _is_id_part(text[end]):
                end += 1
            self.pos = end
            word = text[start:end]
            if word.upper() in KEYWORDS:
                return Token("keyword", word.upper(), start)
            return Token("id", word, start)
        for sym in _SYMBOLS:
            if text.startswith(sym, start):
                self.pos = start + len(sym)
                return Token("symbol", sym, start)
        raise SqlParseError(f"unexpected character {c!r} at position {start}")

    def _string(self, start: int) -> Token:
        text, i, out = self.text, start + 1, []
        while i < len(text):
            if text[i] == "'":
                if text.startswith("''", i):
                    out.append("'")
                    i += 2
                    continue
                self.pos = i + 1
                return Token("string", "".join(out), start)
            out.append(text[i])
            i += 1
        raise SqlParseError(f"unterminated string literal at position {start}")

    def _number(self, start: int) -> Token:
        """The longest of RocketMQ's DECIMAL_LITERAL and FLOATING_POINT_LITERAL matches."""
        text = self.text
        int_end = _digits(text, start)
        float_end = -1
        if int_end < len(text) and text[int_end] == ".":
            float_end = _exponent(text, _digits(text, int_end + 1))
        elif int_end > start:
            exp_end = _exponent(text, int_end)
            if exp_end > int_end:
                float_end = exp_end
        if float_end > 0:
            self.pos = float_end
            return Token("float", text[start:float_end], start)
        # DECIMAL_LITERAL: "0" alone, or a non-zero digit then digits, with an optional L.
        end = start + 1 if text[start] == "0" else int_end
        if end < len(text) and text[end] in "lL" and text[start] != "0":
            end += 1
        self.pos = end
        return Token("int", text[start:end], start)
