"""Who walks the repair policy's steps (`--engine`): the built-in loop, or LangGraph.

Both run the same steps and routes (agent._steps), so a run's results do not depend on the
engine; tests/test_langgraph_engine.py checks that attempt by attempt. The engine is recorded in
the results all the same (`config.engine`), shown beside the protocol, and a resumed run must
use the interrupted run's engine (the run spec tags it result-affecting), so that one label holds for every task.
"""

from __future__ import annotations

ENGINES: dict[str, str] = {
    "builtin": "the built-in loop",
    "langgraph": "the same steps as a LangGraph StateGraph (pip install -r requirements-langgraph.txt)",
}
DEFAULT_ENGINE = "builtin"


def require_engine(name: str) -> None:
    """Refuse, in one line, an engine that cannot run here, before a model or sandbox starts."""
    if name == "langgraph":
        from humanevalfix.agent._graph import require_langgraph

        require_langgraph("--engine langgraph")
