"""HumanEvalFix repair agent: dataset -> agent (model client + executor) -> scorer -> results -> report."""

__version__ = "0.1.0"

# One-time set-up steps (assembling the embedded model's weights): shown as info lines by default,
# not as warnings; the CLI sets this logger to INFO whatever -v says.
FIRST_USE_LOGGER = "humanevalfix.first_use"
