"""RestrictedPython policy of the restricted executor; runs inside the sandboxed child.

child/runner.py loads this file from its own directory. The candidate is compiled with
`compile_restricted_exec` (no names or attributes starting with `_`, no frame or generator
internals) and runs with `safe_builtins`, the guards RestrictedPython's compiled code calls, and
a guarded `__import__` that allows the scoring prelude's modules and nothing else. Attribute
access on those modules is narrowed further where a module is a way out (`sys.modules`, numpy's
file I/O, `typing.get_type_hints`, which `eval`s strings unrestricted).

This restricts the language, not time or memory: the child still runs under the executor's
timeout and rlimits (and inside bwrap when that is in force).
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import keyword
import operator
import types
from collections.abc import Callable
from typing import Any, cast

from RestrictedPython import RestrictingNodeTransformer, safe_builtins
from RestrictedPython.compile import syntax_error_template
from RestrictedPython.Eval import default_guarded_getitem, default_guarded_getiter
from RestrictedPython.Guards import (
    full_write_guard,
    guarded_iter_unpack_sequence,
    guarded_unpack_sequence,
    safer_getattr_raise,
)
from RestrictedPython.PrintCollector import PrintCollector

NOT_ALLOWED = "not allowed in the restricted executor"

# The scoring prelude's modules (see PRELUDE in child/runner.py): what the reference harness
# makes available, so what a correct solution may import. Nothing else can be imported.
ALLOWED_MODULES = frozenset(
    {
        "math",
        "re",
        "sys",
        "copy",
        "datetime",
        "itertools",
        "collections",
        "heapq",
        "statistics",
        "functools",
        "hashlib",
        "numpy",
        "string",
        "typing",
        # Only as DATACLASSES below: `dataclass` checks its fields' names before it writes them
        # into the source of the methods it makes (which run unrestricted).
        "dataclasses",
        # Submodules that are attributes of the above and only compute.
        "collections.abc",
        "numpy.linalg",
        "numpy.random",
        "numpy.fft",
    }
)

# `sys` is in the prelude, but `sys.modules`, `sys._getframe` & co. reach everything: only these.
SYS_ALLOWED = frozenset(
    {"maxsize", "float_info", "int_info", "maxunicode", "byteorder", "version_info", "getrecursionlimit", "getsizeof"}
)

# Module attributes that read or write files, load code or evaluate strings unrestricted.
MODULE_DENIED = {
    "numpy": frozenset(
        {
            "load",
            "save",
            "savez",
            "savez_compressed",
            "savetxt",
            "loadtxt",
            "genfromtxt",
            "fromfile",
            "fromregex",
            "memmap",
            "DataSource",
            "ctypeslib",
            "lib",
            "testing",
            "distutils",
            "f2py",
            "show_config",
            "show_runtime",
            "get_include",
            "core",
            "os",
            "sys",
        }
    ),
    "typing": frozenset({"get_type_hints", "ForwardRef"}),
}
# Methods that write files, whatever object they are looked up on (numpy arrays).
ATTR_DENIED = frozenset({"tofile", "dump", "dumps"})

# Builtins beyond RestrictedPython's safe_builtins. Each is a pure function over
# values (no I/O, no introspection, no code loading), added because canonical solutions use it
# (or a correct fix plausibly would): aggregates and iteration helpers (`sum`, `min`, `max`,
# `all`, `any`, `enumerate`, `zip`, `map`, `filter`, `reversed`, `sorted`, `iter`, `next`),
# constructors of plain values (`dict`, `set`, `frozenset`, `bytes`, `bin`, `format`), and
# `type`-free class support (`object`, `staticmethod`, `classmethod`, `property`).
WIDENED = (
    "sum",
    "min",
    "max",
    "all",
    "any",
    "enumerate",
    "zip",
    "map",
    "filter",
    "reversed",
    "sorted",
    "iter",
    "next",
    "dict",
    "set",
    "frozenset",
    "bytes",
    "bin",
    "format",
    "object",
    "staticmethod",
    "classmethod",
    "property",
    "ascii",
    # The real `range`, `list` and `tuple`, not RestrictedPython's limited_builtins: its
    # limited_range refuses more than 1000 elements and limited_list/limited_tuple refuse strings
    # and the no-argument form, which fails correct canonical solutions (Python/31, 36, 39, 49,
    # 59, 150 loop over larger ranges; Python/67, 86, 161 call list() or list(a_string)). Memory
    # and time are bounded by the executor's rlimits and time limit instead.
    "range",
    "list",
    "tuple",
)
EVAL_SENTINEL = "hefix_restricted_eval"


# Special methods a class of the candidate's may define, beyond RestrictedPython's own (`__init__`,
# `__contains__`, `__eq__` and the comparisons), and `__slots__`: defining one makes a method or a
# class attribute, and reading one as `x.__repr__` stays refused (guarded_getattr). Not the hooks
# that change how the guards themselves see an object (`__getattr__`, `__getattribute__`,
# `__setattr__`, `__delattr__`, descriptors, `__new__`, `__init_subclass__`, `__class_getitem__`,
# `__del__`, `__reduce__`) nor `__module__`, which the write guard reads.
CLASS_NAMES = frozenset(
    (
        "__slots__ __repr__ __str__ __hash__ __bool__ __len__ __iter__ __next__ __reversed__ __getitem__ "
        "__setitem__ __delitem__ __call__ __index__ __int__ __float__ __abs__ __neg__ __pos__ __add__ "
        "__radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __floordiv__ __mod__ __enter__ __exit__"
    ).split()
)


class NotAllowed(Exception):
    """Something the restricted executor refuses; the message says what, for the model."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{NOT_ALLOWED}: {what}")


