"""How messages cross the socket between the processor and its evaluation process (``isolation="process"``): each
a frame of a 4-byte length and a payload, a :class:`~otel_eval.processor._process.messages.Batch` of plain values
marshalled, any other message pickled. Both are safe here because both ends are this package: the socket is a
private ``socketpair`` between a process and its child.
"""

from __future__ import annotations

import contextlib
import marshal
import pickle
import socket
from typing import Any

from otel_eval.errors import OtelEvalError
from otel_eval.processor._process.messages import MESSAGES, Batch, FromChild, ToChild

_HEADER_BYTES = 4
MAX_FRAME_BYTES = (1 << 31) - 1


class WireError(OtelEvalError):
    """The other end closed the socket, or sent a frame this side cannot read."""


def send_message(sock: socket.socket, message: ToChild | FromChild) -> int:
    """Sends one message (:func:`send_frame`). Returns the bytes sent."""
    return send_frame(sock, message)


def receive_message(sock: socket.socket) -> ToChild | FromChild:
    """The next message.

    Raises:
        WireError: the other end closed the socket, or sent something that is not a message.
        OSError: the socket failed or timed out.
    """
    message = receive_frame(sock)
    if not isinstance(message, MESSAGES):
        raise WireError(f"expected a message, got {type(message).__name__}")
    return message


_MARSHALLED = b"M"
_PICKLED = b"P"
"""A frame's first byte: a :class:`Batch` whose values are all of the core types (``marshal``), or any message
(``pickle``)."""


def send_frame(sock: socket.socket, message: object) -> int:
    """Sends ``message`` with a 4-byte length: a :class:`Batch` of core-type values (what an SDK span holds: str,
    int, float, bool, None, their tuples, dicts and lists) as ``marshal`` writes it, about half the work of a pickle
    each way; anything else (other messages, a value of another class, e.g. an ``IntEnum`` attribute) pickled.
    Returns the bytes sent.

    Raises:
        OSError: the socket failed or timed out (the stream is then unusable: close it).
    """
    payload = None
    if type(message) is Batch:
        with contextlib.suppress(ValueError):  # a value marshal does not write: pickled instead
            payload = _MARSHALLED + marshal.dumps(tuple(message))
    if payload is None:
        payload = _PICKLED + pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    if len(payload) > MAX_FRAME_BYTES:
        raise ValueError(f"a frame of {len(payload)} bytes is over {MAX_FRAME_BYTES}")
    sock.sendall(len(payload).to_bytes(_HEADER_BYTES, "big") + payload)
    return len(payload)


def receive_frame(sock: socket.socket) -> Any:
    """The next message.

    Raises:
        WireError: the other end closed the socket (cleanly or mid-frame), or sent a frame of an unknown kind.
        OSError: the socket failed or timed out.
    """
    size = int.from_bytes(_receive_exactly(sock, _HEADER_BYTES), "big")
    payload = _receive_exactly(sock, size)
    kind = payload[:1]
    if kind == _MARSHALLED:
        return Batch._make(marshal.loads(memoryview(payload)[1:]))
    if kind == _PICKLED:
        return pickle.loads(memoryview(payload)[1:])
    raise WireError(f"a frame of an unknown kind {kind!r}")


def _receive_exactly(sock: socket.socket, size: int) -> bytes:
    view = memoryview(bytearray(size))
    received = 0
    while received < size:
        count = sock.recv_into(view[received:], size - received)
        if not count:
            raise WireError("the other end closed the connection")
        received += count
    return view.tobytes()
