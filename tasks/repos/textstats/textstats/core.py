"""Statistics over the words of a text (see textstats.tokens.tokenize)."""

from collections import Counter

from textstats.tokens import tokenize


def word_count(text: str) -> int:
    """Number of words in ``text``."""
    return len(tokenize(text))


def word_counts(text: str) -> Counter[str]:
    """How many times each word occurs in ``text``."""
    return Counter(tokenize(text))


def mean_word_length(text: str) -> float:
    """Average number of characters per word."""
    words = tokenize(text)
    return sum(len(word) for word in words) / len(words)


def top_words(text: str, n: int = 3) -> list[str]:
    """The ``n`` most frequent words, most frequent first.

    Ties keep the order in which the words first appear in ``text``.
    """
    return [word for word, _ in word_counts(text).most_common(n)]
