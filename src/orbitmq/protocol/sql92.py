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

from dataclasses import dataclass
from typing import Final

from orbitmq.protocol.sql92_lexer import Tokenizer
from orbitmq.protocol.sql92_parser import Parser
from orbitmq.protocol.sql92_tree import Expr, Props
from orbitmq.protocol.sql92_values import JLong, SqlEvalError, SqlParseError, Value, java_compare, java_double

# The pieces, one module each: sql92_values (Java's values and comparisons, the errors), sql92_tree (the
# expression nodes), sql92_lexer (tokens), sql92_parser (grammar and parse-time checks). This module is
# the public face.
__all__ = [
    "DEFAULT_MAX_DEPTH",
    "JLong",
    "Selector",
    "SqlEvalError",
    "SqlParseError",
    "Tokenizer",
    "compile_selector",
    "java_compare",
    "java_double",
]

DEFAULT_MAX_DEPTH: Final = 100


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