def _side_effect_free(node: ast.AST) -> bool:
    return not any(
        isinstance(n, (ast.Call, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)) for n in ast.walk(node)
    )


class Policy(RestrictingNodeTransformer):
    """RestrictedPython's policy, widened where canonical solutions and the classes of a prompt need it."""

    def check_name(self, node: Any, name: str | None, allow_magic_methods: bool = False) -> None:
        # A class's own special methods and `__slots__` (CLASS_NAMES), inside a class or function
        # (indented), as RestrictedPython allows `__init__`.
        if name in CLASS_NAMES and getattr(node, "col_offset", 0) != 0:
            return
        super().check_name(node, name, allow_magic_methods)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> Any:
        # `weight: int = 1` (a dataclass's fields, typed code): a name, its annotation and its value
        # visited as any other expression; an annotated attribute or item stays refused.
        if not isinstance(node.target, ast.Name):
            self.error(node, "annotated assignment to anything but a name is not allowed")
            return node
        return self.node_contents_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        # `counts[i] += 1` (Python/69, Python/126). RestrictedPython refuses augmented assignment
        # of items; it is allowed here as `x[k] = _inplacevar_(op, x[k], v)` (read through
        # _getitem_, written through _write_) when `x` and `k` are side-effect free, so evaluating
        # them twice changes nothing. Attributes (`self.size += 1`) likewise, as `x.a = _inplacevar_(op,
        # x.a, v)`: read through _getattr_, written through _write_ (candidate_write_guard).
        target = node.target
        load: ast.expr | None = None
        store: ast.expr | None = None
        if isinstance(target, ast.Subscript) and _side_effect_free(target.value) and _side_effect_free(target.slice):
            load = ast.Subscript(value=_copy(target.value), slice=_copy(target.slice), ctx=ast.Load())
            store = ast.Subscript(value=_copy(target.value), slice=_copy(target.slice), ctx=ast.Store())
        elif isinstance(target, ast.Attribute) and _side_effect_free(target.value):
            load = ast.Attribute(value=_copy(target.value), attr=target.attr, ctx=ast.Load())
            store = ast.Attribute(value=_copy(target.value), attr=target.attr, ctx=ast.Store())
        if load is not None and store is not None:
            assign = ast.Assign(targets=[store], value=ast.BinOp(left=load, op=node.op, right=node.value))
            ast.copy_location(assign, node)
            ast.fix_missing_locations(assign)
            new = self.visit(assign)
            if isinstance(new, ast.Assign) and isinstance(new.value, ast.BinOp):
                binop = new.value
                new.value = ast.copy_location(
                    ast.Call(
                        func=ast.Name("_inplacevar_", ast.Load()),
                        args=[ast.Constant(INPLACE_NAMES[type(node.op)]), binop.left, binop.right],
                        keywords=[],
                    ),
                    binop,
                )
                ast.fix_missing_locations(new)
            return new
        return super().visit_AugAssign(node)

    def visit_Call(self, node: ast.Call) -> Any:
        # `eval(expression)` (Python/160 evaluates the arithmetic it builds). The call goes to
        # restricted_eval below, which compiles the string with this same policy: it can do
        # nothing the candidate's own code could not.
        if isinstance(node.func, ast.Name) and node.func.id == "eval":
            node.func.id = EVAL_SENTINEL
            # RestrictedPython's visit_Call returns the call node (typed as any visitor's answer)
            new = cast(ast.AST, super().visit_Call(node))
            for n in ast.walk(new):
                if isinstance(n, ast.Name) and n.id == EVAL_SENTINEL:
                    n.id = "eval"
            return new
        return super().visit_Call(node)


