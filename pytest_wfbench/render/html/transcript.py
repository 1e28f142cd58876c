"""A Claude Code transcript (the CLI's JSONL, one entry per line) as turns:
who spoke, the text, the tool calls with their inputs, the tool results
trimmed, and the tokens of each assistant message (docs/claude-cli.md).

The CLI writes each content block of a response as its own ``assistant`` line
with the same ``message.id`` and the whole usage repeated: such lines are one
turn, their usage counted once. Everything is bounded by a per-cell
:class:`~pytest_wfbench.render.html.clip.Budget`, turns beyond a head and a
tail are left out with a count, and whatever cannot be read is said so."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pytest_wfbench.render.html.clip import Budget, Clipped, clip_items

USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
              "output_tokens")
TRANSCRIPT_CHARS = 120_000
"""What one cell's transcripts may put on the page, all phases together."""
MESSAGE_CHARS = 6_000
TOOL_INPUT_CHARS = 2_000
TOOL_OUTPUT_CHARS = 2_000
HEAD_TURNS = 40
TAIL_TURNS = 20


@dataclass(frozen=True)
class Block:
    kind: str
    """``text``, ``thinking``, ``tool_use``, ``tool_result``, ``meta`` (a skill's
    body the CLI injected) or ``other``."""
    text: Clipped
    title: str = ""
    """The tool's name for a call or result."""
    error: bool = False

    @property
    def preview(self) -> str:
        """The first line, short: what a folded block shows."""
        first = self.text.text.strip().split("\n", 1)[0] if self.text.text.strip() else ""
        return first if len(first) <= 120 else first[:117] + "..."


@dataclass
class Turn:
    role: str
    """``user`` or ``assistant``."""
    blocks: list[Block] = field(default_factory=list)
    usage: dict[str, int] | None = None
    """An assistant message's tokens; None for user turns."""
    model: str | None = None


@dataclass(frozen=True)
class Transcript:
    head: list[Turn]
    tail: list[Turn]
    turns_cut: int
    """Turns left out between head and tail."""
    total_turns: int
    unreadable_lines: int
    """Lines that are not JSON (a cut, a torn write)."""
    notes: list[str]
    """What the harness said inside the file (a cut), verbatim."""
    chars_cut: int
    usage: dict[str, int]
    """All assistant messages' tokens, each message once."""


def _text_of(content: Any) -> str:
    """A tool result's content: a string, or a list of blocks of text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, dict) and item.get("type") == "text":
                parts.append(str(item.get("text", "")))
            elif isinstance(item, dict):
                parts.append(f"[{item.get('type', 'block')}]")
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, sort_keys=True)


def _entries(text: str) -> tuple[list[dict[str, Any]], int, list[str]]:
    entries, unreadable, notes = [], 0, []
    # Lines end at "\n" only, as the store reads rows: U+2028 in a message
    # must not split an entry.
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            if line.startswith("[wfbench"):
                notes.append(line[:300])
            else:
                unreadable += 1
            continue
        if isinstance(entry, dict):
            entries.append(entry)
        else:
            unreadable += 1
    return entries, unreadable, notes


def _usage(message: dict[str, Any]) -> dict[str, int]:
    usage = message.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    found = {}
    for key in USAGE_KEYS:
        value = usage.get(key)
        found[key] = value if isinstance(value, int) and not isinstance(value, bool) else 0
    return found


@dataclass
class _RawBlock:
    kind: str
    text: str
    title: str = ""
    error: bool = False
    limit: int = MESSAGE_CHARS
    data: Any = None
    """A tool's input, written out as text only if its turn is shown."""

    def shown(self) -> str:
        if self.kind != "tool_use":
            return self.text
        return json.dumps(self.data, indent=2, sort_keys=True, ensure_ascii=False)


def _blocks(entry: dict[str, Any], tool_names: dict[str, str]) -> list[_RawBlock]:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    meta = bool(entry.get("isMeta"))
    if isinstance(content, str):
        return [_RawBlock("meta" if meta else "text", content)]
    if not isinstance(content, list):
        return []
    found = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            found.append(_RawBlock("meta" if meta else "text", str(block.get("text", ""))))
        elif kind == "thinking":
            found.append(_RawBlock("thinking", str(block.get("thinking", ""))))
        elif kind == "tool_use":
            name = str(block.get("name", "?"))
            tool_names[str(block.get("id"))] = name
            found.append(_RawBlock("tool_use", "", title=name, limit=TOOL_INPUT_CHARS,
                                   data=block.get("input")))
        elif kind == "tool_result":
            name = tool_names.get(str(block.get("tool_use_id")), "tool")
            found.append(_RawBlock("tool_result", _text_of(block.get("content")), title=name,
                                   error=block.get("is_error") is True,
                                   limit=TOOL_OUTPUT_CHARS))
        else:
            found.append(_RawBlock("other", f"[{kind} block]"))
    return found


def _raw_turns(entries: list[dict[str, Any]]) -> tuple[list[tuple[Turn, list[_RawBlock]]],
                                                       dict[str, int]]:
    turns: list[tuple[Turn, list[_RawBlock]]] = []
    tool_names: dict[str, str] = {}
    totals = dict.fromkeys(USAGE_KEYS, 0)
    last_message: str | None = None
    counted: set[str] = set()
    for entry in entries:
        role = entry.get("type")
        if role not in ("user", "assistant"):
            continue
        message = entry.get("message")
        message = message if isinstance(message, dict) else {}
        blocks = _blocks(entry, tool_names)
        message_id = message.get("id") if role == "assistant" else None
        if role == "assistant" and message_id is not None and message_id == last_message:
            turns[-1][1].extend(blocks)
            continue
        last_message = message_id if isinstance(message_id, str) else None
        turn = Turn(role=str(role))
        if role == "assistant":
            turn.usage = _usage(message)
            turn.model = message.get("model") if isinstance(message.get("model"), str) else None
            # One response's usage is repeated on each of its lines: count it once.
            if not isinstance(message_id, str) or message_id not in counted:
                for key, value in turn.usage.items():
                    totals[key] += value
            if isinstance(message_id, str):
                counted.add(message_id)
        turns.append((turn, blocks))
    return turns, totals


def read_transcript(text: str, budget: Budget | None = None) -> Transcript:
    """The turns of a transcript's text, bounded by ``budget`` (a fresh
    :data:`TRANSCRIPT_CHARS` one unless the cell's is given)."""
    budget = budget or Budget(TRANSCRIPT_CHARS)
    entries, unreadable, notes = _entries(text)
    raw, totals = _raw_turns(entries)
    first, last, cut = clip_items(raw, HEAD_TURNS, TAIL_TURNS)
    before = budget.cut
    shown: list[list[Turn]] = [[], []]
    # The tail keeps its share of the budget: the end of a session (its last
    # edits, its final message) matters as much as its start.
    tail_reserve = budget.left // 3 if last else 0
    budget.left -= tail_reserve
    for part, turns in enumerate((first, last)):
        if part == 1:
            budget.left += tail_reserve
        for turn, blocks in turns:
            turn.blocks = [Block(b.kind, budget.take(b.shown(), b.limit), b.title, b.error)
                           for b in blocks]
            shown[part].append(turn)
    return Transcript(head=shown[0], tail=shown[1], turns_cut=cut, total_turns=len(raw),
                      unreadable_lines=unreadable, notes=notes, chars_cut=budget.cut - before,
                      usage=totals)
