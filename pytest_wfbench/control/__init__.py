"""Sweep control for paid runs: what a sweep runs (resume, reuse), when it
stops starting cells (signals, the cost budget, the outage breaker), and what
it shows while it runs (progress). Pure decisions in :mod:`.plan`,
:mod:`.budget` and :mod:`.breaker`; pytest glue in :mod:`.hooks`."""
