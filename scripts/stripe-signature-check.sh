#!/usr/bin/env bash
# Checks the webhook signer (`tocsin stripe-sign`, the code the billing tests sign their events
# with) against Stripe's official Python library (scripts/stripe-check/check.py), so the tests
# sign exactly as Stripe does.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/ci-venv.sh
source "$root/scripts/ci-venv.sh"
ci_venv_ready
TOCSIN_BIN="${TOCSIN_BIN:-$CI_TARGET_DIR/debug/tocsin}" "$CI_VENV/bin/python" "$root/scripts/stripe-check/check.py"
