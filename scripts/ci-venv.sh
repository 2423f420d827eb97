# Sourced by the CI scripts: a Python virtual environment under target/, so it is ignored by
# git, removed by `cargo clean`, and reused between runs on the same checkout. Every package
# comes from PyPI by name at the version pinned in scripts/ci-requirements.txt.

ci_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Wherever cargo builds (CARGO_TARGET_DIR may point outside the checkout, e.g. a CI cache).
CI_TARGET_DIR="${CARGO_TARGET_DIR:-$ci_root/target}"
CI_VENV="${CI_VENV:-$CI_TARGET_DIR/ci-venv}"

# ci_venv_ready: makes sure the venv exists and holds exactly the pinned requirements.
ci_venv_ready() {
    local requirements="$ci_root/scripts/ci-requirements.txt"
    local stamp="$CI_VENV/.requirements"
    if [ ! -x "$CI_VENV/bin/python" ]; then
        python3 -m venv "$CI_VENV"
    fi
    # A copy of the requirements it was built from marks a venv as current, so a warm run
    # makes no network round-trips; changing the pins rebuilds it on the next run.
    if ! cmp -s "$requirements" "$stamp"; then
        "$CI_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
            --no-input -r "$requirements"
        cp "$requirements" "$stamp"
    fi
}
