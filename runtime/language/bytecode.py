"""Provides compiled code: the opcodes, `Code` (one function), `CompiledProgram` (a whole
program) and `Location` (where a step is).

Operands are plain data or AST types; a few are symbols the machine links to its own objects
before running (`runtime.vm.link`): an operator's text for BINARY and UNARY, and JSON-like dicts for constant objects such as a typed `llm()` call's
schema. So compiled code never depends on the machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime.language.location import Location as Location  # where a step is
from runtime.language.syntax import ast as A

# Opcodes, most frequent first (the machine tests them in roughly this order). The machine's
# dispatch loop spells each as a literal with its name in a comment (`op == 1:  # LOAD_LOCAL`),
# for speed; tests/runtime/test_layering.py holds the two tables together.
(
    STEP,
    LOAD_LOCAL,
    STORE_LOCAL,
    CONST,
    BINARY,
    JUMP,
    JUMP_IF_FALSE,
    LOAD_GLOBAL,
    STORE_GLOBAL,
    CALL,
    RETURN,
    GET_MEMBER,
    GET_INDEX,
    CALL_METHOD,
    POP,
    ITER_NEXT,
    RANGE_NEXT,
    JUMP_IF_TRUE,
    JUMP_IF_FALSE_KEEP,
    JUMP_IF_TRUE_KEEP,
    JUMP_IF_NOT_NULL_KEEP,
    UNARY,
    DUP,
    DUP2,
    SWAP,
    SET_MEMBER,
    SET_INDEX,
    BUILD_ARRAY,
    BUILD_ARRAY_SPREAD,
    BUILD_OBJECT,
    BUILD_OBJECT_SPREAD,
    BUILD_STRING,
    SLICE,
    ITER_INIT,
    RANGE_INIT,
    UPDATE_LOCAL,
    UPDATE_GLOBAL,
    UPDATE_MEMBER,
    UPDATE_INDEX,
    LOAD_SHARED,
    STORE_SHARED,
    MATCH,
    DESTRUCTURE,
    THREAD_PUSH,
    THREAD_POP,
    HANDLER_PUSH,
    HANDLER_POP,
    TRAP_PUSH,
    TRAP_POP,
    UNWRAP_OR_JUMP,
    PIPE_PREP,
    ARRAY_APPEND,
    MARK_STEP,
    BREAKPOINT,
    ENTER_NODE,
    HALT,
    LOAD_NAME,
    UPDATE_SHARED,
    LOAD_OUTER,
    STORE_OUTER,
    UPDATE_OUTER,
    MAKE_CLOSURE,
    # Superinstructions: never emitted by the compiler; `runtime.vm.fuse` writes them over the
    # first instruction of the sequence each stands for, leaving the rest in place.
    STEP_NEXT,
    LOCAL_OP_LOCAL_STORE,
    LOCAL_OP_CONST_STORE,
    LOCAL_OP_CONST_JUMP,
    LOCAL_OP_LOCAL_JUMP,
    LOCAL_OP_CONST,
    LOCAL_OP_LOCAL,
    OP_CONST_JUMP,
    FOR_RANGE,
    FOR_EACH,
    BINARY_STORE,
    # (target, name): jump when the call bound parameter `name`, so its default is skipped.
    JUMP_IF_BOUND,
    PUSH_LOCAL,  # a superinstruction too (`runtime.vm.fuse`)
) = range(75)

OP_NAMES = {
    v: k for k, v in list(globals().items()) if k.isupper() and isinstance(v, int) and v < 75
}


# Every name the machine provides as a builtin function; `runtime.vm.builtins` registers exactly
# these (it refuses any other at import, and a test checks that none is missing).
BUILTIN_NAMES = frozenset(
    {
        "Array",
        "Date",
        "Error",
        "Map",
        "Set",
        "URL",
        "RegExp",
        "color",
        "throw",
        "Boolean",
        "JSON",
        "Math",
        "Number",
        "Object",
        "String",
        "__as_result",
        "__call",
        "__call_spread",
        "__callbacks_for",
        "__hook_clock",
        "__hook_elapsed",
        "__call_tool",
        "__decision_kind",
        "__destructive_mark",
        "__abort_finalized",
        "__abort_step",
        "__guard_answer",
        "__guard_close",
        "__guard_exempt",
        "__guard_fork_joined",
        "__guard_handlers",
        "__guard_mark",
        "__guard_open",
        "__guard_trip",
        "__interrupt_decide",
        "__interrupt_open",
        "__interrupt_refuse",
        "__interrupt_wait",
        "__is_decision",
        "__is_function",
        "__llm_call",
        "__llm_inject",
        "__llm_memory",
        "__llm_open",
        "__llm_start_data",
        "__llm_tool_result",
        "__llm_round_end",
        "__attachment",
        "__attach_to_reply",
        "input",
        "__install_slow_input",
        "__run_callback",
        "__callback_failed",
        "__save_draft",
        "__run_handler",
        "__throw",
        "__fork_begin",
        "__fork_branch",
        "__fork_branch_end",
        "__fork_end",
        "sleep",
        "approve",
        "callback",
        "checkpoint",
        "entries",
        "failure",
        "getCheckpoint",
        "getMutable",
        "isFailure",
        "isSuccess",
        "keys",
        "len",
        "loadFromDisk",
        "parseFloat",
        "parseInt",
        "pass",
        "print",
        "printJSON",
        "propagate",
        "range",
        "reject",
        "resolve",
        "restore",
        "saveToDisk",
        "setMutable",
        "success",
        "values",
    }
)

# Host functions behind the bundled `std::` modules (runtime/language/std/*.agency), registered
# by runtime/vm/builtins_std.py, builtins_fs.py and builtins_shell.py.
STD_HOST_NAMES = frozenset(
    {
        "__agent_cwd_apply",
        "__date_advance",
        "__date_at_time",
        "__date_end_of_day",
        "__date_end_of_month",
        "__date_end_of_week",
        "__date_format",
        "__date_format_date",
        "__date_next_day_of_week",
        "__date_now",
        "__markdown_parse",
        "__markdown_html",
        "__markdown_cli",
        "__date_parse",
        "__date_start_of_day",
        "__date_start_of_month",
        "__date_start_of_week",
        "__date_today",
        "__fs_apply_edits",
        "__fs_apply_patch",
        "__llm_set_defaults",
        "__fs_copy",
        "__fs_exists",
        "__fs_glob",
        "__fs_ls",
        "__fs_mkdir",
        "__fs_move",
        "__fs_remove",
        "__fs_stat",
        "__path_basename",
        "__path_dirname",
        "__path_extname",
        "__code_combine",
        "__code_fill",
        "__code_holes",
        "__code_literal",
        "__code_parse",
        "__code_source",
        "__layout_render",
        "__path_join",
        "__path_relative",
        "__path_resolve",
        "__policy_glob",
        "__shell_bash",
        "__shell_exec",
        "__shell_which",
        "__skills_commands",
        "__skills_expand",
        "__syntax_diff",
        "__tags_get",
        "__tags_set",
        "__syntax_patch",
        "__system_cwd",
        "__system_exit",
        "__system_env",
        "__system_notify",
        "__system_set_env",
        "__thread_append",
        "__thread_current",
        "__thread_get",
        "__thread_list",
        "__thread_set_summary",
        "__thread_event",
        "__node_end",
        "__agent_end",
        "__thread_setup",
        "__thread_value",
        "__thread_messages",
        "__thread_model_costs",
        "__thread_tool_message",
        "__thread_usage",
    }
)
BUILTIN_NAMES = BUILTIN_NAMES | STD_HOST_NAMES

# Host functions added for files, shell and skills (runtime/vm/builtins_files.py) and for
# std::safeBash's parser (runtime/vm/builtins_safebash.py).
FILES_HOST_NAMES = frozenset(
    {
        "__file_grep",
        "__file_prepare",
        "__file_read",
        "__file_read_binary",
        "__file_write",
        "__file_write_binary",
        "__git_run",
        "__process_argv",
        "__safebash_parse",
        "__safebash_redirect_target",
        "__safebash_render",
        "__skills_scan",
    }
)
BUILTIN_NAMES = BUILTIN_NAMES | FILES_HOST_NAMES

# Builtins for values and types (runtime/vm/builtins_values.py): `sleep`, regex values and the
# host side of schema validation.
VALUE_HOST_NAMES = frozenset(
    {
        "__regex",
        "__schema_after",
        "__schema_fail",
        "__schema_is",
        "__schema_keys",
        "__schema_merge",
        "__validation_json_problem",
        "__validation_like",
        "__validation_matches",
        "sleep",
    }
)
BUILTIN_NAMES = BUILTIN_NAMES | VALUE_HOST_NAMES

# Host functions behind `std::agency` (runtime/vm/builtins_agency.py): compiling Agency source
# and running a node of it as a child program.
AGENCY_HOST_NAMES = frozenset(
    {
        "__agency_child_run",
        "__agency_compile",
        "__agency_compile_file",
        "__agency_decided",
        "__agency_describe",
        "__agency_effects",
        "__agency_describe_error",
        "__agency_read_test_file",
        "__agency_verdict",
        "__agency_depth",
        "__agency_silent",
        "__agency_spent",
        "__agency_typecheck",
        "__agency_typecheck_file",
        "__agency_parse_ast",
        "__agency_format",
        "__agency_format_file",
    }
)
BUILTIN_NAMES = BUILTIN_NAMES | AGENCY_HOST_NAMES
# Host functions of the network std:: modules (runtime/vm/builtins_http.py): HTTP requests and
# URI encoding.
NET_HOST_NAMES = frozenset(
    {"__http_fetch", "encodeURIComponent", "decodeURIComponent", "encodeURI", "decodeURI"}
)
BUILTIN_NAMES = BUILTIN_NAMES | NET_HOST_NAMES

# Language builtins and project settings (runtime/vm/builtins_lang.py), and S3
# (runtime/vm/builtins_aws.py).
LANG_HOST_NAMES = frozenset({"_pairsOf", "__memory_project_config", "__s3_call", "__s3_presign"})
BUILTIN_NAMES = BUILTIN_NAMES | LANG_HOST_NAMES

# JavaScript globals the reference's programs may call (runtime/vm/builtins_data.py).
JS_GLOBAL_NAMES = frozenset({"isNaN", "isFinite", "structuredClone", "console"})
BUILTIN_NAMES = BUILTIN_NAMES | JS_GLOBAL_NAMES


class FuncRef:
    """A function value: a reference to a def, node or builtin by name (what `f` evaluates to
    for a function `f`, and what a program passes as a tool). The compiler emits it as a constant;
    the machine calls it."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FuncRef) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("FuncRef", self.name))

    def __repr__(self) -> str:
        return f"<function {self.name}>"


