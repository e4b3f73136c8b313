"""The seam of a rescued stream (SPEC §16): a continuation is joined, trimmed of an exact repeat,
or refused — and the same whatever the deltas' split."""

from __future__ import annotations

import pytest

from gateway.core import rules
from gateway.core.seam import Seam, SeamRefusal, SeamStep

# A partial of distinct sentences, long enough for repeats past the holdback.
LONG = (
    "Rivers carve valleys over millions of years. Glaciers leave moraines behind them. "
    "Volcanoes build islands from cooling lava. Wind sorts desert sand into tall dunes. "
    "Coral grows reefs in warm shallow seas."
)
assert len(LONG) > 3 * rules.SEAM_HOLDBACK_CHARS
assert len("lazy") == rules.SEAM_MIN_OVERLAP_CHARS  # the rows "tail-overlap-*-minimum" are written for it


def run(partial: str, deltas: list[str]) -> tuple[str, SeamRefusal | None, int]:
    """What the caller gets after the partial, the refusal if any, and the characters trimmed."""
    seam = Seam(partial)
    sent = []
    for delta in deltas:
        step = seam.feed(delta)
        if step.refused is not None:
            assert step.text == ""
            return "".join(sent), step.refused, seam.trimmed
        sent.append(step.text)
    step = seam.end()
    sent.append(step.text)
    return "".join(sent), step.refused, seam.trimmed


# (id, partial, continuation, what follows the partial or the refusal, characters trimmed)
CASES = [
    ("clean", "The quick brown", " fox jumps.", " fox jumps.", 0),
    ("clean-mid-word", "Hel", "lo there", "lo there", 0),
    ("clean-after-common-words", "I like the idea and", " the idea is good", " the idea is good", 0),
    ("whole-repeat", "The quick brown", "The quick brown fox.", " fox.", 15),
    ("whole-repeat-after-newlines", "The quick brown", "\n\nThe quick brown fox.", " fox.", 17),
    ("whole-repeat-short-partial", "I", "I think so.", " think so.", 1),
    ("whole-repeat-then-nothing", "The quick brown", "The quick brown", "", 15),
    ("tail-overlap", "The quick brown fox jumps over the lazy", "the lazy dog.", " dog.", 8),
    ("tail-overlap-longest", "It was over. It was over the", "It was over the hill.", " hill.", 15),
    ("tail-overlap-mid-word", "for more information", "ormation about it", " about it", 8),
    ("tail-overlap-cjk", "今天天气很好,我们明天去", "我们明天去公园吧。", "公园吧。", 5),
    # At the boundary: a tail of exactly SEAM_MIN_OVERLAP_CHARS is a repeat, one shorter is not.
    ("tail-overlap-at-minimum", "over the lazy", "lazy dog.", " dog.", 4),
    ("tail-overlap-below-minimum-joined", "what she said", "aid arrived", "aid arrived", 0),
    ("short-overlap-joined", "in the", "he said", "he said", 0),
    ("digits-not-an-overlap", "costs 10", "0 dollars", "0 dollars", 0),
    ("long-tail-repeat-trimmed", LONG, LONG[50:] + " Then it rained.", " Then it rained.", len(LONG) - 50),
    ("long-whole-repeat-trimmed", LONG, LONG + " Then it rained.", " Then it rained.", len(LONG)),
    ("restart-diverges", "The quick brown fox jumps over", "The quick red fox", SeamRefusal.RESTART, 0),
    ("restart-ends-early", "The quick brown fox. Then", "The quick brown", SeamRefusal.RESTART, 0),
    ("restart-case-differs", "The quick brown", "the quick brown fox", SeamRefusal.INEXACT, 0),
    ("tail-repeat-inexact", "The quick brown fox jumps over the lazy", "Over The Lazy dog", SeamRefusal.INEXACT, 0),
    (
        "sentence-repeat-diverges",
        "First point.\nThe main reason is that the cost is high. And",
        "The main reason is the price",
        SeamRefusal.REPEAT,
        0,
    ),
    ("long-repeat-diverges", LONG, LONG[:100] + "X marks the spot.", SeamRefusal.REPEAT, 0),
    ("long-repeat-ends-early", LONG, LONG[:100], SeamRefusal.REPEAT, 0),
    ("echo-space", "brown ", " fox", "fox", 1),
    ("echo-spaces", "brown  ", "  fox", "fox", 2),
    # A line break after trailing whitespace that holds one is the answer's own (see the module doc).
    ("a-line-break-is-the-answers", "def f():\n    ", "\n    return 1", "\n    return 1", 0),
    ("a-paragraph-break-is-kept", "end.\n", "\n\nNext", "\n\nNext", 0),
    ("indentation-cut-midway-goes-on", "if x:\n        ", "    y()", "    y()", 0),
    ("repeat-without-trailing-newline", "Hello world\n", "Hello world\nNext", "Next", 12),
    ("space-after-mid-word-kept", "Hel", " lo", " lo", 0),
    ("no-space-invented", "brown", "fox", "fox", 0),
    ("empty-continuation", "Done", "", "", 0),
    ("whitespace-continuation", "Hi.", "\n", "\n", 0),
    ("empty-partial", "", "Anything at all", "Anything at all", 0),
    ("whitespace-partial", "\n\n", "\nAnswer", "Answer", 1),
]


