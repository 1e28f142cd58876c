"""report.html from hand-built rows: escaping of what arms wrote, bounds per
cell, determinism, transcripts as turns, diff lines, outcomes, charts, and the
glue (redaction, no Jinja2)."""

from __future__ import annotations

import json
import math
import os
import random
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pytest_wfbench.aggregate import summarize
from pytest_wfbench.redact import Redactor
from pytest_wfbench.render.html import (
    HTML_HINT,
    HTML_REPORT,
    glue,
    read_artifacts,
    render_html,
    write_html_report,
)
from pytest_wfbench.render.html.cell import outcome
from pytest_wfbench.render.html.charts import nice_ticks
from pytest_wfbench.render.html.clip import Budget, clip
from pytest_wfbench.render.html.diff import classify
from pytest_wfbench.render.html.transcript import read_transcript
from pytest_wfbench.store import ResultsStore
from tests.conftest import write_suite
from tests.rows import row, runs

PROVENANCE = {"sweep_id": "s1", "suite": "demo", "sandbox_backend": "bubblewrap"}
HOSTILE = ('<script>window.__pwned=1</script></textarea></pre>"onerror="window.__pwned=2" '
           "<img src=x onerror=alert(1)>")
PATCH = """\
diff --git a/calc.py b/calc.py
index 1111111..2222222 100644
--- a/calc.py
+++ b/calc.py
@@ -1,3 +1,3 @@
 def add(a, b):
-    return a - b
+    return a + b
--- this line was removed, it is not a header
"""


def entry(kind: str, content: Any, **extra: Any) -> str:
    return json.dumps({"type": kind, "message": {"role": kind, "content": content, **extra}})


def usage(i: int, o: int, cw: int = 0, cr: int = 0) -> dict[str, int]:
    return {"input_tokens": i, "output_tokens": o, "cache_creation_input_tokens": cw,
            "cache_read_input_tokens": cr}


