"""The pass@1+ answers program's budgets and text, and the normal form (COMMON) it shares with the
check: what decides which inputs become cases (issue 51).

The canonical solution's answers are made by ANSWERS, run in the sandbox's judge with no candidate
code (evaluation/pluscases.py fills it in, runs it and keeps what it reports). Every decision it
makes counts steps (Python's trace events inside the canonical call) or the call's CPU time, never
wall time, so every machine keeps the same cases with the same answers; wall time only says where
one run stops and the next goes on (`initial_state` is what goes on with it).

Kept: the inputs the canonical solution answers within STEPS_PER_CALL steps and CPU_S of CPU time
each (a fifth of the steps after three inputs ran past either), in the generator's order (its
costly mutations last), until the answers kept have cost it CASES_STEPS (a slow canonical solution
gets fewer inputs rather than a long check for every candidate) or all its calls ANSWERS_STEPS.
A call that a fresh run's wall time cuts before either of its limits, three times, leaves the task
without cases for that run (pluscases.compute), never with fewer.
"""

from __future__ import annotations

from typing import Any

# The canonical solution's work is counted in steps: the call, line and return events of Python's
# trace inside its call (sys.settrace), the same count on any machine and under any load. About
# 12 million a second untraced on the shared 2-core machine (STEP_S): the budgets are above what
# the wall-clock ones before them allowed on it (0.25 s a call, 0.2 s for the inputs kept).
STEPS_PER_CALL = 2_000_000  # the canonical solution's steps per call; more: the input is dropped
# ...and its CPU time per call (not wall time: a loaded machine gives it the same), for work in C
# that steps do not see (a product of huge ints, a string copied in a loop). A call stopped by
# either is dropped the same way ("long"), so a slower machine that reaches this before the steps
# drops what a faster one drops, with the same counts. About twice what the steps take traced on
# the shared machine, and within a run's time (ANSWERS_RUN_S less CHUNK_RESERVE_S) at a twentieth of a core.
CPU_S = 1.5
# A run of the answers (no candidate code) takes this long at most where the executor lets the
# harness say (sandbox.executor.takes_timeout), not the candidates' --timeout: a first call needs
# its CPU_S in one run, which a run of 6 s does not give it at a fifth of a core (beside hogs).
ANSWERS_RUN_S = 30.0
CHUNK_RESERVE_S = 1.2  # of a run's time: starting it and reporting; the rest is the answers' (CHUNK_S)
CASES_STEPS = 10_000_000  # its steps on the inputs kept for one task, together
ANSWERS_STEPS = 30_000_000  # its steps on one task, the dropped inputs' included
STEP_S = 8e-8  # a nominal step's time, only for a candidate's limit (pluscases.CANDIDATE_FACTOR), not for cases
# 3: inputs inside the seeds' boundaries, ties dropped; 2: cases decided by steps (issue 51); 1: by
# the time the machine took
GENERATOR_VERSION = 3
MAX_RUNS = 40  # answers runs for one task at most (each goes on where the one before stopped)

