"""Unknown options named as such, by the parser they were meant for, before argparse parses.

argparse alone blames the wrong thing: with subcommands, `humanevalfix --limt 10` reads `10` as the
command (`invalid choice: '10'`), and `fix a.py --wrte` is reported by the top-level parser with the
top-level usage. Here every `--option` is checked first against the parser whose scope it is in
(the top level before the command, the command's after it); an unknown one is one error line that
names it, with the closest known option ("did you mean --limit?") and that parser's short usage.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence


def subparsers_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def known_action(parser: argparse.ArgumentParser, token: str) -> argparse.Action | None:
    """The action `token` means to argparse (exact, or an abbreviation of a long option), else None."""
    name = token.split("=", 1)[0]
    if name in parser._option_string_actions:
        return parser._option_string_actions[name]
    if not (parser.allow_abbrev and name.startswith("--")):
        return None
    # An ambiguous abbreviation counts as known: argparse reports it ("ambiguous option: ...").
    matches = [action for opt, action in parser._option_string_actions.items() if opt.startswith(name)]
    return matches[0] if matches else None


def suggestion(parser: argparse.ArgumentParser, token: str) -> str:
    name = token.split("=", 1)[0]
    options = sorted(opt for opt in parser._option_string_actions if opt.startswith("--"))
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    return f": did you mean {close[0]}?" if close else f" (see {parser.prog} --help)"


def short_usage(parser: argparse.ArgumentParser) -> str:
    """`prog [options] FILE`: the error's usage line, not the whole option list."""
    positionals = [
        a.metavar or a.dest.upper()
        for a in parser._actions
        if not a.option_strings and not isinstance(a, argparse._SubParsersAction)
    ]
    return " ".join([parser.prog, "[options]", *map(str, positionals)])


def check_options(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
    """Exit 2 with one error line naming the first unknown `--option` in `argv`, in the scope of
    the parser it belongs to. Values of options and everything after `--` are not looked at."""
    commands = subparsers_of(parser)
    scope = parser
    values_follow = False  # the words after an option that takes values are its values
    for token in argv:
        if token == "--":
            return
        if token.startswith("--") and len(token) > 2:
            action = known_action(scope, token)
            if action is None:
                if scope is not parser:  # the command's own usage, in one line
                    scope.usage = short_usage(scope)
                scope.error(f"unrecognized option {token.split('=', 1)[0]}{suggestion(scope, token)}")
            values_follow = "=" not in token and action.nargs != 0
        elif token.startswith("-") and len(token) > 1 and not token[1].isdigit():
            action = scope._option_string_actions.get(token[:2])
            values_follow = action is not None and action.nargs != 0 and len(token) == 2
        elif values_follow:
            values_follow = False
        elif token in commands:  # a command, or a command's own action (`sandbox build-image`)
            scope = commands[token]
            commands = subparsers_of(scope)
        elif scope is parser:
            close = difflib.get_close_matches(token, list(commands), n=1, cutoff=0.6)
            if close:
                parser.error(f"unknown command {token!r}: did you mean {close[0]}?")
