"""The citation critic: every claim cites evidence the caller supplied, and only that.

Deterministic, for answers grounded in retrieved evidence. Rules:

- A citation is `[id]` or `[id1, id2]` (ids are letters, digits and `_ . : # / -`; a
  Markdown link `[text](url)` is not a citation).
- A *claim* is a sentence of three words or more, not a heading and not a lead-in ending
  with `:`. A sentence that hedges (`insufficient evidence`, `not provided`, `cannot provide`,
  `not enough information`…, see `HEDGES`) is exempt: saying the evidence does not settle it needs no citation.
- A citation to an id the caller did not pass is a **hard fail**: the answer invented a
  source. Its sentence also counts as unsupported.
- score = max(0, 1 − `uncited_penalty` × unsupported claims); uncited sentences are
  listed as issues. With the default penalty 0.2 one uncited claim scores 0.8.
- An answer that makes claims but cites none of the evidence is a **hard fail** (with
  `require_citations=True`, the default): without it a short uncited answer would score
  `1 - uncited_penalty` and pass a threshold as high as 0.8. Pass
  `require_citations=False` when citations are optional; the score alone then decides.
- An answer with no text is a hard fail with score 0; one whose every sentence hedges
  makes no claim, needs no citation and scores 1.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from jeeves._base.ids import validate_name
from jeeves._base.validate import check_number, check_str
from jeeves._run.context import Caller
from jeeves.critics.base import Review
from jeeves.critics.verdict import Verdict, computed_verdict
from jeeves.errors import UserError

if TYPE_CHECKING:
    from jeeves._run.context import Context

__all__ = ["HEDGES", "CitationCritic", "claims_with_citations"]

HEDGES: tuple[str, ...] = (
    "insufficient evidence",
    "not provided",
    "cannot provide",
    "not enough evidence",
    "no evidence",
    "not enough information",
    "insufficient information",
    "the evidence does not",
    "the sources do not",
    "cannot be determined",
    "could not find",
    "not stated",
    "unclear from",
    "i don't know",
    "i do not know",
)
"""Phrases that mark a sentence as hedged (matched case-insensitively): the MASIS seed's three
(`insufficient evidence`, `not provided`, `cannot provide`) first, then more that say the same."""

_ID = r"[A-Za-z0-9][A-Za-z0-9_.:#/-]*"
_CITATION = re.compile(rf"\[\s*({_ID}(?:\s*[,;]\s*{_ID})*)\s*\](?!\()")
_ONLY_CITATIONS = re.compile(rf"^(?:\s*\[\s*{_ID}(?:\s*[,;]\s*{_ID})*\s*\])+[\s.]*$")
_SPLIT = re.compile(r"(?<=[.!?])\s+")
_SHOWN_IDS = 20
_MARKER = re.compile(r"^\s*(?:[-*•>]|\d+[.)])\s+")


def _sentences(text: str) -> Iterator[str]:
    """Sentences, line by line; a trailing `[id]` after the full stop stays with its sentence."""
    for line in text.splitlines():
        line = _MARKER.sub("", line).strip()
        if not line or line.startswith(("#", "```")):
            continue
        pieces: list[str] = []
        for piece in _SPLIT.split(line):
            if pieces and _ONLY_CITATIONS.match(piece):
                pieces[-1] = f"{pieces[-1]} {piece}"
            else:
                pieces.append(piece)
        yield from pieces


def claims_with_citations(text: str, hedges: Sequence[str] = HEDGES) -> Iterator[tuple[str, list[str]]]:
    """Each claim of `text` (the module docstring's rule) with the ids it cites, in order."""
    lowered_hedges = [h.lower() for h in hedges]
    for sentence in _sentences(text):
        words = _CITATION.sub("", sentence).split()
        lowered = sentence.lower()
        if len(words) < 3 or sentence.rstrip().endswith(":") or any(h in lowered for h in lowered_hedges):
            continue
        yield sentence, _ids(sentence)


def _ids(sentence: str) -> list[str]:
    return [i.strip() for group in _CITATION.findall(sentence) for i in re.split(r"[,;]", group)]


def _clip(sentence: str) -> str:
    return sentence if len(sentence) <= 160 else sentence[:157] + "..."


class CitationCritic:
    """Checks an answer's `[id]` citations against the evidence ids you pass (module docstring).

    Args:
        evidence_ids: The ids the answer may cite (a dict of id → text works too).
        uncited_penalty: What each unsupported claim takes off the score, in (0, 1].
        hedges: Phrases that exempt a sentence from needing a citation.
        require_citations: An answer whose claims cite none of the evidence is a hard fail
            (never approved). False: citations are optional and only the score counts.
        name: The source tag of its verdicts.
    """

    kind = "citation_critic"

    def __init__(
        self,
        evidence_ids: Iterable[str],
        *,
        uncited_penalty: float = 0.2,
        hedges: Sequence[str] = HEDGES,
        require_citations: bool = True,
        name: str = "citations",
    ) -> None:
        if isinstance(evidence_ids, str):
            raise UserError(
                f"evidence_ids must be a collection of ids, not one string {evidence_ids!r}; wrap it in []."
            )
        self.evidence_ids = frozenset(evidence_ids)
        bad = sorted(i for i in self.evidence_ids if not isinstance(i, str) or not re.fullmatch(_ID, i))
        if bad:
            raise UserError(
                f"Evidence ids {bad!r} cannot be cited as [id]; use letters, digits and _ . : # / -."
            )
        self.uncited_penalty = check_number(
            uncited_penalty, name="CitationCritic uncited_penalty", minimum=0, maximum=1, above=True
        )
        self.hedges = tuple(check_str(h, name="CitationCritic hedges item").lower() for h in hedges)
        if not isinstance(require_citations, bool):
            raise UserError(f"require_citations must be True or False, got {require_citations!r}.")
        self.require_citations = require_citations
        self.name = validate_name(name, what="critic")

    def model_callers(self, path: tuple[str, ...], routed: tuple[str, ...]) -> list[Caller]:
        """None: it calls no model (see `jeeves._run.context.model_callers`)."""
        return []

    async def review(self, ctx: Context, review: Review) -> Verdict:
        async def live() -> Verdict:
            return self.check(review.output)

        request: dict[str, object] = {"output": review.output, "evidence_ids": sorted(self.evidence_ids)}
        if not self.require_citations:  # only when set, so runs recorded before it replay
            request["require_citations"] = False
        verdict, _ = await ctx.step("function", self.name, request, live, Verdict)
        return verdict.model_copy(update={"evidence": "citations"})

    def check(self, text: str) -> Verdict:
        """The verdict on `text`, computed now (`review` journals this)."""
        if not text.strip():
            return computed_verdict(
                self.name, 0.0, ["the answer is empty"], "Nothing to check.", hard_fail=True
            )
        issues: list[str] = []
        claims = unsupported = 0
        unknown_seen: set[str] = set()
        for sentence, ids in claims_with_citations(text, self.hedges):
            claims += 1
            unknown = [i for i in ids if i not in self.evidence_ids]
            if unknown:
                unsupported += 1
                unknown_seen.update(unknown)
                issues.append(
                    f"cites unknown evidence {unknown!r} (known: {self._known()}): {_clip(sentence)!r}"
                )
            elif not ids:
                unsupported += 1
                issues.append(f"uncited claim: {_clip(sentence)!r}")
        score = max(0.0, 1.0 - self.uncited_penalty * unsupported)
        summary = (
            f"{claims - unsupported}/{claims} claims cited with known evidence."
            if claims
            else "No claims that need a citation (every sentence hedges or is too short)."
        )
        uncited = self.require_citations and claims > 0 and unsupported == claims and not unknown_seen
        if uncited:
            issues.insert(
                0, f"the answer cites none of the evidence; cite each claim as [id] (ids: {self._known()})"
            )
            summary += " An answer that cites no evidence is not approved."
        return computed_verdict(self.name, score, issues, summary, hard_fail=bool(unknown_seen) or uncited)

    def _known(self) -> str:
        ids = sorted(self.evidence_ids)
        shown = ", ".join(ids[:_SHOWN_IDS]) or "none"
        return shown if len(ids) <= _SHOWN_IDS else f"{shown}, … ({len(ids)} ids)"
