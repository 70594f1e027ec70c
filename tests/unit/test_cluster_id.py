"""scripts/_cluster.random_cluster_id: a KRaft cluster id that kafka-storage's parser takes."""

from __future__ import annotations

import base64

from tests.unit.test_docker_script import load

cl = load("_cluster")


def test_an_id_that_would_start_with_a_dash_is_drawn_again() -> None:
    # 0xf8 0x00...: URL-safe base64 "-A..." (0xf8 >> 2 = 62, which is "-"); by hand, as a CI run's KRaft
    # cluster drew one and kafka-storage refused "-t -A..." ("argument --cluster-id/-t: expected one argument")
    draws = iter([b"\xf8" + bytes(15), bytes(range(16))])
    first = base64.urlsafe_b64encode(b"\xf8" + bytes(15)).decode()
    assert first.startswith("-")
    got = cl.random_cluster_id(lambda n: next(draws))
    assert got == "AAECAwQFBgcICQoLDA0ODw"  # base64 of bytes 0..15, without its "==" padding


def test_ids_are_kafkas_uuid_text() -> None:
    for _ in range(500):
        text = cl.random_cluster_id()
        assert len(text) == 22 and not text.startswith("-")
        assert len(base64.urlsafe_b64decode(text + "==")) == 16
