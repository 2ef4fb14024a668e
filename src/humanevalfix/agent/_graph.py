"""The repair policy as a LangGraph StateGraph (`--engine langgraph`): the same steps, as nodes to extend.

Some users build on LangGraph: they add nodes, swap edges and trace runs with its tools. Here each
step of agent._steps is a node and each of its routes a conditional edge (agent._steps.ROUTES), so
the graph runs exactly the built-in loop's policy, with nothing copied: the nodes call the same
step functions. The state is two keys: `repair`, the RepairRun (the conversation, the attempts, the
fingerprints tried, the turn against the budget), and `route`, what the last node decided, which
the edges read.

A node of your own is a step, `def reflect(run: RepairRun) -> str`, put in the tables given to
`build_graph` (docs/langgraph.md shows one); the built-in loop is not touched. The state holds
live objects (the model client, the sandbox), so a checkpointer that serializes it cannot be used.

langgraph is optional (requirements-langgraph.txt), imported only here, inside the functions that
need it: without it the rest of the package works, and `--engine langgraph` says what to install.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from humanevalfix.agent._request import RepairRequest
from humanevalfix.agent._result import AgentResult, Attempt
from humanevalfix.agent._settings import AgentSettings, ToolMode
from humanevalfix.agent._steps import END, FIRST, ROUTES, STEPS, RepairRun, Step
from humanevalfix.errors import ConfigError
from humanevalfix.models.client import ChatModel
from humanevalfix.sandbox.executor import Executor

if TYPE_CHECKING:
    from langchain_core.runnables.graph import Graph
    from langgraph.graph import StateGraph
    from langgraph.graph.state import CompiledStateGraph

INSTALL = "pip install -r requirements-langgraph.txt"


class GraphState(TypedDict):
    repair: RepairRun
    route: str


def require_langgraph(what: str) -> None:
    """One line naming what to install, before anything starts, when langgraph cannot be imported."""
    try:
        importlib.import_module("langgraph.graph")
    except ImportError:
        raise ConfigError(
            f"{what} needs the optional langgraph package, which is not installed; install it with `{INSTALL}`"
        ) from None


class GraphNode(Protocol):
    """A node as LangGraph's add_node types it: its parameter is named `state` (a Callable type,
    whose parameters have no names, does not match)."""

    def __call__(self, state: GraphState) -> dict[str, str]: ...


def node(step: Step) -> GraphNode:
    """A step as a LangGraph node: it acts on the RepairRun and writes its route for the edges."""

    def run_step(state: GraphState) -> dict[str, str]:
        return {"route": step(state["repair"])}

    run_step.__name__ = getattr(step, "__name__", "step")
    return run_step


def _route(state: GraphState) -> str:
    return state["route"]


def build_graph(
    routes: Mapping[str, Mapping[str, str]] = ROUTES, steps: Mapping[str, Step] = STEPS, first: str = FIRST
) -> StateGraph[Any]:
    """The uncompiled graph: a node per entry of `routes` (its step from `steps`), a conditional
    edge per route. Pass changed copies of ROUTES and STEPS to add or re-wire nodes."""
    require_langgraph("--engine langgraph")
    from langgraph.graph import END as GRAPH_END
    from langgraph.graph import START, StateGraph

    missing = sorted(set(routes) - set(steps))
    if missing:
        raise ConfigError(f"build_graph: no step for node(s) {', '.join(missing)}")
    builder = StateGraph(GraphState)
    for name in routes:
        builder.add_node(name, node(steps[name]))
    builder.add_edge(START, first)
    for name, table in routes.items():
        builder.add_conditional_edges(
            name, _route, {route: GRAPH_END if to == END else to for route, to in table.items()}
        )
    return builder


def compile_graph(
    routes: Mapping[str, Mapping[str, str]] = ROUTES, steps: Mapping[str, Step] = STEPS
) -> CompiledStateGraph[Any]:
    return build_graph(routes, steps).compile(name="repair")


def drawable(graph: CompiledStateGraph[Any]) -> Graph:
    """`graph.get_graph()` with every route on its edge: LangGraph keeps one label per pair of nodes
    (`passed` and `error` both lead from `run` to the end, only one would show)."""
    drawn = graph.get_graph()
    ends: dict[tuple[str, str], list[str]] = {}
    for source, branches in graph.builder.branches.items():
        for branch in branches.values():
            for route, target in (branch.ends or {}).items():
                ends.setdefault((source, target), []).append(str(route))  # LangGraph's route: any Hashable
    for i, edge in enumerate(drawn.edges):
        routes = ends.get((edge.source, edge.target))
        if routes and routes != [edge.target]:  # a route named as its node needs no label
            drawn.edges[i] = edge._replace(data=" / ".join(routes))
    return drawn


def mermaid(graph: CompiledStateGraph[Any]) -> str:
    """The graph as Mermaid text (offline: LangGraph writes the text itself)."""
    return drawable(graph).draw_mermaid()


def run_graph(run: RepairRun, graph: CompiledStateGraph[Any] | None = None) -> AgentResult:
    """Walk the steps through the graph (the default one unless `graph` is given); the result is the run's."""
    graph = graph if graph is not None else compile_graph()
    # LangGraph stops a run after recursion_limit node runs; the budget ends a repair well before
    # (a turn runs each node at most once, `ask` twice when the endpoint needs text), plus one
    # `ask` per cut made to fit the server's context (agent._fit).
    limit = (run.settings.budget + 1) * (len(graph.nodes) + 1) + run.fit.most_cuts + 10
    graph.invoke({"repair": run, "route": ""}, {"recursion_limit": limit})
    return run.result


def repair_with_graph(
    request: RepairRequest,
    model: ChatModel,
    executor: Executor,
    settings: AgentSettings,
    mode: ToolMode,
    graph: CompiledStateGraph[Any] | None = None,
    stop: threading.Event | None = None,
    on_attempt: Callable[[Attempt], None] | None = None,
) -> AgentResult:
    """`agent.repair` through a graph of your own (from `compile_graph` with your tables)."""
    return run_graph(RepairRun(request, model, executor, settings, mode, stop, on_attempt), graph)
