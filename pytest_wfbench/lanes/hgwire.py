"""Mercurial's HTTP wire protocol (version 1), as far as a fault fixture needs
it to receive a complete push: the ``capabilities`` handshake, the read-only
commands of push discovery (``batch`` of ``heads`` and ``known``, ``listkeys``,
``branchmap``, ``lookup``), and ``unbundle`` with its bundle body, the mutation.

Learned from Mercurial's own sources (``mercurial/wireprotov1server.py``,
``wireprotoserver.py``, ``httppeer.py``) and ``hg help internals.wireprotocol``:
a command is the ``cmd`` query parameter; its arguments come URL-encoded in the
query string or in numbered ``X-HgArg-<N>`` headers (when the server advertises
``httpheader``); answers are ``application/mercurial-0.1`` bodies.

The answers come from a capture of the seeded remote taken once with the
subject's own binary (its capabilities through ``hg serve --stdio``, its keys
through ``hg debugpushkey``), so the fixture keeps no repository.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

from pytest_wfbench.lanes.fault import Answer
from pytest_wfbench.lanes.steps import HarnessWork

MEDIA_TYPE = "application/mercurial-0.1"
ERROR_MEDIA_TYPE = "application/hg-error"
# Commands that change the remote: a push's bundle, and a key (bookmark, phase) set.
MUTATIONS = ("unbundle", "pushkey")
# Capabilities only the SSH transport has; HTTP adds its own (wireprotoserver.py:
# arguments in headers, and the media types answered: 0.1 only, so never compressed).
SSH_ONLY = ("protocaps",)
HTTP_CAPABILITIES = ("httpheader=1024", "httpmediatype=0.1rx,0.1tx")
MAX_ARGUMENT_HEADERS = 1000


@dataclass(frozen=True)
class HgRemoteState:
    """What the seeded remote answers to read-only commands, captured once."""

    capabilities: bytes
    nodes: frozenset[str]
    heads: tuple[str, ...]
    branch_heads: tuple[tuple[str, tuple[str, ...]], ...]
    keys: tuple[tuple[str, bytes], ...]
    """Per pushkey namespace, its ``listkeys`` answer (``key\\tvalue`` lines)."""

    def lookup(self, key: str) -> str | None:
        if key in self.nodes:
            return key
        bookmarks = dict(_key_lines(dict(self.keys).get("bookmarks", b"")))
        if key in bookmarks:
            return bookmarks[key]
        return next((nodes[-1] for branch, nodes in self.branch_heads if branch == key), None)


def _key_lines(encoded: bytes) -> list[tuple[str, str]]:
    """``key\tvalue`` lines, as ``listkeys`` answers and ``hg debugpushkey`` prints."""
    pairs = []
    for line in encoded.decode().splitlines():
        key, tab, value = line.partition("\t")
        if tab:
            pairs.append((key, value))
    return pairs


def stdio_string(raw: bytes) -> bytes:
    """The value of a version-1 ``string`` response on stdio: ``<length>\\n<value>``."""
    length, _, rest = raw.partition(b"\n")
    if not length.strip().isdigit():
        raise ValueError(f"not a wire protocol string response: {raw[:80]!r}")
    value = rest[: int(length)]
    if len(value) != int(length):
        raise ValueError("truncated wire protocol string response")
    return value


def http_capabilities(stdio_capabilities: bytes) -> bytes:
    """The server's capabilities as its HTTP transport would advertise them."""
    caps = [c for c in stdio_capabilities.strip().split(b" ")
            if c and c.decode() not in SSH_ONLY]
    caps += [c.encode() for c in HTTP_CAPABILITIES if c.encode() not in caps]
    return b" ".join(sorted(caps))


def escape_batch(value: str) -> str:
    return value.replace(":", ":c").replace(",", ":o").replace(";", ":s").replace("=", ":e")


def unescape_batch(value: str) -> str:
    return value.replace(":e", "=").replace(":s", ";").replace(":o", ",").replace(":c", ":")


