#!/usr/bin/env bash
# Stops what infra/local/up.sh started - exactly the processes named by the
# pid files in infra/local/.run/ (each with its process group and children) -
# and removes the pid files. Exits 0 when nothing is running.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
run="$here/.run"
moto_port="${SQUALL_MOTO_PORT:-5055}"
lambda_port="${SQUALL_LAMBDA_PORT:-9055}"

log() { printf 'down: %s\n' "$*" >&2; }

# Every descendant of a pid (cargo lambda watch starts each function instance
# in a session of its own, so the process group alone does not cover them).
descendants() {
    local parent="$1" child
    for child in $(ps -e -o pid=,ppid= | awk -v p="$parent" '$2 == p { print $1 }'); do
        echo "$child"
        descendants "$child"
    done
}

alive() {
    local pid
    for pid in "$@"; do
        if kill -0 "$pid" 2>/dev/null; then
            return 0
        fi
    done
    return 1
}

stop() {
    local name="$1" pattern="$2" pidfile="$run/$1.pid" pid pgid i
    if [[ ! -f "$pidfile" ]]; then
        log "$name: not running"
        return
    fi
    pid="$(cat "$pidfile")"
    if ! [[ "$pid" =~ ^[0-9]+$ ]] || ! kill -0 "$pid" 2>/dev/null; then
        log "$name: not running (stale pid file)"
        rm -f "$pidfile"
        return
    fi
    if ! ps -o args= -p "$pid" | grep -q -- "$pattern"; then
        log "$name: pid $pid is now another program; leaving it alone"
        rm -f "$pidfile"
        return
    fi
    local procs=("$pid")
    mapfile -t -O 1 procs < <(descendants "$pid")
    pgid="$(ps -o pgid= -p "$pid" | tr -d ' ')"
    log "$name: stopping pid $pid (and ${#procs[@]} process(es) in all)"
    # A graceful stop first: cargo lambda watch then ends its function instances.
    if [[ "$pgid" == "$pid" ]]; then
        kill -TERM -- "-$pid" 2>/dev/null || true
    else
        kill -TERM "$pid" 2>/dev/null || true
    fi
    for ((i = 0; i < 40; i++)); do
        alive "${procs[@]}" || break
        sleep 0.25
    done
    if alive "${procs[@]}"; then
        log "$name: still running after 10s; killing"
        if [[ "$pgid" == "$pid" ]]; then
            kill -KILL -- "-$pid" 2>/dev/null || true
        fi
        for p in "${procs[@]}"; do
            kill -KILL "$p" 2>/dev/null || true
        done
    fi
    rm -f "$pidfile"
}

stop lambda 'lambda watch'
stop moto moto

for port in "$moto_port" "$lambda_port"; do
    if python3 -c 'import socket, sys; s = socket.socket(); s.settimeout(1); sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) == 0 else 1)' "$port"; then
        log "warning: something still listens on 127.0.0.1:$port (not started by up.sh)"
    fi
done
exit 0