def transcript(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def tool_call(text: str, call_id: str = "toolu_1", message_id: str = "msg_1") -> list[str]:
    """One response of two blocks, each its own line with the usage repeated
    (as the CLI writes it), then its tool result."""
    return [
        entry("assistant", [{"type": "text", "text": "I will look."}], id=message_id,
              model="claude-sonnet-4-5", usage=usage(1000, 50, 200, 300)),
        entry("assistant", [{"type": "tool_use", "id": call_id, "name": "Bash",
                             "input": {"command": text}}], id=message_id,
              model="claude-sonnet-4-5", usage=usage(1000, 50, 200, 300)),
        entry("user", [{"type": "tool_result", "tool_use_id": call_id, "content": text}]),
    ]


def agent_row(cell_task: str = "t", arm: str = "baseline", **figures: Any) -> dict[str, Any]:
    cell_id = f"{cell_task}-{arm}-r1"
    base = row(cell_task, arm, resolved=True, cost_usd=0.25, input_tokens=1000,
               output_tokens=50, num_turns=2,
               artifacts=[f"artifacts/{cell_id}.patch",
                          f"artifacts/{cell_id}.session.transcript.jsonl"],
               phases=[{"name": "session", "completed": True, "num_turns": 2,
                        "duration_ms": 1500, "cost_usd": 0.25, "usage": usage(1000, 50),
                        "skills_invoked": [],
                        "transcript": f"artifacts/{cell_id}.session.transcript.jsonl"}],
               stage_ms={"template": 5.0, "clone": 3.0, "session": 1500.0, "oracle": 40.0,
                         "row": 0.3})
    base.update(figures)
    return base


def reader(files: dict[str, str]) -> Callable[[str], str | None]:
    return files.get


class Markup(HTMLParser):
    """Every element and attribute of a page, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[str] = []
        self.values: list[tuple[str, str]] = []
        self.script: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += [name for name, _ in attrs]
        self.values += [(name, value or "") for name, value in attrs]
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.script.append(data)


def parse(page: str) -> Markup:
    markup = Markup()
    markup.feed(page)
    return markup


def hostile_page() -> str:
    """A cell whose error, artifact name, patch and transcript all carry markup."""
    name = f"artifacts/{HOSTILE}.patch"
    hostile = agent_row(error_detail=HOSTILE, suspicious=[HOSTILE], evidence_notes=[HOSTILE],
                        artifacts=[name, "artifacts/t-baseline-r1.session.transcript.jsonl",
                                   f"artifacts/{HOSTILE}.review.json"],
                        steps=[{"operation": HOSTILE, "command": HOSTILE, "stderr_tail": HOSTILE,
                                "elapsed_ms": 3.0, "returncode": 1, "expected": False}])
    files = {
        name: PATCH.replace("calc.py", HOSTILE) + f"+{HOSTILE}\n",
        "artifacts/t-baseline-r1.session.transcript.jsonl": transcript(
            entry("user", HOSTILE), *tool_call(HOSTILE),
            entry("assistant", [{"type": "thinking", "thinking": HOSTILE}], id="msg_2",
                  model=HOSTILE, usage=usage(1, 1))),
        f"artifacts/{HOSTILE}.review.json": HOSTILE,
    }
    rows = [hostile]
    return render_html(summarize(rows), rows, {**PROVENANCE, "suite": HOSTILE},
                       sections=[f"## {HOSTILE}", "", f"| a | {HOSTILE} |", "|---|---|",
                                 f"| `{HOSTILE}` | **{HOSTILE}** |"],
                       read_artifact=reader(files))


def test_text_from_an_arm_is_escaped_everywhere_and_never_markup() -> None:
    page = hostile_page()
    markup = parse(page)
    # The page's one script is its own; nothing the arm wrote became an element
    # or an event-handler attribute.
    assert markup.tags.count("script") == 1
    assert not {"img", "textarea"} & set(markup.tags)
    assert not [a for a in markup.attributes if a.startswith("on")]
    assert "__pwned" not in "".join(markup.script)
    assert "</textarea>" not in page and "<img" not in page and '"onerror=' not in page
    escaped = "&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;/textarea&gt;"
    # error detail, finding, note, step, patch name and lines, transcript turns,
    # the other artifact, the suite name, report.md's tables: each escaped
    assert page.count(escaped) >= 12


def test_the_page_allows_only_its_own_script_and_style() -> None:
    page = hostile_page()
    policy = page[page.index('http-equiv="Content-Security-Policy"'):].split(">", 1)[0]
    assert "default-src 'none'" in policy and "'unsafe-inline'" not in policy
    assert "script-src 'sha256-" in policy and "style-src 'sha256-" in policy
    assert "http" not in policy.replace("http-equiv", "")


def test_the_page_has_no_link_to_anything_outside_it() -> None:
    markup = parse(hostile_page())
    links = [value for name, value in markup.values if name in ("src", "href", "action")]
    assert links and all(value.startswith("#") for value in links), links
    assert not {"link", "iframe", "object", "embed", "form", "base"} & set(markup.tags)


def test_a_huge_transcript_and_patch_give_a_bounded_page(tmp_path: Path) -> None:
    """A 64 MiB transcript and a 20 MiB patch: the page keeps the head and tail
    of each and says what was cut."""
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    output = "x" * 40_000
    turns = [entry("user", "FIRST-TURN")]
    i = 0
    size = 0
    while size < 64 << 20:
        lines = tool_call(output, f"toolu_{i}", f"msg_{i}")
        turns += lines
        size += sum(len(line) + 1 for line in lines)
        i += 1
    turns.append(entry("assistant", [{"type": "text", "text": "LAST-TURN"}], id="msg_last",
                       usage=usage(1, 1)))
    (artifacts / "t-baseline-r1.session.transcript.jsonl").write_text(transcript(*turns))
    (artifacts / "t-baseline-r1.patch").write_text(
        PATCH + "".join(f"+line {n} {'y' * 200}\n" for n in range(50_000)))
    rows = [agent_row()]
    page = render_html(summarize(rows), rows, PROVENANCE, read_artifact=read_artifacts(tmp_path))
    assert len(page) < 600_000
    assert "FIRST-TURN" in page and "LAST-TURN" in page
    assert "bytes of this artifact were not read" in page
    assert "turns cut" in page and "characters cut" in page
    assert "50,009 lines, cut to its head and tail" in page and "+    return a + b" in page
    assert "+line 49999 " in page


def test_a_cell_spends_at_most_its_transcript_budget() -> None:
    budget = Budget(10_000)
    turns = transcript(*(line for n in range(30) for line in tool_call(
        "z" * 5_000, f"toolu_{n}", f"msg_{n}")))
    found = read_transcript(turns, budget)
    blocks = [b for t in found.head + found.tail for b in t.blocks]
    shown = sum(len(b.text.text) for b in blocks)
    # past the budget a block is one short line saying so; a cut one has its marker
    assert len(blocks) == 90 and shown <= 10_000 + len(blocks) * 60
    assert blocks[-1].text.text.startswith("[... not shown: this cell's budget")
    assert found.chars_cut > 0 and budget.left <= 0
    assert found.total_turns == 60 and found.turns_cut == 0


def test_the_same_inputs_render_the_same_bytes_in_any_row_order() -> None:
    rows = [*runs("a", "baseline", "RRF", cost_usd=1.0, output_tokens=100),
            *runs("a", "workflow", "RFX", cost_usd=0.5, output_tokens=80),
            row("b", "workflow", status="skipped"),
            row("loop", "git", lane="tool-cost", transport="local_file", totals={},
                steps=[{"operation": "push", "step_kind": "vcs", "elapsed_ms": 4.0,
                        "measured": True}])]
    agent = [r for r in rows if r["lane"] == "agent"]
    first = render_html(summarize(agent), rows, PROVENANCE)
    shuffled = list(rows)
    random.Random(5).shuffle(shuffled)
    assert render_html(summarize([r for r in shuffled if r["lane"] == "agent"]), shuffled,
                       PROVENANCE) == first
    assert render_html(summarize(agent), rows, PROVENANCE) == first


def test_a_transcript_is_read_as_turns_with_tokens_per_turn() -> None:
    text = transcript(entry("user", "Fix add()."), *tool_call("sed -i s/-/+/ calc.py"),
                      "not json at all",
                      entry("assistant", [{"type": "text", "text": "Fixed."}], id="msg_2",
                            usage=usage(1200, 60, 0, 1500)),
                      json.dumps({"type": "attachment", "attachment": {"x": 1}}))
    found = read_transcript(text)
    roles = [t.role for t in found.head]
    assert roles == ["user", "assistant", "user", "assistant"]
    call = found.head[1]
    assert [b.kind for b in call.blocks] == ["text", "tool_use"]
    assert call.usage == usage(1000, 50, 200, 300) and call.model == "claude-sonnet-4-5"
    result = found.head[2].blocks[0]
    assert (result.kind, result.title, result.text.text) == (
        "tool_result", "Bash", "sed -i s/-/+/ calc.py")
    assert json.loads(call.blocks[1].text.text) == {"command": "sed -i s/-/+/ calc.py"}
    # the first response's usage is repeated on its two lines: counted once
    assert found.usage == usage(2200, 110, 200, 1800)
    assert found.unreadable_lines == 1


def test_tokens_per_turn_appear_on_the_page() -> None:
    rows = [agent_row()]
    files = {"artifacts/t-baseline-r1.session.transcript.jsonl": transcript(
        entry("user", "Fix add()."), *tool_call("ls"))}
    page = render_html(summarize(rows), rows, PROVENANCE, read_artifact=reader(files))
    assert "in 1,000 &middot; cache w 200 &middot; cache r 300 &middot; out 50" in page
    assert "artifacts/t-baseline-r1.patch: not found" in page


def test_diff_lines_are_classified_for_highlighting() -> None:
    diff = classify(PATCH)
    assert [line.kind for line in diff.lines] == [
        "header", "header", "header", "header", "hunk", "context", "del", "add", "del"]
    assert diff.total_lines == 9 and diff.cut_lines == diff.cut_chars == 0
    many = classify("".join(f"+{n}\n" for n in range(2000)), head=10, tail=5)
    assert [line.text for line in many.lines[9:12]] == [
        "+9", "[... 1,985 lines of the patch cut ...]", "+1995"]
    assert many.lines[10].kind == "note" and many.total_lines == 2000
    long = classify("diff --git a/x b/x\n@@ -1 +1 @@\n+" + "q" * 5000 + "\n")
    assert len(long.lines[-1].text) < 500 and "characters cut" in long.lines[-1].text


def test_clip_keeps_head_and_tail_and_says_how_much_was_cut() -> None:
    text = "A" * 500 + "B" * 500
    clipped = clip(text, 300)
    assert clipped.text.startswith("A" * 200) and clipped.text.endswith("B" * 100)
    assert clipped.cut == 700 and "[... 700 characters cut ...]" in clipped.text
    assert clip("short", 300).text == "short" and clip("short", 300).cut == 0


@pytest.mark.parametrize(("figures", "expected"), [
    ({"resolved": True}, "resolved"),
    ({"resolved": True, "suspicious": ["pytest internals"]}, "suspicious"),
    ({"kind": "suspicious", "suspicious": ["pytest internals"]}, "suspicious"),
    ({"kind": "oracle-failed"}, "negative"),
    ({"kind": "session-timeout"}, "negative"),
    ({"kind": "skill-not-invoked"}, "failure"),
    ({"kind": "session-error"}, "excluded"),
    ({"status": "skipped"}, "skipped"),
])
def test_outcomes_of_the_grid(figures: dict[str, Any], expected: str) -> None:
    assert outcome(row("t", "a", **figures)) == expected


def test_nice_ticks() -> None:
    assert nice_ticks(0.15) == [0.0, 0.05, 0.1, 0.15]
    assert nice_ticks(1755.2) == [0.0, 500.0, 1000.0, 1500.0, 2000.0]
    assert nice_ticks(0.0) == [0.0, 1.0]


def test_the_resolve_chart_plots_cost_when_measured_else_tokens_else_time() -> None:
    costly = [*runs("a", "baseline", "RF", cost_usd=1.0, output_tokens=10),
              *runs("a", "gold", "RR")]
    page = render_html(summarize(costly), costly, PROVENANCE)
    assert "Resolve rate (95% Wilson interval) against median cost (USD)" in page
    # gold has no cost: left out and named
    assert "Not plotted (no counted run, or no median cost (USD)): gold." in page
    tokens = runs("a", "baseline", "RF", output_tokens=10)
    assert "against median tokens" in render_html(summarize(tokens), tokens, PROVENANCE)
    scripted = runs("a", "gold", "RR", session_duration_s=0.2)
    page = render_html(summarize(scripted), scripted, PROVENANCE)
    assert "against median session s" in page
    assert "Cost (USD) per counted run: nothing to draw: no counted run measured it" in page


def test_report_md_facts_are_on_the_page() -> None:
    rows = [*runs("a", "baseline", "RRF", cost_usd=1.0), *runs("a", "workflow", "RRR",
                                                                cost_usd=0.5)]
    page = render_html(summarize(rows), rows, PROVENANCE)
    for title in ("Arms", "Health", "Resolve rates against baseline", "Savings against baseline",
                  "pass@k and pass^k", "Tasks and arms", "Excluded runs", "Caveats",
                  "Provenance"):
        assert f">{title}</a>" in page, title
    assert "<td>$0.5000</td>" in page and "<td>3/3</td>" in page


def test_the_page_is_written_redacted_beside_report_md(tmp_path: Path) -> None:
    secret = "sk-ant-secret-0123456789"
    store = ResultsStore(tmp_path, Redactor([secret]))
    store.prepare()
    (tmp_path / "artifacts" / "t-baseline-r1.patch").write_text(PATCH)
    rows = [agent_row(error_detail=f"the key {secret} leaked")]
    written = write_html_report(store, summarize(rows), rows, PROVENANCE)
    assert written.path == tmp_path / HTML_REPORT and not written.failed
    assert written.line == f"wfbench html:   {tmp_path / HTML_REPORT}"
    page = written.path.read_text()
    assert secret not in page and "the key [REDACTED] leaked" in page
    assert "+    return a + b" in page


@pytest.mark.parametrize("odd", ["0.5", True, math.inf, 10**400, "much"])
def test_a_cell_whose_figures_are_no_plain_numbers_is_still_shown(
        tmp_path: Path, odd: Any) -> None:
    """A row's and a session's cost, time and tokens of any type read as the
    report's table reads them (text that is a number, as that number; other
    text and booleans as unknown; an integer past the largest float as
    infinite): the page is written (a cost of text or 10**400 lost it)."""
    store = ResultsStore(tmp_path, Redactor([]))
    store.prepare()
    phase = {"completed": True, "num_turns": odd, "duration_ms": odd, "cost_usd": odd,
             "usage": {"input_tokens": odd}}
    rows = [agent_row(cost_usd=odd, input_tokens=odd, phases=[phase])]
    written = write_html_report(store, summarize(rows), rows, PROVENANCE)
    assert written.path is not None and not written.failed, written.line


def test_without_jinja2_no_page_is_written_and_the_hint_says_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(glue, "html_available", lambda: False)
    store = ResultsStore(tmp_path, Redactor([]))
    rows = [agent_row()]
    written = write_html_report(store, summarize(rows), rows, PROVENANCE)
    assert written.path is None and written.line == HTML_HINT and not written.failed
    assert "pip install 'pytest-wfbench[html]'" in HTML_HINT
    assert not (tmp_path / HTML_REPORT).exists()


def test_a_rendering_bug_is_reported_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> str:
        raise ValueError("boom")

    monkeypatch.setattr("pytest_wfbench.render.html.html_pieces", broken)
    written = write_html_report(ResultsStore(tmp_path, Redactor([])), summarize([]), [],
                                PROVENANCE)
    assert written.failed and written.path is None and "ValueError: boom" in written.line


def test_a_bug_midway_through_the_page_leaves_the_old_page_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page is written as it is made, to a new file that replaces the old
    page only once whole: a bug halfway leaves the old page, and no part of
    the new one."""
    store = ResultsStore(tmp_path, Redactor([]))
    store.prepare()
    rows = [agent_row()]
    first = write_html_report(store, summarize(rows), rows, PROVENANCE)
    assert first.path is not None
    old = first.path.read_bytes()

    def halfway(*args: Any, **kwargs: Any) -> Any:
        yield "<!doctype html><p>half a page"
        raise ValueError("boom")

    monkeypatch.setattr("pytest_wfbench.render.html.html_pieces", halfway)
    written = write_html_report(store, summarize(rows), rows, PROVENANCE)
    assert written.failed and written.path is None and "ValueError: boom" in written.line
    assert first.path.read_bytes() == old
    assert sorted(path.name for path in tmp_path.iterdir()
                  if path.name.startswith(".")) == []  # no temporary file left


