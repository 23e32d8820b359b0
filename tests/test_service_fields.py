"""08-routes/beyond/service/service.py on a dataset with fields (fields/): one request asks the code and every
field, and the route object and the decision log give each field's option, confidence and calibrated confidence.

The router is the model alone's on banking77fields, fitted here on the committed fields runs (the calib split,
and the requester set's calib half for the requester field's gate). It runs against the real test server with
the 0.5B test model, which is not the router's model: --other-model's allowance, so nothing is acted on.
"""
from __future__ import annotations

import json

from decision_log import DecisionLog
from decision_router import fit_decision_router, ready_router, write_decision_router
from decisions import DECISIONS
from fields import fields_of
from llama_http import Client
from service import RoutingService
from test_service import post, serving


def test_a_real_service_with_fields_gives_each_field_in_the_route_object_and_the_log(client, tmp_path):
    router, _ = fit_decision_router("banking77fields", DECISIONS["model"], offtopic_share=0)
    path = write_decision_router(router, tmp_path / "banking77fields-model-decision-router.json")
    ready = ready_router(router, path)
    fields = fields_of("banking77fields")
    assert [gate.field.key for gate in ready.gates] == [field.key for field in fields] == ["scope", "requester"]
    log = DecisionLog(tmp_path / "decisions.jsonl")
    svc = RoutingService(ready, path, Client(client.url, timeout_s=900), True, log, 4, other_model=True)
    messages = ["My son lost his card, please block it", "what will the weather be tomorrow"]
    with serving(svc) as address:
        status, _, body = post(address, {"messages": messages})
    assert status == 200 and [row["index"] for row in body["routes"]] == [0, 1]
    logged = [json.loads(line) for line in (tmp_path / "decisions.jsonl").read_text().splitlines()]
    assert len(logged) == 2
    for row, line in zip(body["routes"], logged):
        assert row["route"] != "act" and row["decision"] == "model"  # another model: never acted on
        if row["status"] != "ok":
            continue
        assert list(row["fields"]) == ["scope", "requester"] and line["fields"] == row["fields"]
        for field in fields:
            answer = row["fields"][field.key]
            assert answer["option"] in {option.id for option in field.options}
            assert 0.0 <= answer["confidence"] <= 1.0 and 0.0 <= answer["calibrated"] <= 1.0
