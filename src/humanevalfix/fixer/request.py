"""What `fix` asks the model: the repair request for the user's file and the scope they chose.

With one function in scope (--function NAME, or the one the failing tests point to) the model is
asked to fix that function (its name, signature and docstring in the prompt; rewrite from the
docstring offered when it has one), as on the benchmark. A method is asked for by its name, the
rules naming its class; it is not rewritten (its header is the class around it). With the whole
file in scope the target is the module, named as a module: the model sends the definitions it
changes, and `rewrite` is not offered, since writing a whole module anew from a description would
throw away what works. The whole file is shown either way: the function may need what surrounds it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from humanevalfix import pyast
from humanevalfix.agent import CodeCheck, RepairRequest, Rewrite, Target
from humanevalfix.agent.codecheck import function_header, top_level_function
from humanevalfix.fixer.scope import Scope, find_method
from humanevalfix.fixer.userfile import UserFile
from humanevalfix.fixer.usertests import UserTests
from humanevalfix.sandbox.executor import ExecResult


def request_for_fix(
    user_file: UserFile,
    tests: UserTests,
    scope: Scope,
    feedback: str,
    baseline: ExecResult | None = None,
    check: Callable[[str], CodeCheck] | None = None,
    context: str = "",
) -> RepairRequest:
    """`baseline`: the original's run against the tests (fix has it already; with one function in
    scope, its failure told as the eval tells it); `check`: the scope's check (default: `scope.check`);
    `context`: what the tests' run showed beyond the failure (the calls' values, the other suspects)."""
    shown = tests.source if feedback == "tests" else None  # the user's tests have no separate example
    tree = pyast.parse(user_file.source)
    if scope.method:
        method = find_method(tree, scope.label)
        description = (ast.get_docstring(method) if method is not None else None) or ""
        target = Target(scope.method[1])
        rewrite = None
    elif scope.function:
        fn = top_level_function(tree, scope.function)  # there is one: run_fix checked --function
        description = (ast.get_docstring(fn) if fn is not None else None) or ""
        target = Target(scope.function)
        rewrite = Rewrite(description, function_header(user_file.source, scope.function)) if description else None
    else:
        description = ast.get_docstring(tree) or ""
        target = Target(user_file.module, kind="module")
        rewrite = None
    return RepairRequest(
        task_id=user_file.display,
        target=target,
        code=user_file.source,
        check=check or scope.check,
        tests=shown,
        description=description,
        rules=scope.rules() + (f"\n\n{context.strip()}" if context.strip() else ""),
        rewrite=rewrite,
        baseline=baseline if shown is not None else None,
    )
