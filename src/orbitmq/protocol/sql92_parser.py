"""The SQL92 selector's parser (protocol/sql92.py): recursive descent over RocketMQ's grammar, with its
parse-time checks and the nesting bound.

Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from orbitmq.protocol.java_values import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
)
from orbitmq.protocol.sql92_lexer import Token, Tokenizer
from orbitmq.protocol.sql92_tree import (
    ORDER_TESTS,
    And,
    BoolCast,
    Constant,
    Equal,
    Expr,
    In,
    Negate,
    Not,
    Or,
    Order,
    Property,
)
from orbitmq.protocol.sql92_values import JLong, SqlEvalError, SqlParseError, Value, java_compare


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
    """Recursive descent over RocketMQ's grammar (SelectorParser.jj), building sql92_tree nodes."""

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
        return self._junction("OR", self.and_expr, Or)

    def and_expr(self) -> Expr:
        return self._junction("AND", self.equality, And)

    def _junction(self, word: str, operand: Callable[[], Expr], node: Callable[[Expr, Expr], Expr]) -> Expr:
        """A left-associative chain `operand (word operand)*`, each link bounded in depth."""
        left = operand()
        while self.accept("keyword", word):
            right = operand()
            left = self._bounded(node(self._as_boolean(left), self._as_boolean(right)))
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
            if tok.kind == "symbol" and tok.text in ORDER_TESTS:
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
