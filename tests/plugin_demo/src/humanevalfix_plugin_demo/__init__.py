"""A demo plugin: one provider, one executor and one scorer, each in a file as a recipe of
docs/architecture.md says.

Importing this module registers them (the entry point `humanevalfix.plugins: demo` names it):
`--provider demo --model canonical|buggy` answers each task with its own code, like the built-in
oracle, but needs its key (DEMO_PLUGIN_KEY) as a keyed API would; `--sandbox demo` runs candidates
in the built-in fork server under rlimits only, through an executor of its own; `demo-lines` is
each final candidate's length in lines, recorded, summed and shown like the built-in scores.
"""

from humanevalfix_plugin_demo import executor, provider, scorer

__all__ = ["executor", "provider", "scorer"]
