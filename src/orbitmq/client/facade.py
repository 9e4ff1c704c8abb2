"""How the blocking facade (blocking.py, blocking_consumers.py) takes the arguments of the asyncio class
it wraps and forwards plain methods to it, so that each signature is declared once, on the asyncio side,
and a type checker still sees it on the blocking one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar

P = ParamSpec("P")
A = TypeVar("A")
A_co = TypeVar("A_co", covariant=True)
B = TypeVar("B")
R = TypeVar("R")


def takes_arguments_of(
    aio_class: Callable[P, A],
) -> Callable[[Callable[[B, A], None]], Callable[Concatenate[B, P], None]]:
    """Decorates a facade's `__init__(self, wrapped)`: the facade is called with `aio_class`'s arguments,
    and its `__init__` gets the asyncio object made from them."""

    def decorate(init: Callable[[B, A], None]) -> Callable[Concatenate[B, P], None]:
        def __init__(self: B, /, *args: P.args, **kwargs: P.kwargs) -> None:
            init(self, aio_class(*args, **kwargs))

        __init__.__doc__ = init.__doc__
        # help() and inspect.signature show the asyncio class's parameters.
        __init__.__wrapped__ = aio_class.__init__  # type: ignore[attr-defined]
        return __init__

    return decorate


class Facade(Protocol[A_co]):
    @property
    def aio(self) -> A_co: ...


def forwarded(method: Callable[Concatenate[A, P], R]) -> Callable[Concatenate[Facade[A], P], R]:
    """A facade method that calls the asyncio object's plain (not coroutine) `method`."""

    def call(self: Facade[A], /, *args: P.args, **kwargs: P.kwargs) -> R:
        return method(self.aio, *args, **kwargs)

    call.__doc__ = method.__doc__
    call.__wrapped__ = method  # type: ignore[attr-defined]
    return call
