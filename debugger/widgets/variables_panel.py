"""Provides `VariablesPanel`: the selected frame's arguments and locals, and the globals, as an
expandable tree; values the current step wrote are marked, staged edits too.

The tree is rebuilt only when the set of names changes; a step that only changes values
relabels the existing nodes, so scrubbing stays cheap and expanded objects stay open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from debugger.formatting import describe_value, json_type

MAX_CHILDREN = 500  # children shown when an array or object is expanded


@dataclass(frozen=True, slots=True)
class VarRef:
    """What a tree node stands for: `kind` (args, locals, globals) `name` and a path inside."""

    kind: str
    name: str
    path: tuple[str | int, ...] = ()
    value: Any = None

    @property
    def label(self) -> str:
        return self.name + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path)


def _expandable(value: Any) -> bool:
    kind = json_type(value)
    if kind == "result":
        return True
    return kind in ("array", "object") and len(value) > 0


def _more_items(value: Any) -> int:
    """How many of `value`'s items `_items` leaves out."""
    if isinstance(value, dict) and "$result" in value:
        return 0  # a result shows its value or error, nothing else
    if isinstance(value, (list, dict)):
        return max(len(value) - MAX_CHILDREN, 0)
    return 0


def _items(value: Any) -> list[tuple[str | int, Any]]:
    if isinstance(value, list):
        return list[tuple[str | int, Any]](enumerate(value))[:MAX_CHILDREN]
    if isinstance(value, dict):
        if "$result" in value:
            key = "value" if value.get("$result") == "success" else "error"
            return [(key, value.get(key))]
        return list(value.items())[:MAX_CHILDREN]
    return []


