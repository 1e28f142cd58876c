"""What the judges (verify, oracle) run with, so that an arm can only win by
changing its code, not by changing how it is judged."""
