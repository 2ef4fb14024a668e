"""When to stop a run early because the endpoint cannot work: fail loudly instead of finishing.

A bogus key, every key rejected or a dead `--base-url` used to make each of 164 tasks retry for
half a minute and the run end with a normal-looking table and exit 0. A run now stops at once when
the first task that reached the model ends in an authentication or connection failure before any
reply came back, when every key has been rejected, or when several tasks in a row fail to connect
(a server that died mid-run), or when the first task's request is refused as wrong (HTTP 404, or a
400 naming the model or a parameter: every task would be), or when every server has run out of time
on several requests in a row (one that accepts the connection and then sends nothing would
otherwise cost retries × the request timeout per task: hours for a whole run). Anything else (a
timeout, a 500 on one task) stays that task's infrastructure error: a later task may well succeed,
and --resume reruns it.
"""

from __future__ import annotations

from dataclasses import dataclass

from humanevalfix.evaluation.records import TaskRecord

FATAL_KINDS = ("auth", "connection", "stalled")
IN_A_ROW = 3  # connection failures in a row that end a run that had been working


@dataclass
class EndpointHealth:
    replied: bool = False  # some model call of this run returned
    fatal_in_a_row: int = 0

    def observe(self, record: TaskRecord) -> str | None:
        """The reason to stop the run after `record`, or None to go on."""
        if record.iterations > 0:
            self.replied = True
        if record.error and record.error_kind == "request" and not self.replied:
            # A wrong model, parameter or route fails every task alike: stop before more calls.
            return f"the server refused the request ({record.task_id}: {record.error})"
        if not record.error or record.error_kind not in FATAL_KINDS:
            if record.iterations > 0 or not record.error:
                self.fatal_in_a_row = 0
            return None
        self.fatal_in_a_row += 1
        if record.error_kind == "stalled":
            # Counted by the client across tasks (RetryPolicy.stalls_in_a_row): already a pattern.
            return f"{record.error} ({record.task_id})"
        if record.error.startswith("every API key was rejected"):
            return f"every API key was rejected; check the key variable ({record.error})"
        if not self.replied or self.fatal_in_a_row >= IN_A_ROW:
            what = "the server rejected the key" if record.error_kind == "auth" else "the server could not be reached"
            return f"{what} ({record.task_id}: {record.error})"
        return None
