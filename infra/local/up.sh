#!/usr/bin/env bash
# Local emulation of squall's AWS path, on loopback only:
#   - moto in server mode (S3, SQS, Secrets Manager) 127.0.0.1:${SQUALL_MOTO_PORT:-5055}
#   - cargo lambda watch (Lambda Invoke API 127.0.0.1:${SQUALL_LAMBDA_PORT:-9055}
#     for the worker, coordinator and api functions; the api function's URL is
#     http://127.0.0.1:${SQUALL_LAMBDA_PORT:-9055}/lambda-url/api)
# then the bucket s3://squall-local with TPC-H SF0.1 under tpch/sf0.1/, and
# infra/local/env.sh for clients. Idempotent: what already runs is left alone.
# Stop everything with infra/local/down.sh.
#
# Settings (environment): SQUALL_MOTO_PORT, SQUALL_LAMBDA_PORT,
# SQUALL_LAMBDA_CONCURRENCY (instances per function, default 2),
# SQUALL_LAMBDA_RELEASE=1 (build the functions in release mode),
# SQUALL_LAMBDA_IGNORE_CHANGES=1 (source edits do not restart the functions),
# SQUALL_API_AUTH=token (the api function requires a token kept in moto's
# Secrets Manager, as a stack deployed with ApiAuth=Token does; default none:
# no check, as behind IAM authorization),
# SQUALL_BIN (a prebuilt squall binary for generating the data; default
# `cargo run --bin squall`).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
run="$here/.run"
moto_port="${SQUALL_MOTO_PORT:-5055}"
lambda_port="${SQUALL_LAMBDA_PORT:-9055}"
concurrency="${SQUALL_LAMBDA_CONCURRENCY:-2}"
host=127.0.0.1
region=us-east-1
bucket=squall-local
sf=0.1
data_dir="$root/data/tpch/sf$sf"
data_prefix="tpch/sf$sf"
moto_url="http://$host:$moto_port"
lambda_url="http://$host:$lambda_port"
api_url="$lambda_url/lambda-url/api"
api_auth="${SQUALL_API_AUTH:-none}"
# cargo lambda watch answers an invocation only when the function returns,
# and stops dispatching for good once 100 invocations of one function wait
# (its request queue holds 100 and is filled under a lock its instances
# need): coordinators here keep fewer than that unanswered. Launcher
# invocations (tree invocation) would each add their batch to that queue
# past any one process's bound, so the local stack starts no stage through
# them unless a query asks (squall.task.tree_min_tasks, with small stages).
max_unanswered=48
token_secret=squall-local/api-token

log() { printf 'up: %s\n' "$*" >&2; }
die() { printf 'up: error: %s\n' "$*" >&2; exit 1; }

case "$api_auth" in
    none | token) ;;
    *) die "SQUALL_API_AUTH must be none or token, not '$api_auth'" ;;
esac

mkdir -p "$run"

# ------------------------------------------------------------------ install
python_scripts_on_path() {
    # pip may put console scripts where PATH does not look (a user install,
    # a fresh pyenv version without shims yet).
    local dir
    for dir in "$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')" \
        "$(python3 -m site --user-base 2>/dev/null)/bin"; do
        if [[ -d "$dir" && ":$PATH:" != *":$dir:"* ]]; then
            PATH="$PATH:$dir"
        fi
    done
    if command -v pyenv >/dev/null 2>&1; then
        pyenv rehash >/dev/null 2>&1 || true
    fi
    hash -r
}

