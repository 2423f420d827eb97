#!/usr/bin/env bash
# Configuration as code at size: 1,000 monitors, 50 notification channels, 20 status pages.
# Starts `tocsin serve` on a fresh embedded database, writes the file, then times `apply` to
# the empty workspace and `plan` against the unchanged one (which must say nothing to do).
# Usage: scripts/config-bench.sh [path/to/tocsin]   (default target/release/tocsin)
set -euo pipefail
BIN=$(realpath "${1:-target/release/tocsin}")
DIR=$(mktemp -d)
PORT=${PORT:-18089}
trap 'kill "$SERVER" 2>/dev/null || true; rm -rf "$DIR"' EXIT
cd "$DIR"
"$BIN" migrate --data-dir data >/dev/null 2>&1
"$BIN" user create --email bench@example.com --password 'correct horse battery' --data-dir data >/dev/null
export TOCSIN_TOKEN=$("$BIN" token create --email bench@example.com --data-dir data)
export TOCSIN_SERVER=http://127.0.0.1:$PORT
"$BIN" serve --data-dir data --listen 127.0.0.1:$PORT >server.log 2>&1 &
SERVER=$!
for _ in $(seq 100); do curl -sf "$TOCSIN_SERVER/healthz" >/dev/null && break; sleep 0.1; done
python3 - <<'PY' > tocsin.yaml
print("version: 1")
print("notificationChannels:")
for c in range(50):
    print(f"  - name: ch-{c}\n    type: WEBHOOK\n    config:\n      url: http://127.0.0.1:9/hook/{c}")
print("projects:\n  - name: bench")
print("monitors:")
for m in range(1000):
    print(f"  - name: m-{m}\n    type: HTTP\n    url: http://127.0.0.1:9/m/{m}\n    interval: 300\n    active: false")
    print(f"    notificationChannels: [ch-{m % 50}]\n    projects: [bench]")
print("statusPages:")
for p in range(20):
    print(f"  - slug: bench-page-{p}\n    name: Page {p}\n    components:")
    for k in range(10):
        print(f"      - name: c-{k}\n        monitor: m-{p * 50 + k}")
PY
start=$(date +%s.%N)
"$BIN" config apply -f tocsin.yaml >/dev/null
mid=$(date +%s.%N)
set +e
"$BIN" config plan -f tocsin.yaml >plan.txt
code=$?
set -e
end=$(date +%s.%N)
echo "apply to an empty workspace: $(echo "$mid - $start" | bc) s"
echo "plan, unchanged workspace:   $(echo "$end - $mid" | bc) s (exit $code: $(tail -1 plan.txt))"
