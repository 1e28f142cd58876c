import pytest

import textstats


def test_tokenize_lowercases_and_drops_punctuation():
    assert textstats.tokenize("Hello, World! Hello.") == ["hello", "world", "hello"]


def test_tokenize_keeps_digits_and_accents():
    assert textstats.tokenize("Café au lait: 2 cups") == ["café", "au", "lait", "2", "cups"]


def test_word_count():
    assert textstats.word_count("one two  three\nfour") == 4


def test_word_counts_ignore_case():
    counts = textstats.word_counts("The cat saw the dog")
    assert counts["the"] == 2
    assert counts["cat"] == 1


def test_mean_word_length():
    assert textstats.mean_word_length("a bb ccc") == pytest.approx(2.0)


def test_top_words_most_frequent_first():
    text = "b a b c a b"
    assert textstats.top_words(text, n=2) == ["b", "a"]


def test_top_words_ties_keep_first_appearance():
    assert textstats.top_words("red green blue", n=2) == ["red", "green"]
