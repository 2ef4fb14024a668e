"""Text from outside (the model, a server, the dataset, a candidate) is data, never markup or bytes
for the terminal.

`[/bold]` in an exception message used to end a run with a Rich MarkupError; ESC and NUL from a
task id reached the terminal raw; a lone surrogate (`\\ud800`) could not be encoded on its way to a
file or a request. Everything shown goes through `shown` (escaped for Rich, control characters and
surrogates written as escapes) and everything stored or sent is checked with `encodable`.
"""

from __future__ import annotations

import logging
import re

from rich.markup import escape

from humanevalfix.redaction import redact

# C0 and C1 controls, DEL, and lone surrogates; tab and newline are handled by `keep_lines`.
_INVISIBLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_LINE_BREAKS = re.compile(r"[\t\n\r]")


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object, keep_lines: bool = False) -> str:
    """`text` with control characters and surrogates as `\\xNN`/`\\uNNNN` escapes; newlines and tabs
    too unless `keep_lines` (a one-line message must stay one line)."""
    value = str(text)
    value = _INVISIBLE.sub(_escape_char, value)
    if not keep_lines:
        value = _LINE_BREAKS.sub(lambda m: {"\t": "\\t", "\n": "\\n", "\r": "\\r"}[m.group(0)], value)
    else:
        value = value.replace("\r", "\\r")
    return value


def shown(text: object, keep_lines: bool = False) -> str:
    """Outside text ready for a Rich console: keys redacted, made visible, markup escaped."""
    return escape(visible(redact(str(text)), keep_lines))


def encodable(text: str) -> bool:
    """Whether `text` can be written as UTF-8 (lone surrogates cannot)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def repaired(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD, so that it can be stored and sent."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace") if not encodable(text) else text


class SafeLogFilter(logging.Filter):
    """On a handler: every record it emits, from any logger (openai, httpx, the Hub under
    `--debug`), has key fragments redacted and control characters made visible. A filter on a
    logger would only see that logger's own records; on the handler it sees them all."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = visible(redact(message), keep_lines=True)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and record.exc_info[1] is not None:
            # The traceback holds the exception's text: formatted here, cleaned, and kept as text.
            record.exc_text = visible(redact(logging.Formatter().formatException(record.exc_info)), keep_lines=True)
            record.exc_info = None
        return True
