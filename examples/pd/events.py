"""What the engine's loops wait on without blocking (events and handoffs), and a lane: the
latency stream a scheduler runs decode on and the batch stream it runs prefill on."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch


def _event() -> torch.cuda.Event:
    return torch.cuda.Event()  # type: ignore[no-untyped-call]


class EventPending:
    """Work queued before ``event``; ``done`` queries it without waiting."""

    def __init__(self, stream: torch.cuda.Stream) -> None:
        self.event = _event()
        self.event.record(stream)

    def done(self) -> bool:
        return bool(self.event.query())


class EventMarker(EventPending):
    """A prefill's end as a plain event: queried by the host, waited for by a stream."""

    def ready(self) -> bool:
        return self.done()

    def wait(self, stream: torch.cuda.Stream) -> None:
        stream.wait_event(self.event)


class HandoffMarker:
    """A prefill's end as a ``Layouts.handoff()``."""

    def __init__(self, handoff: Any) -> None:
        self.handoff = handoff

    def ready(self) -> bool:
        return bool(self.handoff.ready())

    def wait(self, stream: torch.cuda.Stream) -> None:
        self.handoff.wait(stream)


@dataclasses.dataclass(frozen=True)
class Lane:
    key: str
    latency: torch.cuda.Stream
    batch: torch.cuda.Stream
