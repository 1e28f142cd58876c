"""Splitting text into words."""

import re

_WORD = re.compile(r"[^\W_]+")


def tokenize(text: str) -> list[str]:
    """Return the lower-cased words of ``text``, in order.

    A word is a run of letters or digits. Punctuation and whitespace separate
    words; contractions such as "don't" or "o'clock" are kept as one word.
    """
    return _WORD.findall(text.lower())
