"""What the schedulers wait on without blocking on a GPU: work queued before an event, and a
prefill's end as an event (a layout's ``Handoff`` is the other kind of marker)."""

from __future__ import annotations

import torch


def _event() -> torch.cuda.Event:
    return torch.cuda.Event()  # type: ignore[no-untyped-call]


class EventPending:
    """Work queued before ``event``; ``done`` queries it without waiting."""

    def __init__(self, stream: torch.cuda.Stream) -> None:
        self.event = _event()
        self.event.record(stream)

    def done(self) -> bool:
        return bool(self.event.query())  # type: ignore[no-untyped-call]


class EventMarker(EventPending):
    """A prefill's end as a plain event: queried by the host, waited for by a stream."""

    def ready(self) -> bool:
        return self.done()

    def wait(self, stream: torch.cuda.Stream) -> None:
        stream.wait_event(self.event)
