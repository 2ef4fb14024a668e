"""The run specification: every setting of an eval run, typed, in the sections a run is made of.

One `RunSpec` is built when a run starts (config.run_spec) and written as it is, by `to_dict`, to
the stream's first line and to the results file, with `schema_version`. Every reader (`--resume`,
the reports, `score`, the bench) reads it back with `from_dict`, which also migrates files written
before the spec existed (schema 1: the same keys, without a version).

The versions: 1, no version (the protocol's parts without its name, migrated by `_migrated`); 2,
the spec; 3, the same spec, and the file's task records and summary carry a `scores` map, each
registered scorer's entry by name (evaluation/scores.py), beside the flat fields that held the
built-in scores before. A record is migrated by itself (evaluation/scores.py `migrated`): one
without `scores` has its map made from its flat fields, whatever the version, because a stream
of version 2 continued by `--resume` holds records of both kinds.

Each leaf field carries in its metadata the key it is stored under and whether it affects results:
`--resume` compares exactly the result-affecting ones (`compared`), so a field added here is
compared by default unless it is tagged informational. `legacy` is what a field meant in files
written before it was recorded (before seeds, no seed was sent); a field without one that an old
file lacks is `unrecorded`: left out when compared and when written back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from humanevalfix.agent import DEFAULT_MAX_ITERS, DEFAULT_RUNTIME_VALUES, DEFAULT_SAMPLES, AgentSettings
from humanevalfix.agent.engines import DEFAULT_ENGINE
from humanevalfix.agent.protocols import DEFAULT_PROTOCOL, PROTOCOLS
from humanevalfix.agent.strategies import REWRITE_AGAIN, REWRITE_TURNS
from humanevalfix.errors import UserError
from humanevalfix.models.catalog import LOCAL
from humanevalfix.models.embedded import DEFAULT_PROMPT_LOOKUP
from humanevalfix.models.presets import Preset
from humanevalfix.sandbox.executor import DEFAULT_TIMEOUT_S
from humanevalfix.sandbox.pool import DEFAULT_WORKERS

SCHEMA_VERSION = 3
_NO_LEGACY = object()


def _f(key: str, affects: bool, default: Any, option: str | None = None, legacy: Any = _NO_LEGACY) -> Any:
    """A field stored under `key` (dots: nested objects), tagged result-affecting or informational;
    `option`: how an error names it (the option the user typed)."""
    meta = {"key": key, "affects": affects, "option": option}
    if legacy is not _NO_LEGACY:
        meta["legacy"] = legacy
    if isinstance(default, (dict, list)):
        raise TypeError("a mutable default")  # records are frozen; a shared dict would not be
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class DatasetSpec:
    source: str = _f("dataset_source", False, "")  # its contents are compared (sha256)
    sha256: str = _f("dataset_sha256", True, "", "--dataset-path")
    task_ids: tuple[str, ...] = _f("task_ids", False, ())  # --resume takes them from the stream
    skipped_rows: tuple[str, ...] | None = _f("skipped_rows", False, None)  # --skip-bad-rows: listed, never scored


@dataclass(frozen=True)
class EmbeddedServerSpec:
    # Mostly speed, but drafted tokens are checked in batches, whose arithmetic can flip a greedy
    # near tie (docs/local-model.md): compared on --resume.
    prompt_lookup: int = _f("prompt_lookup", True, DEFAULT_PROMPT_LOOKUP, "--prompt-lookup")
    exact_lookup: bool = _f(
        "exact_lookup", True, False, "--exact-lookup", legacy=False
    )  # added later; before, never exact
    # Each reply cut at the close of its first code block (models/codestop.py): the code read can
    # change where a later block defined the function too. Added later; before, never cut.
    stop_after_code: bool = _f("stop_after_code", True, False, "--stop-after-code", legacy=False)


@dataclass(frozen=True)
class ModelSpec:
    model: str = _f("model", True, "", "--model")
    provider: str = _f("provider", True, "", "--provider")
    base_url: str | None = _f("base_url", False, None)  # the same model may be served elsewhere after a crash
    # The preset as resolved (no secret: key variable names only); its result-affecting parts are
    # the fields below. A mapping, read by the reports for its name and prices.
    preset: Mapping[str, Any] | None = _f("preset", False, None)
    preset_reason: str | None = _f(
        "preset_reason", False, None
    )  # --base-url: why this preset's sampling (models.served)
    temperatures: tuple[float, ...] = _f("sampling.temperatures", True, (), "--temperatures")
    max_tokens: int = _f("sampling.max_tokens", True, 0, "--max-tokens")
    # The base of each request's seed (agent._settings.request_seed); runs from before seeds sent none.
    seed: int | None = _f("sampling.seed", True, None, "--seed", legacy=None)
    # Reasoning models (models.parameters): sent only when set; runs from before them set neither.
    reasoning_effort: str | None = _f("sampling.reasoning_effort", True, None, "--reasoning-effort", legacy=None)
    thinking: str | None = _f("sampling.thinking", True, None, "--thinking", legacy=None)
    native_tools: bool = _f("native_tools", True, True, "--text-tools")  # False: the tool described in the prompt
    embedded_server: EmbeddedServerSpec | None = _f("embedded_server", True, None)  # provider local only
    # Known at the end of a run: the parameters sent after any adaptation to a refusal by name
    # (models.parameters); None: the standard ones, or a run from before it was recorded.
    request_parameters: str | None = _f("request_parameters", False, None)

    @classmethod
    def of(
        cls, preset: Preset, preset_reason: str | None = None, embedded: EmbeddedServerSpec | None = None
    ) -> ModelSpec:
        """The model section of a resolved preset; `embedded`: the embedded server's options (provider local)."""
        return cls(
            model=preset.model,
            provider=preset.provider,
            base_url=preset.base_url,
            preset=preset.public(),
            preset_reason=preset_reason,
            temperatures=tuple(preset.temperatures),
            max_tokens=preset.max_tokens,
            seed=preset.seed,
            reasoning_effort=preset.reasoning_effort,
            thinking=preset.thinking,
            native_tools=preset.native_tools,
            embedded_server=embedded if preset.provider == LOCAL else None,
        )

    @property
    def prices(self) -> tuple[float | None, float | None]:
        price = (self.preset or {}).get("price_per_1m") or {}
        return price.get("input"), price.get("output")


