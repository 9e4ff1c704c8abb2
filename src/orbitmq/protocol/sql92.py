"""RocketMQ's SQL92 message selector (`MessageSelector.bySql`): tokenizer, parser and evaluator.

The language is the one of RocketMQ 4.9's filter module (a JMS-selector subset): comparisons
(`= <> > >= < <=`), `[NOT] BETWEEN x AND y`, `prop [NOT] IN ('a', 'b')`, `IS [NOT] NULL`,
`AND`/`OR`/`NOT`, unary `+`/`-`, parentheses, string literals in single quotes (`''` is a quote), decimal
integers (`5`, `5L`), floats (`1.5`, `.5`, `5E3`), `TRUE`/`FALSE`/`NULL`. Keywords ignore case;
identifiers are `[A-Za-z_$][A-Za-z0-9_$]*` and name a message property (user properties and system
ones such as TAGS or KEYS). `--` line comments and `/* */` block comments are skipped.

Semantics follow RocketMQ, because a selector must select the same messages on either broker:

- Values are Java's: Integer (a literal within 32 bits), Long, Double, String, Boolean, null. Property
  values are always strings. Comparing a string with a number converts the string with Java's
  `Integer.valueOf` / `Long.valueOf` / `Double.valueOf` (to the other side's type); with a boolean,
  `Boolean.valueOf`. A string that does not convert is an evaluation error, and an evaluation error
  anywhere makes the whole message not match (RocketMQ logs it and skips the message).
- `>`, `>=`, `<`, `<=` between two strings (two properties) compare them as doubles.
- Three-valued logic: a comparison with an absent property is NULL (unknown); `AND`/`OR`/`NOT` propagate
  it as SQL does; a message matches only when the whole expression is TRUE. `x = NULL` is refused at
  parse time (use `IS NULL`).
- Incomparable types (a boolean against a number) compare as "less than", as RocketMQ's comparator does.
- Parse-time checks as RocketMQ's: `<`-family operands may not be string/boolean/NULL literals or boolean
  expressions; `BETWEEN` literal bounds must be ordered; `IN` needs a property on its left and string
  literals; the whole selector must be a boolean expression (or a bare property, read as a boolean).
- Like RocketMQ's parser, parsing stops after the first complete expression: trailing tokens are not
  read (`a > 5 junk` selects as `a > 5`).

orbitmq's own guard: nesting (parentheses, and chains of AND/OR) is bounded by `max_depth`, so a hostile
selector cannot exhaust the interpreter's stack (broker config `filterExpressionMaxDepth`).

Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from orbitmq.protocol.java_values import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    JavaNumberFormatError,
    parse_boolean,
    parse_int,
    parse_long,
)

DEFAULT_MAX_DEPTH: Final = 100


class JLong(int):
    """A Java Long (a plain `int` is a Java Integer): the two convert strings differently."""

    __slots__ = ()


# A Java value: None (null), bool (Boolean), int (Integer; a JLong is a Long), float (Double), str.
Value = None | bool | int | float | str


class SqlParseError(ValueError):
    """The selector is not valid RocketMQ SQL92; the message says where and why."""


class SqlEvalError(Exception):
    """Evaluating the selector failed for this message (RocketMQ: the message does not match)."""


# ---- Java value semantics -------------------------------------------------------------------------

# Java's Double.valueOf grammar (FloatingDecimal): decimal or hex significand, optional exponent, an
# optional f/F/d/D suffix, NaN/Infinity, after trimming characters <= U+0020. A regex checks the shape of
# one number here; the selector itself is parsed by hand below.
_JAVA_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?", re.ASCII)
_JAVA_HEX = re.compile(
    r"[+-]?0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?", re.ASCII
)


def java_double(text: str) -> float:
    """Java's Double.valueOf(String); raises JavaNumberFormatError as Java throws."""
    s = text.strip("".join(chr(c) for c in range(0x21)))
    body = s[1:] if s[:1] in "+-" else s
    if body in ("NaN", "Infinity"):
        value = math.nan if body == "NaN" else math.inf
        return -value if s.startswith("-") else value
    if _JAVA_DECIMAL.fullmatch(s):
        return float(s.rstrip("fFdD"))
    if _JAVA_HEX.fullmatch(s):
        return float.fromhex(s.rstrip("fFdD"))
    raise JavaNumberFormatError(f"for input string: {text[:64]!r}")


def _java_class(v: object) -> str:
    t = type(v)
    if t is bool:
        return "Boolean"
    if t is int:
        return "Integer"
    if t is JLong:
        return "Long"
    if t is float:
        return "Double"
    return "String"


