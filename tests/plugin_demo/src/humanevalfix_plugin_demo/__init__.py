"""A demo plugin: one provider and one executor, each in the file a recipe of docs/architecture.md names.

Importing this module registers both (the entry point `humanevalfix.plugins: demo` names it):
`--provider demo --model canonical|buggy` answers each task with its own code, like the built-in
oracle, but needs its key (DEMO_PLUGIN_KEY) as a keyed API would; `--sandbox demo` runs candidates
in the built-in fork server under rlimits only, through an executor of its own.
"""

from humanevalfix_plugin_demo import executor, provider

__all__ = ["executor", "provider"]
