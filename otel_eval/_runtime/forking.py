"""State that a forked child must re-create (threads, locks), re-created without keeping its owner alive."""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable


def reinit_after_fork(method: Callable[[], None]) -> None:
    """Calls the bound ``method`` in every child forked from now on, while its object is alive.

    The fork hook holds the object weakly: registering never extends an object's life (hooks cannot be removed).
    A no-op where ``os.register_at_fork`` does not exist (Windows).
    """
    if hasattr(os, "register_at_fork"):
        weak_method = weakref.WeakMethod(method)
        os.register_at_fork(after_in_child=lambda: _call_weak(weak_method))


def _call_weak(method: weakref.WeakMethod[Callable[[], None]]) -> None:
    bound = method()
    if bound is not None:
        bound()