def _double_compare(a: float, b: float) -> int:
    """Java's Double.compare: NaN is greater than everything (and equal to itself), -0.0 < 0.0."""
    if a < b:
        return -1
    if a > b:
        return 1
    a_nan, b_nan = math.isnan(a), math.isnan(b)
    if a_nan or b_nan:
        return int(a_nan) - int(b_nan)
    # numerically equal: only the zeros' signs tell them apart
    return int(math.copysign(1.0, b) < 0) - int(math.copysign(1.0, a) < 0)


def _compare_same(lv: object, rv: object) -> int:
    if isinstance(lv, float):
        assert isinstance(rv, float)
        return _double_compare(lv, rv)
    if isinstance(lv, str):
        assert isinstance(rv, str)
        # Java compares UTF-16 code units; only equality matters to the callers, which is the same.
        return (lv > rv) - (lv < rv)
    assert isinstance(lv, int) and isinstance(rv, int)
    return (lv > rv) - (lv < rv)


def _convert(text: str, to: str) -> Value:
    try:
        if to == "Boolean":
            return parse_boolean(text)
        if to == "Integer":
            return parse_int(text)
        if to == "Long":
            return JLong(parse_long(text))
        return java_double(text)
    except JavaNumberFormatError as exc:
        raise SqlEvalError(f"cannot convert {text[:64]!r} to {to}: {exc}") from None


def java_compare(lv: Value, rv: Value) -> int:
    """RocketMQ's ComparisonExpression.__compare (with string conversion on): widen numbers, convert a
    string to the other side's type, answer -1 for incomparable types."""
    lc, rc = _java_class(lv), _java_class(rv)
    if lc != rc:
        if lc == "Boolean":
            if rc == "String":  # RocketMQ casts the Boolean to String here and fails
                raise SqlEvalError(f"cannot compare boolean {lv} with string {rv!r}")
            return -1
        if lc == "String":
            assert isinstance(lv, str)
            lv = _convert(lv, rc)
        elif rc == "String":
            assert isinstance(rv, str)
            if lc == "Boolean":  # pragma: no cover -- handled above
                return -1
            rv = _convert(rv, lc)
        elif rc == "Boolean":
            return -1
        elif lc == "Double" or rc == "Double":
            assert isinstance(lv, (int, float)) and isinstance(rv, (int, float))
            lv, rv = float(lv), float(rv)
        # Integer against Long: Python ints compare exactly, which is what widening gives.
    return _compare_same(lv, rv)


def java_equals(lv: Value, rv: Value) -> bool:
    """Object.equals of two Java values of these classes."""
    if _java_class(lv) != _java_class(rv):
        return False
    if isinstance(lv, float) and isinstance(rv, float):
        return _double_compare(lv, rv) == 0
    return lv == rv


def _negate(v: Value) -> Value:
    if type(v) is int:
        return v if v == INT_MIN else -v  # Java int negation wraps at MIN_VALUE
    if type(v) is JLong:
        return JLong(v if v == LONG_MIN else -v)
    if type(v) is float:
        return -v
    return None  # RocketMQ: negating a non-number is null


# ---- the expression tree ----------------------------------------------------------------------------

Props = Mapping[str, str]


class Expr:
    """A node. `is_boolean` is RocketMQ's BooleanExpression: usable under AND/OR/NOT and at the top."""

    is_boolean = False
    depth = 1

    def evaluate(self, props: Props) -> Value:
        raise NotImplementedError


class Constant(Expr):
    def __init__(self, value: Value) -> None:
        self.value = value
        # TRUE, FALSE and NULL are RocketMQ's BooleanConstantExpression
        self.is_boolean = value is None or isinstance(value, bool)

    def evaluate(self, props: Props) -> Value:
        return self.value

    def __str__(self) -> str:
        if self.value is None:
            return "NULL"
        if isinstance(self.value, bool):
            return "TRUE" if self.value else "FALSE"
        if isinstance(self.value, str):
            return "'" + self.value.replace("'", "''") + "'"
        return repr(self.value)


class Property(Expr):
    def __init__(self, name: str) -> None:
        self.name = name

    def evaluate(self, props: Props) -> Value:
        return props.get(self.name)

    def __str__(self) -> str:
        return self.name


class _Node(Expr):
    """An operator node; its depth is one more than its deepest operand's."""

    def __init__(self, *children: Expr) -> None:
        self.depth = 1 + max((c.depth for c in children), default=0)


class Negate(_Node):
    def __init__(self, operand: Expr) -> None:
        super().__init__(operand)
        self.operand = operand

    def evaluate(self, props: Props) -> Value:
        return _negate(self.operand.evaluate(props))

    def __str__(self) -> str:
        return f"(- {self.operand})"


