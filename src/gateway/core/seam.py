"""The seam between a cut answer and its rescue's continuation (SPEC §16).

The continuation's text (content only; reasoning never crosses the seam) is fed in as it streams;
the seam holds back at most ``SEAM_HOLDBACK_CHARS`` characters until it can tell how the
continuation begins, then passes it through, trimmed, or refuses it. Never doubled text, never a
character of its own.

Rules, comparing the continuation ``C`` (its leading whitespace aside) with the partial ``P`` (its
trailing whitespace aside); "loosely" means case and whitespace aside:
1. ``C`` begins with a tail of ``P`` exactly — the whole of ``P``, or its last
   ``SEAM_MIN_OVERLAP_CHARS`` or more characters — then goes on: the repeat is trimmed (the
   longest such tail). Models asked to continue often repeat the quoted last words, and some
   platforms' prefix mode returns the prefix too. A copy of ``P`` longer than the holdback is
   followed, holding no text, at every place of ``P`` it matches, until it departs from ``P``:
   refused if it never reached ``P``'s end; else trimmed up to the last time it did, and what
   it read since is new text (unless that too copies ``SEAM_REPEAT_MIN_CHARS`` or more: refused).
2. ``C`` begins with such a tail only loosely: refused (an inexact repeat).
3. ``C``'s first ``SEAM_REPEAT_MIN_CHARS`` characters are found loosely anywhere in ``P``:
   refused (it repeats earlier text, a sentence restarted, without running exactly to the end).
4. ``C``'s first ``SEAM_RESTART_MIN_CHARS`` characters loosely match ``P``'s first: refused (a
   restart that is not an exact repeat).
5. Else ``C`` is joined as it is.

Whitespace: ``C``'s leading whitespace is taken to re-send ``P``'s trailing whitespace as far as
the two agree character by character, and that much is dropped: after a repeat that was trimmed
(``"Hello world\\n"`` then ``"Hello world\\nNext"``), and when ``P``'s trailing whitespace is
spaces or tabs only (``"brown "`` then ``" fox"``: a model asked to continue often begins with a
word's leading space). Trailing whitespace that holds a line break is otherwise no echo: a
continuation that begins with a line break after it (``"end.\\n"`` then ``"\\nNext"``) is as
likely the paragraph break the answer goes on with, and one cut inside indentation
(``"\\n        "`` then ``"    x"``) goes on with its spaces; measured on this project's own code
and docs, cut at random and continued perfectly, reading those as echoes altered about 1 answer
in 100. A partial that is all whitespace (only reasoning was sent: the rescue asks again) is
re-sent whole. Nothing else is added or removed: a space after a partial that ends mid-word is
kept, and no space is put between two words.

A refusal means the stream ends with the surface's error event, as without rescue. The result
depends only on the continuation's text, never on how it was split into deltas.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum

from gateway.core import rules

__all__ = ["Seam", "SeamRefusal", "SeamStep"]


class SeamRefusal(StrEnum):
    """Why a continuation is not joined (the log line's words)."""

    INEXACT = "the continuation repeats the end of the answer inexactly"
    REPEAT = "the continuation repeats earlier text of the answer"
    RESTART = "the continuation restarts the answer"


@dataclass(frozen=True, slots=True)
class SeamStep:
    """``text``: what to send the caller now (may be empty). ``refused``: set once the
    continuation is refused (``text`` is then empty): send nothing more of it and end the stream
    with the surface's error event."""

    text: str = ""
    refused: SeamRefusal | None = None


class _Phase(Enum):
    DECIDING = "deciding"  # holding the continuation's opening
    TRACKING = "tracking"  # following a long verbatim repeat of the partial
    PASSING = "passing"
    REFUSED = "refused"
    ENDED = "ended"


class Seam:
    """The seam between ``partial`` and its continuation (the module's rules).

    ``feed(delta)`` with each piece of the continuation's text, in order, then ``end()`` once its
    text is over (its finish, or before a non-text part such as a tool call). Each returns a
    ``SeamStep``. Calling either after a refusal or after ``end()`` raises ``RuntimeError``.
    ``trimmed``: how many characters of the continuation were dropped as repeats so far (0 once
    refused)."""

    __slots__ = (
        "_at",
        "_buffer",
        "_core",
        "_count",
        "_echo",
        "_loose",
        "_phase",
        "_reached",
        "_start",
        "_trailing",
        "trimmed",
    )

    def __init__(self, partial: str) -> None:
        core = partial.rstrip()
        self._core = core
        self._loose = _fold(core)
        self._start = len(core) - len(core.lstrip())  # where the partial's text begins
        # The trailing whitespace a continuation may re-send: all of it after a trimmed repeat
        # (``_repeated``); else none that holds a line break (see the module doc).
        self._trailing = partial[len(core) :]
        line_break = "\n" in self._trailing or "\r" in self._trailing
        self._echo = "" if core and line_break else self._trailing
        self._buffer = ""
        # TRACKING: the next index of the core for each alignment still copying it; the characters
        # read since the last alignment reached the core's end (or since tracking began); whether
        # one did (what was read since then is new text, should the copy stop).
        self._at: tuple[int, ...] = ()
        self._count = 0
        self._reached = False
        self._phase = _Phase.DECIDING
        self.trimmed = 0

    def feed(self, delta: str) -> SeamStep:
        self._check_open("feed")
        return self._route(delta)

    def end(self) -> SeamStep:
        self._check_open("end")
        if self._phase is _Phase.DECIDING:
            step = self._decide(final=True) or SeamStep()
        elif self._phase is _Phase.TRACKING:
            step = self._stop("")
        else:
            step = SeamStep()
        if self._phase is not _Phase.REFUSED:
            self._phase = _Phase.ENDED
        return step

    def _check_open(self, call: str) -> None:
        if self._phase in (_Phase.REFUSED, _Phase.ENDED):
            raise RuntimeError(f"Seam.{call}() after the seam {self._phase.value}: stop feeding it")

    def _route(self, delta: str) -> SeamStep:
        if self._phase is _Phase.PASSING:
            return SeamStep(self._emit(delta))
        if self._phase is _Phase.TRACKING:
            return self._track(delta)
        # One character at a time while deciding, so the decision never depends on the split.
        for index, char in enumerate(delta):
            self._buffer += char
            step = self._decide(final=False)
            if step is not None:
                if step.refused is not None or index + 1 == len(delta):
                    return step
                more = self._route(delta[index + 1 :])
                return SeamStep(step.text + more.text, more.refused)
        return SeamStep()

    def _decide(self, final: bool) -> SeamStep | None:
        """The step that settles the held opening, or None to hold it further."""
        buffer = self._buffer
        rest = buffer.lstrip()
        lead = len(buffer) - len(rest)
        if not rest:
            return self._pass(buffer, 0) if final or lead >= rules.SEAM_HOLDBACK_CHARS else None
        core, loose, folded = self._core, self._loose, _fold(rest)
        # Found ending before the core's end, the opening may still grow into a longer repeat.
        alive = loose.find(folded, 0, len(core) - 1) >= 0
        if alive and not final and len(rest) < rules.SEAM_HOLDBACK_CHARS:
            return None
        cut = self._overlap(rest, core)
        if alive and not final and core.find(rest, 0, len(core) - 1) >= 0:
            return self._follow(rest, lead, cut)  # a copy past the holdback: where will it stop?
        if cut is not None:
            return self._pass(buffer, lead + len(core) - cut)
        if self._overlap(folded, loose) is not None:
            return self._refuse(SeamRefusal.INEXACT)
        repeat, restart = rules.SEAM_REPEAT_MIN_CHARS, rules.SEAM_RESTART_MIN_CHARS
        if len(rest) >= repeat and loose.find(folded[:repeat]) >= 0:
            return self._refuse(SeamRefusal.REPEAT)
        if len(rest) >= restart and loose.startswith(folded[:restart], self._start):
            return self._refuse(SeamRefusal.RESTART)
        return self._pass(buffer, 0)

    def _overlap(self, text: str, source: str) -> int | None:
        """Where in ``source`` the longest tail that ``text`` begins with starts: the whole text of
        ``source``, or a tail of at least ``SEAM_MIN_OVERLAP_CHARS``; None if there is none."""
        end = len(source)
        for start in range(max(self._start, end - len(text)), end):
            if end - start < rules.SEAM_MIN_OVERLAP_CHARS and start != self._start:
                return None
            if source.startswith(text[: end - start], start):
                return start
        return None

    def _follow(self, rest: str, lead: int, cut: int | None) -> SeamStep:
        """Follow a verbatim copy of the partial longer than the holdback at each place it was
        found, holding no text; ``cut``: where a tail the held text begins with starts, if any."""
        core, end = self._core, len(self._core) - 1
        at, found = [], core.find(rest, 0, end)
        while found >= 0:
            at.append(found + len(rest))
            found = core.find(rest, found + 1, end)
        self._at = tuple(at)
        self._count, self._reached = len(self._buffer), cut is not None
        if cut is not None:
            self.trimmed += lead + len(core) - cut
            self._count -= lead + len(core) - cut
        self._buffer = ""
        self._phase = _Phase.TRACKING
        return SeamStep()

    def _track(self, delta: str) -> SeamStep:
        core = self._core
        if len(self._at) == 1:  # the common case, in bulk
            at = self._at[0]
            used = min(len(delta), len(core) - at)
            if core.startswith(delta[:used], at):
                self._count += used
                if at + used < len(core):
                    self._at = (at + used,)
                    return SeamStep()
                self.trimmed += self._count
                self._phase = _Phase.PASSING
                self._echo = self._trailing  # a repeat was trimmed
                return SeamStep(self._emit(delta[used:]))
        for index, char in enumerate(delta):  # where the copy stops, or which alignment ends it
            moved = tuple(at + 1 for at in self._at if core[at] == char)
            if not moved:
                return self._stop(delta[index:])
            self._count += 1
            self._at = tuple(at for at in moved if at < len(core))
            if len(self._at) < len(moved):  # one alignment reached the end: all read is a repeat
                self.trimmed += self._count
                self._count, self._reached = 0, True
                if not self._at:
                    self._phase = _Phase.PASSING
                    self._echo = self._trailing  # a repeat was trimmed
                    return SeamStep(self._emit(delta[index + 1 :]))
        return SeamStep()

    def _stop(self, rest: str) -> SeamStep:
        """The copy stopped before ``rest`` (or the continuation ended). If it had reached the
        partial's end, what was read since is new text — unless it too copies the partial for
        ``SEAM_REPEAT_MIN_CHARS`` or more; else the continuation repeated without finishing."""
        if not self._reached or self._count >= rules.SEAM_REPEAT_MIN_CHARS:
            return self._refuse(SeamRefusal.REPEAT)
        at = self._at[0]  # every alignment read the same text: the core's, just before ``at``
        self._phase = _Phase.PASSING
        self._echo = self._trailing  # a repeat was trimmed
        return SeamStep(self._emit(self._core[at - self._count : at] + rest))

    def _pass(self, buffer: str, trimmed: int) -> SeamStep:
        if trimmed:
            self._echo = self._trailing  # a repeat was trimmed
        self.trimmed += trimmed
        self._buffer = ""
        self._phase = _Phase.PASSING
        return SeamStep(self._emit(buffer[trimmed:]))

    def _emit(self, text: str) -> str:
        """``text`` less the leading whitespace that re-sends the partial's trailing whitespace."""
        if not self._echo:
            return text
        same = 0
        while same < len(text) and same < len(self._echo) and text[same] == self._echo[same]:
            same += 1
        self._echo = self._echo[same:] if same == len(text) else ""
        self.trimmed += same
        return text[same:]

    def _refuse(self, refusal: SeamRefusal) -> SeamStep:
        self._buffer = ""
        self.trimmed = 0  # nothing of the continuation is used, and nothing of it was trimmed
        self._phase = _Phase.REFUSED
        return SeamStep("", refusal)


def _fold(text: str) -> str:
    """``text`` with case and whitespace differences erased, character for character (same
    length, so an index in one is an index in the other)."""
    return "".join(" " if c.isspace() else f if len(f := c.casefold()) == 1 else c for c in text)
