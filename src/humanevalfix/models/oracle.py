"""Oracle models: answer every task with its canonical or its buggy code, through the tool-call path.

They check the pipeline without an LLM: on the full dataset `oracle:canonical` must score
164/164 and `oracle:buggy` 0/164. An oracle is given answers by task id, not tasks: the benchmark
gives its dataset's, `fix` the user's file as it is (oracle:buggy).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from humanevalfix.errors import ConfigError
from humanevalfix.models.client import ChatReply, ChatRequest, ToolCall

KINDS = ("canonical", "buggy")


@dataclass(frozen=True)
class Answer:
    """What an oracle may answer for one task: its buggy code, and its fix when one is known."""

    buggy: str
    canonical: str | None = None


class OracleModel:
    def __init__(self, kind: str, answers: Mapping[str, Answer]) -> None:
        if kind == "canonical":
            missing = [task_id for task_id, a in answers.items() if not a.canonical]
            if missing:
                raise ConfigError(f"oracle:canonical needs a canonical solution; none for {', '.join(missing[:5])}")
            self.answers = {task_id: a.canonical or "" for task_id, a in answers.items()}
        elif kind == "buggy":
            self.answers = {task_id: a.buggy for task_id, a in answers.items()}
        else:
            raise ConfigError(f"unknown oracle 'oracle:{kind}' (use oracle:canonical or oracle:buggy)")
        self.kind = kind

    def chat(self, request: ChatRequest) -> ChatReply:
        code = self.answers[request.task_id]
        call = ToolCall(id="call_oracle", name="run_code", arguments=json.dumps({"code": code}))
        return ChatReply(content="", tool_calls=[call], key_index=None)