class BoolCast(_Node):
    """A bare property used as a boolean: null stays null, a non-Boolean (any string) is FALSE."""

    is_boolean = True

    def __init__(self, operand: Expr) -> None:
        super().__init__(operand)
        self.operand = operand

    def evaluate(self, props: Props) -> Value:
        v = self.operand.evaluate(props)
        if v is None:
            return None
        return v if isinstance(v, bool) else False

    def __str__(self) -> str:
        return str(self.operand)


class Not(_Node):
    is_boolean = True

    def __init__(self, operand: Expr) -> None:
        super().__init__(operand)
        self.operand = operand

    def evaluate(self, props: Props) -> Value:
        v = self.operand.evaluate(props)
        return None if v is None else not v

    def __str__(self) -> str:
        return f"(NOT {self.operand})"


class And(_Node):
    is_boolean = True

    def __init__(self, left: Expr, right: Expr) -> None:
        super().__init__(left, right)
        self.left, self.right = left, right

    def evaluate(self, props: Props) -> Value:
        lv = self.left.evaluate(props)
        if lv is False:
            return False
        rv = self.right.evaluate(props)
        if rv is False:
            return False
        return None if lv is None or rv is None else True

    def __str__(self) -> str:
        return f"({self.left} AND {self.right})"


class Or(_Node):
    is_boolean = True

    def __init__(self, left: Expr, right: Expr) -> None:
        super().__init__(left, right)
        self.left, self.right = left, right

    def evaluate(self, props: Props) -> Value:
        lv = self.left.evaluate(props)
        if lv is True:
            return True
        rv = self.right.evaluate(props)
        if rv is True:
            return True
        return None if lv is None or rv is None else False

    def __str__(self) -> str:
        return f"({self.left} OR {self.right})"


class Equal(_Node):
    """`=` and `IS NULL` (RocketMQ's doCreateEqual, including its asymmetric null rule)."""

    is_boolean = True

    def __init__(self, left: Expr, right: Expr) -> None:
        super().__init__(left, right)
        self.left, self.right = left, right

    def evaluate(self, props: Props) -> Value:
        lv = self.left.evaluate(props)
        rv = self.right.evaluate(props)
        if (lv is None) != (rv is None):
            return None if lv is None else False
        if lv is None or java_equals(lv, rv):
            return True
        return java_compare(lv, rv) == 0

    def __str__(self) -> str:
        return f"({self.left} = {self.right})"


_ORDER: dict[str, Callable[[int], bool]] = {
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
}


class Order(_Node):
    """`>`, `>=`, `<`, `<=`: null if either side is null; two strings compare as doubles."""

    is_boolean = True

    def __init__(self, op: str, left: Expr, right: Expr) -> None:
        super().__init__(left, right)
        self.op, self.left, self.right = op, left, right
        self._test = _ORDER[op]

    def evaluate(self, props: Props) -> Value:
        lv = self.left.evaluate(props)
        if lv is None:
            return None
        rv = self.right.evaluate(props)
        if rv is None:
            return None
        if isinstance(lv, str) and isinstance(rv, str):
            ls, rs = lv, rv
            try:
                lv, rv = java_double(ls), java_double(rs)
            except JavaNumberFormatError:
                raise SqlEvalError(
                    f"it is illegal to compare strings by {self.op!r}: {ls[:64]!r}, {rs[:64]!r}"
                ) from None
        return self._test(java_compare(lv, rv))

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


class In(_Node):
    is_boolean = True

    def __init__(self, prop: Property, values: list[str], negated: bool) -> None:
        super().__init__(prop)
        self.prop, self.values, self.negated = prop, frozenset(values), negated
        self._shown = values

    def evaluate(self, props: Props) -> Value:
        v = self.prop.evaluate(props)
        if not isinstance(v, str):
            return None
        return (v in self.values) != self.negated

    def __str__(self) -> str:
        items = ", ".join(str(Constant(s)) for s in self._shown)
        return f"{self.prop} {'NOT IN' if self.negated else 'IN'} ({items})"


# ---- tokenizer --------------------------------------------------------------------------------------

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


# ---- parser -----------------------------------------------------------------------------------------


def _check_orderable(expr: Expr) -> None:
    """RocketMQ's checkLessThanOperand: only numbers (or non-boolean expressions) may be ordered."""
    if isinstance(expr, Constant):
        if isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool):
            return
        raise SqlParseError(f"value {expr} cannot be compared")
    if expr.is_boolean:
        raise SqlParseError(f"value {expr} cannot be compared")


