"""Critics and their verdicts: LLM, code (pytest), citation, grounded-audit, Python-function and
combined critics.

A critic reviews one candidate and returns a `Verdict` (a score in [0, 1], issues, a
summary, a hard-fail flag, its source and how it was obtained). ActorCritic and
SelfRefine run each review in its own session; see docs/critics.md.
"""

from jeeves.critics.base import (
    REVIEW_PROMPT,
    CombinedCritic,
    Critic,
    CriticFunction,
    CriticSession,
    FunctionCritic,
    Review,
    as_critic,
    review_in,
)
from jeeves.critics.citations import CitationCritic
from jeeves.critics.code import CodeCritic, extract_code
from jeeves.critics.grounded import GroundedAuditCritic, GroundedCritique, Grounding, fuse, ground
from jeeves.critics.llm import REVIEW_INSTRUCTIONS, VERDICT_FORMAT, LLMCritic
from jeeves.critics.parse import parse_verdict
from jeeves.critics.verdict import Evidence, Obtained, Verdict, combine_verdicts, normalise_score
from jeeves.critics.watchdog import Watchdog, WatchdogFiring

__all__ = [
    "CitationCritic",
    "CodeCritic",
    "CombinedCritic",
    "Critic",
    "CriticFunction",
    "CriticSession",
    "Evidence",
    "FunctionCritic",
    "GroundedAuditCritic",
    "GroundedCritique",
    "Grounding",
    "LLMCritic",
    "Obtained",
    "REVIEW_INSTRUCTIONS",
    "REVIEW_PROMPT",
    "Review",
    "VERDICT_FORMAT",
    "Verdict",
    "Watchdog",
    "WatchdogFiring",
    "as_critic",
    "combine_verdicts",
    "extract_code",
    "fuse",
    "ground",
    "normalise_score",
    "parse_verdict",
    "review_in",
]
