"""Which frameworks run, and the ``%%keras`` / ``%%pytorch`` cell magics.

``COURSE_FRAMEWORKS`` is ``pytorch`` (the default: a live kernel runs one framework, half the time and memory),
``keras`` or ``both`` (comma lists work too); the book build and the tests set ``both``.
A cell that starts with ``%%keras`` runs only when Keras is on; ``%%pytorch`` likewise. On Colab a
learner sets the framework once, at the top of a notebook: ``ac.setup(frameworks="pytorch")``. The classes and
functions a framework cell imports or defines are seen only by that framework's cells (``_run_cell_body``).
"""

from __future__ import annotations

import ast
import os

from attention_course.core.errors import ConfigError

NAMES = ("keras", "pytorch")
DEFAULT = "pytorch"   # when neither COURSE_FRAMEWORKS nor ac.setup(frameworks=...) chooses
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
    return parse(os.environ.get("COURSE_FRAMEWORKS", DEFAULT))


def use(spec: str | list[str] | None) -> tuple[str, ...]:
    """Choose the frameworks for this session (``None`` goes back to ``COURSE_FRAMEWORKS``)."""
    global _forced
    _forced = None if spec is None else parse(spec)
    return enabled()


def is_enabled(name: str) -> bool:
    (name,) = parse(name)
    return name in enabled()


# Each framework's cells run in a namespace of their own, so that a Keras cell and a PyTorch cell can both define
# `class DotProductAttention` and every later cell of the same framework sees its own. The names bound by `import`,
# `def` and `class` at the top of a framework cell stay private to that framework; every other name (data, models,
# results) is shared with the notebook, as in a normal cell.
_spaces: dict[str, dict] = {}
_private: dict[str, set[str]] = {}
_hooked: set[int] = set()   # the shells whose cells are followed by ``_follow_notebook``


def python_source(cell: str) -> str:
    """A cell's text as plain Python: IPython's own transforms turn ``%timeit``, ``!cmd`` and ``x?`` into calls."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(cell)


def defined_names(tree: ast.Module) -> set[str]:
    """The names bound by top-level ``import``, ``def`` and ``class`` statements of a cell."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _remember(shell, source: str) -> str:
    """Store a cell's source where tracebacks and ``inspect`` look for it; returns its file name."""
    cache = getattr(getattr(shell, "compile", None), "cache", None)
    if cache is not None:
        return cache(source, getattr(shell, "execution_count", 0))
    return "<cell>"


def _run_cell_body(shell, body: str, framework: str):
    """Execute ``body`` in ``framework``'s namespace; exceptions propagate (so nbval sees them) and the value of a
    final bare expression is returned, so that it is displayed like a normal cell's."""
    source = python_source(body)
    filename = _remember(shell, source)  # so that tracebacks and inspect.getsource show the cell's lines
    tree = ast.parse(source, filename)
    last = None
    final = tree.body[-1] if tree.body else None
    if isinstance(final, ast.Expr):  # shown like a normal cell's last expression
        tree.body.pop()
        last = ast.Expression(final.value)
    shared = shell.user_ns
    space = _spaces.setdefault(framework, {})
    private = _private.setdefault(framework, set())
    private |= defined_names(tree)
    _follow(space, private, shared)
    before = set(space)
    try:
        exec(compile(tree, filename, "exec"), space)
        return None if last is None else eval(compile(last, filename, "eval"), space)
    finally:  # publish what the cell bound, except its framework's own imports, classes and functions
        shared.update((n, v) for n, v in space.items() if n not in private and shared.get(n, space) is not v)
        for name in before - set(space) - private:
            shared.pop(name, None)


def _follow(space: dict, private: set[str], shared: dict) -> None:
    """Make a framework's namespace hold the notebook's current values of the names it shares: what the notebook
    deleted or rebound since is let go (and freed), and the framework's functions see what a cell sees."""
    for name in [n for n in space if n not in private and n not in shared]:
        del space[name]
    space.update((n, v) for n, v in shared.items() if n not in private)


def _follow_notebook(shell) -> None:
    """After every cell: each framework's namespace follows the notebook's (``_follow``). Without it a framework's
    namespace kept what its last cell saw (a model, a dataset) until its next cell, however long after."""
    for framework, space in _spaces.items():
        _follow(space, _private.get(framework, set()), shell.user_ns)


def _say_skipped(message: str) -> None:
    """Tell a live reader that a cell was skipped; the book (``COURSE_SKIP_ECHO=0``, set by the Makefile) shows no
    such note, since its prose already says what the section needs."""
    if os.environ.get("COURSE_SKIP_ECHO", "1") != "0":
        print(message)


def _missing(shell, line: str) -> str | None:
    """For a magic's line ``needs NAME``: why the cell must be skipped (NAME is unset or falsy), else None."""
    words = line.split()
    if not words:
        return None
    if len(words) != 2 or words[0] != "needs" or not words[1].isidentifier():
        raise ValueError(f"a cell magic's line is empty or 'needs NAME' (a notebook variable); got {line!r}")
    if shell.user_ns.get(words[1]):
        return None
    return f"{words[1]} is not available in this session"


def _make_magic(name: str):
    def magic(line: str, cell: str):
        from IPython import get_ipython

        if not is_enabled(name):
            print(f"[{name} cell skipped: frameworks on are {', '.join(enabled())}]")
            return None
        reason = _missing(get_ipython(), line)
        if reason:
            _say_skipped(f"[{name} cell skipped: {reason}]")
            return None
        return _run_cell_body(get_ipython(), cell, framework=name)

    magic.__name__ = name
    magic.__doc__ = (f"Run this cell only when {name} is among the enabled frameworks, in its own namespace; "
                     f"``%%{name} needs NAME`` also skips it when the notebook's NAME is unset or falsy.")
    return magic


def _needs(line: str, cell: str):
    """``%%needs NAME``: run this cell as a normal one when the notebook's NAME is set and truthy, else skip it
    with a message (a chapter's cells that need a pretrained model or a download)."""
    from IPython import get_ipython

    shell = get_ipython()
    reason = _missing(shell, "needs " + line) if line.strip() else "usage: %%needs NAME"
    if reason:
        _say_skipped(f"[cell skipped: {reason}]")
        return None
    source = python_source(cell)
    tree = ast.parse(source, _remember(shell, source))
    final = tree.body[-1] if tree.body else None
    last = None
    if isinstance(final, ast.Expr):                  # shown like a normal cell's last expression
        tree.body.pop()
        last = ast.Expression(final.value)
    exec(compile(tree, "<cell>", "exec"), shell.user_ns)
    return None if last is None else eval(compile(last, "<cell>", "eval"), shell.user_ns)


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
    shell.register_magic_function(_needs, magic_kind="cell", magic_name="needs")
    if id(shell) not in _hooked:
        shell.events.register("post_run_cell", lambda result: _follow_notebook(shell))
        _hooked.add(id(shell))
    return True
