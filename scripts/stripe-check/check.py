"""Checks Tocsin's Stripe webhook signer against Stripe's official Python library (PyPI
`stripe`, pinned in scripts/ci-requirements.txt): for a few payloads, the header printed by
`tocsin stripe-sign` must be accepted by `stripe.Webhook.construct_event`, and the same header
on a changed body, under another secret or from too long ago must be refused by it."""

import json
import os
import subprocess
import sys
import time

import stripe

BIN = os.environ["TOCSIN_BIN"]
SECRET = "whsec_ci_check_7f3a9c"


def sign(body: bytes, secret: str = SECRET, timestamp: int | None = None) -> str:
    args = [BIN, "stripe-sign", "--secret", secret]
    if timestamp is not None:
        args += ["--timestamp", str(timestamp)]
    out = subprocess.run(args, input=body, capture_output=True, check=True)
    return out.stdout.decode().strip()


def refused(body: bytes, header: str, secret: str = SECRET) -> bool:
    try:
        stripe.Webhook.construct_event(body.decode(), header, secret)
    except stripe.SignatureVerificationError:
        return True
    return False


payloads = [
    {"id": "evt_1", "object": "event", "type": "checkout.session.completed", "created": int(time.time()),
     "data": {"object": {"id": "cs_1", "client_reference_id": "ws-1", "subscription": "sub_1"}}},
    {"id": "evt_2", "object": "event", "type": "customer.subscription.updated", "created": int(time.time()),
     "data": {"object": {"id": "sub_1", "status": "past_due", "metadata": {"note": "ünïcödé — ✓"}}}},
]
failures = 0
for p in payloads:
    body = json.dumps(p, ensure_ascii=False, indent=2).encode()
    header = sign(body)
    event = stripe.Webhook.construct_event(body.decode(), header, SECRET)
    assert event["id"] == p["id"], event
    checks = {
        "changed body": refused(body.replace(b"evt_", b"evx_"), header),
        "other secret": refused(body, header, "whsec_someone_else"),
        "stale": refused(body, sign(body, timestamp=int(time.time()) - 301)),
    }
    for name, ok in checks.items():
        if not ok:
            print(f"FAIL {p['id']}: stripe accepted a {name}")
            failures += 1
    print(f"ok {p['id']}: stripe.Webhook.construct_event accepts Tocsin's signature")
sys.exit(1 if failures else 0)