ROWS = [case[1:] for case in CASES]
IDS = [case[0] for case in CASES]


def _expected(result):
    return ("", result) if isinstance(result, SeamRefusal) else (result, None)


@pytest.mark.parametrize(("partial", "continuation", "result", "trimmed"), ROWS, ids=IDS)
def test_seam_in_one_delta(partial, continuation, result, trimmed):
    assert run(partial, [continuation]) == (*_expected(result), trimmed)


@pytest.mark.parametrize(("partial", "continuation", "result", "trimmed"), ROWS, ids=IDS)
def test_seam_is_the_same_for_every_split(partial, continuation, result, trimmed):
    expected = (*_expected(result), trimmed)
    for cut in range(len(continuation) + 1):
        assert run(partial, [continuation[:cut], continuation[cut:]]) == expected, cut
    for cut in range(1, len(continuation)):
        pieces = [continuation[:1], continuation[1:cut], continuation[cut:]]
        assert run(partial, pieces) == expected, cut
    assert run(partial, list(continuation)) == expected


def test_a_clean_continuation_is_not_held_back_once_it_differs():
    seam = Seam("The quick brown")

    assert seam.feed(" f") == SeamStep(" f")  # "f" is found nowhere in the partial: sent at once
    assert seam.feed("ox") == SeamStep("ox")


def test_the_holdback_is_bounded():
    # An opening that keeps copying the partial is decided at the holdback: from then on it is
    # followed as a copy, and its first departure from the partial refuses it at once.
    seam = Seam(LONG)
    steps = [seam.feed(char) for char in LONG[50 : 50 + rules.SEAM_HOLDBACK_CHARS]]

    assert all(step == SeamStep() for step in steps)
    assert seam.feed("Z") == SeamStep("", SeamRefusal.REPEAT)


# A passage of the partial found twice: a copy of it may end at either place.
TWICE = "Tides rise and fall twice a day because the moon pulls the oceans toward it."
assert len(TWICE) > rules.SEAM_HOLDBACK_CHARS
DOUBLED = "Intro. " + TWICE + " Middle part. " + TWICE


# The partial's last words also appear earlier, followed by more: a copy of them is found in both
# places when the holdback is reached.
ENDING = "the moon pulls the oceans toward it and the tides follow"
ECHOED = "Intro. " + ENDING + " and more words here. Then later " + ENDING
assert rules.SEAM_HOLDBACK_CHARS - rules.SEAM_REPEAT_MIN_CHARS < len(ENDING) < rules.SEAM_HOLDBACK_CHARS


@pytest.mark.parametrize(
    ("partial", "continuation", "result", "trimmed"),
    [
        pytest.param(ECHOED, ENDING + " and more NEW", " and more NEW", len(ENDING), id="tail-copy-at-holdback"),
        pytest.param(DOUBLED, TWICE + " New words.", " New words.", len(TWICE), id="copy-of-the-last-passage"),
        pytest.param(DOUBLED, DOUBLED[7:] + " New words.", " New words.", len(DOUBLED) - 7, id="copy-of-both"),
        pytest.param(
            DOUBLED,
            TWICE + " Middle part. Tides rise and fall, said",
            SeamRefusal.REPEAT,
            0,
            id="copy-goes-on-past-the-end",
        ),
        pytest.param(DOUBLED, TWICE + " Middle part. Then", " Middle part. Then", len(TWICE), id="short-copy-past-end"),
        pytest.param(DOUBLED, TWICE + " Mid", " Mid", len(TWICE), id="short-copy-after-the-end-joined"),
        pytest.param("X" + "ab" * 40, "ab" * 40 + "Z", "Z", 80, id="periodic"),
    ],
)
def test_a_copy_that_may_end_at_several_places(partial, continuation, result, trimmed):
    expected = (*_expected(result), trimmed)

    assert run(partial, [continuation]) == expected
    assert run(partial, list(continuation)) == expected
    for cut in range(len(continuation) + 1):
        assert run(partial, [continuation[:cut], continuation[cut:]]) == expected, cut


def test_whitespace_is_held_no_longer_than_the_holdback():
    seam = Seam("Done.")
    steps = [seam.feed("\n") for _ in range(rules.SEAM_HOLDBACK_CHARS)]

    assert steps[-2] == SeamStep()
    assert steps[-1] == SeamStep("\n" * rules.SEAM_HOLDBACK_CHARS)


def test_end_decides_a_short_opening_still_held():
    seam = Seam("The cat sat on the mat. The")

    assert seam.feed(" cat") == SeamStep()  # "cat" is in the partial: it may be a repeat
    assert seam.end() == SeamStep(" cat")


def test_a_refused_or_ended_seam_takes_nothing_more():
    refused = Seam("The quick brown fox jumps over")
    assert refused.feed("The quick red").refused is SeamRefusal.RESTART
    ended = Seam("The quick brown")
    ended.feed(" fox")
    ended.end()

    for seam in (refused, ended):
        with pytest.raises(RuntimeError):
            seam.feed("more")
        with pytest.raises(RuntimeError):
            seam.end()
