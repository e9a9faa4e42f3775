"""What the engine serves: a request (arrival, prompt and output lengths) and the SLOs it is
served for. Plain Python (no torch)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Request:
    """One request: it arrives ``arrival`` seconds after serving starts, brings ``prompt``
    tokens and asks for ``output`` tokens (the first comes out of its prefill)."""

    id: int
    arrival: float
    prompt: int
    output: int


@dataclasses.dataclass(frozen=True)
class Slo:
    """The service-level objectives, in seconds. A request's TTFT SLO grows with its prompt
    when ``ttft_per_token`` is set: the larger of ``ttft`` and ``ttft_per_token`` times its
    prompt tokens (SGLang's rule for 8B models: 1 s, or 1 ms a prompt token)."""

    ttft: float
    tpot: float
    ttft_per_token: float = 0.0

    def ttft_for(self, prompt: int) -> float:
        """The TTFT SLO of a request with ``prompt`` prompt tokens."""
        return max(self.ttft, prompt * self.ttft_per_token)

    def describe(self) -> str:
        """``TTFT 1000 ms, TPOT 20.0 ms``, the TTFT part as ``max(1000 ms, 1 ms a prompt token)``
        when it grows with the prompt."""
        ttft = f"{self.ttft * 1e3:.0f} ms"
        if self.ttft_per_token:
            ttft = f"max({ttft}, {self.ttft_per_token * 1e3:g} ms a prompt token)"
        return f"TTFT {ttft}, TPOT {self.tpot * 1e3:.1f} ms"
