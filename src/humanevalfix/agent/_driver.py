"""The repair loop for one request: ask the model, check and run its candidate, feed the result back.

It stops when the feedback tests pass, when a native model stops calling the tool (its last
code is the answer), or when the budget of 1 + max_iters model turns is spent. The verdict that
counts is not decided here: the scorer reruns the final code against the full tests (the
benchmark), or `fix` checks it against the user's tests.

The turns are the steps of agent._steps, walked here in a plain loop (the built-in engine) or as
a LangGraph graph (agent._graph, `--engine langgraph`): the same steps and routes either way.
What each request holds and how the model is asked again is the conversation's business, one
per protocol (agent._native, agent._text).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from humanevalfix.agent._request import RepairRequest
from humanevalfix.agent._result import AgentResult, Attempt
from humanevalfix.agent._settings import AgentSettings, ToolMode
from humanevalfix.agent._steps import RepairRun, walk
from humanevalfix.models.client import ChatModel
from humanevalfix.sandbox.executor import Executor


def repair(
    request: RepairRequest,
    model: ChatModel,
    executor: Executor,
    settings: AgentSettings,
    mode: ToolMode,
    stop: threading.Event | None = None,
    on_attempt: Callable[[Attempt], None] | None = None,
) -> AgentResult:
    """`on_attempt`: told each turn's attempt once its outcome is known (fix prints a line per turn).
    `settings.engine` chooses who walks the steps: this module's loop, or LangGraph."""
    run = RepairRun(request, model, executor, settings, mode, stop, on_attempt)
    if settings.engine == "langgraph":
        from humanevalfix.agent._graph import run_graph

        return run_graph(run)
    return walk(run)