install_missing() {
    local missing=()
    python3 -c 'import moto.server, flask, flask_cors' >/dev/null 2>&1 || missing+=('moto[server]')
    python3 -c 'import boto3' >/dev/null 2>&1 || missing+=(boto3)
    python_scripts_on_path
    command -v cargo-lambda >/dev/null 2>&1 || missing+=(cargo-lambda)
    if ((${#missing[@]})); then
        log "installing ${missing[*]} (pip)"
        python3 -m pip install --quiet --disable-pip-version-check "${missing[@]}"
        python_scripts_on_path
    fi
    python3 -c 'import moto.server, flask, flask_cors, boto3' || die "moto[server] / boto3 did not install"
    command -v cargo-lambda >/dev/null 2>&1 || die "cargo-lambda is not on PATH after 'pip install cargo-lambda'"
    cargo lambda --version >/dev/null 2>&1 || die "'cargo lambda' does not run (cargo-lambda: $(command -v cargo-lambda))"
}

# ---------------------------------------------------------------- processes
# pid of a process this script started and that still runs, or nothing.
running_pid() {
    local name="$1" pattern="$2" pid
    [[ -f "$run/$name.pid" ]] || return 0
    pid="$(cat "$run/$name.pid")"
    if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null &&
        ps -o args= -p "$pid" | grep -q -- "$pattern"; then
        echo "$pid"
    else
        rm -f "$run/$name.pid"
    fi
}

# true when something answers HTTP on the URL (any status).
answers() {
    python3 - "$1" <<'EOF' >/dev/null 2>&1
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1], timeout=2)
except urllib.error.HTTPError:
    pass
EOF
}

port_busy() {
    python3 - "$host" "$1" <<'EOF'
import socket, sys
s = socket.socket()
s.settimeout(1)
sys.exit(0 if s.connect_ex((sys.argv[1], int(sys.argv[2]))) == 0 else 1)
EOF
}

# Waits until PROBE (a command) succeeds, while the process PID lives.
wait_until() {
    local name="$1" pid="$2" seconds="$3" logfile="$4" i
    shift 4
    for ((i = 0; i < seconds * 4; i++)); do
        if "$@"; then
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 20 "$logfile" >&2 || true
            die "$name exited; log: $logfile"
        fi
        sleep 0.25
    done
    tail -n 20 "$logfile" >&2 || true
    die "$name does not answer after ${seconds}s; log: $logfile"
}

start_moto() {
    local pid
    pid="$(running_pid moto moto)"
    if [[ -n "$pid" ]]; then
        log "moto already running (pid $pid) on $moto_url"
        return
    fi
    port_busy "$moto_port" && die "port $moto_port is in use by another process (set SQUALL_MOTO_PORT)"
    log "starting moto on $moto_url (log $run/moto.log)"
    (
        cd "$run"
        # setsid: its own process group, so down.sh can stop it and its children.
        exec setsid nohup python3 -m moto.server -H "$host" -p "$moto_port" \
            >"$run/moto.log" 2>&1 </dev/null
    ) &
    echo $! >"$run/moto.pid"
    wait_until moto "$(cat "$run/moto.pid")" 60 "$run/moto.log" answers "$moto_url/moto-api/"
}

write_function_env() {
    # What the functions see under cargo lambda watch (the deployed stack sets
    # the same SQUALL_* variables from sam-template.yaml). Loaded with
    # --env-file; these override anything inherited from this shell.
    cat >"$run/functions.env" <<EOF
AWS_ENDPOINT_URL=$moto_url
AWS_ENDPOINT_URL_S3=$moto_url
AWS_ENDPOINT_URL_SQS=$moto_url
AWS_ENDPOINT_URL_LAMBDA=$lambda_url
AWS_ACCESS_KEY_ID=test
AWS_SECRET_ACCESS_KEY=test
AWS_REGION=$region
AWS_DEFAULT_REGION=$region
AWS_EC2_METADATA_DISABLED=true
AWS_ALLOW_HTTP=true
SQUALL_LOG=info
SQUALL_BACKEND=aws
SQUALL_WORKER_FUNCTION=worker
SQUALL_COORDINATOR_FUNCTION=coordinator
SQUALL_EXCHANGE_LOCATION=s3://$bucket/exchange
SQUALL_STATE_LOCATION=s3://$bucket/state
SQUALL_PAYLOAD_LOCATION=s3://$bucket/payloads
SQUALL_QUEUE_PREFIX=$bucket-q-
SQUALL_DEFAULT_CATALOG=s3://$bucket/$data_prefix
SQUALL_API_URL=$api_url
SQUALL_API_PATH_PREFIX=/lambda-url/api
SQUALL_TASK_MAX_UNANSWERED_INVOKES=$max_unanswered
SQUALL_TASK_TREE_MIN_TASKS=0
EOF
    if [[ -n "${SQUALL_QUERY_SINGLE_TASK_BYTES:-}" ]]; then
        # A stack whose queries always run staged (0), as the emulated test's.
        echo "SQUALL_QUERY_SINGLE_TASK_BYTES=$SQUALL_QUERY_SINGLE_TASK_BYTES" >>"$run/functions.env"
    fi
    if [[ "$api_auth" == token ]]; then
        # The secret's name; its value is created in moto by create_api_token_secret.
        echo "SQUALL_API_TOKEN_SECRET=$token_secret" >>"$run/functions.env"
    fi
}

start_lambda() {
    local pid real_cargo
    pid="$(running_pid lambda 'lambda watch')"
    if [[ -n "$pid" ]]; then
        log "cargo lambda watch already running (pid $pid) on $lambda_url"
        return
    fi
    port_busy "$lambda_port" && die "port $lambda_port is in use by another process (set SQUALL_LAMBDA_PORT)"
    write_function_env
    real_cargo="$(command -v cargo)" || die "cargo is not on PATH"
    local extra=()
    if [[ "${SQUALL_LAMBDA_RELEASE:-0}" == 1 ]]; then
        extra+=(--release)
    fi
    # Long measurements: edits to the source do not restart the functions.
    if [[ "${SQUALL_LAMBDA_IGNORE_CHANGES:-0}" == 1 ]]; then
        extra+=(--ignore-changes)
    fi
    log "starting cargo lambda watch on $lambda_url (log $run/lambda.log; functions compile on first invocation)"
    (
        cd "$root"
        # Variables cargo sets for the program it runs (this script may run
        # under `cargo test`) must not reach the functions' `cargo run`: build
        # scripts such as ring's watch CARGO_PKG_NAME and CARGO_MANIFEST_DIR,
        # and a changed value makes cargo rebuild them and everything above
        # them (DataFusion included) instead of reusing the workspace build.
        local var
        for var in $(compgen -e); do
            case "$var" in
                CARGO_PKG_* | CARGO_MANIFEST_* | CARGO_BIN_* | CARGO_CRATE_NAME | CARGO_PRIMARY_PACKAGE | CARGO_TARGET_TMPDIR | OUT_DIR)
                    unset "$var" ;;
            esac
        done
        # cargo-lambda is run directly (not as `cargo lambda`) so that $CARGO
        # stays the shim: see cargo-shim.sh. No AWS profile or session token
        # of this shell leaks into the functions.
        exec env -u AWS_PROFILE -u AWS_SESSION_TOKEN -u AWS_SECURITY_TOKEN \
            CARGO="$here/cargo-shim.sh" SQUALL_REAL_CARGO="$real_cargo" \
            setsid nohup cargo-lambda lambda watch \
            --invoke-address "$host" --invoke-port "$lambda_port" \
            --concurrency "$concurrency" --env-file "$run/functions.env" "${extra[@]}" \
            >"$run/lambda.log" 2>&1 </dev/null
    ) &
    echo $! >"$run/lambda.pid"
    # It listens once its server is up (an HTTP probe would only log an error).
    wait_until "cargo lambda watch" "$(cat "$run/lambda.pid")" 60 "$run/lambda.log" port_busy "$lambda_port"
}

