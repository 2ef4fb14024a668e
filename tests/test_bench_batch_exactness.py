"""bench/batch_exactness.py on the real embedded model: one-token batches must reproduce the
reference exactly (else the comparison itself is broken), and bad options are one clear error."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import batch_exactness  # noqa: E402


@pytest.mark.parametrize("argv", [["--sizes", "2,x"], ["--sizes", "0"], ["--tokens", "1"]])
def test_bad_options_are_one_line_and_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert batch_exactness.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


@pytest.mark.slow
def test_batches_of_one_token_reproduce_one_token_decoding_bit_for_bit(tmp_path: Path) -> None:
    out = tmp_path / "exact.json"
    assert batch_exactness.main(["--limit", "1", "--tokens", "6", "--sizes", "1,6", "--out", str(out)]) == 0
    document = json.loads(out.read_text(encoding="utf-8"))
    rows = {(r["repack"], r["batch"]): r for r in document["rows"]}
    assert set(rows) == {(True, 1), (True, 6), (False, 1), (False, 6)}
    for repack in (True, False):
        one = rows[(repack, 1)]
        assert one["positions"] == 6 and one["identical"] == 6 and one["flipped"] == 0 and one["max_abs_diff"] == 0.0
        assert rows[(repack, 6)]["positions"] == 6
    assert "AVX" in document["build"] or "CPU" in document["build"]
