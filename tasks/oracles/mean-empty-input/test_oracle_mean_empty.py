"""Hidden oracle for mean-empty-input. Runs with cwd = the repo root."""

import pytest

import textstats


def test_empty_text_is_zero():
    result = textstats.mean_word_length("")
    assert result == 0.0
    assert isinstance(result, float)


def test_other_functions_accept_empty_text():
    assert textstats.word_count("") == 0
    assert textstats.top_words("") == []


def test_non_empty_text_is_unchanged():
    assert textstats.mean_word_length("a bb ccc dddd") == pytest.approx(2.5)
    assert textstats.mean_word_length("  hi! ") == 2.0
