"""Provides the host side of `std::safeBash`: a parser for the small part of bash the module
classifies, the renderer that prints a parsed command back, and the resolution of a redirect
target. The policy itself (what is refused, which effects a command raises, what runs) is
written in Agency in runtime/language/std/safeBash.agency.

The grammar is deliberately narrow. A string is a list of commands separated by `;` or new
lines; a command is a simple command, `a && b`, `a || b` (left-associative, equal precedence)
or `( command )`. A simple command is leading `NAME=value` assignments, then words and
redirects (`>`, `>>`, `<`, `&>`, an optional file-descriptor number before `>`/`>>`/`<`).
Anything else — pipes, background `&`, `2>&1`, here-documents, command substitution,
backticks, an unquoted `~`, a bare `--` — makes the whole string unparseable, which the
policy answers with the broad `std::bash` question.

Words are data: `{tag: "literal" | "path" | "flag" | "singleQuoted" | "doubleQuoted" |
"variable" | "interpolatedVariable", …}` (see the module docs in safeBash.agency). Pure: no
function here touches the world except `__safebash_redirect_target`, which looks at the
directories on the target's path for symlinks.
"""

from __future__ import annotations

import os
import posixpath
import re
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.values import JSArray, JSObject, Result, to_str

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_OPERATOR_CHARS = set(";&|()<>")
_SPACE = " \t"


class BashSyntaxError(Exception):
    """The string is outside the grammar this module understands."""


def _obj(**fields: Any) -> JSObject:
    return JSObject(fields)