def test_the_page_is_never_written_through_a_planted_link(tmp_path: Path) -> None:
    """A link planted at report.html, or at the name of the new page being
    written, is replaced, never written through: the file it points at keeps
    its bytes."""
    out = tmp_path / "out"
    store = ResultsStore(out, Redactor([]))
    store.prepare()
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    (out / HTML_REPORT).symlink_to(outside)
    (out / f".{HTML_REPORT}.{os.getpid()}.new").symlink_to(outside)
    rows = [agent_row()]
    written = write_html_report(store, summarize(rows), rows, PROVENANCE)
    assert written.path == out / HTML_REPORT and not written.path.is_symlink()
    assert "<!DOCTYPE html>" in written.path.read_text()
    assert outside.read_text() == "keep me"
    assert [p.name for p in out.iterdir() if p.name.endswith(".new")] == []


def test_the_page_written_in_parts_is_the_rendered_page_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """report.html written in parts of a few characters: every byte is
    render_html's page, redacted, with each secret caught wherever the parts
    cut it."""
    secret = "sk-ant-secret-0123456789"
    monkeypatch.setattr("pytest_wfbench.redact.STREAM_SIZE", 7)
    cleaned: list[int] = []
    clean = Redactor.clean

    def measured(self: Redactor, text: str) -> str:
        cleaned.append(len(text))
        return clean(self, text)

    monkeypatch.setattr(Redactor, "clean", measured)
    store = ResultsStore(tmp_path, Redactor([secret]))
    store.prepare()
    rows = [agent_row(error_detail=f"the key {secret} leaked, and {secret}{secret}")]
    written = write_html_report(store, summarize(rows), rows, PROVENANCE)
    assert written.path is not None
    page = render_html(summarize(rows), rows, PROVENANCE,
                       read_artifact=read_artifacts(tmp_path))
    # Never the whole page at once: parts of about STREAM_SIZE (or one of the
    # template's pieces: its inline script is one).
    assert len(cleaned) > 100 and max(cleaned) < len(page) / 2
    assert secret in page
    assert written.path.read_text() == Redactor([secret]).clean(page)
    assert secret not in written.path.read_text()