@dataclass(frozen=True)
class ProtocolSpec:
    name: str = _f("protocol", True, DEFAULT_PROTOCOL, "--protocol")  # agent.protocols: what the model saw
    docstring: bool = _f("docstring", True, PROTOCOLS[DEFAULT_PROTOCOL].docstring, "--protocol")  # from the name
    feedback: str = _f("feedback", True, PROTOCOLS[DEFAULT_PROTOCOL].feedback, "--protocol")

    @classmethod
    def named(cls, name: str) -> ProtocolSpec:
        p = PROTOCOLS[name]
        return cls(p.name, p.docstring, p.feedback)


@dataclass(frozen=True)
class AgentSpec:
    max_iters: int = _f("max_iters", True, DEFAULT_MAX_ITERS, "--max-iters")
    # Both engines give the same results, but the config labels every task of the run with one
    # engine, which a resume with the other would make untrue.
    engine: str = _f("engine", True, DEFAULT_ENGINE, "--engine", legacy=DEFAULT_ENGINE)
    samples: int = _f("samples", True, DEFAULT_SAMPLES, "--samples", legacy=1)  # legacy: one, before the option
    workers: int = _f("workers", False, DEFAULT_WORKERS)
    workers_reason: str | None = _f("workers_reason", False, None)  # the provider's default, when no option set it
    # A turn's replies drawn again, and what the feedback shows of a failing call: both change what
    # the model sees (agent._settings); runs before them had neither.
    redraws: int = _f("redraws", True, 0, "--redraws", legacy=0)
    redraw_turns: int | None = _f("redraw_turns", True, None, "--redraw-turns", legacy=None)
    strategies: tuple[str, ...] | None = _f(
        "strategies", True, None, "--strategies", legacy=None
    )  # None: all registered
    # Files before the option ran rewrite for REWRITE_TURNS turns (2, since commit 62b01cc; older
    # ones, whose prompts differ anyway, for the rest of the budget).
    rewrite_turns: int = _f("rewrite_turns", True, REWRITE_TURNS, "--rewrite-turns", legacy=REWRITE_TURNS)
    rewrite_again: str = _f("rewrite_again", True, REWRITE_AGAIN[0], "--rewrite-again", legacy=REWRITE_AGAIN[0])
    rewrite_now: bool = _f("rewrite_now", True, False, "--rewrite-now", legacy=False)
    runtime_values: str = _f("runtime_values", True, DEFAULT_RUNTIME_VALUES, "--runtime-values", legacy="none")
    # Known at the end of a run (the endpoint may move to the text protocol on the way).
    tool_mode: str | None = _f("tool_mode", False, None)
    tool_mode_reason: str | None = _f("tool_mode_reason", False, None)


