#!/usr/bin/env bash
# Validates the committed openapi.json against the OpenAPI 3.1 specification with an
# independent validator. The Rust test in crates/tocsin/tests/openapi.rs checks the
# project's own rules and that the file matches the routes; this checks that the file is a
# valid OpenAPI 3.1 document at all, which generated documents can silently stop being.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/ci-venv.sh
source "$root/scripts/ci-venv.sh"

ci_venv_ready

# --schema 3.1 rather than auto-detection: the contract requires 3.1, so a document that
# claimed another version should fail here rather than be judged by other rules.
"$CI_VENV/bin/openapi-spec-validator" --schema 3.1 --validation-errors all "$root/openapi.json"
