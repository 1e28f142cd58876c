"""Hidden from the agent: only the mean-empty-input oracle runs this file."""

import textstats


def test_mean_word_length_of_blank_text_is_zero():
    assert textstats.mean_word_length("   \n\t ") == 0.0


def test_mean_word_length_of_punctuation_only_is_zero():
    assert textstats.mean_word_length("?! ... --") == 0.0