# --------------------------------------------------------------------- data
generate_data() {
    if [[ -f "$data_dir/_SUCCESS" ]]; then
        log "TPC-H SF$sf present in $data_dir"
        return
    fi
    log "generating TPC-H SF$sf into $data_dir"
    cd "$root"
    if [[ -n "${SQUALL_BIN:-}" ]]; then
        "$SQUALL_BIN" tpch gen --sf "$sf" --out "$data_dir"
        return
    fi
    # The package that owns the `squall` binary (it has moved between crates).
    local package
    package="$(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    if any(t["name"] == "squall" and "bin" in t["kind"] for t in p["targets"]):
        print(p["name"])
        break
')"
    [[ -n "$package" ]] || die "no package in the workspace has a 'squall' binary"
    cargo run -q -p "$package" --bin squall -- tpch gen --sf "$sf" --out "$data_dir"
    [[ -f "$data_dir/_SUCCESS" ]] || die "tpch gen did not write $data_dir/_SUCCESS"
}

create_bucket_and_upload() {
    log "bucket s3://$bucket; uploading $data_dir to s3://$bucket/$data_prefix/"
    python3 - "$moto_url" "$region" "$bucket" "$data_dir" "$data_prefix" <<'EOF'
import os, sys
import boto3

endpoint, region, bucket, data_dir, prefix = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name=region,
                  aws_access_key_id="test", aws_secret_access_key="test")
if bucket not in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
    s3.create_bucket(Bucket=bucket)

existing = {}
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
    for obj in page.get("Contents", []):
        existing[obj["Key"]] = obj["Size"]

uploaded = skipped = 0
for dirpath, dirnames, filenames in os.walk(data_dir):
    dirnames.sort()
    for name in sorted(filenames):
        if not name.endswith(".parquet"):
            continue
        path = os.path.join(dirpath, name)
        key = prefix + "/" + os.path.relpath(path, data_dir).replace(os.sep, "/")
        if existing.get(key) == os.path.getsize(path):
            skipped += 1
            continue
        s3.upload_file(path, bucket, key)
        uploaded += 1
print(f"up: {uploaded} files uploaded, {skipped} already there", file=sys.stderr)
if uploaded + skipped == 0:
    sys.exit(f"up: error: no parquet files under {data_dir}")
