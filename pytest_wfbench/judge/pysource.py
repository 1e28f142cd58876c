"""Reading a changed Python source as Python reads it, for the suspicion scan:
decoded with the encoding it declares (PEP 263), and parsed, so that what a
patch's UTF-8 text hides (Latin-1 letters Python folds into ASCII, a
replaced function of a standard module reached through any alias) is seen.
Pure; no I/O."""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator

# Modules whose replaced functions would let code under test rewrite what the
# judge writes or how it exits; importing these is reason enough to look.
SENSITIVE_IMPORTS = frozenset({
    "_pytest", "pluggy", "posix", "_hashlib", "_json", "_io", "_thread", "imp", "zipimport",
    "ctypes", "cffi", "gc", "builtins", "marshal", "runpy", "pty",
})
PROCESS_REPLACING = frozenset({
    "execv", "execve", "execl", "execle", "execlp", "execlpe", "execvp", "execvpe",
    "spawnv", "spawnve", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnvp", "spawnvpe",
    "posix_spawn", "posix_spawnp", "fork", "forkpty",
})


def decode_source(data: bytes) -> str:
    """The source as Python decodes it (with the encoding it declares)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding, "replace")
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return data.decode("latin-1")


def _import_aliases(tree: ast.AST) -> dict[str, str]:
    """Names a module binds to imported modules (or their attributes): alias -> origin."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for name in node.names:
                aliases[name.asname or name.name.split(".")[0]] = name.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for name in node.names:
                aliases[name.asname or name.name] = f"{node.module}.{name.name}"
    return aliases


def _base_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def source_findings(source: str) -> Iterator[tuple[str, int]]:
    """(reason, line) for what a parsed module does to its judge: replaces an
    attribute of an imported module (``os.write = ...``, ``setattr(json, ...)``,
    through any alias), replaces its process, or imports a module whose
    functions rewrite the judge's output or exit."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    aliases = _import_aliases(tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and _base_name(target) in aliases:
                origin = aliases[_base_name(target) or ""]
                yield f"a module's function replaced ({origin}.{target.attr})", line
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args \
                    and _base_name(node.args[0]) in aliases:
                yield f"a module's function replaced ({func.id} on "\
                      f"{aliases[_base_name(node.args[0]) or '']})", line
            if isinstance(func, ast.Attribute) and func.attr in PROCESS_REPLACING:
                yield f"process replaced or forked ({func.attr})", line
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = ([name.name for name in node.names] if isinstance(node, ast.Import)
                       else [node.module or ""])
            for module in modules:
                if module.split(".")[0] in SENSITIVE_IMPORTS:
                    yield f"imports {module.split('.')[0]}", line