class VariablesPanel(Tree[VarRef]):
    """Arguments, locals and globals of the selected frame."""

    # Tree labels are Rich text, so colours come from component classes (theme variables).
    COMPONENT_CLASSES = {
        "variables--changed",
        "variables--edited",
        "variables--more",
        "variables--name",
        "variables--section",
    }
    DEFAULT_CSS = """
    VariablesPanel {
        overflow-x: hidden;
    }
    VariablesPanel > .variables--changed {
        color: $text-warning;
        text-style: bold;
    }
    VariablesPanel > .variables--edited {
        color: $text-success;
        text-style: bold;
    }
    VariablesPanel > .variables--more {
        color: $text-muted;
        text-style: italic;
    }
    VariablesPanel > .variables--name {
        color: $text-primary;
    }
    VariablesPanel > .variables--section {
        color: $text-secondary;
        text-style: bold;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("variables", id=id, classes=classes)
        self.show_root = False
        self.guide_depth = 2
        self._shape: tuple[Any, ...] = ()
        self._scope = ""
        self._sections: dict[str, TreeNode[VarRef]] = {}
        self._var_nodes: dict[tuple[str, str], TreeNode[VarRef]] = {}
        # The node the cursor goes to once the rebuilt tree has its lines (its next refresh);
        # until then it is what is selected: a key typed right after a move edits it.
        self._cursor_due: TreeNode[VarRef] | None = None
        self._open_paths: set[tuple[str, str, tuple[str | int, ...]]] = set()

    @property
    def has_variables(self) -> bool:
        """Whether any variable is shown (a step before the first `let` has none)."""
        return bool(self._var_nodes)

    @property
    def selected(self) -> VarRef | None:
        """The variable (or part of one) under the cursor."""
        due = self._cursor_due
        node = due if due is not None and due.tree is self else self.cursor_node
        return node.data if node is not None and node.data is not None else None

    def show(
        self,
        scope: str,
        args: dict[str, Any],
        locals_: dict[str, Any],
        globals_: dict[str, Any],
        changed: set[str] = frozenset(),  # type: ignore[assignment]
        edited: set[tuple[str, str]] = frozenset(),  # type: ignore[assignment]
        outcome: dict[str, Any] | None = None,
    ) -> None:
        """Show a frame's variables; `changed` names are marked, `edited` (kind, name) too.
        `outcome` (the result or error of a finished run) is shown first when given."""
        sections = [
            ("run", outcome or {}),
            ("args", args),
            ("locals", locals_),
            ("globals", globals_),
        ]
        shape = tuple(
            (kind, tuple((name, _expandable(v)) for name, v in values.items()))
            for kind, values in sections
            if values or (kind == "locals" and scope)
        )
        title = f"variables · {scope}" if scope else "variables"
        if self.border_title != title:
            self.border_title = title
        self._scope = scope
        if shape != self._shape:
            self._rebuild(shape, sections, changed, edited)
            return
        for kind, values in sections:
            for name, value in values.items():
                node = self._var_nodes.get((kind, name))
                if node is None:
                    continue
                old = node.data
                ref = VarRef(kind, name, (), value)
                label = self._var_label(ref, name in changed, (kind, name) in edited)
                node.data = ref
                if label != node.label:
                    node.set_label(label)
                if node.is_expanded and old is not None and old.value != value:
                    self._fill(node, ref)

    def _rebuild(
        self,
        shape: tuple[Any, ...],
        sections: list[tuple[str, dict[str, Any]]],
        changed: set[str],
        edited: set[tuple[str, str]],
    ) -> None:
        cursor = self.selected
        self._shape = shape
        self.clear()
        self._sections.clear()
        self._var_nodes.clear()
        line_of_cursor = None
        for kind, values in sections:
            if not values and not (kind == "locals" and self._scope):
                continue
            section = self.root.add(Text(kind, self._style("section")), expand=True)
            self._sections[kind] = section
            for name, value in values.items():
                ref = VarRef(kind, name, (), value)
                node = section.add(
                    self._var_label(ref, name in changed, (kind, name) in edited),
                    data=ref,
                    allow_expand=_expandable(value),
                )
                self._var_nodes[(kind, name)] = node
                if (kind, name, ()) in self._open_paths and _expandable(value):
                    self._fill(node, ref)
                    node.expand()
                if cursor is not None and (cursor.kind, cursor.name) == (kind, name):
                    line_of_cursor = node
        if line_of_cursor is None and self._var_nodes:
            line_of_cursor = next(iter(self._var_nodes.values()))  # the first variable
        self._cursor_due = line_of_cursor
        if line_of_cursor is not None:
            self.call_after_refresh(self._restore_cursor, line_of_cursor)

    def _restore_cursor(self, node: TreeNode[VarRef]) -> None:
        if self._cursor_due is node:
            self._cursor_due = None
        if node.tree is self and node.line >= 0:
            self.cursor_line = node.line

    def _style(self, name: str) -> Any:
        return self.get_component_rich_style(f"variables--{name}", partial=True)

    def _var_label(self, ref: VarRef, changed: bool, edited: bool) -> Text:
        key = ref.path[-1] if ref.path else ref.name
        if edited:
            marker = Text("✎ ", self._style("edited"))
        elif changed:
            marker = Text("● ", self._style("changed"))
        else:
            marker = Text("  ")
        name_style = self._style("changed" if changed and not ref.path else "name")
        return Text.assemble(marker, (str(key), name_style), " = ", describe_value(ref.value, 60))

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._shape = ()  # colours are baked into labels: relabel on the next show

    def _fill(self, node: TreeNode[VarRef], ref: VarRef) -> None:
        node.remove_children()
        for key, value in _items(ref.value):
            child = VarRef(ref.kind, ref.name, (*ref.path, key), value)
            node.add(
                self._var_label(child, False, False), data=child, allow_expand=_expandable(value)
            )
        more = _more_items(ref.value)
        if more:
            # A 50,000-item list showed its first 500 and nothing said there were more.
            node.add_leaf(Text(f"… {more:,} more (z shows the whole value)", self._style("more")))

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[VarRef]) -> None:
        ref = event.node.data
        if ref is None:
            return
        event.stop()
        self._open_paths.add((ref.kind, ref.name, ref.path))
        if not event.node.children:
            self._fill(event.node, ref)

    def on_tree_node_collapsed(self, event: Tree.NodeCollapsed[VarRef]) -> None:
        ref = event.node.data
        if ref is not None:
            event.stop()
            self._open_paths.discard((ref.kind, ref.name, ref.path))