def _copy(node: ast.expr) -> ast.expr:
    return ast.parse(ast.unparse(node), mode="eval").body


def safe_dataclass(cls: Any = None, /, **options: Any) -> Any:
    """dataclasses.dataclass for the candidate: the methods it makes are source text with each
    field's name in it, run unrestricted, so every name must be one a class body could write
    (an identifier, no keyword, no leading "_"), and the class a plain one (`type`'s)."""

    def made(c: Any) -> Any:
        if type(c) is not type:
            raise NotAllowed("a dataclass of a class with a metaclass of its own")
        names = c.__dict__.get("__annotations__", {})
        for n in names:
            if not (type(n) is str and n.isidentifier() and not keyword.iskeyword(n) and n[0] != "_"):
                raise NotAllowed(f"a dataclass field named {n!r}")
        return dataclasses.dataclass(c, **options)

    return made if cls is None else made(cls)


def _dataclasses() -> types.ModuleType:
    """What `import dataclasses` gives the candidate: safe_dataclass and the helpers that only
    compute (no make_dataclass, whose namespace argument reaches a class's dict)."""
    module = types.ModuleType("dataclasses")
    for name in ("field", "fields", "asdict", "astuple", "replace", "is_dataclass", "FrozenInstanceError", "MISSING"):
        setattr(module, name, getattr(dataclasses, name))
    module.dataclass = safe_dataclass  # type: ignore[attr-defined]  # a module made here
    return module


DATACLASSES = _dataclasses()


def guarded_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
    if level != 0:
        raise NotAllowed("relative imports")
    if name not in ALLOWED_MODULES:
        allowed = ", ".join(sorted(m for m in ALLOWED_MODULES if "." not in m))
        raise NotAllowed(f"import of module '{name}' (allowed: {allowed})")
    if name == "dataclasses":
        module = DATACLASSES
        for item in fromlist or ():
            if item != "*" and not hasattr(module, item):
                raise NotAllowed(
                    f"dataclasses.{item} (allowed: {', '.join(sorted(n for n in vars(module) if n[0] != '_'))})"
                )
        return module
    module = builtins.__import__(name, globals, locals, fromlist, level)
    for item in fromlist or ():
        if item != "*":
            guarded_getattr(module if fromlist else module, item)
    return module


def guarded_getattr(obj: Any, name: str, *default: Any) -> Any:
    if isinstance(name, str) and name.startswith("_"):
        raise NotAllowed(f'the attribute "{name}" (names starting with "_")')
    if isinstance(obj, types.ModuleType):
        module = obj.__name__
        if module not in ALLOWED_MODULES:
            raise NotAllowed(f"module '{module}'")
        if module == "sys" and name not in SYS_ALLOWED:
            raise NotAllowed(f"sys.{name} (allowed: {', '.join(sorted(SYS_ALLOWED))})")
        if name in MODULE_DENIED.get(module, ()):
            raise NotAllowed(f"{module}.{name}")
    if name in ATTR_DENIED:
        raise NotAllowed(f"the method `{name}` (it writes files)")
    try:
        value = safer_getattr_raise(obj, name, *default)
    except NotImplementedError as exc:  # str.format & co.: RestrictedPython's own refusal
        raise NotAllowed(str(exc)) from None
    if isinstance(value, types.ModuleType) and value.__name__ not in ALLOWED_MODULES:
        raise NotAllowed(f"module '{value.__name__}' (reached as {getattr(obj, '__name__', '?')}.{name})")
    return value


