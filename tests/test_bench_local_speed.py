"""bench/local_speed.py's parts that need no model: settings, the server's timings, the table."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import local_speed  # noqa: E402

from humanevalfix.errors import UserError
from humanevalfix.models.embedded import ServerOptions, server_command

LOG = """\
llama_perf_context_print: prompt eval time =    6117.01 ms /   576 tokens \
(   10.62 ms per token,    94.16 tokens per second)
llama_perf_context_print:        eval time =      73.72 ms /     2 runs   \
(   36.86 ms per token,    27.13 tokens per second)
llama_perf_context_print: prompt eval time =    1000.00 ms /   100 tokens \
(   10.00 ms per token,   100.00 tokens per second)
llama_perf_context_print:        eval time =     300.00 ms /    10 runs   \
(   30.00 ms per token,    33.33 tokens per second)
"""


def test_settings_are_plain_or_pld_n() -> None:
    assert local_speed.parse_setting("plain") == ServerOptions(prompt_lookup=0)
    assert local_speed.parse_setting("pld10") == ServerOptions(prompt_lookup=10)
    assert local_speed.parse_setting("pld6-norepack") == ServerOptions(prompt_lookup=6, repack=False)
    assert local_speed.parse_setting("plain-norepack") == ServerOptions(prompt_lookup=0, repack=False)
    assert local_speed.parse_setting("pld10-t2") == ServerOptions(prompt_lookup=10, threads=2)
    assert local_speed.parse_setting("pld10-b1") == ServerOptions(prompt_lookup=10, batch_threads=1)
    assert local_speed.parse_setting("plain-norepack-t2-b1") == ServerOptions(
        prompt_lookup=0, repack=False, threads=2, batch_threads=1
    )
    assert local_speed.parse_setting("pld10-cache") == ServerOptions(prompt_lookup=10, extra=local_speed.CACHE_OPTIONS)
    assert local_speed.parse_setting("pld10-t2-cache").threads == 2
    assert "--cache" in server_command(Path("m.gguf"), "m", 1234, local_speed.parse_setting("plain-cache"))
    assert local_speed.parse_setting("pld10-stop") == ServerOptions(prompt_lookup=10, stop_after_code=True)
    assert local_speed.parse_setting("pld4-cache-stop").stop_after_code
    # -dN: the draft model (its weights located when the setting runs), before the other suffixes
    assert local_speed.parse_setting("pld10-d4") == ServerOptions(
        prompt_lookup=10, draft_gguf=Path(local_speed.DRAFT_PRESET), draft_tokens=4
    )
    assert local_speed.parse_setting("plain-d3-norepack-t2").draft_tokens == 3
    for bad in (
        "pld",
        "pld0",
        "pld99",
        "fast",
        "pld6-norepack-norepack",
        "norepack",
        "pld10-t0",
        "pld10-b1-t2",
        "pld10-t",
        "pld10-cache-t2",
        "pld10-d0",
        "pld10-norepack-d4",
        "cache",
        "pld10-stop-cache",
        "stop",
    ):
        with pytest.raises(UserError, match="--settings"):
            local_speed.parse_setting(bad)


def test_server_timings_are_summed_from_the_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(LOG, encoding="utf-8")
    assert local_speed.server_perf(log) == (7117.01, 676, 373.72, 12)


def test_the_server_is_started_with_prompt_lookup_unless_it_is_off() -> None:
    on = server_command(Path("m.gguf"), "m", 1234, ServerOptions())
    assert on[on.index("--draft_model") + 1] == "prompt-lookup-decoding"
    assert on[on.index("--draft_model_num_pred_tokens") + 1] == "10"
    off = server_command(Path("m.gguf"), "m", 1234, ServerOptions(prompt_lookup=0))
    assert "--draft_model" not in off
    assert on[on.index("--n_ctx") + 1] == "8192"


def test_the_table_shows_speed_up_and_identical_replies(capsys: pytest.CaptureFixture[str]) -> None:
    def result(name: str, loop_s: float, same: int | None) -> local_speed.SettingResult:
        return local_speed.SettingResult(
            name,
            0,
            True,
            loop_s,
            40,
            12,
            12,
            12,
            0,
            1000,
            800,
            100.0,
            0,
            0,
            0,
            0,
            same,
            40 if same is not None else None,
        )

    local_speed.print_table([result("plain", 80.0, None), result("pld10", 40.0, 40)])
    out = capsys.readouterr().out
    assert "2.00x" in out and "40/40" in out and "(reference)" in out


def test_replies_and_the_code_they_ran_are_compared_turn_by_turn(tmp_path: Path) -> None:
    """-stop cuts a reply's text after its first block: the text differs, the code it ran may not."""
    for name, tail in (("a", "\nIt now adds one."), ("b", "")):
        traces = tmp_path / name
        traces.mkdir()
        reply = "```python\ndef f(x):\n    return x + 1\n```" + tail
        (traces / "T_0.json").write_text(
            json.dumps(
                {
                    "task_id": "T/0",
                    "messages": [{"role": "user", "content": "fix f"}, {"role": "assistant", "content": reply}],
                    "attempts": [{"code": "def f(x):\n    return x + 1\n"}],
                }
            ),
            encoding="utf-8",
        )
    a, b = tmp_path / "a", tmp_path / "b"
    assert local_speed.same(local_speed.replies(a), local_speed.replies(b)) == (0, 1)
    assert local_speed.same(local_speed.codes(a), local_speed.codes(b)) == (1, 1)


