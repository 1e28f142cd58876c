"""A Python file's text with exact positions, for editing it in place.

``ast`` gives lines and UTF-8 byte columns; ``tokenize`` gives lines and
character columns. Both become character offsets into the text, so a probe or
a mutant changes the exact characters of one node and keeps every other byte
of the file (formatting, comments) as it was. Pure; no I/O.
"""

from __future__ import annotations

import ast
import bisect
import io
import re
import tokenize
import warnings
from dataclasses import dataclass
from functools import cached_property

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
LONE_CR = re.compile("\r(?!\n)")
SKIPPED_TOKENS = frozenset({tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT,
                            tokenize.DEDENT, tokenize.ENDMARKER})


@dataclass(frozen=True)
class Token:
    kind: int
    string: str
    start: int
    end: int
    line: int


@dataclass(frozen=True)
class Function:
    """A function or method definition of a file."""

    qualname: str
    """As Python names it: ``median``, ``Stats.mean``, ``outer.<locals>.inner``."""
    occurrence: int
    """0 for the first definition of this qualname in the file, 1 for the next..."""
    node: FunctionNode
    start: int
    """Offset of its first decorator's ``@`` (or of ``def``)."""
    end: int


class PythonSource:
    """One Python file: its text, its tree, and positions as offsets into the text.

    Raises SyntaxError or ValueError when the text is not Python that this
    interpreter parses, or holds a lone carriage return (a line break for
    Python, not for git or for these positions)."""

    def __init__(self, text: str, filename: str = "<source>") -> None:
        if LONE_CR.search(text):
            raise ValueError(f"{filename}: a lone carriage return")
        self.text = text
        self.tree = ast.parse(text, filename)
        self.lines = text.split("\n")
        self.starts = [0]
        for line in self.lines[:-1]:
            self.starts.append(self.starts[-1] + len(line) + 1)

    def offset(self, line: int, byte_col: int) -> int:
        """The offset of ``ast``'s (line, UTF-8 byte column)."""
        text = self.lines[line - 1]
        if text.isascii():
            return self.starts[line - 1] + byte_col
        return self.starts[line - 1] + len(text.encode("utf-8")[:byte_col].decode("utf-8"))

    def start(self, node: ast.AST) -> int:
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        end_line = node.end_lineno  # type: ignore[attr-defined]
        end_col = node.end_col_offset  # type: ignore[attr-defined]
        assert end_line is not None and end_col is not None
        return self.offset(end_line, end_col)

    def segment(self, node: ast.AST) -> str:
        return self.text[self.start(node):self.end(node)]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def indentation(self, line: int) -> str:
        text = self.lines[line - 1]
        return text[:len(text) - len(text.lstrip(" \t\f"))]

    def begins_line(self, node: ast.AST) -> bool:
        """Whether only indentation stands before the node on its line."""
        start = self.start(node)
        line = self.line_of(start)
        return self.text[self.starts[line - 1]:start].strip(" \t\f") == ""

    def newline(self, line: int) -> str:
        return "\r\n" if self.lines[line - 1].endswith("\r") else "\n"

    def statement_start(self, node: ast.stmt) -> int:
        """Where a statement begins: at its first decorator's ``@`` for a decorated
        definition (``ast`` puts a definition at its ``def`` or ``class``)."""
        decorators: list[ast.expr] = getattr(node, "decorator_list", [])
        if decorators:
            line = decorators[0].lineno
            return self.starts[line - 1] + len(self.indentation(line))
        return self.start(node)

    @cached_property
    def tokens(self) -> list[Token]:
        """Its tokens, but comments, line breaks and indentation; empty when the
        pure-Python tokenizer cannot read it (then nothing token-based is edited)."""
        found = []
        try:
            for token in tokenize.generate_tokens(io.StringIO(self.text).readline):
                if token.type in SKIPPED_TOKENS:
                    continue
                (row, col), (end_row, end_col) = token.start, token.end
                found.append(Token(token.type, token.string, self.starts[row - 1] + col,
                                   self.starts[end_row - 1] + end_col, row))
        except (tokenize.TokenError, SyntaxError, IndexError):
            return []
        return found

    @cached_property
    def _token_starts(self) -> list[int]:
        return [token.start for token in self.tokens]

    def tokens_between(self, start: int, end: int) -> list[Token]:
        """The tokens in [start, end), parentheses left out (they belong to the
        operands around an operator)."""
        tokens = self.tokens
        index = bisect.bisect_left(self._token_starts, start)
        found = []
        while index < len(tokens) and tokens[index].start < end:
            if tokens[index].string not in "()":
                found.append(tokens[index])
            index += 1
        return found

    def token_at(self, offset: int) -> Token | None:
        tokens = self.tokens
        index = bisect.bisect_left(self._token_starts, offset)
        return tokens[index] if index < len(tokens) and tokens[index].start == offset else None

    def token_after(self, offset: int) -> Token | None:
        tokens = self.tokens
        index = bisect.bisect_left(self._token_starts, offset)
        return tokens[index] if index < len(tokens) else None

    def functions(self) -> list[Function]:
        """Every function and method, nested ones included, in source order."""
        found: list[tuple[str, FunctionNode]] = []

        def walk(node: ast.AST, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, FunctionNode):
                    found.append((prefix + child.name, child))
                    walk(child, f"{prefix}{child.name}.<locals>.")
                elif isinstance(child, ast.ClassDef):
                    walk(child, f"{prefix}{child.name}.")
                else:
                    walk(child, prefix)

        walk(self.tree, "")
        found.sort(key=lambda item: (item[1].lineno, item[1].col_offset))
        seen: dict[str, int] = {}
        functions = []
        for qualname, node in found:
            occurrence = seen.get(qualname, 0)
            seen[qualname] = occurrence + 1
            functions.append(Function(qualname, occurrence, node, self.statement_start(node),
                                      self.end(node)))
        return functions


def docstring_of(node: FunctionNode) -> ast.Expr | None:
    first = node.body[0]
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return first
    return None


def compiles(text: str, filename: str) -> bool:
    """Whether the interpreter compiles the text (warnings ignored)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return False
    return True
