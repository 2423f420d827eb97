#!/usr/bin/env bash
# Fuzzes every operation of the committed openapi.json against a live server with
# schemathesis, and fails on any 5xx, any response that does not match its documented schema,
# and any status code or content type the document does not declare. The Rust tests check
# the cases someone thought of; this checks the ones nobody did, against the contract itself.
#
# Credentials: every request carries both a personal access token with all permissions and
# a signed-in session cookie (with a matching Origin, which cookie-authenticated writes need).
# The server prefers the token and falls back to the cookie only for the person-only and
# session-only operations (workspace settings, members, invitations, audit log, API keys), so
# every operation is exercised as an authorised caller rather than bouncing off 401/403.
#
# The fuzzer learns identifiers from responses (the key list names the very key it sends) and
# reuses them in every phase, so left alone it revokes, rotates or strips its own token within
# seconds and then sees nothing but 401s. The run is therefore split in two: the first pass
# covers every operation except the three that change an existing API key (update, revoke,
# rotate), with a token that stays valid throughout; the second pass covers the API-key
# operations alone. Those are person-only and authenticate by the session cookie, which no
# operation in the document can end, so the second pass is meaningful even after the fuzzer
# has revoked the token.
#
# Backends: `scripts/schemathesis.sh [sqlite|postgres]` (default sqlite). On PostgreSQL the
# server runs on a fresh database created for the run on the server of TOCSIN_CI_DATABASE_URL
# (default postgres://postgres@127.0.0.1:5432/test, which must allow CREATE DATABASE) and
# dropped afterwards, whatever the outcome.
#
# Environment: SCHEMATHESIS_MAX_EXAMPLES (default 50), SCHEMATHESIS_CHECKS and SCHEMATHESIS_SEED (default fixed,
# so CI runs are reproducible; set another to explore).
set -euo pipefail

backend="${1:-sqlite}"
case "$backend" in
    sqlite | postgres) ;;
    *)
        echo "usage: $0 [sqlite|postgres]" >&2
        exit 2
        ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/ci-venv.sh
source "$root/scripts/ci-venv.sh"

max_examples="${SCHEMATHESIS_MAX_EXAMPLES:-50}"
seed="${SCHEMATHESIS_SEED:-20240601}"
# Overridable to explore with more checks (e.g. `all`); CI keeps to the ones the contract promises.
checks="${SCHEMATHESIS_CHECKS:-not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance}"

ci_venv_ready

echo "building the server"
# The same build the integration tests use: `cargo build -p tocsin` alone unifies features
# differently and would compile the whole crate a second time (time and disk on a CI machine).
cargo test -p tocsin --locked --quiet --no-run --manifest-path "$root/Cargo.toml" >/dev/null 2>&1 \
    || cargo test -p tocsin --locked --no-run --manifest-path "$root/Cargo.toml"
bin="$CI_TARGET_DIR/debug/tocsin"

work="$(mktemp -d)"
server_pid=""
pg_admin_url="${TOCSIN_CI_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
pg_database=""
cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid"
        wait "$server_pid" 2>/dev/null || true
    fi
    if [ -n "$pg_database" ]; then
        psql "$pg_admin_url" -qc "DROP DATABASE IF EXISTS \"$pg_database\" WITH (FORCE)" >/dev/null \
            || echo "could not drop the database $pg_database" >&2
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# The kernel picks a free port; the small race until the server binds it is acceptable here.
port="$("$CI_VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"
export TOCSIN_DATA_DIR="$work/data"
unset TOCSIN_DATABASE_URL
where="data in $TOCSIN_DATA_DIR"
if [ "$backend" = postgres ]; then
    # A database of its own, so runs never see each other's data (or an earlier run's).
    pg_database="tocsin_st_$(date +%s)_$$"
    psql "$pg_admin_url" -qc "CREATE DATABASE \"$pg_database\"" >/dev/null
    # The admin URL with its database swapped (any ?query kept).
    pg_base="${pg_admin_url%%\?*}"
    pg_query="${pg_admin_url#"$pg_base"}"
    export TOCSIN_DATABASE_URL="${pg_base%/*}/$pg_database$pg_query"
    where="PostgreSQL database $pg_database"
