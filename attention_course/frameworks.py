"""Which frameworks run, and the ``%%keras`` / ``%%pytorch`` cell magics.

``COURSE_FRAMEWORKS`` is ``both`` (the default), ``keras`` or ``pytorch`` (comma lists work too).
A cell that starts with ``%%keras`` runs only when Keras is on; ``%%pytorch`` likewise. On Colab a
learner sets the framework once, at the top of a notebook: ``ac.setup(frameworks="pytorch")``.
"""

from __future__ import annotations

import ast
import os

from .errors import ConfigError

NAMES = ("keras", "pytorch")
_ALIASES = {"both": NAMES, "all": NAMES, "tf": ("keras",), "tensorflow": ("keras",), "torch": ("pytorch",)}
_forced: tuple[str, ...] | None = None


def parse(spec: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``"both"``, ``"keras"``, ``"pytorch"``, ``"keras,pytorch"`` or a list → a tuple of framework names."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    chosen: list[str] = []
    for item in items:
        key = str(item).strip().lower()
        if not key:
            continue
        names = _ALIASES.get(key, (key,))
        for name in names:
            if name not in NAMES:
                raise ConfigError(
                    f"unknown framework {item!r}: COURSE_FRAMEWORKS takes 'both', 'keras' or 'pytorch'"
                )
            if name not in chosen:
                chosen.append(name)
    if not chosen:
        raise ConfigError("no framework chosen: COURSE_FRAMEWORKS takes 'both', 'keras' or 'pytorch'")
    return tuple(n for n in NAMES if n in chosen)


def enabled() -> tuple[str, ...]:
    """The frameworks that run in this session, in the course's order (keras, pytorch)."""
    if _forced is not None:
        return _forced
    return parse(os.environ.get("COURSE_FRAMEWORKS", "both"))


def use(spec: str | list[str] | None) -> tuple[str, ...]:
    """Choose the frameworks for this session (``None`` goes back to ``COURSE_FRAMEWORKS``)."""
    global _forced
    _forced = None if spec is None else parse(spec)
    return enabled()


def is_enabled(name: str) -> bool:
    (name,) = parse(name)
    return name in enabled()


def _run_cell_body(shell, body: str):
    """Execute ``body`` in the user namespace; exceptions propagate (so nbval sees them) and the value of a
    final bare expression is returned, so that it is displayed like a normal cell's."""
    tree = ast.parse(body)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<cell>", "exec"), shell.user_ns)
    if last is not None:
        return eval(compile(last, "<cell>", "eval"), shell.user_ns)
    return None


def _make_magic(name: str):
    def magic(line: str, cell: str):
        if not is_enabled(name):
            print(f"[{name} cell skipped: frameworks on are {', '.join(enabled())}]")
            return None
        from IPython import get_ipython

        return _run_cell_body(get_ipython(), cell)

    magic.__name__ = name
    magic.__doc__ = f"Run this cell only when {name} is among the enabled frameworks."
    return magic


def register_magics(shell=None) -> bool:
    """Register ``%%keras`` and ``%%pytorch`` in the running IPython; False outside IPython."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:  # pragma: no cover
            return False
        shell = get_ipython()
    if shell is None:
        return False
    for name in NAMES:
        shell.register_magic_function(_make_magic(name), magic_kind="cell", magic_name=name)
    return True
