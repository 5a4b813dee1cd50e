"""Provides the errors the runtime reports to people, and how they are printed.

Every error that points into a program carries a span; `Diagnostic.render` prints
`file:line:col: message`, the source line and a caret under the offending text. `Span` and
`Diagnostic` are `Frozen` records, not dataclasses: every command imports this module, and
`dataclasses` imports `inspect` (with `ast`, `dis` and `tokenize`): ~14 ms of the ~100 ms
`agency show` took to start. The tree walkers that go through a node's dataclass fields skip
its `span` or find nothing in it.
"""

from __future__ import annotations

from runtime.frozen import Frozen, set_field


class Span(Frozen):
    """A region of source text: 1-based lines and columns, end exclusive."""

    __slots__ = ("line", "col", "end_line", "end_col")

    line: int
    col: int
    end_line: int
    end_col: int

    def __init__(self, line: int, col: int, end_line: int, end_col: int) -> None:
        # The slots' own setters: a third cheaper than `set_field`, and the lexer makes a span
        # for every token.
        _set_line(self, line)
        _set_col(self, col)
        _set_end_line(self, end_line)
        _set_end_col(self, end_col)

    def to(self, other: Span) -> Span:
        """The span from the start of this one to the end of `other`."""
        return Span(self.line, self.col, other.end_line, other.end_col)


_set_line, _set_col, _set_end_line, _set_end_col = (
    Span.__dict__[name].__set__ for name in Span.__slots__
)
NO_SPAN = Span(0, 0, 0, 0)


class Diagnostic(Frozen):
    """One problem at one place in one file."""

    __slots__ = ("message", "span", "path")

    message: str
    span: Span
    path: str

    def __init__(self, message: str, span: Span, path: str = "<input>") -> None:
        set_field(self, "message", message)
        set_field(self, "span", span)
        set_field(self, "path", path)

    def render(self, source: str | None = None) -> str:
        """`path:line:col: message`, then the line and a caret, when the source is known."""
        head = f"{self.path}:{self.span.line}:{self.span.col}: {self.message}"
        if source is None or self.span.line <= 0:
            return head
        lines = source.removeprefix("\ufeff").splitlines()  # columns start after a BOM
        if self.span.line > len(lines):
            return head
        text = lines[self.span.line - 1].expandtabs(4)
        start = max(self.span.col - 1, 0)
        if self.span.end_line == self.span.line and self.span.end_col > self.span.col:
            width = self.span.end_col - self.span.col
        else:
            width = 1
        width = max(1, min(width, max(1, len(text) - start)))
        text, start, width = _window(text, start, width)
        gutter = f"{self.span.line:>4} | "
        return f"{head}\n{gutter}{text}\n{' ' * len(gutter)}{' ' * start}{'^' * width}"


SHOWN_WIDTH = 100  # at most this much of a long source line is shown under an error


def _window(text: str, start: int, width: int) -> tuple[str, int, int]:
    """A long line cut to about SHOWN_WIDTH characters around the caret, `…` marking the cuts,
    with the caret's new start and width."""
    if len(text) <= SHOWN_WIDTH:
        return text, start, width
    width = min(width, SHOWN_WIDTH // 2)
    left = max(0, min(start - SHOWN_WIDTH // 3, len(text) - SHOWN_WIDTH))
    right = left + SHOWN_WIDTH
    shown = text[left:right]
    if left > 0:
        shown = "…" + shown
        start = start - left + 1
    if right < len(text):
        shown += "…"
    return shown, start, width


class AgencyError(Exception):
    """Base of every error the runtime raises on purpose (never a bug)."""

    exit_code = 1


class AgencySyntaxError(AgencyError):
    """One or more syntax errors in one file; `diagnostics` lists them in source order."""

    exit_code = 65  # EX_DATAERR: the input was wrong, distinct from a runtime failure

    def __init__(self, diagnostics: list[Diagnostic], source: str | None = None) -> None:
        self.diagnostics = diagnostics
        self.source = source
        super().__init__(diagnostics[0].message if diagnostics else "syntax error")

    def render(self) -> str:
        return "\n".join(d.render(self.source) for d in self.diagnostics)


class AgencyRuntimeError(AgencyError):
    """An error raised while a program runs (a type error in a builtin, a bad restore, ...).

    `span` and `path` locate the statement that was running when it happened; the machine fills
    them in as the error passes through a frame.
    """

    exit_code = 1
    destructive = False  # raised by a side effect that had begun (a failure's `destructiveRan`)

    def __init__(self, message: str, span: Span | None = None, path: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.path = path

    def render(self, source: str | None = None) -> str:
        if self.span is None:
            return f"error: {self.message}"
        return Diagnostic(f"error: {self.message}", self.span, self.path or "<input>").render(
            source
        )


class UsageError(AgencyError):
    """A bad argument or option on the command line (a run that does not exist, bad JSON)."""

    exit_code = 2  # as click's own usage errors


class CheckpointFormatError(AgencyError):
    """A checkpoint file or object that cannot be used: malformed, wrong version, foreign."""

    exit_code = 2


class LLMError(AgencyError):
    """A model could not answer: no key, a refused request, a timeout, a reply of the wrong type.

    The message names the provider and says what to do. `status` is the HTTP status when there
    was one; `detail` is the server's own (redacted) explanation, for callers that branch on it.
    """

    exit_code = 1

    def __init__(
        self, message: str, *, provider: str = "", status: int | None = None, detail: str = ""
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status = status
        self.detail = detail

    def __repr__(self) -> str:
        return f"LLMError({self.message!r})"


EXIT_DIVERGED = 4  # `agency replay`: the program no longer does what was recorded
EXIT_STOPPED = 130  # Ctrl-C, as shells report it
EXIT_TERMINATED = 143  # SIGTERM (128 + 15), as shells report it


class Terminated(KeyboardInterrupt):
    """A run stopped at once by SIGTERM (a second one, or the first after its grace, see
    `runtime.runs.stopping.GracefulStop`): raised where the run was, as a second Ctrl-C raises
    `KeyboardInterrupt`; the command exits with EXIT_TERMINATED."""
