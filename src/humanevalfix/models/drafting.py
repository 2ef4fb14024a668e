"""Speculative drafts from a smaller model of the same tokenizer, inside the embedded server.

llama-cpp-python's `Llama.generate` asks a draft model for tokens after each step and checks them
all in one batch of the target model, keeping those the target would have chosen itself; its
server offers only prompt lookup as that draft. `ModelDraft` is a second one: the 0.5B weights
drafting greedily for the 1.5B (Qwen2.5-Coder's sizes share one tokenizer). Prompt lookup goes
first where it finds a continuation (it costs nothing); the small model drafts only where it
finds none. The target still decides every token, so a draft changes speed only, as prompt lookup
does (with the same batch-rounding caveat: bench/local_speed.py's identical-replies column).

The draft model keeps its own KV cache in step with the target's tokens: each call it drops what
the target did not keep and reads only what is new, so a turn's shared conversation prefix is
read once.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

# The environment of the server's launcher (embedded._LAUNCHER) names the draft's weights, how
# many tokens it drafts and its threads: llama_cpp.server has no setting for a draft model.
ENV_GGUF = "HEFIX_DRAFT_GGUF"
ENV_TOKENS = "HEFIX_DRAFT_TOKENS"
ENV_THREADS = "HEFIX_DRAFT_THREADS"
ENV_CTX = "HEFIX_DRAFT_CTX"


class Engine(Protocol):
    """The few calls of a llama.cpp model the draft needs (a fake in the tests)."""

    def tokens(self) -> npt.NDArray[np.intc]: ...  # those in its KV cache, in order
    def truncate(self, n: int) -> None: ...  # keep the first n
    def eval(self, ids: list[int]) -> None: ...  # append them; next_token then sees the last
    def next_token(self) -> int: ...  # the greedy choice after the last token read
    def eos(self) -> int: ...


def common_prefix(a: npt.NDArray[np.intc], b: npt.NDArray[np.intc]) -> int:
    n = min(len(a), len(b))
    differ = np.nonzero(a[:n] != b[:n])[0]
    return int(differ[0]) if len(differ) else n


class ModelDraft:
    """Up to `tokens` greedy tokens of `engine` after `input_ids`; prompt lookup first if given."""

    def __init__(self, engine: Engine, tokens: int, n_ctx: int, lookup: Any = None) -> None:
        self._engine = engine
        self._tokens = tokens
        self._n_ctx = n_ctx
        self._lookup = lookup  # a llama_speculative.LlamaPromptLookupDecoding, or None

    def __call__(self, input_ids: npt.NDArray[np.intc], /, **kwargs: Any) -> npt.NDArray[np.intc]:
        if self._lookup is not None:
            found = self._lookup(input_ids)
            if len(found):
                return np.asarray(found, dtype=np.intc)
        room = min(self._tokens, self._n_ctx - len(input_ids) - 1)
        if room <= 0 or not len(input_ids):
            return np.array([], dtype=np.intc)
        self._catch_up(input_ids)
        drafted: list[int] = []
        eos = self._engine.eos()
        while True:
            token = self._engine.next_token()
            drafted.append(token)
            if token == eos or len(drafted) == room:
                return np.array(drafted, dtype=np.intc)
            self._engine.eval([token])

    def _catch_up(self, input_ids: npt.NDArray[np.intc]) -> None:
        # Keep the shared prefix, but always read the last token again when nothing is new: the
        # next token's logits are those of the last read, which may have been a draft.
        keep = min(common_prefix(self._engine.tokens(), input_ids), len(input_ids) - 1)
        self._engine.truncate(keep)
        self._engine.eval([int(t) for t in input_ids[keep:]])


class LlamaEngine:
    """`Engine` over llama_cpp.Llama, without its sampler: logits of the last token only."""

    def __init__(self, gguf: str, threads: int, n_ctx: int) -> None:
        from llama_cpp import Llama

        self._llm = Llama(
            model_path=gguf, n_ctx=n_ctx, n_threads=threads, n_threads_batch=max(threads, 2), verbose=False
        )
        self._n_vocab = self._llm.n_vocab()

    def tokens(self) -> npt.NDArray[np.intc]:
        return self._llm.input_ids[: self._llm.n_tokens]

    def truncate(self, n: int) -> None:
        self._llm.n_tokens = n  # Llama.eval drops the KV cache past n_tokens before it reads

    def eval(self, ids: list[int]) -> None:
        self._llm.eval(ids)

    def next_token(self) -> int:
        logits = np.ctypeslib.as_array(self._llm._ctx.get_logits(), shape=(self._n_vocab,))
        return int(np.argmax(logits))

    def eos(self) -> int:
        return int(self._llm.token_eos())


def install() -> None:
    """In the server's process, before it loads: its prompt-lookup draft becomes `ModelDraft` over
    the weights the environment names, with prompt lookup first (none where it asks for 0 tokens)."""
    import llama_cpp.llama_speculative as speculative

    lookup_class = speculative.LlamaPromptLookupDecoding
    gguf = os.environ[ENV_GGUF]
    tokens = int(os.environ.get(ENV_TOKENS, "4"))
    threads = int(os.environ.get(ENV_THREADS, "1"))
    n_ctx = int(os.environ[ENV_CTX])

    def draft(num_pred_tokens: int = 10, **kwargs: Any) -> ModelDraft:
        lookup = lookup_class(num_pred_tokens=num_pred_tokens) if num_pred_tokens > 0 else None
        return ModelDraft(LlamaEngine(gguf, threads, n_ctx), tokens, n_ctx, lookup)

    speculative.LlamaPromptLookupDecoding = draft  # type: ignore[misc,assignment]  # what llama_cpp.server calls
    print(f"draft model: {gguf}, {tokens} tokens a step where prompt lookup finds none", file=sys.stderr, flush=True)


def environment(gguf: str, tokens: int, threads: int, n_ctx: int) -> dict[str, str]:
    """What `install` reads, for the server's environment."""
    return {ENV_GGUF: gguf, ENV_TOKENS: str(tokens), ENV_THREADS: str(threads), ENV_CTX: str(n_ctx)}
