"""Review arms' core (issue 11): the review artifact, its contract, and its scoring.

- ``change``: what the change under review touches (a unified diff's changed lines),
  and whether it applies to a work tree;
- ``artifact``: the strict ``review.json`` an agent writes, parsed and validated
  against ``review.schema.json`` (by ``schema``, a small validator of that schema);
- ``prompt``: the contract text an agent's prompt states;
- ``score``: a review scored against a task's hidden labels (pure);
- ``quality``: the report's "Review quality" section from rows (pure).

Nothing is re-exported here, so that the task loader can import ``change``
without pulling in the rest.
"""