def _check_equal_operand(expr: Expr) -> None:
    if isinstance(expr, Constant) and expr.value is None:
        raise SqlParseError("NULL cannot be compared with '=' or '<>' (use IS NULL)")


class Parser:
    """Recursive descent over RocketMQ's grammar (SelectorParser.jj), building the tree above."""

    def __init__(self, text: str, max_depth: int) -> None:
        self.tokens = Tokenizer(text)
        self.max_depth = max_depth
        self._ahead: list[Token] = []
        self._nesting = 0

    def peek(self, k: int = 0) -> Token:
        while len(self._ahead) <= k:
            self._ahead.append(self.tokens.next())
        return self._ahead[k]

    def take(self) -> Token:
        tok = self.peek()
        self._ahead.pop(0)
        return tok

    def accept(self, kind: str, text: str) -> bool:
        tok = self.peek()
        if tok.kind == kind and tok.text == text:
            self._ahead.pop(0)
            return True
        return False

    def expect(self, kind: str, text: str) -> Token:
        tok = self.peek()
        if tok.kind != kind or tok.text != text:
            raise SqlParseError(f"expected {text!r} at position {tok.pos}, found {_describe(tok)}")
        return self.take()

    def _bounded(self, expr: Expr) -> Expr:
        if expr.depth > self.max_depth:
            raise SqlParseError(f"the expression nests deeper than {self.max_depth} levels")
        return expr

    def _as_boolean(self, expr: Expr) -> Expr:
        if expr.is_boolean:
            return expr
        if isinstance(expr, Property):
            return self._bounded(BoolCast(expr))
        raise SqlParseError(f"expression will not result in a boolean value: {expr}")

    # selector := or
    def selector(self) -> Expr:
        return self._as_boolean(self.or_expr())

    def or_expr(self) -> Expr:
        left = self.and_expr()
        while self.accept("keyword", "OR"):
            right = self.and_expr()
            left = self._bounded(Or(self._as_boolean(left), self._as_boolean(right)))
        return left

    def and_expr(self) -> Expr:
        left = self.equality()
        while self.accept("keyword", "AND"):
            right = self.equality()
            left = self._bounded(And(self._as_boolean(left), self._as_boolean(right)))
        return left

    def equality(self) -> Expr:
        left = self.comparison()
        while True:
            tok = self.peek()
            if tok.kind == "symbol" and tok.text in ("=", "<>"):
                self.take()
                right = self.comparison()
                _check_equal_operand(left)
                _check_equal_operand(right)
                if (
                    isinstance(left, Constant)
                    and isinstance(right, Constant)
                    and left.is_boolean
                    and not right.is_boolean
                ):
                    raise SqlParseError(f"{left} cannot be compared with {right}")
                eq: Expr = Equal(left, right)
                left = self._bounded(eq if tok.text == "=" else Not(eq))
            elif tok.kind == "keyword" and tok.text == "IS":
                self.take()
                negated = self.accept("keyword", "NOT")
                self.expect("keyword", "NULL")
                is_null: Expr = Equal(left, Constant(None))
                left = self._bounded(Not(is_null) if negated else is_null)
            else:
                return left

    def comparison(self) -> Expr:
        left = self.unary()
        while True:
            tok = self.peek()
            if tok.kind == "symbol" and tok.text in _ORDER:
                self.take()
                right = self.unary()
                _check_orderable(left)
                _check_orderable(right)
                left = self._bounded(Order(tok.text, left, right))
                continue
            negated = False
            if tok.kind == "keyword" and tok.text == "NOT":
                after = self.peek(1)
                if not (after.kind == "keyword" and after.text in ("BETWEEN", "IN")):
                    return left
                self.take()
                negated = True
                tok = self.peek()
            if tok.kind == "keyword" and tok.text == "BETWEEN":
                self.take()
                low = self.unary()
                self.expect("keyword", "AND")
                high = self.unary()
                left = self._between(left, low, high, negated)
            elif tok.kind == "keyword" and tok.text == "IN":
                self.take()
                left = self._in(left, negated)
            else:
                return left

    def _between(self, value: Expr, low: Expr, high: Expr, negated: bool) -> Expr:
        if negated:
            for e in (value, low, high):
                _check_orderable(e)
            return self._bounded(Or(Order("<", value, low), Order(">", value, high)))
        if isinstance(low, Constant) and isinstance(high, Constant):
            if low.value is None or high.value is None:
                raise SqlParseError("illegal values of BETWEEN: the bounds cannot be NULL")
            try:
                ordered = java_compare(high.value, low.value) >= 0
            except SqlEvalError as exc:
                raise SqlParseError(f"illegal values of BETWEEN: {exc}") from None
            if not ordered:
                raise SqlParseError(
                    f"illegal values of BETWEEN: the low value ({low}) must be less than or equal to "
                    f"the high value ({high})"
                )
        for e in (value, low, high):
            _check_orderable(e)
        return self._bounded(And(Order(">=", value, low), Order("<=", value, high)))

    def _in(self, left: Expr, negated: bool) -> Expr:
        if not isinstance(left, Property):
            raise SqlParseError(f"expected a property on the left of IN, got: {left}")
        self.expect("symbol", "(")
        values = [self._string_literal()]
        while self.accept("symbol", ","):
            values.append(self._string_literal())
        self.expect("symbol", ")")
        return self._bounded(In(left, values, negated))

    def _string_literal(self) -> str:
        tok = self.peek()
        if tok.kind != "string":
            raise SqlParseError(f"expected a string literal at position {tok.pos}, found {_describe(tok)}")
        return self.take().text

    def unary(self) -> Expr:
        tok = self.peek()
        if tok.kind == "symbol" and tok.text == "+":
            self.take()
            return self._nested(self.unary)
        if tok.kind == "symbol" and tok.text == "-":
            self.take()
            return self._bounded(Negate(self._nested(self.unary)))
        if tok.kind == "keyword" and tok.text == "NOT":
            self.take()
            return self._bounded(Not(self._as_boolean(self._nested(self.unary))))
        return self.primary()

    def _nested(self, parse: Callable[[], Expr]) -> Expr:
        """Count syntactic nesting too, so `((((...` or `- - - -...` is refused before the stack is."""
        self._nesting += 1
        if self._nesting > self.max_depth:
            raise SqlParseError(f"the expression nests deeper than {self.max_depth} levels")
        try:
            return parse()
        finally:
            self._nesting -= 1

    def primary(self) -> Expr:
        tok = self.take()
        if tok.kind == "string":
            return Constant(tok.text)
        if tok.kind == "int":
            return Constant(_decimal(tok.text))
        if tok.kind == "float":
            return Constant(_float(tok.text))
        if tok.kind == "keyword" and tok.text in ("TRUE", "FALSE", "NULL"):
            return Constant({"TRUE": True, "FALSE": False, "NULL": None}[tok.text])
        if tok.kind == "id":
            return Property(tok.text)
        if tok.kind == "symbol" and tok.text == "(":
            inner = self._nested(self.or_expr)
            self.expect("symbol", ")")
            return inner
        raise SqlParseError(f"unexpected {_describe(tok)} at position {tok.pos}")


