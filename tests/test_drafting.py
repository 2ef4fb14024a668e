"""The draft model of the embedded server (models/drafting.py), on a fake engine: what it drafts,
and that it reads only what is new to it. The real weights drafting: tests/test_local_model.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from humanevalfix.models import drafting, embedded
from humanevalfix.models.drafting import ModelDraft, common_prefix

EOS = 0


class FakeEngine:
    """A 'model' whose greedy next token is (last * 3 + 1) % 50, or EOS after 49."""

    def __init__(self) -> None:
        self.cache: list[int] = []
        self.read = 0  # tokens evaluated, all calls together

    def tokens(self) -> np.ndarray:
        return np.array(self.cache, dtype=np.intc)

    def truncate(self, n: int) -> None:
        del self.cache[n:]

    def eval(self, ids: list[int]) -> None:
        self.cache.extend(ids)
        self.read += len(ids)

    def next_token(self) -> int:
        last = self.cache[-1]
        return EOS if last == 49 else (last * 3 + 1) % 50

    def eos(self) -> int:
        return EOS


def ids(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.intc)


def test_common_prefix() -> None:
    assert common_prefix(ids(1, 2, 3), ids(1, 2, 4)) == 2
    assert common_prefix(ids(1, 2), ids(1, 2, 3)) == 2
    assert common_prefix(ids(), ids(1)) == 0
    assert common_prefix(ids(5), ids(6)) == 0


def test_it_drafts_the_engines_greedy_tokens() -> None:
    draft = ModelDraft(FakeEngine(), tokens=4, n_ctx=100)
    assert draft(ids(7, 8, 2)).tolist() == [7, 22, 17, 2]  # 2 -> 7 -> 22 -> 67 % 50 = 17 -> 52 % 50 = 2


def test_it_stops_at_the_end_of_text_and_drafts_it() -> None:
    assert ModelDraft(FakeEngine(), tokens=6, n_ctx=100)(ids(5, 16)).tolist() == [49, EOS]


def test_an_accepted_draft_is_not_read_again() -> None:
    engine = FakeEngine()
    draft = ModelDraft(engine, tokens=3, n_ctx=100)
    prompt = [4, 9, 2]
    first = draft(ids(*prompt)).tolist()  # [7, 22, 17]: reads the prompt, then 7 and 22
    assert engine.read == 5
    # The target kept the three drafts and sampled one more token of its own.
    after = prompt + first + [30]
    draft(ids(*after))
    assert engine.read == 5 + 2 + 2  # 17 and 30 are new; then two of the three new drafts are read
    assert engine.cache[: len(after)] == after


def test_a_rejected_draft_is_dropped_from_the_cache() -> None:
    engine = FakeEngine()
    draft = ModelDraft(engine, tokens=3, n_ctx=100)
    draft(ids(4, 9, 2))  # drafts 7, 22, 17; caches 4 9 2 7 22
    # The target took 7, then chose 11 where the draft said 22.
    assert draft(ids(4, 9, 2, 7, 11)).tolist() == [34, 3, 10]
    assert engine.cache[:5] == [4, 9, 2, 7, 11]


def test_nothing_new_reads_the_last_token_again() -> None:
    engine = FakeEngine()
    draft = ModelDraft(engine, tokens=1, n_ctx=100)
    assert draft(ids(1, 2)).tolist() == [7]
    before = engine.read
    assert draft(ids(1, 2)).tolist() == [7]
    assert engine.read == before + 1


def test_prompt_lookup_goes_first_and_the_model_drafts_where_it_finds_nothing() -> None:
    engine = FakeEngine()
    found = {"now": [40, 41]}
    draft = ModelDraft(engine, tokens=2, n_ctx=100, lookup=lambda input_ids: np.array(found["now"], dtype=np.intc))
    assert draft(ids(1, 2)).tolist() == [40, 41]
    assert engine.read == 0  # the model was not asked
    found["now"] = []
    assert draft(ids(1, 2)).tolist() == [7, 22]


def test_no_draft_past_the_context() -> None:
    engine = FakeEngine()
    assert ModelDraft(engine, tokens=4, n_ctx=5)(ids(1, 2, 3)).tolist() == [10]
    assert ModelDraft(FakeEngine(), tokens=4, n_ctx=4)(ids(1, 2, 3)).tolist() == []
    assert ModelDraft(FakeEngine(), tokens=4, n_ctx=100)(ids()).tolist() == []


def test_the_server_is_told_to_draft_and_where_the_weights_are() -> None:
    plain = embedded.ServerOptions(prompt_lookup=0)
    assert "--draft_model" not in embedded.server_command(Path("m.gguf"), "m", 1, plain)
    with_model = embedded.ServerOptions(prompt_lookup=0, draft_gguf=Path("small.gguf"), draft_tokens=3)
    command = embedded.server_command(Path("m.gguf"), "m", 1, with_model)
    at = command.index("--draft_model_num_pred_tokens")
    assert command[at + 1] == "0"  # lookup off: only the model drafts
    assert drafting.environment("small.gguf", 3, 1, 8192) == {
        drafting.ENV_GGUF: "small.gguf",
        drafting.ENV_TOKENS: "3",
        drafting.ENV_THREADS: "1",
        drafting.ENV_CTX: "8192",
    }


def test_install_makes_the_servers_lookup_a_model_draft(monkeypatch: pytest.MonkeyPatch) -> None:
    import llama_cpp.llama_speculative as speculative

    monkeypatch.setattr(speculative, "LlamaPromptLookupDecoding", speculative.LlamaPromptLookupDecoding)
    made: list[tuple[str, int, int]] = []

    def engine(gguf: str, threads: int, n_ctx: int) -> FakeEngine:
        made.append((gguf, threads, n_ctx))
        return FakeEngine()

    monkeypatch.setattr(drafting, "LlamaEngine", engine)
    for name, value in drafting.environment("small.gguf", 2, 1, 64).items():
        monkeypatch.setenv(name, value)
    drafting.install()
    with_lookup = speculative.LlamaPromptLookupDecoding(num_pred_tokens=10)
    assert isinstance(with_lookup, ModelDraft)
    assert made == [("small.gguf", 1, 64)]
    # The prompt 5 9 5 repeats 5: lookup drafts what followed it; 1 2 has no repeat: the model drafts.
    assert with_lookup(ids(5, 9, 5)).tolist() == [9, 5]
    assert with_lookup(ids(1, 2)).tolist() == [7, 22]
    alone = speculative.LlamaPromptLookupDecoding(num_pred_tokens=0)
    assert alone(ids(5, 9, 5)).tolist() == [16, 49]


def test_a_presets_draft_is_located_as_its_own_weights_but_never_from_local_model_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from humanevalfix.models import weights
    from humanevalfix.models.presets import Preset

    asked: list[tuple[str, dict[str, str]]] = []

    def locate(key: str, explicit: Path | None = None, environ: dict[str, str] | None = None) -> Path:
        asked.append((key, dict(environ or {})))
        return Path(f"/weights/{key}.gguf")

    monkeypatch.setattr(weights, "locate", locate)
    monkeypatch.setenv(weights.PATH_ENV, "/mine/big.gguf")
    preset = Preset("p", "local", "m", gguf="qwen2.5-coder-1.5b", draft="qwen2.5-coder-0.5b")
    options = embedded.with_draft(embedded.ServerOptions(), preset, None)
    assert options.draft_gguf == Path("/weights/qwen2.5-coder-0.5b.gguf")
    assert asked and weights.PATH_ENV not in asked[0][1]
    # Weights of the user's own (--gguf) may tokenize otherwise: no draft; nor for a preset without one.
    assert embedded.with_draft(embedded.ServerOptions(), preset, Path("own.gguf")).draft_gguf is None
    assert embedded.with_draft(embedded.ServerOptions(), Preset("q", "local", "m"), None).draft_gguf is None


def test_a_models_file_names_a_draft_as_text(tmp_path: Path) -> None:
    from humanevalfix.errors import ConfigError
    from humanevalfix.models.presets import load_presets

    good = tmp_path / "good.yaml"
    good.write_text("mine:\n  provider: local\n  model: m\n  gguf: qwen2.5-coder-1.5b\n  draft: qwen2.5-coder-0.5b\n")
    preset = load_presets(good)["mine"]
    assert preset.draft == "qwen2.5-coder-0.5b" and preset.public()["draft"] == "qwen2.5-coder-0.5b"
    assert "draft" not in load_presets()["local"].public()  # a preset without one reads as before
    bad = tmp_path / "bad.yaml"
    bad.write_text("mine:\n  provider: local\n  model: m\n  draft: 5\n")
    with pytest.raises(ConfigError, match="field 'draft' must be text"):
        load_presets(bad)
