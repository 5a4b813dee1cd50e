"""Provides what a `raises` clause allows: the effects its members name, with `effectSet`
declarations (the module's own and those of the modules it imports, e.g. std::capabilities)
expanded, nested sets included.

A member is an effect (`std::read`), `*` (anything), or the name of an effect set. A name that
is no effect set is taken as a literal effect, except the name of a `type` alias, which is a
mistake the type checker reports (AG3012). A clause that allows anything has no bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtime.language.syntax import ast as A


@dataclass
class Allowed:
    effects: set[str] = field(default_factory=set)
    anything: bool = False
    not_sets: list[str] = field(default_factory=list)  # type aliases named as if effect sets


def effect_sets(modules: list[A.Program]) -> dict[str, tuple[str, ...]]:
    """Every `effectSet` the modules declare, by name (a later module's wins)."""
    return {i.name: i.members for m in modules for i in m.items if type(i) is A.EffectSet}


def allowed(
    members: tuple[str, ...], sets: dict[str, tuple[str, ...]], aliases: set[str]
) -> Allowed:
    """What a clause with `members` allows, given the effect sets and type alias names known."""
    out = Allowed()
    todo, seen = list(members), set()
    while todo:
        member = todo.pop(0)
        if member in seen:
            continue
        seen.add(member)
        if member == "*":
            out.anything = True
        elif member in sets:
            todo.extend(sets[member])
        elif member in aliases:
            out.not_sets.append(member)
        else:
            out.effects.add(member)
    return out