# The answers: the canonical solution in its own namespace (with the task's helpers), on each
# input in order from __START__, until the step budget is spent; reported as the fact "cases".
# Every decision counts steps (the trace's call, line and return events inside the canonical
# call) or the call's CPU time (ITIMER_PROF, for work in C the steps do not see; either stops a
# call the same way), never wall time, so the cases are the same on any machine. Wall time only
# says when to stop this run and go on in the next one (__CHUNK_S__); a first call of a run that
# it cuts is `undecided` (the harness tries again, then keeps nothing).
ANSWERS = """
def _hefix_answers():
    import ast as _ast, copy as _copy, json as _json, signal as _signal, sys as _sys, time as _time
__COMMON__
__NEAR__
    class _Over(BaseException):
        pass
    _ns = dict(globals())
    exec(compile(__CANONICAL__, "<canonical>", "exec"), _ns)
    _canonical = _ns[__ENTRY__]
    _rang = [False, False]  # this run's time ran out; the call's CPU time did
    def _ring(signum, frame):
        _rang[0] = True  # kept even if the canonical catches _Slow
        raise _Slow()
    def _cpu(signum, frame):
        _rang[1] = True
        raise _Over()
    _old = _signal.signal(_signal.SIGALRM, _ring)
    _old_cpu = _signal.signal(_signal.SIGPROF, _cpu)
    _st = dict(__STATE__)
    _drops = _st["drops"]
    _start, _cases, _next, _undecided = _time.monotonic(), [], None, None
    _n = [0, 0]  # steps of this call, its limit
    def _tr(frame, event, arg):
        _n[0] += 1
        if _n[0] > _n[1]:
            _n[1] = 1 << 62  # once: the canonical may catch it; the count decides
            raise _Over()
        return _tr
    def _traced(args, left):
        # The canonical on `args` under the step count, the call's CPU time and the run's `left`
        # seconds: each answer's call and its tie partner's (the tracer counts the call's frames).
        _n[0], _n[1], _rang[1] = 0, _st["per_call"], False
        _signal.setitimer(_signal.ITIMER_REAL, max(left, 0.01))
        _signal.setitimer(_signal.ITIMER_PROF, __CPU_S__)
        _sys.settrace(_tr)
        try:
            return _canonical(*args)
        finally:
            _sys.settrace(None)
            _signal.setitimer(_signal.ITIMER_PROF, 0)
            _signal.setitimer(_signal.ITIMER_REAL, 0)
    _inputs = __INPUTS__
    _partners = __PARTNERS__  # each input's lists reversed, where order must not matter (plusties)
    for _i in range(__START__, len(_inputs)):
        _text = _inputs[_i]
        if _st["kept"] >= __BUDGET__ or _st["all"] >= __RUN_STEPS__:
            _drops["budget"] = _drops.get("budget", 0) + 1
            continue
        _left = __CHUNK_S__ - (_time.monotonic() - _start)
        if _i > __START__ and _left < __CHUNK_S__ / 2:
            _next = _i  # the rest in another run: where a run stops decides nothing
            break
        _why = None
        try:
            _args = _ast.literal_eval(_text)
            _copied = _copy.deepcopy(_args)
        except BaseException:
            _drops["literal"] = _drops.get("literal", 0) + 1
            continue
        _rang[0] = False
        _saved = (_st["all"], _st["slow"], _st["per_call"])
        try:
            _raw = _traced(_copied, _left)
        except BaseException:
            _why = "raised"
        _long = _n[0] > _st["per_call"] or _rang[1]
        if _rang[0] and not _long:
            if _i > __START__:
                _next = _i  # this run's time was short: the next run gives it all of its own
            else:
                _undecided = "input %d: this run's %g s ran out before its steps or CPU time" % (_i, __CHUNK_S__)
            break
        if _long:  # past its steps, or its CPU time (work in C the count does not see): the same
            _why = "long"
            _st["all"] += _st["per_call"]
            _st["slow"] += 1
            if _st["slow"] >= 3:
                _st["per_call"] = __STEPS__ // 5  # a domain with long runs: spend less on each
        else:
            _st["all"] += _n[0]
        _steps = _n[0]
        if _why is None:
            try:
                if _prop and not _holds(_args, _raw):
                    raise ValueError("the canonical answer does not have the test's property here")
            except BaseException:
                _why = "property"
        if _why is None:
            try:
                _form = None if _prop else _plain(_raw)
                # An answer past 13,000 bits was made by big-integer work in C, which the steps do
                # not count (fib4(100000): 0.34 to 0.45 s of CPU here against a 0.5 s floor): the cap.
                _big = type(_form) is list and _form[:1] == ["bigint"]
                _entry = [_text, _form, 1.0 if _big else \
min(1.0, max(2 * __PER_CALL__, __FACTOR__ * _steps * __STEP_S__))]
                _size = len(_json.dumps(_entry))
            except BaseException:
                _why = "answer"
        if _why is None and not _prop and _partners and _partners[_i] is not None:
            # The same question with the lists reversed: another answer is a tie (plusties.py).
            try:
                _two = _plain(_traced(_ast.literal_eval(_partners[_i]), __CHUNK_S__ - (_time.monotonic() - _start)))
            except BaseException:
                _two = None
            if _rang[0]:  # this run's time ran out: the input again in the next run, counted once
                _st["all"], _st["slow"], _st["per_call"] = _saved
                if _i > __START__:
                    _next = _i
                else:
                    _undecided = "input %d: this run's %g s ran out before its steps or CPU time" % (_i, __CHUNK_S__)
                break
            _over = _n[0] > _st["per_call"] or _rang[1]
            _st["all"] += min(_n[0], _st["per_call"])
            if _two is not None and not _over and not _near(_form, _two):
                _why = "tie"
        if _why is None and (_size > __CASE_BYTES__ or _st["size"] + _size > __TASK_BYTES__):
            _why = "size"
        if _why is not None:
            _drops[_why] = _drops.get(_why, 0) + 1
            continue
        _st["kept"] += _steps
        _st["size"] += _size
        _cases.append(_entry)
    _signal.signal(_signal.SIGALRM, _old)
    _signal.signal(_signal.SIGPROF, _old_cpu)
    globals()["@hefix.fact"]("cases", {"cases": _cases, "next": _next, "state": _st, "undecided": _undecided})
"""