def request_command(target: str, headers: Message) -> tuple[str, dict[str, str]]:
    """The command of a request and its arguments, from the query string and the
    ``X-HgArg-<N>`` headers (as ``httpv1protocolhandler._args`` reads them)."""
    query = urllib.parse.urlsplit(target).query
    params = urllib.parse.parse_qs(query, keep_blank_values=True)
    encoded = []
    for index in range(1, MAX_ARGUMENT_HEADERS):
        chunk = headers.get(f"X-HgArg-{index}")
        if chunk is None:
            break
        encoded.append(chunk)
    params.update(urllib.parse.parse_qs("".join(encoded), keep_blank_values=True))
    command = params.pop("cmd", [""])[0]
    return command, {name: values[0] for name, values in params.items()}


def answer(state: HgRemoteState, command: str, args: Mapping[str, str]) -> bytes | None:
    """The body of a read-only command's answer, or None for a command this
    fixture does not serve (answered as an error the client reports)."""
    if command == "capabilities":
        return state.capabilities
    if command == "heads":
        return (" ".join(state.heads) + "\n").encode()
    if command == "known":
        return "".join("1" if node in state.nodes else "0"
                       for node in args.get("nodes", "").split()).encode()
    if command == "listkeys":
        return dict(state.keys).get(args.get("namespace", ""), b"")
    if command == "branchmap":
        return "\n".join(f"{urllib.parse.quote(branch)} {' '.join(nodes)}"
                         for branch, nodes in state.branch_heads).encode()
    if command == "lookup":
        found = state.lookup(args.get("key", ""))
        return (f"1 {found}\n" if found else f"0 unknown revision {args.get('key')!r}\n").encode()
    if command == "batch":
        return _batch(state, args.get("cmds", ""))
    return None


def _batch(state: HgRemoteState, cmds: str) -> bytes | None:
    """``cmds`` is ``op arg=value,arg=value;op ...``, each part batch-escaped."""
    results = []
    for pair in cmds.split(";"):
        op, _, rest = pair.partition(" ")
        args = {}
        for item in rest.split(","):
            if item:
                name, _, value = item.partition("=")
                args[unescape_batch(name)] = unescape_batch(value)
        if op == "batch" or op in MUTATIONS:
            return None
        result = answer(state, op, args)
        if result is None:
            return None
        results.append(escape_batch(result.decode()))
    return ";".join(results).encode()


class MercurialHttp:
    """The fault fixture's view of Mercurial's HTTP wire protocol."""

    path = "/repo"

    def __init__(self, state: HgRemoteState) -> None:
        self.state = state

    def is_mutation(self, method: str, target: str) -> bool:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query)
        return query.get("cmd", [""])[0] in MUTATIONS

    def answer(self, method: str, target: str, headers: Message) -> Answer | None:
        if urllib.parse.urlsplit(target).path.rstrip("/") != self.path:
            return None
        command, args = request_command(target, headers)
        body = answer(self.state, command, args)
        if body is None:
            return Answer(f"the fault fixture does not serve {command!r}".encode(),
                          ERROR_MEDIA_TYPE)
        return Answer(body, MEDIA_TYPE)


def capture(hg: str, repo: Path, work: HarnessWork) -> HgRemoteState:
    """The seeded remote's answers, read once with the subject's binary."""

    def read(*args: str, stdin: bytes | None = None) -> bytes:
        return work.run([hg, *args], repo, stdin=stdin).stdout

    # The real server's stdio transport gives the exact capability set, not a guess.
    capabilities = http_capabilities(stdio_string(
        read("-R", str(repo), "serve", "--stdio", stdin=b"capabilities\n")))
    nodes = frozenset(read("log", "-T", "{node}\n").decode().split())
    # Newest first, as localrepo.heads() lists them.
    heads = tuple(read("log", "-r", "reverse(heads(all()))", "-T", "{node}\n").decode().split())
    branch_heads: dict[str, list[str]] = {}
    for line in read("log", "-r", "head()", "-T", "{branch}\t{node}\n").decode().splitlines():
        branch, _, node = line.partition("\t")
        branch_heads.setdefault(branch, []).append(node)
    namespaces = [name for name, _ in _key_lines(read("debugpushkey", str(repo), "namespaces"))]
    keys = tuple((name, read("debugpushkey", str(repo), name).rstrip(b"\n"))
                 for name in namespaces)
    return HgRemoteState(capabilities=capabilities, nodes=nodes, heads=heads,
                         branch_heads=tuple((b, tuple(n)) for b, n in branch_heads.items()),
                         keys=keys)
