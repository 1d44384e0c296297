"""The output tokens (thinking included) the judge budget reserves per call, learned per judge model from the replies.

A call's input tokens can be estimated from its prompt before it is sent; its output tokens cannot. The budget starts
from :data:`OUTPUT_TOKEN_ALLOWANCE` (1,024) per call and learns, per judge model, from the usage the replies report:

    the estimate is the 90th percentile (nearest rank: the 29th smallest of 32) of the output tokens of the model's
    last :data:`WINDOW` (32) replies, where replies not yet seen count as the allowance; never below
    :data:`FLOOR_TOKENS` (64).

Why this rule:

- **Conservative.** An estimate that falls short is repaid from the bucket when the admission settles, but every
  admission in flight at that moment was let in on the short estimate; that is how spend could pass the budget by
  more than one call under concurrency. A high quantile reserves what nine replies in ten of the recent ones used,
  so the shortfall is rare and small, while a mean (output lengths are skewed by thinking) falls short about half
  the time, and mean plus a multiple of the spread is noisy on a few replies.
- **Quick to rise, slow to fall.** The estimate rises as soon as 4 of the last 32 replies are above it (a model that
  starts thinking longer, a longer rubric), and falls only once 29 of them are below it; from the start, that is 29
  replies before it leaves the allowance.
- **Bounded.** 32 integers per model and a sort of 32 per reply; at most :data:`MAX_MODELS` models are learned (the
  rest keep the allowance), so hostile or generated model names cannot grow it.
- **Floor.** A run of empty or blocked replies (0 output tokens) must not make calls look free.

Replies of every metric on one model are pooled, so the estimate leans towards the model's longest kind of reply:
it errs high, never low, for the shorter ones. Cached replies cost nothing and teach nothing. Thread-safe: the
estimates are shared by every thread and event loop that uses the judge client.
"""

from __future__ import annotations

import math
import threading
from collections import deque

OUTPUT_TOKEN_ALLOWANCE = 1024
"""Output tokens (thinking included) reserved per call before any reply of the model was seen."""
WINDOW = 32
"""Replies per model the estimate is taken over."""
QUANTILE = 0.9
"""The quantile of the window reserved per call."""
FLOOR_TOKENS = 64
"""The estimate never goes below this many output tokens per call."""
MAX_MODELS = 256
"""Judge models learned at most; calls to others are estimated at the allowance."""


class OutputEstimates:
    """Per judge model, the output tokens to reserve per call (see the module docstring). Thread-safe.

    Args:
        allowance: The estimate before any reply, and the value of the replies not yet seen.
        window: Replies per model the estimate is taken over; 0 never learns (the allowance stays).
        quantile: The quantile of the window reserved.
        floor: The least estimate.
        max_models: Models learned at most; calls to others are estimated at the allowance.
    """

    def __init__(
        self,
        allowance: int = OUTPUT_TOKEN_ALLOWANCE,
        *,
        window: int = WINDOW,
        quantile: float = QUANTILE,
        floor: int = FLOOR_TOKENS,
        max_models: int = MAX_MODELS,
    ) -> None:
        if allowance < 0 or window < 0 or not 0.0 < quantile <= 1.0 or floor < 0:
            raise ValueError("allowance, window and floor must be >= 0 and quantile in (0, 1]")
        self.allowance = max(allowance, floor)
        self._window = window
        self._rank = max(0, math.ceil(quantile * window) - 1)
        self._floor = floor
        self._max_models = max_models
        self._replies: dict[str, deque[int]] = {}
        self._estimates: dict[str, int] = {}
        self._lock = threading.Lock()

    def tokens(self, model: str) -> int:
        """The output tokens to reserve for one call to ``model``."""
        with self._lock:
            return self._estimates.get(_name(model), self.allowance)

    def observe(self, model: str, output_tokens: int) -> None:
        """Learns from one reply of ``model`` that reported ``output_tokens`` (candidates plus thinking)."""
        if self._window == 0:
            return
        name = _name(model)
        with self._lock:
            replies = self._replies.get(name)
            if replies is None:
                if len(self._replies) >= self._max_models:
                    return
                replies = self._replies[name] = deque([self.allowance] * self._window, maxlen=self._window)
            replies.append(max(0, output_tokens))
            self._estimates[name] = max(self._floor, sorted(replies)[self._rank])


def _name(model: str) -> str:
    return model.removeprefix("models/")
