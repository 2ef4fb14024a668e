"""The repair agent: a model fixes code, checking its candidates by running them against tests.

    result = repair(request_for_task(task, settings), model, executor, settings, ToolMode(native))

A RepairRequest says what to repair and how a candidate is checked; the benchmark builds one
from a HumanEvalFix task (`request_for_task`), `fix` from the user's file. The modules behind
this: agent._driver runs the turns, agent._native and agent._text are the two protocols,
strategies how a stuck text-protocol model is asked again, prompts what the model is told,
toolcalls how calls are found in replies, codecheck how candidates are checked.

The turns are the steps of agent._steps (RepairRun, ROUTES, STEPS), which the built-in loop walks
and which agent._graph turns into a LangGraph graph (`AgentSettings(engine="langgraph")`; extend
it with `compile_graph(routes, steps)` and `repair_with_graph`, see docs/langgraph.md). LangGraph
is imported only when a graph is built.
"""

from humanevalfix.agent._driver import repair
from humanevalfix.agent._graph import GraphState, build_graph, compile_graph, drawable, mermaid, repair_with_graph, require_langgraph
from humanevalfix.agent._request import RepairRequest, Rewrite, Target, request_for_task
from humanevalfix.agent._result import AgentResult, Attempt
from humanevalfix.agent._settings import FEEDBACK_MODES, RUNTIME_VALUES, AgentSettings, ToolMode
from humanevalfix.agent._steps import END, FIRST, ROUTES, STEP_DOCS, STEPS, RepairRun, Step, walk
from humanevalfix.agent.codecheck import CodeCheck

__all__ = [
    "END",
    "FEEDBACK_MODES",
    "RUNTIME_VALUES",
    "FIRST",
    "ROUTES",
    "STEPS",
    "STEP_DOCS",
    "GraphState",
    "RepairRun",
    "Step",
    "build_graph",
    "compile_graph",
    "drawable",
    "mermaid",
    "repair_with_graph",
    "require_langgraph",
    "AgentResult",
    "AgentSettings",
    "Attempt",
    "CodeCheck",
    "RepairRequest",
    "Rewrite",
    "Target",
    "ToolMode",
    "repair",
    "request_for_task",
    "walk",
]