@dataclass(frozen=True)
class DockerSpec:
    # The container's image and limits can change verdicts (numpy's version, a memory cap).
    image: str = _f("image", True, "", "--docker-image (or SANDBOX_DOCKER_IMAGE)")
    cpus: float = _f("cpus", True, 1.0, "--docker-cpus (or SANDBOX_DOCKER_CPUS)")
    memory: int = _f("memory", True, 0, "--docker-memory (or SANDBOX_DOCKER_MEMORY)")
    pids: int = _f("pids", True, 0, "--docker-pids (or SANDBOX_DOCKER_PIDS)")


@dataclass(frozen=True)
class SandboxSpec:
    executor: str = _f("executor", True, "", "--sandbox")  # after `auto` was resolved
    docker: DockerSpec | None = _f("docker", True, None)  # executor docker only
    isolation: str = _f("isolation", False, "")  # a description of the executor's
    isolation_warning: str | None = _f("isolation_warning", False, None)  # `auto` below file-system isolation: why
    timeout_s: float = _f("timeout_s", True, DEFAULT_TIMEOUT_S, "--timeout")


@dataclass(frozen=True)
class ScoringSpec:
    # Written by `score`: which extra inputs gave pass@1+, and when the verdicts were re-run. The
    # verdict itself is always the dataset's full test (evaluation.scorer).
    plus_source: Mapping[str, Any] | None = _f("plus_source", False, None)
    rescored: Mapping[str, Any] | None = _f("rescored", False, None)


@dataclass(frozen=True)
class HostSpec:
    project_version: str = _f("project_version", False, "")
    python: str = _f("python", False, "")
    machine: str = _f("machine", False, "")
    started_at: str = _f("started_at", False, "")


