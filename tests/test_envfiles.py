"""Keys are found where users keep them: the nearest `.env` (this folder, then its parents), then
the per-user `~/.config/humanevalfix/.env`; the environment wins over both, the nearer file over the
user's. A run's first lines say which key it uses and where it came from, masked."""

from __future__ import annotations

from pathlib import Path

import pytest

from humanevalfix.envfiles import EnvFiles, key_line, load_env_files, user_file
from humanevalfix.testing.scripted_server import ScriptedServer, tool_call

from .conftest import clean_env, run_cli

KEY = "LOCAL_API_KEY"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """project/.env, a sub-folder two levels down as the working directory, a user config folder."""
    project, sub, config = tmp_path / "project", tmp_path / "project" / "src" / "deep", tmp_path / "config"
    sub.mkdir(parents=True)
    (config / "humanevalfix").mkdir(parents=True)
    monkeypatch.chdir(sub)
    return {"project": project, "sub": sub, "user": config / "humanevalfix" / ".env", "config": config}


def env_with(tree: dict[str, Path], **extra: str) -> dict[str, str]:
    return {"XDG_CONFIG_HOME": str(tree["config"]), **extra}


def test_the_nearest_dotenv_above_the_working_directory_is_read(tree: dict[str, Path]) -> None:
    (tree["project"] / ".env").write_text(f"{KEY}=sk-project-1111aaaa\n", encoding="utf-8")
    env = env_with(tree)
    loaded = load_env_files(env)
    assert env[KEY] == "sk-project-1111aaaa"
    assert loaded.origin[KEY] == tree["project"] / ".env" and loaded.files == (tree["project"] / ".env",)


def test_the_user_file_is_read_when_no_project_file_sets_the_key(tree: dict[str, Path]) -> None:
    (tree["project"] / ".env").write_text("OTHER=1\n", encoding="utf-8")
    tree["user"].write_text(f"{KEY}=sk-user-2222bbbb\nOTHER=2\n", encoding="utf-8")
    env = env_with(tree)
    loaded = load_env_files(env)
    assert (env[KEY], env["OTHER"]) == ("sk-user-2222bbbb", "1")  # the nearer file wins for OTHER
    assert loaded.origin == {"OTHER": tree["project"] / ".env", KEY: tree["user"]}


def test_the_environment_wins_over_both_files(tree: dict[str, Path]) -> None:
    (tree["project"] / ".env").write_text(f"{KEY}=sk-project-1111aaaa\n", encoding="utf-8")
    tree["user"].write_text(f"{KEY}=sk-user-2222bbbb\n", encoding="utf-8")
    env = env_with(tree, **{KEY: "sk-shell-3333cccc"})
    loaded = load_env_files(env)
    assert env[KEY] == "sk-shell-3333cccc" and KEY not in loaded.origin


def test_the_user_file_follows_xdg_and_defaults_to_home(tmp_path: Path) -> None:
    assert user_file({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "humanevalfix" / ".env"
    assert user_file({}) == Path.home() / ".config" / "humanevalfix" / ".env"


def test_the_key_line_names_the_file_and_masks_the_key(tmp_path: Path) -> None:
    env = {KEY: "sk-secret-4444dddd,sk-secret-5555eeee"}
    line = key_line(KEY, "compatible", EnvFiles((tmp_path / ".env",), {KEY: tmp_path / ".env"}), env)
    assert line == f"key: {KEY} …dddd, …eeee from {tmp_path / '.env'}"
    assert "secret" not in line
    assert key_line(KEY, "compatible", EnvFiles(), env) == f"key: {KEY} …dddd, …eeee from the environment"
    assert key_line(KEY, "compatible", EnvFiles(), {}) == f"key: no {KEY} set; the server gets a placeholder"
    assert "the embedded model runs" in (key_line(None, "local", EnvFiles(), {}) or "")
    assert key_line(None, "oracle", EnvFiles(), {}) is None


@pytest.mark.e2e
def test_a_run_from_a_sub_folder_uses_the_projects_key_and_says_so(tree: dict[str, Path], dataset_path: Path) -> None:
    """The real command line, from two folders below the project's .env: the server gets the key,
    and the first line names the file with the key masked."""
    (tree["project"] / ".env").write_text(f"{KEY}=sk-test-parent-6666ffff\n", encoding="utf-8")
    with ScriptedServer([tool_call("def f(x):\n    return x\n")]) as server:
        proc = run_cli(
            [
                "--model",
                "scripted-model",
                "--base-url",
                server.base_url,
                "--dataset-path",
                str(dataset_path),
                "--tasks",
                "Python/0",
                "--max-iters",
                "0",
                "--sandbox",
                "process",
                "--out",
                str(tree["sub"] / "r.json"),
            ],
            cwd=tree["sub"],
            env=clean_env(XDG_CONFIG_HOME=str(tree["config"])),
        )
        keys = {r.api_key for r in server.chat_requests()}
    assert proc.returncode == 0, proc.stderr
    assert keys == {"sk-test-parent-6666ffff"}
    said = [line for line in proc.stderr.splitlines() if not line.startswith("warning: --sandbox process:")]
    assert said[0] == f"key: {KEY} …ffff from {tree['project'] / '.env'}", proc.stderr
    assert "sk-test-parent-6666ffff" not in proc.stderr + proc.stdout
