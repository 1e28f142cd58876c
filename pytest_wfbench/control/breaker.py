"""The outage circuit breaker: after N systemic failures in a row (the model
service, the harness or the machine failing, not the agent), no new cell
starts, so an outage does not burn through every remaining paid cell. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field

# Not review-evidence-invalid: a review arm's bad artifact is its own doing
# (counted), and an arm that keeps writing one must not stop the other arms.
SYSTEMIC = frozenset({"session-error", "infra-error", "cleanup-failure"})
DEFAULT_STREAK = 5


@dataclass
class OutageBreaker:
    """Counts systemic failures in the order rows arrive; any other outcome of
    a cell that ran (or was reused) resets the count. ``limit`` 0 disables it."""

    limit: int = DEFAULT_STREAK
    streak: list[str] = field(default_factory=list)
    """The cells of the current run of systemic failures."""
    tripped: bool = False

    def observe(self, cell_id: str, error_kind: str | None) -> bool:
        """One cell's row; True when this row trips the breaker."""
        if self.tripped or self.limit <= 0:
            return False
        if error_kind in SYSTEMIC:
            self.streak.append(cell_id)
        else:
            self.streak.clear()
        self.tripped = len(self.streak) >= self.limit
        return self.tripped

    def reason(self, kinds: dict[str, str | None]) -> str:
        last = self.streak[-1] if self.streak else "?"
        return (f"the outage breaker tripped after {len(self.streak)} systemic failures in a "
                f"row (last: {last}: {kinds.get(last)}); running cells finished")
