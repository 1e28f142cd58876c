"""Everything that touches the workspace an arm leaves behind: the template it
starts from, the clone it works in, and the evidence taken from it."""
