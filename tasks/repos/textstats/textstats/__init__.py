"""Small text-statistics helpers."""

from textstats.core import mean_word_length, top_words, word_count, word_counts
from textstats.tokens import tokenize

__all__ = ["mean_word_length", "tokenize", "top_words", "word_count", "word_counts"]