def test_the_reader_reads_only_artifacts(tmp_path: Path) -> None:
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "a.patch").write_text("patch")
    (tmp_path / "results.jsonl").write_text("{}")
    read = read_artifacts(tmp_path)
    assert read("artifacts/a.patch") == "patch"
    assert read("results.jsonl") is None and read("artifacts/../results.jsonl") is None
    assert read("artifacts/missing.patch") is None and read("artifacts") is None


def test_a_sweep_without_jinja2_writes_report_md_and_says_how_to_get_html(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An importable-but-broken jinja2 ahead on the path stands for its absence.
    fake = pytester.path / "nojinja" / "jinja2"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no Jinja2 here')\n")
    monkeypatch.setenv("PYTHONPATH", str(fake.parent))
    suite = write_suite(pytester.path, arms=["gold"])
    result = pytester.runpytest_subprocess(*suite.args())
    result.assert_outcomes(passed=1)
    assert (suite.out / "report.md").exists() and not (suite.out / HTML_REPORT).exists()
    assert result.stdout.str().count(HTML_HINT) == 1


def test_a_markdown_table_is_each_of_its_cells_escaped_and_marked() -> None:
    """Escaping a table at once gives each cell escaped on its own: no mark
    reaches across a cell's border, and `|` (plain or escaped) splits as in
    the markdown."""
    from pytest_wfbench.render.html.tables import _cells, _table, inline

    rng = random.Random(5)
    alphabet = ["a", "|", "\\|", "`", "**", "<", ">", "&", '"', "'", " ", "x", "1"]
    for _ in range(400):
        lines = ["| " + " | ".join("".join(rng.choice(alphabet) for _ in range(rng.randrange(8)))
                                   for _ in range(rng.randrange(1, 5)))
                 + (" |" if rng.random() < 0.8 else "") for _ in range(rng.randrange(2, 6))]
        header, body = _cells(lines[0]), [_cells(line) for line in lines[2:]]
        for line in lines:  # split as the markdown does: at each bar no backslash escapes
            inner = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
            assert _cells(line) == [cell.strip().replace("\\|", "|")
                                    for cell in re.split(r"(?<!\\)\|", inner)], line
        want = ['<div class="table-wrap"><table class="md"><thead><tr>',
                *(f"<th>{inline(cell)}</th>" for cell in header), "</tr></thead><tbody>",
                *("<tr>" + "".join(f"<td>{inline(cell)}</td>" for cell in cells) + "</tr>"
                  for cells in body), "</tbody></table></div>"]
        assert _table(lines) == want, lines


GRID_TEMPLATE = """    {% for key, columns in grid.rows %}
    <tr class="f" data-task="{{ key }}"><th>{{ key }}</th>
      {% for column, squares in columns %}<td class="f" data-arm="{{ column }}">
        {% for square in squares %}<a class="sq f o-{{ square.outcome }}"{% if square.href %} \
href="{{ square.href }}"{% endif %} title="{{ square.title }}" data-task="{{ key }}" \
data-arm="{{ column }}" data-outcome="{{ square.outcome }}">{{ square.label }}</a>{% endfor %}
      </td>{% endfor %}
    </tr>
    {% endfor %}
"""
"""The grid's rows as the page's template wrote them, square by square."""


def test_a_grids_rows_are_the_templates_with_every_value_escaped() -> None:
    import jinja2

    from pytest_wfbench.render.html.page import Grid, Square

    hostile = ['<script>alert(1)</script>', '" onmouseover="x', "it's & <b>", "plain"]
    rng = random.Random(2)
    rows = [(rng.choice(hostile) + str(i), [
        (arm, [Square(href=rng.choice(["", f"#cell-{h}"]),
                      label=rng.choice([*hostile, "12", "3<", "\u00b2"]),  # digits as they are
                      outcome=rng.choice(["resolved", h]), title=rng.choice(hostile))
               for h in rng.sample(hostile, rng.randrange(0, 3))])
        for arm in hostile]) for i in range(6)]
    grid = Grid("t", "task", "arm", hostile, rows)
    env = jinja2.Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    want = env.from_string(GRID_TEMPLATE).render(grid=grid)
    got = "".join(grid.html_rows)
    assert got == want
    assert "<script>" not in got and "<b>" not in got and '" onmouseover' not in got
