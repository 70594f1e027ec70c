"""Lists of names in our messages: cut after ten with a count (core/names.py), and where verify and list
use it. Expected strings written by hand."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reassign_cli.backends.protocol import ClearResult
from reassign_cli.core.names import listed, shorten, uncut
from reassign_cli.errors import InvalidInputError
from reassign_cli.render.progress import entities_text, kept_lines, orphans_line


def test_shorten_by_hand() -> None:
    assert shorten([]) == ""
    assert shorten([1, 2, 3]) == "1,2,3"
    assert shorten(range(10)) == "0,1,2,3,4,5,6,7,8,9"
    assert shorten(range(12)) == "0,1,2,3,4,5,6,7,8,9 and 2 more"
    assert shorten(["a", "b", "c"], limit=2, sep=", ") == "a, b and 1 more"
    assert shorten(range(12), limit=None) == ",".join(map(str, range(12)))


@given(st.lists(st.text(alphabet="abc-_.0123", min_size=1, max_size=20), max_size=3000))
def test_shorten_is_short_and_counts_the_rest(names: list[str]) -> None:
    text = shorten(names)
    shown = names[:10]
    assert text.startswith(",".join(shown))
    assert len(text) <= 10 * 21 + 20
    if len(names) > 10:
        assert text.endswith(f" and {len(names) - 10} more")
    else:
        assert text == ",".join(names)


def test_orphan_warning_at_1700_topics() -> None:
    topics = [f"topic-{i:04d}-with-a-longish-name" for i in range(1700)]
    line = orphans_line([1, 2, 3], topics)
    assert len(line) < 600
    assert "brokers 1,2,3 and topics topic-0000-with-a-longish-name," in line
    assert "topic-0009-with-a-longish-name and 1690 more with nothing reassigning" in line
    assert "topic-0010" not in line
    # -v: the whole list
    assert all(t in orphans_line([1, 2, 3], topics, limit=None) for t in topics)
    # brokers cut too: the two parts then apart
    assert entities_text(list(range(1, 13)), ["a"]) == "brokers 1,2,3,4,5,6,7,8,9,10 and 2 more; topics a"


def test_kept_lines_capped() -> None:
    kept = {("topics", f"t{i}"): {"leader.replication.throttled.replicas": "*"} for i in range(25)}
    lines = kept_lines(ClearResult([], [], kept_keys=kept))
    assert len(lines) == 1 + 10 + 1
    assert [x.split(":")[0] for x in lines[1:11]] == [f"  topic t{i}" for i in range(10)]
    assert lines[11:] == ["... and 15 more kept (all with -v)"]
    assert len(kept_lines(ClearResult([], [], kept_keys=kept), limit=None)) == 1 + 25


def test_listed_cuts_and_keeps_the_whole_message() -> None:
    short = listed("Topics not found: {}", [f"t{i}" for i in range(12)])
    assert short == "Topics not found: t0,t1,t2,t3,t4,t5,t6,t7,t8,t9 and 2 more"
    assert uncut(short) == "Topics not found: " + ",".join(f"t{i}" for i in range(12))
    few = listed("Topics not found: {}", ["a", "b"])
    assert few == "Topics not found: a,b" and uncut(few) == few
    assert uncut("plain") == "plain"


def test_an_error_carries_the_uncut_message() -> None:
    e = InvalidInputError(listed("Broker list contains duplicate entries: {}", range(15)))
    assert str(e) == "Broker list contains duplicate entries: 0,1,2,3,4,5,6,7,8,9 and 5 more"
    assert e.full == "Broker list contains duplicate entries: " + ",".join(map(str, range(15)))
    assert InvalidInputError("short").full == "short"