def initial_state() -> dict[str, Any]:
    """What the answers carry from one run to the next: steps kept and spent, slow calls, the
    limit per call, the bytes kept, and the inputs dropped by reason."""
    return {"kept": 0, "all": 0, "slow": 0, "per_call": STEPS_PER_CALL, "size": 0, "drops": {}}


# The normal form both programs compare in: JSON data (lists, not tuples), so that answers travel
# and are kept as they are. Plain data only: an object of the candidate's cannot decide the
# comparison. Indented for the body of a function.
COMMON = """
    class _Slow(Exception):
        pass
    def _alarm(signum, frame):
        raise _Slow()
    def _plain(x, depth=0):
        if depth > 20:
            return ["deep"]
        if x is None or type(x) in (bool, str):
            return x
        if type(x) is int:
            return x if x.bit_length() < 13000 else ["bigint", hex(x)]
        if isinstance(x, float) or type(x).__name__.startswith("float"):
            return ["float", float(x)]
        if type(x) is complex:
            return ["complex", repr(x)]
        if type(x) is bytes:
            return ["bytes", repr(x)]
        if type(x) in (list, tuple):
            _kinds = set(map(type, x))  # a long flat answer: checked in C loops, not item by item
            if depth < 20 and (_kinds <= {str, bool, type(None)} or \
(_kinds == {int} and max(max(x).bit_length(), min(x).bit_length()) < 13000)):
                return [type(x).__name__, list(x)]
            return [type(x).__name__, [_plain(i, depth + 1) for i in x]]
        if type(x) in (set, frozenset):
            return ["set", sorted(repr(_plain(i, depth + 1)) for i in x)]
        if type(x) is dict:
            return ["dict", sorted([repr(_plain(k, depth + 1)), repr(_plain(v, depth + 1))] for k, v in x.items())]
        if type(x).__name__.startswith("int") and hasattr(x, "item"):
            return _plain(int(x.item()), depth)
        return ["object", type(x).__name__]
    def _call(f, args, limit):
        _signal.setitimer(_signal.ITIMER_REAL, limit)
        try:
            return f(*_copy.deepcopy(args))
        finally:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
    _prop = __PROPERTY__
    if _prop:
        _pns = dict(globals())
        for _line in _prop["imports"]:
            try:
                exec(_line, _pns)
            except Exception:
                pass
        _checks = [compile(_e, "<property>", "eval") for _e in _prop["asserts"]]
    def _holds(args, out):
        env = dict(_pns)
        for name, value in zip(_prop["params"], args):
            if name:
                env[name] = _copy.deepcopy(value)
        env[_prop["result"]] = out
        # Its CPU time, not the wall clock: a loaded machine must not make an answer lack the property.
        _was = _signal.signal(_signal.SIGPROF, _alarm)
        _signal.setitimer(_signal.ITIMER_PROF, __PER_CALL__)
        try:
            return all(eval(_c, env) for _c in _checks)
        except BaseException:
            return False
        finally:
            _signal.setitimer(_signal.ITIMER_PROF, 0)
            _signal.signal(_signal.SIGPROF, _was)
"""