def _describe(tok: Token) -> str:
    if tok.kind == "eof":
        return "the end of the expression"
    if tok.kind == "string":
        return f"string {str(Constant(tok.text))[:40]}"
    return repr(tok.text[:40])


def _decimal(text: str) -> Value:
    """ConstantExpression.createFromDecimal: a Long, narrowed to Integer when it fits 32 bits."""
    digits = text.rstrip("lL")
    value = int(digits)
    if value > LONG_MAX:
        raise SqlParseError(f"number {text} is out of the long range")
    return value if INT_MIN <= value <= INT_MAX else JLong(value)


def _float(text: str) -> float:
    """ConstantExpression.createFloat: must be a finite double not below Double.MIN_VALUE."""
    value = float(text)
    if math.isinf(value):
        raise SqlParseError(f"{text} is greater than the largest double")
    if value < 5e-324:
        raise SqlParseError(f"{text} is less than the smallest positive double (4.9E-324)")
    return value


# ---- the public face --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled selector. `matches` is the broker's decision for one message's properties."""

    expression: str
    root: Expr

    def evaluate(self, props: Props) -> Value:
        """TRUE, FALSE or None (unknown); raises SqlEvalError as RocketMQ's evaluation throws."""
        return self.root.evaluate(props)

    def matches(self, props: Props) -> bool:
        try:
            return self.root.evaluate(props) is True
        except (SqlEvalError, RecursionError):
            return False


def compile_selector(expression: str, *, max_depth: int = DEFAULT_MAX_DEPTH) -> Selector:
    """Parse `expression`; raises SqlParseError with RocketMQ's "Invalid MessageSelector." prefix."""
    if expression is None or not expression.strip():
        raise SqlParseError("Invalid MessageSelector. the expression is empty")
    try:
        root = Parser(expression, max_depth).selector()
    except SqlParseError as exc:
        raise SqlParseError(f"Invalid MessageSelector. {exc}") from None
    except RecursionError:  # max_depth set beyond what the interpreter's stack allows
        raise SqlParseError("Invalid MessageSelector. the expression nests too deeply") from None
    return Selector(expression, root)