EOF
}

# The secret the running api function reads its token from, if any: what
# functions.env says (a cargo lambda watch already running keeps its own).
running_token_secret() {
    sed -n 's/^SQUALL_API_TOKEN_SECRET=//p' "$run/functions.env" 2>/dev/null || true
}

# With token auth, the api function's token: a Secrets Manager secret in
# moto with a random value, as GenerateSecretString makes it in the stack.
# It must exist before the api function's first invocation (its start-up
# reads it); an existing one is kept.
create_api_token_secret() {
    local secret
    secret="$(running_token_secret)"
    if [[ -z "$secret" ]]; then
        [[ "$api_auth" == none ]] || log "the running api function checks no token (it started without SQUALL_API_AUTH=token)"
        return 0
    fi
    [[ "$api_auth" == token ]] || log "the running api function requires a token (it started with SQUALL_API_AUTH=token)"
    python3 - "$moto_url" "$region" "$secret" <<'EOF'
import secrets, string, sys
import boto3

endpoint, region, name = sys.argv[1:]
sm = boto3.client("secretsmanager", endpoint_url=endpoint, region_name=region,
                  aws_access_key_id="test", aws_secret_access_key="test")
try:
    sm.describe_secret(SecretId=name)
    print(f"up: secret {name} present", file=sys.stderr)
except sm.exceptions.ResourceNotFoundException:
    alphabet = string.ascii_letters + string.digits
    token = "".join(secrets.choice(alphabet) for _ in range(48))
    sm.create_secret(Name=name, SecretString=token,
                     Description="squall local emulation: the api function's token")
    print(f"up: secret {name} created (the api function's token)", file=sys.stderr)
EOF
}

write_client_env() {
    cat >"$here/env.sh" <<EOF
# shellcheck shell=bash
# Written by infra/local/up.sh: source it to talk to the local emulators.
# It replaces any AWS profile or session of this shell with dummy credentials.
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_SECURITY_TOKEN
export AWS_ENDPOINT_URL=$moto_url
export AWS_ENDPOINT_URL_S3=$moto_url
export AWS_ENDPOINT_URL_SQS=$moto_url
export AWS_ENDPOINT_URL_LAMBDA=$lambda_url
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export AWS_REGION=$region
export AWS_DEFAULT_REGION=$region
export AWS_EC2_METADATA_DISABLED=true
export AWS_ALLOW_HTTP=true
export SQUALL_BACKEND=aws
export SQUALL_EXCHANGE_LOCATION=s3://$bucket/exchange
export SQUALL_STATE_LOCATION=s3://$bucket/state
export SQUALL_PAYLOAD_LOCATION=s3://$bucket/payloads
export SQUALL_WORKER_FUNCTION=worker
export SQUALL_COORDINATOR_FUNCTION=coordinator
export SQUALL_QUEUE_PREFIX=$bucket-q-
export SQUALL_CATALOG=s3://$bucket/$data_prefix
export SQUALL_API_URL=$api_url
export SQUALL_TASK_MAX_UNANSWERED_INVOKES=$max_unanswered
export SQUALL_TASK_TREE_MIN_TASKS=0
EOF
    if [[ -n "${SQUALL_QUERY_SINGLE_TASK_BYTES:-}" ]]; then
        echo "export SQUALL_QUERY_SINGLE_TASK_BYTES=$SQUALL_QUERY_SINGLE_TASK_BYTES" >>"$here/env.sh"
    fi
    local secret
    secret="$(running_token_secret)"
    if [[ -n "$secret" ]]; then
        cat >>"$here/env.sh" <<EOF
# The api function requires a token, kept in this secret (read it with
# aws secretsmanager get-secret-value --secret-id \$SQUALL_API_TOKEN_SECRET
# --query SecretString --output text). squall serve takes it too.
export SQUALL_API_TOKEN_SECRET=$secret
EOF
    fi
}

install_missing
start_moto
start_lambda
generate_data
create_bucket_and_upload
create_api_token_secret
write_client_env

cat <<EOF
squall local AWS emulation is up (stop it with infra/local/down.sh)
  S3, SQS, Secrets Manager $moto_url (moto)
  Lambda (cargo lambda)     $lambda_url/2015-03-31/functions/{worker,coordinator,api}/invocations
  data                      s3://$bucket/$data_prefix/
  client environment        source infra/local/env.sh
  API URL                   $api_url
  API auth                  $(if [[ -n "$(running_token_secret)" ]]; then echo "a token, in secret $(running_token_secret)"; else echo none; fi)
EOF