def test_exact_lookup_caps_the_drafts_turns_repack_off_and_refuses_a_clash() -> None:
    from humanevalfix.errors import ConfigError
    from humanevalfix.models.embedded import EXACT_MAX_DRAFT, with_lookup

    served = ServerOptions(port=8080)
    assert with_lookup(served, None, False) == ServerOptions(port=8080, prompt_lookup=10, repack=True, exact=False)
    assert with_lookup(served, 4, False) == ServerOptions(port=8080, prompt_lookup=4, repack=True, exact=False)
    assert with_lookup(served, None, True) == ServerOptions(
        port=8080, prompt_lookup=EXACT_MAX_DRAFT, repack=False, exact=True
    )
    assert with_lookup(served, 0, True) == ServerOptions(port=8080, prompt_lookup=0, repack=False, exact=True)
    with pytest.raises(ConfigError, match=r"--exact-lookup: at most 6 draft tokens.*--prompt-lookup 7"):
        with_lookup(served, 7, True)


def test_exact_lookup_is_refused_on_a_llamafile_build_before_the_server_starts() -> None:
    from humanevalfix.errors import ConfigError
    from humanevalfix.models.embedded import check_exact, inexact_build

    stock = "CPU : SSE3 = 1 | AVX2 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
    assert "llamafile" in (inexact_build(stock) or "")
    assert inexact_build(stock.replace("LLAMAFILE = 1 | ", "")) is None
    check_exact(ServerOptions())  # not asked for: nothing to check
    with pytest.raises(ConfigError, match="repacked buffers off"):
        check_exact(ServerOptions(prompt_lookup=6, repack=True, exact=True))
    with pytest.raises(ConfigError, match="at most 6"):
        check_exact(ServerOptions(prompt_lookup=10, repack=False, exact=True))
    # And the build installed here, whichever it is: refused exactly when it has llamafile.
    import llama_cpp

    installed = inexact_build(llama_cpp.llama_print_system_info().decode())
    if installed:
        with pytest.raises(ConfigError, match='CMAKE_ARGS="-DGGML_LLAMAFILE=OFF"'):
            check_exact(ServerOptions(prompt_lookup=6, repack=False, exact=True))
    else:
        check_exact(ServerOptions(prompt_lookup=6, repack=False, exact=True))
