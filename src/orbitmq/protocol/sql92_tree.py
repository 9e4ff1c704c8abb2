"""The SQL92 selector's expression tree (protocol/sql92.py): one node class per operator, each
evaluating itself over a message's properties with three-valued logic.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from orbitmq.protocol.java_values import (
    JavaNumberFormatError,
)
from orbitmq.protocol.sql92_values import (
    SqlEvalError,
    Value,
    java_compare,
    java_double,
    java_equals,
    java_negate,
)

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


class _Unary(_Node):
    def __init__(self, operand: Expr) -> None:
        super().__init__(operand)
        self.operand = operand


class Negate(_Unary):
    def evaluate(self, props: Props) -> Value:
        return java_negate(self.operand.evaluate(props))

    def __str__(self) -> str:
        return f"(- {self.operand})"


class BoolCast(_Unary):
    """A bare property used as a boolean: null stays null, a non-Boolean (any string) is FALSE."""

    is_boolean = True

    def evaluate(self, props: Props) -> Value:
        v = self.operand.evaluate(props)
        if v is None:
            return None
        return v if isinstance(v, bool) else False

    def __str__(self) -> str:
        return str(self.operand)


class Not(_Unary):
    is_boolean = True

    def evaluate(self, props: Props) -> Value:
        v = self.operand.evaluate(props)
        return None if v is None else not v

    def __str__(self) -> str:
        return f"(NOT {self.operand})"


class _Binary(_Node):
    def __init__(self, left: Expr, right: Expr) -> None:
        super().__init__(left, right)
        self.left, self.right = left, right


class _Junction(_Binary):
    """AND / OR with SQL's three-valued logic: a side equal to `decides` decides the whole (the right
    side is then not evaluated when the left one did); otherwise unknown when either side is."""

    is_boolean = True
    decides = False
    word = ""

    def evaluate(self, props: Props) -> Value:
        decides = self.decides
        lv = self.left.evaluate(props)
        if lv is decides:
            return decides
        rv = self.right.evaluate(props)
        if rv is decides:
            return decides
        return None if lv is None or rv is None else not decides

    def __str__(self) -> str:
        return f"({self.left} {self.word} {self.right})"


class And(_Junction):
    decides = False
    word = "AND"


class Or(_Junction):
    decides = True
    word = "OR"


class Equal(_Binary):
    """`=` and `IS NULL` (RocketMQ's doCreateEqual, including its asymmetric null rule)."""

    is_boolean = True

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


ORDER_TESTS: dict[str, Callable[[int], bool]] = {
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
}


class Order(_Binary):
    """`>`, `>=`, `<`, `<=`: null if either side is null; two strings compare as doubles."""

    is_boolean = True

    def __init__(self, op: str, left: Expr, right: Expr) -> None:
        super().__init__(left, right)
        self.op = op
        self._test = ORDER_TESTS[op]

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
