# Sourced by scripts/demo and scripts/test: make .venv with mcp-memory and the given extras installed,
# re-installing only when pyproject.toml changed. Usage: ensure_venv '.[dev]'
ensure_venv() {
    local spec=$1 python=${PYTHON:-python3}
    if [ ! -x .venv/bin/python ]; then
        echo "setting up .venv (first run only)" >&2
        "$python" -m venv .venv
    fi
    # shellcheck disable=SC1091
    . .venv/bin/activate
    local stamp=".venv/.mcp-memory-deps-$(echo "$spec" | tr -c 'a-z' _)"
    local want
    want=$(sha256sum pyproject.toml | cut -d' ' -f1)
    if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
        echo "installing mcp-memory $spec into .venv" >&2
        python -m pip install --quiet --disable-pip-version-check --upgrade pip
        python -m pip install --quiet --disable-pip-version-check -e "$spec"
        echo "$want" > "$stamp"
    fi
}
