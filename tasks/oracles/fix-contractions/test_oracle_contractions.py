"""Hidden oracle for fix-contractions. Runs with cwd = the repo root."""

import textstats


def test_contractions_are_one_word():
    assert textstats.tokenize("Don't stop") == ["don't", "stop"]
    assert textstats.tokenize("at five o'clock") == ["at", "five", "o'clock"]


def test_several_apostrophes_in_one_word():
    assert textstats.tokenize("y'all'd've") == ["y'all'd've"]


def test_quote_marks_are_not_part_of_words():
    expected = ["she", "said", "hello", "to", "the", "dogs"]
    assert textstats.tokenize("she said 'hello' to the dogs'") == expected
    assert textstats.tokenize("'' ' a''b") == ["a", "b"]


def test_counts_and_stats_follow_the_tokenizer():
    text = "It's late. It's dark. It is."
    assert textstats.word_counts(text)["it's"] == 2
    assert textstats.word_count(text) == 6
    assert textstats.top_words(text, n=1) == ["it's"]
    assert textstats.mean_word_length("can't won't") == 5.0
