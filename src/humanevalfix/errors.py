"""Error types. A UserError is bad input: the CLI prints its one-line message and exits 2."""

from __future__ import annotations


class UserError(Exception):
    """Bad input from the user (file, row, field, option); shown as one line, exit code 2."""


class DatasetError(UserError):
    """A dataset file or row that cannot be used."""


class ConfigError(UserError):
    """A bad option, preset or environment setting."""


class ModelCallError(Exception):
    """The model endpoint failed for good (retries exhausted, every key rejected).

    An infrastructure failure: the task is recorded with an `error`, apart from model failures;
    except `kind == "context_exceeded"`, the model's own limit, which ends the repair like a budget.
    `kind` also lets a run stop at once when the endpoint cannot work at all ("auth", "connection").
    NOT_SENT: the call never went out because the run was stopping (models.gate): the task is
    interrupted, not failed, and runs again on --resume.
    """

    NOT_SENT = "not_sent"

    def __init__(self, message: str, kind: str = "other") -> None:
        super().__init__(message)
        self.kind = kind