@dataclass(frozen=True)
class RunSpec:
    dataset: DatasetSpec = DatasetSpec()
    model: ModelSpec = ModelSpec()
    protocol: ProtocolSpec = ProtocolSpec()
    agent: AgentSpec = AgentSpec()
    sandbox: SandboxSpec = SandboxSpec()
    scoring: ScoringSpec = ScoringSpec()
    host: HostSpec = HostSpec()
    # Stored keys an older file did not record (and that have no legacy meaning): neither
    # compared nor written back, so nothing is claimed that the run did not record.
    unrecorded: frozenset[str] = field(default=frozenset(), compare=False)
    schema_version: int = field(default=SCHEMA_VERSION, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema_version": self.schema_version}
        for section in _SECTIONS:
            _dump(getattr(self, section), "", out, self.unrecorded)
        return out

    def with_section(self, name: str, value: Any) -> RunSpec:
        """`name` replaced by `value`, whose fields are then recorded (e.g. `score`'s scoring section
        in an older file)."""
        keys = {key for key, _, _ in _leaves(value, "", expand=True)}
        keys |= {key.split(".")[0] for key in keys}  # a nested record stored as null
        return dataclasses.replace(self, **{name: value}, unrecorded=self.unrecorded - keys)

    def agent_settings(self) -> AgentSettings:
        return agent_settings(self.model, self.protocol, self.agent)

    def compared(self) -> dict[str, Any]:
        """The result-affecting values by stored key (what `--resume` must find unchanged)."""
        out: dict[str, Any] = {}
        for section in _SECTIONS:
            for key, value, meta in _leaves(getattr(self, section), ""):
                if meta["affects"] and key not in self.unrecorded:
                    out[key] = _plain(value)
        return out


_SECTIONS = ("dataset", "model", "protocol", "agent", "sandbox", "scoring", "host")


def agent_settings(model: ModelSpec, protocol: ProtocolSpec, agent: AgentSpec) -> AgentSettings:
    """The agent's settings from the spec: the one place eval, `fix` and the bench build them."""
    return AgentSettings(
        max_iters=agent.max_iters,
        feedback=protocol.feedback,
        temperatures=model.temperatures,
        max_tokens=model.max_tokens,
        docstring=protocol.docstring,
        engine=agent.engine,
        seed=model.seed,
        redraws=agent.redraws,
        redraw_turns=agent.redraw_turns,
        strategies=agent.strategies,
        rewrite_turns=agent.rewrite_turns,
        rewrite_again=agent.rewrite_again,
        rewrite_now=agent.rewrite_now,
        runtime_values=agent.runtime_values,
    )


def option_of(key: str) -> str:
    """How an error names a stored key: the option the user typed, else the key itself."""
    for section in _SECTIONS:
        for name, _, meta in _leaves(_EMPTY[section], "", expand=True):
            if name == key and meta["option"]:
                return str(meta["option"])
    return key


# ---------------------------------------------------------------- reading and writing


def from_dict(raw: Mapping[str, Any], where: str = "config") -> RunSpec:
    """A stored config as a spec: schema 2 as written, schema 1 (no version) migrated. A value of
    the wrong type is one UserError naming `where` and the key."""
    if not isinstance(raw, Mapping):
        raise UserError(f"{where}: expected an object, got {type(raw).__name__}")
    version = raw.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UserError(f"{where}.schema_version: expected a positive integer, got {version!r}")
    if version > SCHEMA_VERSION:
        raise UserError(
            f"{where}: schema_version {version} was written by a newer version of this tool (this one reads up to "
            f"{SCHEMA_VERSION})"
        )
    data = _migrated(raw) if version == 1 else raw
    unrecorded: set[str] = set()
    sections = {s: _load(type(_EMPTY[s]), data, "", unrecorded, where) for s in _SECTIONS}
    return RunSpec(**sections, unrecorded=frozenset(unrecorded), schema_version=SCHEMA_VERSION)


def _migrated(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Schema 1: runs from before `--protocol` recorded only the docstring and the feedback (one run
    recorded neither docstring nor engine: what was then the only setting)."""
    data = dict(raw)
    name = data.get("protocol")
    if not (isinstance(name, str) and name in PROTOCOLS):
        docstring, feedback = data.get("docstring", True) is not False, data.get("feedback", "tests")
        known = [p.name for p in PROTOCOLS.values() if (p.docstring, p.feedback) == (docstring, feedback)]
        data["protocol"] = (
            known[0] if known else f"custom (docstring {'shown' if docstring else 'hidden'}, feedback {feedback})"
        )
        data.setdefault("docstring", docstring)
        data.setdefault("feedback", feedback)
    else:
        data.setdefault("docstring", PROTOCOLS[name].docstring)
        data.setdefault("feedback", PROTOCOLS[name].feedback)
    return data


_MISSING = object()


def _get(data: Mapping[str, Any], key: str) -> Any:
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    *parents, last = key.split(".")
    for part in parents:
        out = out.setdefault(part, {})
    out[last] = value


def _load(cls: type, data: Mapping[str, Any], prefix: str, unrecorded: set[str], where: str) -> Any:
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        key = prefix + f.metadata["key"]
        raw = _get(data, key)
        sub = _record_type(f)
        if raw is _MISSING:
            if "legacy" in f.metadata:
                values[f.name] = f.metadata["legacy"]
                continue
            unrecorded.add(key)
            continue  # the dataclass default stands in, never written back
        if sub is not None:
            if raw is not None:
                _object(raw, key, where)  # its fields are read below, by their full keys
            values[f.name] = None if raw is None else _load(sub, data, key + ".", unrecorded, where)
        else:
            values[f.name] = _typed(raw, f, key, where)
    return cls(**values)


def _object(raw: Any, key: str, where: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise UserError(f"{where}.{key}: expected an object, got {raw!r:.80}")
    return raw


# The stored JSON types each annotated type accepts (None is accepted where the type allows it).
_KINDS: dict[str, tuple[type, ...]] = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,)}


def _typed(raw: Any, f: dataclasses.Field, key: str, where: str) -> Any:
    annotation = str(f.type)
    if raw is None and ("None" in annotation):
        return None
    base = annotation.split("|")[0].strip()
    if base.startswith("tuple["):
        item = base[len("tuple[") :].split(",")[0].strip()
        if not isinstance(raw, list) or not all(_is(v, item) for v in raw):
            raise UserError(f"{where}.{key}: expected a list of {item}, got {raw!r:.80}")
        return tuple(raw)
    if base.startswith("Mapping["):
        return _object(raw, key, where)
    if not _is(raw, base):
        raise UserError(f"{where}.{key}: expected {base}, got {raw!r:.80}")
    return raw


def _is(value: Any, kind: str) -> bool:
    types = _KINDS.get(kind)
    if types is None:
        return True
    if isinstance(value, bool) and bool not in types:
        return False
    return isinstance(value, types)


def _record_type(f: dataclasses.Field) -> type | None:
    """The nested record type of a field (DockerSpec, EmbeddedServerSpec), None for a leaf."""
    return _RECORDS.get(str(f.type).split("|")[0].strip())


def _dump(record: Any, prefix: str, out: dict[str, Any], unrecorded: frozenset[str]) -> None:
    for f in dataclasses.fields(record):
        key = prefix + f.metadata["key"]
        if key in unrecorded:
            continue
        value = getattr(record, f.name)
        if dataclasses.is_dataclass(value):
            _put(out, key, {})
            _dump(value, key + ".", out, unrecorded)
        else:
            _put(out, key, _plain(value))


def _leaves(record: Any, prefix: str, expand: bool = False) -> Iterator[tuple[str, Any, Mapping[str, Any]]]:
    """(stored key, value, metadata) of every leaf; a nested record that is None is one leaf."""
    for f in dataclasses.fields(record):
        key = prefix + f.metadata["key"]
        value = getattr(record, f.name)
        sub = _record_type(f)
        if sub is not None and (value is not None or expand):
            yield from _leaves(value if value is not None else sub(), key + ".", expand)
        else:
            yield key, value, f.metadata


def _plain(value: Any) -> Any:
    """As JSON holds it: tuples as lists, mappings as dicts."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


_RECORDS: dict[str, type] = {"DockerSpec": DockerSpec, "EmbeddedServerSpec": EmbeddedServerSpec}
_EMPTY: dict[str, Any] = {
    f.name: f.default for f in dataclasses.fields(RunSpec) if f.name in _SECTIONS
}  # each section's defaults
