"""Single-point mutations of one Python source, at exact text positions.

A small AST-based mutator of the harness's own, rather than a mutation
library: the sweep generates mutants, so a library would be a runtime
dependency (the plugin has four), and none of the well-kept ones fits.
Cosmic Ray (parso, plus aiohttp, SQLAlchemy, GitPython and more) and mutmut 3
(libcst, textual, coverage; it rewrites whole modules into trampolines that
only its own runner drives) are tools that mutate files on disk through their
sessions; mutatest and MutPy are unmaintained (2022, 2019). None restricts
mutations to given lines of a single source string.

Each mutation changes the characters of one node or operator token (found
with ``ast`` and ``tokenize``) and leaves every other byte of the file as it
was; nothing is re-rendered with ``ast.unparse``. Nothing inside f-strings or
annotations is mutated (positions there are unreliable, and a changed
annotation changes no behaviour). Pure; no I/O.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator
from dataclasses import dataclass

from pytest_wfbench.audit.pysource import FunctionNode, PythonSource, docstring_of

# Operator names, in the order they are tried at one position.
OPERATORS = ("compare-flip", "boolean-swap", "drop-not", "arithmetic-swap",
             "constant-plus-one", "constant-minus-one", "slice-plus-one", "slice-minus-one",
             "boolean-negate", "return-none-early", "return-first-early")
COMPARISONS: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.In: ("in", "not in"),
    ast.NotIn: ("not in", "in"), ast.Is: ("is", "is not"), ast.IsNot: ("is not", "is"),
}
ARITHMETIC: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "/"), ast.Div: ("/", "*"),
    ast.FloorDiv: ("//", "%"), ast.Mod: ("%", "//"),
}
ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)
# Fields whose subtrees are never mutated.
SKIPPED_FIELDS = frozenset({"annotation", "returns", "type_comment"})


@dataclass(frozen=True)
class Mutation:
    """One single-point change: the text in [start, end) becomes ``replacement``."""

    operator: str
    line: int
    """The line of the mutated text (for an insertion: the line it goes before)."""
    column: int
    """Its character column on that line (0-based)."""
    start: int
    end: int
    replacement: str
    description: str


def apply_mutation(text: str, mutation: Mutation) -> str:
    return text[:mutation.start] + mutation.replacement + text[mutation.end:]


class _Finder:
    """Walks one source and collects the mutations of every operator."""

    def __init__(self, source: PythonSource) -> None:
        self.source = source
        self.found: list[Mutation] = []

    def add(self, operator: str, start: int, end: int, replacement: str,
            description: str) -> None:
        line = self.source.line_of(start)
        column = start - self.source.starts[line - 1]
        self.found.append(Mutation(operator, line, column, start, end, replacement, description))

    def walk(self, node: ast.AST) -> None:
        if isinstance(node, ast.JoinedStr):
            return
        self.visit(node)
        for name, value in ast.iter_fields(node):
            if name in SKIPPED_FIELDS:
                continue
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    self.walk(child)

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Compare):
            self.compare(node)
        elif isinstance(node, ast.BoolOp):
            self.boolean(node)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            self.drop_not(node)
        elif isinstance(node, ast.BinOp | ast.AugAssign):
            self.arithmetic(node)
        elif isinstance(node, ast.Constant):
            self.constant(node)
        elif isinstance(node, ast.Slice):
            self.slice(node)
        elif isinstance(node, FunctionNode):
            self.early_returns(node)

    def operator_tokens(self, left: ast.AST, right: ast.AST, expected: str) -> tuple[int, int]:
        """The span of the operator between two operands, when its tokens read
        ``expected`` (words joined by one space); (-1, -1) otherwise."""
        tokens = self.source.tokens_between(self.source.end(left), self.source.start(right))
        if not tokens or " ".join(token.string for token in tokens) != expected:
            return -1, -1
        return tokens[0].start, tokens[-1].end

    def compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        for index, op in enumerate(node.ops):
            before, after = COMPARISONS[type(op)]
            start, end = self.operator_tokens(operands[index], operands[index + 1], before)
            if start >= 0:
                self.add("compare-flip", start, end, after, f"`{before}` -> `{after}`")

    def boolean(self, node: ast.BoolOp) -> None:
        word, other = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        spans = [self.operator_tokens(left, right, word)
                 for left, right in zip(node.values, node.values[1:], strict=False)]
        if not spans or any(start < 0 for start, _ in spans):
            return
        first, last = spans[0][0], spans[-1][1]
        text = self.source.text
        pieces, cursor = [], first
        for start, end in spans:
            pieces += [text[cursor:start], other]
            cursor = end
        self.add("boolean-swap", first, last, "".join(pieces) + text[cursor:last],
                 f"`{word}` -> `{other}`")

    def drop_not(self, node: ast.UnaryOp) -> None:
        start = self.source.start(node)
        token = self.source.token_at(start)
        following = self.source.token_after(start + 3)
        if token is None or token.string != "not" or following is None:
            return
        self.add("drop-not", start, following.start, "", "drop `not`")

    def arithmetic(self, node: ast.BinOp | ast.AugAssign) -> None:
        if type(node.op) not in ARITHMETIC:
            return
        before, after = ARITHMETIC[type(node.op)]
        left: ast.AST
        right: ast.AST
        if isinstance(node, ast.AugAssign):
            left, right, before, after = node.target, node.value, before + "=", after + "="
        else:
            left, right = node.left, node.right
        start, end = self.operator_tokens(left, right, before)
        if start >= 0:
            self.add("arithmetic-swap", start, end, after, f"`{before}` -> `{after}`")

    def constant(self, node: ast.Constant) -> None:
        start, end = self.source.start(node), self.source.end(node)
        written = self.source.text[start:end]
        if isinstance(node.value, bool):
            if written == str(node.value):
                other = str(not node.value)
                self.add("boolean-negate", start, end, other, f"`{written}` -> `{other}`")
            return
        if not isinstance(node.value, int):
            return
        try:
            if ast.literal_eval(written) != node.value:
                return
        except (ValueError, SyntaxError):
            return
        for operator, value in (("constant-plus-one", node.value + 1),
                                ("constant-minus-one", node.value - 1)):
            self.add(operator, start, end, str(value), f"`{written}` -> `{value}`")

    def slice(self, node: ast.Slice) -> None:
        for bound in (node.lower, node.upper):
            if bound is None or _int_like(bound):
                continue  # an integer bound is the constant operators'
            if (isinstance(bound, ast.BinOp) and isinstance(bound.op, ast.Add | ast.Sub)
                    and _int_like(bound.right)):
                continue  # `n - 1` +/- 1 would undo itself; its constant is mutated
            written = self.source.segment(bound)
            shown = written if isinstance(bound, ATOMS) else f"({written})"
            start, end = self.source.start(bound), self.source.end(bound)
            for operator, sign in (("slice-plus-one", "+"), ("slice-minus-one", "-")):
                self.add(operator, start, end, f"{shown} {sign} 1",
                         f"slice bound `{written}` -> `{shown} {sign} 1`")

    def early_returns(self, function: FunctionNode) -> None:
        first = _first_return(function)
        returned = None
        if first is not None and first.value is not None and not (
                isinstance(first.value, ast.Constant) and first.value.value is None):
            written = self.source.segment(first.value)
            returned = f"return ({written})" if "\n" in written else f"return {written}"
        docstring = docstring_of(function)
        for statement in _statements(function.body):
            if statement is docstring or not self.source.begins_line(statement):
                continue
            line = self.source.line_of(self.source.statement_start(statement))
            existing = self.source.segment(statement)
            at = self.source.starts[line - 1]
            indent, newline = self.source.indentation(line), self.source.newline(line)
            for operator, inserted in (("return-none-early", "return None"),
                                       ("return-first-early", returned)):
                if inserted is None or existing == inserted:
                    continue
                self.add(operator, at, at, f"{indent}{inserted}{newline}",
                         f"`{inserted}` inserted before line {line}")


def _int_like(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return (isinstance(node, ast.Constant) and isinstance(node.value, int)
            and not isinstance(node.value, bool))


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a function's blocks, in source order, not entering
    nested definitions (they are functions of their own)."""
    for statement in body:
        yield statement
        if isinstance(statement, FunctionNode | ast.ClassDef):
            continue
        for name, value in ast.iter_fields(statement):
            if name in ("body", "orelse", "finalbody") and isinstance(value, list):
                yield from _statements([s for s in value if isinstance(s, ast.stmt)])
            elif name in ("handlers", "cases") and isinstance(value, list):
                for clause in value:
                    yield from _statements(clause.body)


def _first_return(function: FunctionNode) -> ast.Return | None:
    """The function's first ``return`` in source order (nested definitions aside)."""
    for statement in _statements(function.body):
        if isinstance(statement, ast.Return):
            return statement
    return None


def find_mutations(source: PythonSource, lines: Collection[int] | None = None) -> list[Mutation]:
    """Every single-point mutation of the source whose line is in ``lines`` (all
    lines when None), ordered by position, then by OPERATORS order."""
    finder = _Finder(source)
    finder.walk(source.tree)
    order = {name: index for index, name in enumerate(OPERATORS)}
    found = [m for m in finder.found if lines is None or m.line in lines]
    found.sort(key=lambda m: (m.start, m.end, order[m.operator], m.replacement))
    return found
