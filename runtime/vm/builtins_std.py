"""Provides the host functions behind the small `std::` modules: `std::path`, `std::date`,
`std::system` and `std::thread` (runtime/language/std/*.agency call them).

Whatever reads the outside world (the clock, the environment) goes through `observe`, so a
replayed or resumed run is served the recorded value instead of reading it again. Under a test
with `"fakeClock": true` the clock is the process-wide mutable entry `FAKE_CLOCK` (kept across
restore and saved in snapshots like `setMutable` state), moved only by `_advanceTime`.
"""

from __future__ import annotations

import datetime as _dt
import os
import posixpath
import re
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from runtime.errors import AgencyRuntimeError
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.builtins_fork import branch_usage
from runtime.vm.builtins_threads import messages_of
from runtime.vm.effects import observe
from runtime.vm.frames import ExitSignal
from runtime.vm.llm_calls import LLM_DEFAULTS, MODEL_USAGE
from runtime.vm.reply_attachments import message_content
from runtime.vm.values import JSArray, JSObject, stringify, to_number, to_plain, to_str
from runtime.vm.writelog import W_SHARED

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

FAKE_CLOCK = "__fakeClock"  # m.mutable key holding the fake clock's epoch milliseconds
FAKE_CLOCK_START = 1_700_000_000_000  # epoch ms a fake clock starts at


def _s(v: Any) -> str:
    return v if type(v) is str else to_str(v)


# -- std::path -----------------------------------------------------------------------------------


def _strip_trailing(p: str) -> str:
    stripped = p.rstrip("/")
    return stripped or ("/" if p.startswith("/") else stripped)


