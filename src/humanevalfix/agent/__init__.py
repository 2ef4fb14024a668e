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

Names below resolve on first use (see humanevalfix/exports.py): an `__init__` that imported its
modules would be re-entered by every module of the package that imports a sibling through it.
"""

from humanevalfix.exports import lazy_exports

_MODULES = {
    "repair": "_driver",
    "GraphState": "_graph",
    "build_graph": "_graph",
    "compile_graph": "_graph",
    "drawable": "_graph",
    "mermaid": "_graph",
    "repair_with_graph": "_graph",
    "require_langgraph": "_graph",
    "RepairRequest": "_request",
    "Rewrite": "_request",
    "Target": "_request",
    "request_for_task": "_request",
    "AgentResult": "_result",
    "Attempt": "_result",
    "AgentSettings": "_settings",
    "DEFAULT_MAX_ITERS": "_settings",
    "DEFAULT_RUNTIME_VALUES": "_settings",
    "DEFAULT_SAMPLES": "_settings",
    "FEEDBACK_MODES": "_settings",
    "RUNTIME_VALUES": "_settings",
    "ToolMode": "_settings",
    "END": "_steps",
    "FIRST": "_steps",
    "ROUTES": "_steps",
    "RepairRun": "_steps",
    "STEPS": "_steps",
    "STEP_DOCS": "_steps",
    "Step": "_steps",
    "walk": "_steps",
    "CodeCheck": "codecheck",
}
__all__ = sorted(_MODULES)
__getattr__ = lazy_exports(__name__, _MODULES)
