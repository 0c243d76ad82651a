"""The SDK's copies of rules written once in Rust, held to the vector files
Rust writes from them: the protocol's limits and defaults
(core/tests/vectors/limits/limits.json, from qp_core::protocol::limits),
and `qp hook`'s secret masks and the rule for when Allow is offered
(core/tests/vectors/hook/masks.json, from client/src/hook.rs), which the
package ships as hook_masks.json and masks with."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest
from conftest import ROOT

import questionprotocol as qp
from questionprotocol import approval, client, credentials

VECTORS = ROOT / "core" / "tests" / "vectors"
LIMITS = {
    v["name"]: v["value"] for v in json.loads((VECTORS / "limits" / "limits.json").read_text())["vectors"]
}
MASKS_FILE = VECTORS / "hook" / "masks.json"
MASKS = json.loads(MASKS_FILE.read_text(encoding="utf-8"))


def test_the_sdks_limits_are_the_protocols() -> None:
    assert client.POLL_SECONDS == LIMITS["client_wait_poll_secs"]
    assert client.LONG_POLL_MAX_SECONDS == LIMITS["long_poll_max_secs"]
    assert client.LIST_MAX_LIMIT == LIMITS["list_max_limit"]
    assert client.MAX_OPTIONS == LIMITS["options_max"]
    assert approval.PROMPT_MAX_CHARS == LIMITS["prompt_max_chars"]
    assert approval.CONTEXT_MAX_CHARS == LIMITS["context_max_chars"]
    assert credentials.DEFAULT_URL == LIMITS["default_url"]


def test_a_longer_poll_is_clamped_to_the_protocols_maximum() -> None:
    with qp.Client("http://127.0.0.1:9", "qpa_x", poll_seconds=10**6) as c:
        assert c.poll_seconds == LIMITS["long_poll_max_secs"]
    with qp.Client("http://127.0.0.1:9", "qpa_x") as c:
        assert c.poll_seconds == LIMITS["client_wait_poll_secs"]


def test_the_shipped_masks_are_the_vector_file_byte_for_byte() -> None:
    shipped = resources.files(qp).joinpath("hook_masks.json").read_bytes()
    assert shipped == MASKS_FILE.read_bytes(), (
        "sdk/python/src/questionprotocol/hook_masks.json differs from core/tests/vectors/hook/masks.json: "
        "copy it (cp core/tests/vectors/hook/masks.json sdk/python/src/questionprotocol/hook_masks.json)"
    )


def test_the_answer_values_are_the_protocols() -> None:
    values = {o["value"] for opts in MASKS["options"].values() for o in opts}
    assert values == {approval.ALLOW, approval.DENY, approval.DECIDE_AT_COMPUTER}


def vectors(kind: str) -> list[dict[str, Any]]:
    return [v for v in MASKS["vectors"] if v["kind"] == kind]


def test_there_are_vectors_of_both_kinds() -> None:
    assert len(vectors("mask")) >= 50 and len(vectors("offer")) >= 4
    assert {v["kind"] for v in MASKS["vectors"]} == {"mask", "offer"}


@pytest.mark.parametrize("v", vectors("mask"), ids=[v["name"] for v in vectors("mask")])
def test_mask_vector(v: dict[str, Any]) -> None:
    shown, masked = qp.mask_secrets(v["input"])
    assert {"shown": shown, "masked": masked} == v["expect"]


@pytest.mark.parametrize("v", vectors("offer"), ids=[v["name"] for v in vectors("offer")])
def test_offer_vector(v: dict[str, Any]) -> None:
    u = v["unseen"]
    got = approval.offered_options(u["masked"], u["escaped"], u["cut"])
    assert got == MASKS["options"][v["expect"]["options"]]
