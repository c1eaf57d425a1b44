"""The predictors own their engine: `with Predictor.from_pretrained(...) as p:` releases it."""
from __future__ import annotations

from typing import Any


class EngineOwner:
    """Context manager that closes `self.engine` (device memory, traces) once, on exit."""

    engine: Any

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Release the engine; idempotent."""
        if self.engine is not None:
            self.engine.close()
            self.engine = None