fi

echo "starting tocsin serve on $base ($where)"
TOCSIN_LOG_LEVEL="${TOCSIN_LOG_LEVEL:-warn}" "$bin" serve --listen "127.0.0.1:$port" \
    --public-url "$base" >"$work/server.log" 2>&1 &
server_pid=$!

server_log_tail() {
    echo "---- last lines of the server log ----"
    tail -n 50 "$work/server.log" || true
}

for _ in $(seq 1 100); do
    if curl -fsS "$base/readyz" >/dev/null 2>&1; then
        break
    fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "the server exited before becoming ready" >&2
        server_log_tail
        exit 1
    fi
    sleep 0.2
done
curl -fsS "$base/readyz" >/dev/null

email="fuzz@example.com"
password="fuzzing-password-1"
"$bin" user create --email "$email" --password "$password" --name "Fuzz" >/dev/null
token="$("$bin" token create --email "$email" --name schemathesis --permissions all)"

# The session cookie comes back in Set-Cookie; curl's cookie jar is the least fragile parser.
curl -fsS -c "$work/cookies" -H "Origin: $base" -H 'Content-Type: application/json' \
    -d "{\"email\":\"$email\",\"password\":\"$password\"}" \
    "$base/auth/sign-in/email" >/dev/null
session="$(awk '$6 == "svc.session_token" { print $7 }' "$work/cookies")"
if [ -z "$session" ]; then
    echo "sign-in did not set svc.session_token" >&2
    exit 1
fi

report_dir="$CI_TARGET_DIR/schemathesis-report/$backend"
rm -rf "$report_dir"

# run_pass NAME ARGS...: one schemathesis run with the shared settings; ARGS select operations.
run_pass() {
    local name="$1"
    shift
    echo "== schemathesis pass on $backend: $name (max examples $max_examples per operation, seed $seed)"
    # Run from the work directory so hypothesis leaves nothing in the checkout.
    (
        cd "$work"
        # One worker: with two threads, hypothesis's lambda descriptions call ast.parse
        # concurrently, and CPython 3.11's AST recursion counter is shared between threads
        # ("SystemError: AST constructor recursion depth mismatch", a tool fault, not a finding).
        "$CI_VENV/bin/st" run "$root/openapi.json" \
            --url "$base" \
            --header "Authorization: Bearer $token" \
            --header "Cookie: svc.session_token=$session" \
            --header "Origin: $base" \
            --checks "$checks" \
            --phases examples,coverage,fuzzing,stateful \
            --max-examples "$max_examples" \
            --seed "$seed" \
            --workers 1 \
            --request-timeout 10 \
            --generation-database none \
            --report junit,ndjson --report-dir "$report_dir/$name" \
            --no-color \
            "$@"
    )
}

status=0
run_pass everything-but-key-changes \
    --exclude-operation-id updateApiKey \
    --exclude-operation-id revokeApiKey \
    --exclude-operation-id rotateApiKey || status=$?
token_status="$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "$base/workspace")"
if [ "$token_status" != 200 ]; then
    echo "the fuzzing token stopped working during the first pass (GET /workspace: $token_status)" >&2
    status=1
fi
run_pass api-keys --include-tag "API keys" || status=$?

# A server that died under the fuzzer must fail the run even if every answer before was fine.
if ! curl -fsS "$base/healthz" >/dev/null 2>&1; then
    echo "the server stopped answering during the run" >&2
    status=1
fi

if [ "$status" -ne 0 ]; then
    server_log_tail
    echo "schemathesis found problems; the JUnit and NDJSON reports are in $report_dir" >&2
fi
exit "$status"