INPLACE_NAMES = {
    ast.Add: "+=",
    ast.Sub: "-=",
    ast.Mult: "*=",
    ast.Div: "/=",
    ast.FloorDiv: "//=",
    ast.Mod: "%=",
    ast.Pow: "**=",
    ast.LShift: "<<=",
    ast.RShift: ">>=",
    ast.BitAnd: "&=",
    ast.BitOr: "|=",
    ast.BitXor: "^=",
    ast.MatMult: "@=",
}
INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "&=": operator.iand,
    "|=": operator.ior,
    "^=": operator.ixor,
    "@=": operator.imatmul,
}


def inplacevar(op: str, x: Any, y: Any) -> Any:
    return INPLACE[op](x, y)


def apply(f: Any, *args: Any, **kwargs: Any) -> Any:
    return f(*args, **kwargs)


def candidate_write_guard(module: str) -> Callable[[Any], Any]:
    """`_write_` for the candidate's code: attributes of instances of classes its own code defined
    (`module`: the prompt's `Node` and its `self.next = ...`, with the instances of them that cross
    from the judge) are written as plain Python writes them; every other object goes through
    RestrictedPython's guard (lists and dicts as they are, anything else refused), so no module,
    function or prelude object is changed. A metaclass of the candidate's own is not trusted
    with `__module__`: only classes made by `type` itself."""

    def guard(ob: Any) -> Any:
        cls = type(ob)
        if type(cls) is type and cls.__module__ == module:
            return ob
        return full_write_guard(ob)

    return guard


def restricted_builtins() -> dict[str, Any]:
    table = dict(safe_builtins)
    for name in WIDENED:
        table[name] = getattr(builtins, name)
    table["__import__"] = guarded_import
    table["getattr"] = guarded_getattr  # the builtin goes through the same guard as `x.y`
    table["_getattr_"] = guarded_getattr
    return table


def candidate_globals(prelude: dict[str, Any], name: str) -> dict[str, Any]:
    """The namespace the restricted candidate runs in: the prelude's names and the guards."""
    g = {k: v for k, v in prelude.items() if k != "__builtins__"}
    table = restricted_builtins()

    def restricted_eval(source: Any, *namespaces: Any) -> Any:
        if namespaces:
            raise NotAllowed("eval with a namespace argument")
        if not isinstance(source, str):
            raise NotAllowed("eval of anything but a string")
        code, errors = restricted_compile(source, "<eval>", "eval")
        if errors or code is None:
            raise NotAllowed(f"in eval: {(errors or ['cannot compile'])[0]}")
        return eval(code, g)

    table["eval"] = restricted_eval
    g.update(
        {
            "__builtins__": table,
            "__name__": name,
            "__metaclass__": type,
            "_getattr_": guarded_getattr,
            "_getitem_": default_guarded_getitem,
            "_getiter_": default_guarded_getiter,
            "_write_": candidate_write_guard(name),
            "_inplacevar_": inplacevar,
            "_unpack_sequence_": guarded_unpack_sequence,
            "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
            "_print_": PrintCollector,
            "_apply_": apply,
        }
    )
    return g


def restricted_compile(source: str, filename: str, mode: str) -> tuple[types.CodeType | None, list[str]]:
    """RestrictedPython's compile with the candidate's own future flags: its compile_restricted_*
    drop `dont_inherit` and so give every candidate their module's `from __future__ import
    annotations` (annotations as strings, which no other level gives it, and which a dataclass
    cannot read). The code, or RestrictedPython's complaints in its own words."""
    errors: list[str] = []
    try:
        tree = ast.parse(source, filename, mode)
    except SyntaxError as v:
        text = v.text.strip() if v.text else None
        errors.append(syntax_error_template.format(lineno=v.lineno, type=type(v).__name__, msg=v.msg, statement=text))
        return None, errors
    Policy(errors, [], {}).visit(tree)
    return (None if errors else compile(cast(ast.Module, tree), filename, mode, 0, True)), errors


def compile_candidate(source: str, filename: str) -> types.CodeType:
    """Compile restricted; raises NotAllowed with RestrictedPython's first complaint."""
    code, errors = restricted_compile(source, filename, "exec")
    if errors or code is None:
        errors = errors or ["the code could not be compiled"]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise NotAllowed(f"{errors[0]}{more}")
    return code


def refused_builtin(name: str) -> bool:
    """A NameError for `name` means the restricted executor withheld a real builtin."""
    return hasattr(builtins, name) and name not in restricted_builtins() and name != "eval"