@dataclass(slots=True)
class ParamInfo:
    name: str
    type: A.TypeExpr | None
    has_default: bool
    rest: bool
    optional: bool = False  # declared `name?: T`


@dataclass(slots=True)
class Code:
    """Compiled code of one function."""

    name: str
    kind: str  # "node" | "def" | "handler" | "block" | "module" | "prelude"
    file: str
    params: list[ParamInfo]
    ops: list[int] = field(default_factory=list)
    args: list[Any] = field(default_factory=list)
    locations: list[Location] = field(default_factory=list)
    step_pcs: list[int] = field(default_factory=list)  # pc of each location's STEP
    markers: list[int] = field(default_factory=list)  # recorder step markers: global id << 3
    doc: str | None = None
    modifiers: tuple[str, ...] = ()
    return_type: A.TypeExpr | None = None
    finalize: str | None = None  # the Code of its `finalize { … }` block, run if a guard aborts it
    span: A.Span = A.NO_SPAN
    # What the recorder derives from this code once (`runtime.runs.recorder.frame_head`): its
    # name, kind, parameter names, those recorded, its statements' positions by pc.
    rec_head: Any = field(default=None, compare=False, repr=False)
    # The shapes a frame can have at each pc (`runtime.language.stack_depths.frame_shapes`),
    # worked out the first time a checkpoint holding a frame of this code is read: reading one
    # checks every frame against them, and a run's checkpoints hold frames of the same code.
    frame_shapes: Any = field(default=None, compare=False, repr=False)

    @property
    def param_names(self) -> list[str]:
        return [p.name for p in self.params]

    def disassemble(self) -> str:
        lines = []
        for pc, (op, arg) in enumerate(zip(self.ops, self.args)):
            shown = arg if not callable(arg) else getattr(arg, "__name__", arg)
            lines.append(f"{pc:4} {OP_NAMES.get(op, op):<20} {shown!r}")
        return "\n".join(lines)


@dataclass(slots=True)
class CompiledProgram:
    """Every function of a program (and the prelude), by name, plus module facts."""

    path: str
    source: str
    sha256: str
    functions: dict[str, Code]
    module: Code
    globals: list[str]  # checkpointed module variables, in declaration order
    shared: list[str]  # shared and static module variables
    statics: list[str]
    types: dict[str, A.TypeExpr]
    imports: list[A.Import]
    linked: bool = False  # operands linked to the machine's objects (runtime.vm.link)
    # The variables a block assigns in the frame that made it, found once by reading a
    # checkpoint (`runtime.vm.checkpoint_reading`): a walk of every instruction of the program
    # and its prelude, which reading each checkpoint again made cost more than the rebuild.
    outer_assigned: frozenset[str] | None = field(default=None, compare=False, repr=False)
    # the type parameters of each generic alias (`type Page<T> = …`), by name
    type_params: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # their defaults (`type Page<T = string> = …`), for the aliases with any
    type_defaults: dict[str, tuple[A.TypeExpr | None, ...]] = field(default_factory=dict)

    def nodes(self) -> list[str]:
        return [c.name for c in self.functions.values() if c.kind == "node"]