@builtin("__path_join")
def _path_join(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    parts = [_s(p) for p in args if _s(p)]
    return posixpath.normpath("/".join(parts)) if parts else "."


@builtin("__agent_cwd_apply")
def _agent_cwd_apply(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    """`dir` resolved against the agent working directory: std::index's module variable
    `agentCwd` (absent when the program never imported std::index: then nothing is set). An
    absolute `dir`, or no agent working directory, passes through unchanged."""
    dir_ = _s(arg(args, named, 0, "dir"))
    cwd = m.globals.get("agentCwd")
    if not cwd or dir_.startswith("/"):
        return dir_
    base = _s(cwd)
    return base if dir_ in ("", ".") else posixpath.normpath(base + "/" + dir_)


@builtin("__path_resolve")
def _path_resolve(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    out = str(m.world.root)
    for p in (_s(a) for a in args):
        if p:
            out = posixpath.join(out, p)
    return posixpath.normpath(out)


@builtin("__path_basename")
def _path_basename(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    p = _strip_trailing(_s(arg(args, named, 0, "p", "")))
    ext = _s(arg(args, named, 1, "ext", "") or "")
    base = "" if p == "/" else p.rsplit("/", 1)[-1]
    if ext and base.endswith(ext) and base != ext:
        base = base[: -len(ext)]
    return base


@builtin("__path_dirname")
def _path_dirname(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    p = _strip_trailing(_s(arg(args, named, 0, "p", "")))
    if "/" not in p:
        return "."
    head = p.rsplit("/", 1)[0]
    return head or "/"


@builtin("__path_extname")
def _path_extname(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    base = _strip_trailing(_s(arg(args, named, 0, "p", ""))).rsplit("/", 1)[-1]
    dot = base.rfind(".")
    return base[dot:] if dot > 0 else ""


@builtin("__path_relative")
def _path_relative(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    root = str(m.world.root)
    a = posixpath.normpath(posixpath.join(root, _s(arg(args, named, 0, "from", ""))))
    b = posixpath.normpath(posixpath.join(root, _s(arg(args, named, 1, "to", ""))))
    rel = posixpath.relpath(b, a)
    return "" if rel == "." else rel


# -- std::date -----------------------------------------------------------------------------------


def now_ms(m: Machine) -> Any:
    """The current instant in epoch milliseconds (the fake clock's, under a fake clock)."""
    if FAKE_CLOCK in m.mutable:
        return m.mutable[FAKE_CLOCK]
    return observe(m, "clock", {}, lambda: int(m.world.clock()))


@builtin("__date_now")
def _date_now(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    return now_ms(m)


@builtin("__date_advance")
def _date_advance(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    if FAKE_CLOCK not in m.mutable:
        raise AgencyRuntimeError(
            '_advanceTime() needs a fake clock. Set "fakeClock": true on this test case.'
        )
    ms = to_number(arg(args, named, 0, "ms", 0))
    value = m.mutable[FAKE_CLOCK] + ms
    value = int(value) if float(value).is_integer() else value
    m.mutable[FAKE_CLOCK] = value
    m.log((W_SHARED, "mutable:" + FAKE_CLOCK, value))
    return None


@builtin("__date_today")
def _date_today(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    zone = _s(arg(args, named, 0, "timezone", "") or "")
    offset = to_number(arg(args, named, 1, "days", 0))
    try:
        tz = ZoneInfo(zone) if zone else None
    except (ZoneInfoNotFoundError, ValueError):
        raise AgencyRuntimeError(f"unknown timezone {zone!r}") from None
    instant = _dt.datetime.fromtimestamp(now_ms(m) / 1000, tz=tz)
    if tz is None:
        instant = instant.astimezone()
    return (instant + _dt.timedelta(days=offset)).date().isoformat()


_DAYS_OF_WEEK = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")
_ISO = re.compile(
    r"^([+-]\d{6}|\d{4})(?:-(\d{2})(?:-(\d{2}))?)?"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?"
    r"\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$"
)
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def _zone(m: Machine, args: list[Any], named: dict[str, Any], i: int) -> _dt.tzinfo | None:
    """The IANA timezone argument `i` (`None`, the machine's local zone, when empty)."""
    name = _s(arg(args, named, i, "timezone", "") or "")
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise AgencyRuntimeError(f"unknown timezone {name!r}") from None


def _wall(ms: float, tz: _dt.tzinfo | None) -> _dt.datetime:
    """The wall-clock time of instant `ms` in `tz` (local when None), with its offset."""
    instant = _EPOCH + _dt.timedelta(milliseconds=ms)
    return instant.astimezone(tz) if tz is not None else instant.astimezone()


def _iso(ms: float, tz: _dt.tzinfo | None, millis: bool) -> str:
    """`YYYY-MM-DDTHH:MM:SS[.mmm]+HH:MM`, the offset always numeric (`+00:00` for UTC)."""
    wall = _wall(ms, tz)
    offset = wall.utcoffset() or _dt.timedelta(0)
    minutes = int(offset.total_seconds() // 60)
    sign = "-" if minutes < 0 else "+"
    hh, mm = divmod(abs(minutes), 60)
    frac = f".{wall.microsecond // 1000:03d}" if millis else ""
    return f"{wall:%Y-%m-%dT%H:%M:%S}{frac}{sign}{hh:02d}:{mm:02d}"


def _offset_ms(ms: float, tz: _dt.tzinfo | None) -> float:
    offset = _wall(ms, tz).utcoffset() or _dt.timedelta(0)
    return offset.total_seconds() * 1000


def _at_time(date: str, time: str, tz: _dt.tzinfo | None) -> float:
    """The instant of wall-clock `time` on calendar `date` in `tz`; near a DST change the offset
    is settled against the candidate instant once, as the reference does."""
    try:
        day = _dt.date.fromisoformat(date) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", date) else None
        hms = re.fullmatch(r"(\d{2}):(\d{2})(?::(\d{2}))?", time)
        if day is None or hms is None:
            raise ValueError
        clock = _dt.time(int(hms[1]), int(hms[2]), int(hms[3] or 0))
    except ValueError:
        raise AgencyRuntimeError(f'Invalid date/time: "{date}" "{time}"') from None
    wall_as_utc = (_dt.datetime.combine(day, clock, tzinfo=_dt.UTC) - _EPOCH) / _dt.timedelta(
        milliseconds=1
    )
    offset = _offset_ms(wall_as_utc, tz)
    settled = _offset_ms(wall_as_utc - offset, tz)
    return wall_as_utc - settled


def _ms(value: float) -> Any:
    return int(value) if float(value).is_integer() else value


def _instant_arg(m: Machine, args: list[Any], named: dict[str, Any]) -> float:
    value = arg(args, named, 0, "instant")
    return to_number(value if value is not None else now_ms(m))


def _boundary(m: Machine, args: list[Any], named: dict[str, Any], edge: str, unit: str) -> Any:
    """Start (midnight) or end (the last millisecond) of the day, week (Sunday to Saturday) or
    month holding the instant, in the timezone."""
    tz = _zone(m, args, named, 1)
    day = _wall(_instant_arg(m, args, named), tz).date()
    if unit == "week":
        back = (day.weekday() + 1) % 7  # days since Sunday
        day = day - _dt.timedelta(days=back) if edge == "start" else day + _dt.timedelta(6 - back)
    elif unit == "month":
        if edge == "start":
            day = day.replace(day=1)
        else:
            first_next = (day.replace(day=28) + _dt.timedelta(days=4)).replace(day=1)
            day = first_next - _dt.timedelta(days=1)
    iso = day.isoformat()
    if edge == "start":
        return _ms(_at_time(iso, "00:00:00", tz))
    return _ms(_at_time(iso, "23:59:59", tz) + 999)


def _register_boundaries() -> None:
    for unit in ("day", "week", "month"):
        for edge in ("start", "end"):
            name = f"__date_{edge}_of_{unit}"

            def host(
                m: Machine, args: list[Any], named: dict[str, Any], e: str = edge, u: str = unit
            ) -> Any:
                return _boundary(m, args, named, e, u)

            builtin(name)(host)


_register_boundaries()


@builtin("__date_format")
def _date_format(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    return _iso(to_number(arg(args, named, 0, "ms", 0)), _zone(m, args, named, 1), True)


@builtin("__date_format_date")
def _date_format_date(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    return _iso(to_number(arg(args, named, 0, "ms", 0)), _zone(m, args, named, 1), False)[:10]


@builtin("__date_at_time")
def _date_at_time(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    date = _s(arg(args, named, 0, "date", ""))
    time = _s(arg(args, named, 1, "time", ""))
    return _ms(_at_time(date, time, _zone(m, args, named, 2)))


@builtin("__date_parse")
def _date_parse(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """An ISO 8601 string as epoch milliseconds, as JavaScript's Date reads it: a date alone
    (`2026`, `2026-05`, `2026-05-05`) is UTC, a date and time with no offset is local time."""
    text = _s(arg(args, named, 0, "iso", "")).strip()
    found = _ISO.match(text)
    try:
        if found is None:
            raise ValueError
        year, month, day, hour, minute, second, frac, zone = found.groups()
        fraction = int((frac or "0")[:3].ljust(3, "0")) * 1000
        wall = _dt.datetime(
            int(year), int(month or 1), int(day or 1),
            int(hour or 0), int(minute or 0), int(second or 0), fraction,
        )  # fmt: skip
    except ValueError:
        raise AgencyRuntimeError(f'Invalid date/time: "{text}"') from None
    if zone in ("Z", "z") or (zone is None and hour is None):
        tzinfo: _dt.tzinfo = _dt.UTC
    elif zone is not None:
        digits = zone[1:].replace(":", "")
        delta = _dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
        tzinfo = _dt.timezone(delta if zone[0] == "+" else -delta)
    else:
        return _ms((wall.astimezone() - _EPOCH) / _dt.timedelta(milliseconds=1))
    return _ms((wall.replace(tzinfo=tzinfo) - _EPOCH) / _dt.timedelta(milliseconds=1))


@builtin("__date_next_day_of_week")
def _date_next_day_of_week(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    name = _s(arg(args, named, 0, "day", ""))
    if name.lower() not in _DAYS_OF_WEEK:
        raise AgencyRuntimeError(f'Invalid day of week: "{name}". Use: {", ".join(_DAYS_OF_WEEK)}')
    target = _DAYS_OF_WEEK.index(name.lower())
    tz = _zone(m, args, named, 1)
    now = to_number(now_ms(m))
    current = (_wall(now, tz).weekday() + 1) % 7
    ahead = target - current
    if ahead <= 0:
        ahead += 7
    return _iso(now + ahead * 86_400_000, tz, False)[:10]


# -- std::system ---------------------------------------------------------------------------------


@builtin("__system_env")
def _system_env(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    name = _s(arg(args, named, 0, "name", ""))
    return observe(m, "env", {"name": name}, lambda: os.environ.get(name))


@builtin("__system_set_env")
def _system_set_env(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    name = _s(arg(args, named, 0, "name", ""))
    value = _s(arg(args, named, 1, "value", ""))
    if not name or "=" in name or "\0" in name or "\0" in value:
        raise AgencyRuntimeError(f"setEnv: {name!r} is not a valid environment variable name")
    os.environ[name] = value
    return None


@builtin("__system_exit")
def _system_exit(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """End the program now: a halt with no value, and `code` as the process's exit status."""
    code = to_number(arg(args, named, 0, "code", 0))
    if code != code or code in (float("inf"), float("-inf")) or code != int(code):
        raise AgencyRuntimeError(f"exit: the code must be a whole number, got {to_str(code)}")
    raise ExitSignal(int(code) & 0xFF)


@builtin("__system_cwd")
def _system_cwd(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    return str(m.world.root)


@builtin("__system_notify")
def _system_notify(m: Machine, args: list[Any], named: dict[str, Any]) -> bool:
    title = _s(arg(args, named, 0, "title", ""))
    message = _s(arg(args, named, 1, "message", ""))
    m.print(f"[notification] {title}: {message}")
    return True


# -- std::llm ----------------------------------------------------------------------------------
@builtin("__llm_set_defaults")
def _llm_set_defaults(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    """Merge the given options into the defaults later `llm()` calls start from (a global of
    the run: checkpointed, rolled back by restore, copied into fork branches)."""
    opts = arg(args, named, 0, "opts")
    if type(opts) is not JSObject:
        raise AgencyRuntimeError("setLlmOptions: the options must be an object")
    merged = JSObject(m.globals.get(LLM_DEFAULTS) or {})
    for key, value in opts.items():
        if value is not None:
            merged[key] = value
    m.globals[LLM_DEFAULTS] = merged
    if m.wlog is not None:
        m.wlog.append((2, LLM_DEFAULTS, m.rec.enc_now(merged)))
    return None


# -- std::thread ---------------------------------------------------------------------------------


@builtin("__thread_usage")
def _thread_usage(m: Machine, args: list[Any], named: dict[str, Any]) -> JSObject:
    u = m.usage
    tokens, cost = branch_usage(m)  # inside a fork branch: the branch's own view
    return JSObject(
        {
            "cost": cost,
            "tokens": tokens,
            "inputTokens": u["input_tokens"],
            "outputTokens": u["output_tokens"],
        }
    )


@builtin("__thread_messages")
def _thread_messages(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    """The messages of the active thread, as {role, content} objects."""
    return messages_of(m, m.active_thread())


@builtin("__thread_append")
def _thread_append(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    role = _s(arg(args, named, 0, "role", "user"))
    content = arg(args, named, 1, "content", "")
    if role not in ("user", "system", "assistant"):
        raise AgencyRuntimeError(f"a message role must be user, system or assistant, not {role}")
    if role == "user" and type(content) is JSArray:  # text and attachments
        m.append_message(
            m.active_thread(), {"role": role, "content": message_content(m, content, "userMessage")}
        )
        return None
    m.append_message(m.active_thread(), {"role": role, "content": _s(content)})
    return None


@builtin("__thread_model_costs")
def _thread_model_costs(m: Machine, args: list[Any], named: dict[str, Any]) -> JSArray:
    """One {model, inputTokens, outputTokens, cost} per model called, costliest first."""
    table = m.mutable.get(MODEL_USAGE)
    entries = [JSObject(e) for e in table.values()] if type(table) is JSObject else []
    entries.sort(key=lambda e: -e["cost"])
    return JSArray(entries)


# -- std::skills ---------------------------------------------------------------------------------


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    """A markdown file's `---` front matter (simple `key: value` lines) and its body, with
    exactly one trailing newline removed. Front matter that is never closed leaves no body."""
    if not (text.startswith("---\n") or text.startswith("---\r\n") or text == "---"):
        return {}, text[:-1] if text.endswith("\n") else text
    lines = text.splitlines(keepends=True)
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n") == "---":
            fields: dict[str, str] = {}
            for line in lines[1:i]:
                key, sep, value = line.partition(":")
                if sep and key.strip():
                    fields[key.strip()] = value.strip().strip("\"'")
            body = "".join(lines[i + 1 :])
            return fields, body[:-1] if body.endswith("\n") else body
    return {}, ""


front_matter = _front_matter  # also read by std::skills' skillsDir (builtins_files.py)


@builtin("__skills_commands")
def _skills_commands(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """The slash commands in a directory of markdown files: [{name, description, argHint,
    body}], by file name; [] when the directory does not exist."""
    dir_ = _s(arg(args, named, 0, "dir", ""))
    base = (m.world.root / dir_).resolve() if dir_ else m.world.root

    def act() -> JSArray:
        out = JSArray()
        if not base.is_dir():
            return out
        for path in sorted(base.glob("*.md")):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            fields, body = _front_matter(text)
            entry = {
                "name": path.stem,
                "description": fields.get("description", ""),
                "argHint": fields.get("argument-hint", ""),
                "body": body,
            }
            out.append(JSObject(entry))
        return out

    return observe(m, "commandsDir", {"dir": dir_}, act)


@builtin("__skills_expand")
def _skills_expand(m: Machine, args: list[Any], named: dict[str, Any]) -> Any:
    """`/name args` expanded with the command `name`'s body ($ARGUMENTS replaced by args, or
    args appended when the body has no $ARGUMENTS); any other message unchanged."""
    msg = _s(arg(args, named, 0, "msg", ""))
    commands = arg(args, named, 1, "commands") or JSArray()
    text = msg.strip()
    if not text.startswith("/"):
        return msg
    head, _, rest = text[1:].replace("\t", " ").replace("\n", " ").partition(" ")
    raw = text[1 + len(head) :].strip()
    for cmd in commands if type(commands) is JSArray else []:
        if type(cmd) is JSObject and cmd.get("name") == head:
            body = _s(cmd.get("body") or "")
            if "$ARGUMENTS" in body:
                return body.replace("$ARGUMENTS", raw)
            return f"{body}\n\nARGUMENTS: {raw}" if raw else body
    return msg


# -- std::syntax ---------------------------------------------------------------------------------


def _lines_of(text: str, ignore_ws: bool) -> tuple[list[str], list[str]]:
    lines = text.split("\n")
    return lines, [" ".join(x.split()) for x in lines] if ignore_ws else lines


@builtin("__syntax_patch")
def _syntax_patch(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    old, new = _s(arg(args, named, 0, "oldText", "")), _s(arg(args, named, 1, "newText", ""))
    name = _s(arg(args, named, 2, "filename", ""))
    context = int(to_number(arg(args, named, 3, "context", 3)))
    ignore_ws = bool(arg(args, named, 4, "ignoreWhitespace", False))
    new_name = _s(arg(args, named, 5, "newFilename", "") or "") or name
    a, a_key = _lines_of(old, ignore_ws)
    b, b_key = _lines_of(new, ignore_ws)
    out: list[str] = []
    import difflib  # for the programs that diff (start-up time)

    matcher = difflib.SequenceMatcher(None, a_key, b_key, autojunk=False)
    for group in matcher.get_grouped_opcodes(max(context, 0)):
        if not out:
            out += [f"--- a/{name}", f"+++ b/{new_name}"]
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@")
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                out += [" " + line for line in a[x1:x2]]
                continue
            out += ["-" + line for line in a[x1:x2]]
            out += ["+" + line for line in b[y1:y2]]
    return "\n".join(out) + "\n" if out else ""


def _range(start: int, stop: int) -> str:
    """A unified-diff hunk range: 1-based start and length ("start" alone for length 1)."""
    length = stop - start
    first = start + 1 if length else start
    return f"{first}" if length == 1 else f"{first},{length}"


@builtin("__syntax_diff")
def _syntax_diff(m: Machine, args: list[Any], named: dict[str, Any]) -> str:
    old, new = _s(arg(args, named, 0, "oldText", "")), _s(arg(args, named, 1, "newText", ""))
    context = int(to_number(arg(args, named, 2, "context", -1)))
    color = bool(arg(args, named, 3, "color", False))
    old_label, new_label = (
        _s(arg(args, named, 4, "oldLabel", "")),
        _s(arg(args, named, 5, "newLabel", "")),
    )
    ignore_ws = bool(arg(args, named, 6, "ignoreWhitespace", False))
    a, a_key = _lines_of(old, ignore_ws)
    b, b_key = _lines_of(new, ignore_ws)
    red, green, plain = ("\x1b[31m", "\x1b[32m", "\x1b[0m") if color else ("", "", "")
    out: list[str] = []
    if old_label or new_label:
        out += [f"--- {old_label}", f"+++ {new_label}"]
    import difflib  # for the programs that diff (start-up time)

    matcher = difflib.SequenceMatcher(None, a_key, b_key, autojunk=False)
    groups: list[list[tuple[str, int, int, int, int]]]
    if context < 0:
        groups = [list(matcher.get_opcodes())]
    else:
        groups = list(matcher.get_grouped_opcodes(context))
    for n, group in enumerate(groups):
        if n:
            out.append("...")
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                out += ["  " + line for line in a[x1:x2]]
                continue
            out += [f"{red}- {line}{plain}" for line in a[x1:x2]]
            out += [f"{green}+ {line}{plain}" for line in b[y1:y2]]
    return "\n".join(out)


@builtin("__thread_tool_message")
def _thread_tool_message(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    """A tool call the assistant made and its result, appended to the active thread (nothing
    runs): the model sees them as if it had called the tool."""
    name = _s(arg(args, named, 0, "name", ""))
    call_args = to_plain(arg(args, named, 1, "args"))
    result = arg(args, named, 2, "result", "")
    thread = m.active_thread()
    call_id = f"call_{len(m.threads.get(thread, []))}"
    call = {"id": call_id, "name": name, "args": call_args if isinstance(call_args, dict) else {}}
    m.append_message(thread, {"role": "assistant", "content": "", "tool_calls": [call]})
    content = result if type(result) is str else stringify(result)
    m.append_message(
        thread, {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}
    )
    return None
