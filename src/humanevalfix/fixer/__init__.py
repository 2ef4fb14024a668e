"""`fix`: the repair agent on the user's own file, checked against their own tests.

fixer.command runs it (the CLI's `fix`); fixer.userfile reads the file, fixer.usertests reads the
tests and runs candidates against them, fixer.localize ranks the functions the failing tests point
to (fixer.failures reads a failure against the sources), fixer.session tries one scope after
another, fixer.scope says what a candidate may change and splices it in, fixer.request says what
the model is asked, fixer.patch writes the diff.

Names below resolve on first use (see humanevalfix/exports.py): an `__init__` that imported its
modules would be re-entered by every module of the package that imports a sibling through it.
"""

from humanevalfix.exports import lazy_exports

_MODULES = {
    "EXIT_FIXED": "command",
    "EXIT_NOT_FIXED": "command",
    "fix_executor": "command",
    "run_fix": "command",
    "Localizer": "localize",
    "Stage": "localize",
    "Suspect": "localize",
    "plan": "localize",
    "rank": "localize",
    "patch_name": "patch",
    "unified_diff": "patch",
    "request_for_fix": "request",
    "Scope": "scope",
    "splice": "scope",
    "UserFile": "userfile",
    "load_user_file": "userfile",
    "require_function": "userfile",
    "FailedTest": "usertests",
    "Frame": "usertests",
    "RunReport": "usertests",
    "UserTestExecutor": "usertests",
    "UserTests": "usertests",
    "baseline_problem": "usertests",
    "load_tests": "usertests",
}
__all__ = sorted(_MODULES)
__getattr__ = lazy_exports(__name__, _MODULES)
