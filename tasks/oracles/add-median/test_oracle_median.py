"""Hidden oracle for add-median. Runs with cwd = the repo root."""

import pytest

import textstats


def median_word_length(text):
    # Imported per call, so a missing function fails each test, not collection.
    from textstats.core import median_word_length

    return median_word_length(text)


def test_exported_from_package():
    from textstats.core import median_word_length

    assert textstats.median_word_length is median_word_length
    assert "median_word_length" in textstats.__all__


def test_odd_number_of_words():
    assert median_word_length("a bbbbb cc") == 2.0


def test_even_number_of_words_averages_the_middle_two():
    assert median_word_length("aaaa b ccc dd") == pytest.approx(2.5)


def test_returns_a_float():
    assert isinstance(median_word_length("abc de f"), float)


def test_uses_tokenize():
    # Punctuation is not part of a word: lengths are 5, 5, 3.
    assert median_word_length("Hello, world... foo!") == 5.0


def test_no_words_gives_zero():
    assert median_word_length("") == 0.0
    assert median_word_length(" ?! ") == 0.0
