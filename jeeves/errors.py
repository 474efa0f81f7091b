"""Every exception jeeves raises, in one tree.

```
JeevesError                      root: `except jeeves.JeevesError` catches all of ours
├── UserError (ValueError)       a usage mistake by the developer: bad config, bad name, bad spec
│   ├── UserTypeError (TypeError)  an argument of the wrong type (`max_turns="3"`, `tools=[42]`)
│   └── MissingCredentials       a provider's API key is not set (names the variable)
│       └── InvalidCredentials   the provider refused the key: HTTP 401 / 403 (names the variable)
├── ModelError                   a model call failed after retries and fallbacks
│   ├── RateLimited              the provider said 429
│   ├── ModelTimeout (TimeoutError)  no reply, or no streamed chunk, within the route's `timeout_s`
│   ├── ProviderError            5xx, connection errors, anything else from the provider
│   └── BadResponse              the reply could not be used: an HTML page, no choices, a cut-off stream
├── AgentError                   a run could not produce its output
│   ├── MaxTurnsExceeded         the agent kept calling tools past `max_turns`
│   ├── OutputValidationError    the reply did not fit `output_type`, even after one repair turn
│   └── CriticError              a critic failed and `on_critic_error="raise"`
├── BudgetExceeded               a shared budget ran out; the run stops, best output kept
│                                (or a session's slice of it: that step stops, the run goes on)
├── RunEnded                     an approval gate or the session TTL ended the run (not a failure of a step)
│   ├── GateExpired (TimeoutError)   a gate's decision did not come within its TTL: status `expired`
│   ├── GateRejected             a gate was denied and the policy says `deny_ends_run`: status `rejected`
│   └── SessionExpired (TimeoutError)  the session's hard TTL ran out: status `expired`
├── ReplayDivergence             a replayed run asked for a step the journal does not hold as asked
├── JournalError (ValueError)    a journal file is damaged or from a newer jeeves
└── ScriptError                  the testing models were used wrongly
    ├── UnexpectedModelCall      a model call came that the script does not have
    └── UnconsumedSteps          a script still has steps left at the end
```

Errors raised inside a run carry `session_id`, the id of the innermost session that
failed. Exceptions that are not ours get the same attribute when they pass through a
session, plus a note, so `except` clauses keep working on the original type.
"""

from __future__ import annotations

__all__ = [
    "AgentError",
    "BadResponse",
    "BudgetExceeded",
    "CriticError",
    "GateExpired",
    "GateRejected",
    "InvalidCredentials",
    "JeevesError",
    "JournalError",
    "MaxTurnsExceeded",
    "MissingCredentials",
    "ModelError",
    "ModelTimeout",
    "OutputValidationError",
    "PROGRAM_ERRORS",
    "ProviderError",
    "RateLimited",
    "ReplayDivergence",
    "RunEnded",
    "ScriptError",
    "SessionExpired",
    "UnconsumedSteps",
    "UnexpectedModelCall",
    "UserError",
    "UserTypeError",
    "tag_session",
]


class JeevesError(Exception):
    """Root of every jeeves exception."""

    session_id: str | None = None


class UserError(JeevesError, ValueError):
    """A usage mistake by the application developer: fix the call or the config."""


class UserTypeError(UserError, TypeError):
    """An argument of the wrong type: also a TypeError, as Python's own would be."""


class MissingCredentials(UserError):
    """A provider's API key is not set. The message names the environment variable."""

    def __init__(self, message: str, *, env_var: str | None = None) -> None:
        super().__init__(message)
        self.env_var = env_var


class InvalidCredentials(MissingCredentials):
    """The provider refused the API key (HTTP 401 or 403): wrong, revoked, or without access.

    A setup problem like a missing key, so it is a `MissingCredentials` (exit code 2 in the
    CLI, never retried or sent to a fallback) and not a `ModelError`. `env_var` names the
    variable the provider's key is read from; `status_code` is the provider's status.
    """

    def __init__(self, message: str, *, env_var: str | None = None, status_code: int | None = None) -> None:
        super().__init__(message, env_var=env_var)
        self.status_code = status_code


class ModelError(JeevesError):
    """A model call failed after its retries and fallbacks."""

    def __init__(self, message: str, *, model: str | None = None, status_code: int | None = None) -> None:
        super().__init__(message)
        self.model = model
        self.status_code = status_code

    @property
    def retryable(self) -> bool:
        """Whether trying again (or the next fallback) may help."""
        return False


class RateLimited(ModelError):
    """The provider rejected the call for rate or quota (HTTP 429)."""

    @property
    def retryable(self) -> bool:
        return True