class _Parser:
    """A recursive-descent parser over one command string."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0

    # -- cursor -------------------------------------------------------------------------------

    def peek(self, n: int = 1) -> str:
        return self.s[self.i : self.i + n]

    def skip_spaces(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in _SPACE:
            self.i += 1

    def fail(self, why: str) -> BashSyntaxError:
        return BashSyntaxError(f"{why} at column {self.i + 1}")

    # -- lists and chains ---------------------------------------------------------------------

    def script(self) -> JSArray:
        out = JSArray()
        while True:
            self.skip_separators()
            if self.i >= len(self.s):
                return out
            out.append(self.chain())
            self.skip_spaces()
            if self.i < len(self.s) and self.s[self.i] not in ";\n":
                raise self.fail(f"unexpected {self.s[self.i]!r}")

    def skip_separators(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in _SPACE + ";\n":
            self.i += 1

    def chain(self) -> JSObject:
        left = self.unit()
        while True:
            self.skip_spaces()
            op = self.peek(2)
            if op not in ("&&", "||"):
                return left
            self.i += 2
            self.skip_spaces()
            while self.peek() == "\n":  # bash allows a line break after && and ||
                self.i += 1
                self.skip_spaces()
            right = self.unit()
            left = _obj(tag="and" if op == "&&" else "or", left=left, right=right)

    def unit(self) -> JSObject:
        self.skip_spaces()
        if self.peek() == "(":
            self.i += 1
            inner = self.chain()
            self.skip_spaces()
            if self.peek() != ")":
                raise self.fail("expected `)`")
            self.i += 1
            return _obj(tag="parens", command=inner)
        return self.simple()

    # -- simple commands ----------------------------------------------------------------------

    def simple(self) -> JSObject:
        assignments, args, redirects = JSArray(), JSArray(), JSArray()
        command: JSObject | None = None
        while True:
            self.skip_spaces()
            if self.i >= len(self.s) or self.s[self.i] in ";\n)":
                break
            if self.peek(2) in ("&&", "||"):
                break
            redirect = self.redirect()
            if redirect is not None:
                redirects.append(redirect)
                continue
            if self.s[self.i] in _OPERATOR_CHARS:
                raise self.fail(f"{self.s[self.i]!r} is not supported")
            if command is None and not args:
                m = _ASSIGN.match(self.s, self.i)
                if m:
                    self.i = m.end()
                    value = None if self.at_word_end() else self.word()
                    assignments.append(_obj(tag="assignment", name=m.group(1), value=value))
                    continue
            word = self.word()
            if command is None:
                if word["tag"] not in ("literal", "path"):
                    raise self.fail("the command name must be a plain word")
                command = word
            else:
                args.append(word)
        if command is None and not assignments:
            raise self.fail("expected a command")
        out = _obj(tag="simpleCommand", assignments=assignments)
        if command is not None:
            out["command"] = command
        out["args"] = args
        out["redirects"] = redirects
        return out

    def redirect(self) -> JSObject | None:
        m = re.compile(r"(\d*)(>>|>&|>|<<|<&|<|&>)").match(self.s, self.i)
        if not m or (m.group(2) == "&>" and m.group(1)):
            return None
        fd, op = m.group(1), m.group(2)
        if op in (">&", "<&", "<<"):
            raise self.fail(f"`{op}` redirects are not supported")
        self.i = m.end()
        self.skip_spaces()
        if self.at_word_end():
            raise self.fail(f"`{op}` needs a target")
        out = _obj(tag="redirect")
        if fd:
            out["fd"] = int(fd)
        out["op"] = op
        out["target"] = self.word()
        return out

    # -- words --------------------------------------------------------------------------------

    def at_word_end(self) -> bool:
        return (
            self.i >= len(self.s)
            or self.s[self.i] in _SPACE + "\n"
            or (self.s[self.i] in _OPERATOR_CHARS)
        )

    def word(self) -> JSObject:
        parts: list[JSObject] = []
        while not self.at_word_end():
            ch = self.s[self.i]
            if ch == "'":
                end = self.s.find("'", self.i + 1)
                if end < 0:
                    raise self.fail("unterminated single quote")
                parts.append(_obj(tag="singleQuoted", text=self.s[self.i + 1 : end]))
                self.i = end + 1
            elif ch == '"':
                parts.append(self.double_quoted())
            elif ch == "$":
                parts.append(self.variable())
            else:
                parts.append(_obj(tag="literal", text=self.unquoted_run()))
        if not parts:
            raise self.fail("expected a word")
        if len(parts) > 1:
            return _obj(tag="interpolatedVariable", parts=JSArray(_merge_literals(parts)))
        only = parts[0]
        if only["tag"] == "literal":
            return _classify_literal(only["text"], self)
        return only

    def unquoted_run(self) -> str:
        out = []
        while not self.at_word_end() and self.s[self.i] not in "'\"$":
            ch = self.s[self.i]
            if ch == "`":
                raise self.fail("backticks are not supported")
            if ch == "~":
                raise self.fail("an unquoted `~` is not supported")
            if ch == "\\":
                if self.i + 1 >= len(self.s):
                    raise self.fail("a trailing backslash")
                out.append(self.s[self.i + 1])
                self.i += 2
                continue
            out.append(ch)
            self.i += 1
        return "".join(out)

    def variable(self) -> JSObject:
        if self.peek(2) == "${":
            end = self.s.find("}", self.i + 2)
            name = self.s[self.i + 2 : end] if end > 0 else ""
            if not _NAME.fullmatch(name):
                raise self.fail("only `${NAME}` expansions are supported")
            self.i = end + 1
            return _obj(tag="variable", name=name)
        m = _NAME.match(self.s, self.i + 1)
        if not m:
            raise self.fail("only `$NAME` expansions are supported")
        self.i = m.end()
        return _obj(tag="variable", name=m.group(0))

    def double_quoted(self) -> JSObject:
        self.i += 1
        parts: list[JSObject] = []
        text: list[str] = []
        while True:
            if self.i >= len(self.s):
                raise self.fail("unterminated double quote")
            ch = self.s[self.i]
            if ch == '"':
                self.i += 1
                break
            if ch == "`":
                raise self.fail("backticks are not supported")
            if ch == "\\" and self.peek(2)[1:] in ('"', "\\", "$", "`"):
                text.append(self.s[self.i + 1])
                self.i += 2
            elif ch == "$":
                if text:
                    parts.append(_obj(tag="literal", text="".join(text)))
                    text = []
                parts.append(self.variable())
            else:
                text.append(ch)
                self.i += 1
        if text or not parts:
            parts.append(_obj(tag="literal", text="".join(text)))
        return _obj(tag="doubleQuoted", parts=JSArray(parts))


def _merge_literals(parts: list[JSObject]) -> list[JSObject]:
    out: list[JSObject] = []
    for p in parts:
        if out and p["tag"] == "literal" and out[-1]["tag"] == "literal":
            out[-1] = _obj(tag="literal", text=out[-1]["text"] + p["text"])
        else:
            out.append(p)
    return out


def _classify_literal(text: str, parser: _Parser) -> JSObject:
    if text.startswith("-") and len(text) > 1:
        if text == "--":
            raise parser.fail("a bare `--` is not supported")
        name, sep, value = text.partition("=")
        flag = _obj(tag="flag", flagName=name)
        if sep and name.startswith("--"):
            flag["flagValue"] = value
        else:
            flag["flagName"] = text
        return flag
    if "/" in text:
        return _obj(tag="path", text=text)
    return _obj(tag="literal", text=text)


# -- rendering --------------------------------------------------------------------------------


def _render_word(w: Any) -> str:
    tag = w.get("tag") if type(w) is JSObject else None
    if tag in ("literal", "path"):
        return re.sub(r"([\\\s;&|()<>'\"$`])", r"\\\1", to_str(w["text"]))
    if tag == "flag":
        value = w.get("flagValue")
        return to_str(w["flagName"]) + ("" if value is None else "=" + to_str(value))
    if tag == "singleQuoted":
        return "'" + to_str(w["text"]) + "'"
    if tag == "variable":
        return "${" + to_str(w["name"]) + "}"
    if tag == "doubleQuoted":
        inner = "".join(
            "${" + to_str(p["name"]) + "}"
            if p.get("tag") == "variable"
            else re.sub(r'(["\\$`])', r"\\\1", to_str(p.get("text", "")))
            for p in w["parts"]
        )
        return '"' + inner + '"'
    if tag == "interpolatedVariable":
        return "".join(_render_word(p) for p in w["parts"])
    raise AgencyRuntimeError(f"safeBash: cannot render a {tag!r} word")


def render(c: Any) -> str:
    """A parsed command printed back as bash, with single spaces between words."""
    tag = c.get("tag") if type(c) is JSObject else None
    if tag == "and":
        return f"{render(c['left'])} && {render(c['right'])}"
    if tag == "or":
        return f"{render(c['left'])} || {render(c['right'])}"
    if tag == "parens":
        return f"({render(c['command'])})"
    if tag != "simpleCommand":
        raise AgencyRuntimeError(f"safeBash: cannot render a {tag!r} command")
    words = [
        a["name"] + "=" + ("" if a.get("value") is None else _render_word(a["value"]))
        for a in c["assignments"]
    ]
    if c.get("command") is not None:
        words.append(_render_word(c["command"]))
    words += [_render_word(w) for w in c["args"]]
    for r in c["redirects"]:
        fd = "" if r.get("fd") is None else str(r["fd"])
        words.append(f"{fd}{r['op']} {_render_word(r['target'])}")
    return " ".join(words)


@builtin("__safebash_parse")
def _safebash_parse(m: Machine, args: list[Any], named: dict[str, Any]) -> Result:
    """success(the list of commands) or failure(why the string is outside the grammar)."""
    text = arg(args, named, 0, "code", "")
    if type(text) is not str:
        return Result(False, error="safeBash: expected a command string")
    try:
        return Result(True, value=_Parser(text).script())
    except BashSyntaxError as exc:
        return Result(False, error=str(exc))


@builtin("__safebash_render")
def _safebash_render(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    return render(arg(args, named, 0, "command"))


@builtin("__safebash_redirect_target")
def _safebash_redirect_target(m: Machine, args: list[Any], named: dict[str, Any]) -> Result:
    """{dir, filename} a redirect target names from `cwd`: an absolute target reports its own
    parent. A failure when the target has no file name, or a directory on its way that exists
    is a symlink (where the write would really land is then not what the payload says)."""
    target, cwd = to_str(arg(args, named, 0, "target", "")), to_str(arg(args, named, 1, "cwd"))
    if not target or target.endswith("/"):
        return Result(False, error=f"{target!r} does not name a file")
    full = posixpath.normpath(target if target.startswith("/") else posixpath.join(cwd, target))
    parent, name = posixpath.split(full)
    probe = parent
    while probe and probe not in ("/", "."):
        if os.path.islink(probe):
            return Result(False, error=f"{probe!r} is a symbolic link")
        probe = posixpath.dirname(probe)
    return Result(True, value=_obj(dir=parent or ".", filename=name))
