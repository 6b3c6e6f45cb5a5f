# Shared by the tools that drive a live `ember serve` (sourced, not run):
#   tools_venv PKG==VER...      a cached virtualenv with those PyPI packages; sets PY
#   start_ember_serve LOG ARGS  `ember serve --port 0 ARGS` in the background, waits for
#                               /health 200; sets SERVE_PID and SERVE_URL
#   stop_ember_serve            SIGTERM and wait; returns its exit code
#   aidreams_model              the llama2.c checkpoint from ../shared as GGUF (models/)
REPO=${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
EMBER=${EMBER:-$REPO/build/ember}

tools_venv() {
    local venv=${EMBER_TOOLS_VENV:-$HOME/.cache/ember-tools-venv}
    [[ -x $venv/bin/python ]] || python3 -m venv "$venv" >&2
    "$venv/bin/python" -m pip install -q "$@" >&2
    PY=$venv/bin/python
}

start_ember_serve() {
    local log=$1; shift
    "$EMBER" serve --port 0 "$@" > "$log" 2>&1 &
    SERVE_PID=$!
    local port="" i
    for i in $(seq 1 3000); do
        port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$log" | grep -o '[0-9]*$' || true)
        [[ -n $port ]] && break
        kill -0 "$SERVE_PID" 2> /dev/null || { cat "$log" >&2; return 1; }
        sleep 0.02
    done
    SERVE_URL=http://127.0.0.1:$port
    for i in $(seq 1 3000); do
        [[ $(curl -s -o /dev/null -w '%{http_code}' "$SERVE_URL/health") == 200 ]] && return 0
        kill -0 "$SERVE_PID" 2> /dev/null || { cat "$log" >&2; return 1; }
        sleep 0.05
    done
    return 1
}

stop_ember_serve() {
    kill -TERM "$SERVE_PID" 2> /dev/null || true
    local rc=0
    wait "$SERVE_PID" || rc=$?
    SERVE_PID=""
    return $rc
}

aidreams_model() {
    local out=$REPO/models/aidreams260K.gguf
    [[ -f $out ]] || "$EMBER" convert llama2c "$REPO/../shared/models/aidreams260K.bin" \
        "$REPO/../shared/models/tok512.bin" -o "$out" >&2
    echo "$out"
}