class ModelTimeout(ModelError, TimeoutError):
    """The provider did not answer, or a stream sent nothing, within the route's `timeout`."""

    @property
    def retryable(self) -> bool:
        return True


class ProviderError(ModelError):
    """The provider failed: a 5xx, a dropped connection, or an error we could not classify."""

    @property
    def retryable(self) -> bool:
        return self.status_code is None or self.status_code >= 500


class BadResponse(ModelError):
    """The provider answered, but the reply could not be used.

    An HTML page or a body that is not a chat completion, a reply without choices, a
    stream that closed before its finish reason. Retried like a 5xx: a proxy's error page
    or a dropped stream is usually passing, and a truncated reply must never be taken as
    the model's answer.
    """

    @property
    def retryable(self) -> bool:
        return True


class AgentError(JeevesError):
    """A run could not produce its output."""


class MaxTurnsExceeded(AgentError):
    """The agent was still calling tools when `max_turns` ran out."""


class OutputValidationError(AgentError):
    """The model's reply did not validate against `output_type`, even after one repair turn."""


class CriticError(AgentError):
    """A critic failed and the architecture was told to raise (`on_critic_error="raise"`)."""

    output: object = None
    """The architecture's best output so far (an ActorCriticOutput), so raising loses no work."""


class BudgetExceeded(JeevesError):
    """A limit of the run's shared budget, or of a session's slice of it (`slice_id`), stopped a
    step: refused before it started, or cancelled in flight."""

    def __init__(
        self, message: str, *, limit: str, allowed: float, spent: float, slice_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.limit = limit
        self.allowed = allowed
        self.spent = spent
        self.slice_id = slice_id
        """The session whose budget slice ran out; None: the run's own budget."""

    output: object = None
    """A sliced session's partial output, when it kept one (`Context.run(..., budget=)`)."""


class RunEnded(JeevesError):
    """The run was ended by a rule, not by a failing step; `status` is the run's terminal state."""

    status: str = "failed"


class GateExpired(RunEnded, TimeoutError):
    """An approval gate's decision did not come within the gate's TTL."""

    status = "expired"


class GateRejected(RunEnded):
    """An approval gate was denied and the policy says `deny_ends_run=True`."""

    status = "rejected"


class SessionExpired(RunEnded, TimeoutError):
    """The session's hard TTL (`session_ttl_s`) ran out; the run stopped with a terminal record."""

    status = "expired"


class ReplayDivergence(JeevesError):
    """A replayed run asked for a step the journal does not hold, or holds with another request."""

    def __init__(self, message: str, *, session_id: str, step: int) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.step = step


class JournalError(JeevesError, ValueError):
    """A journal is damaged, or was written by a newer version of jeeves.

    The message names the file and the record. It is kept to one line of bounded length
    (its head and its tail survive), since it can quote recorded data of any size.
    """

    MAX_MESSAGE = 2000

    def __init__(self, message: str) -> None:
        message = " ".join(message.split())
        if len(message) > self.MAX_MESSAGE:
            cut = len(message) - self.MAX_MESSAGE
            message = (
                f"{message[: self.MAX_MESSAGE - 500]} ... ({cut} characters left out) ... {message[-500:]}"
            )
        super().__init__(message)


class ScriptError(JeevesError, AssertionError):
    """A testing model (ScriptedModel / FunctionModel) was used in a way its script does not allow."""


class UnexpectedModelCall(ScriptError):
    """A model call arrived that the script has no step for."""


class UnconsumedSteps(ScriptError):
    """The script still holds steps that no model call consumed."""


PROGRAM_ERRORS: tuple[type[JeevesError], ...] = (
    UserError,
    ReplayDivergence,
    JournalError,
    ScriptError,
    RunEnded,
)
"""Errors that say the program, its configuration or its journal is wrong, not that a step
failed at its task: a role with no route, a diverging replay, a damaged journal, an exhausted
test script; and rules that end the run (an expired or run-ending denied gate, the session TTL). Critic loops never keep them as a draft and a Supervisor never turns them into a
tool result the model could talk its way around: they end the run."""


def tag_session(exc: BaseException, session_id: str) -> None:
    """Record on `exc` the innermost session it failed in (outer sessions leave it alone)."""
    if getattr(exc, "session_id", None) is not None:
        return
    try:
        exc.session_id = session_id  # type: ignore[attr-defined]
    except AttributeError:  # pragma: no cover - exceptions with __slots__
        pass
    exc.add_note(f"(in jeeves session {session_id!r})")
