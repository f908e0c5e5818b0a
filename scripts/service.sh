#!/usr/bin/env bash
# `make up` / `make down`: the whole service on this machine.
#   up:   Redis (if none answers), the Docker engine, the sandbox image (if missing),
#         migrations, the API on http://127.0.0.1:8000 (gunicorn), one grading worker (a
#         process per core, each with its zygote sandbox), one webhook worker, the sweeper; prints a curl that grades a
#         seed solution.
#   down: stops what `up` started.
#   dev-key: writes var/dev-key, the admin key `up` prints (readable by this user only).
# Settings: JAXJUDGE_VAR (./var: database, logs, pids, packages, secret key),
# JAXJUDGE_PORT (8000), JAXJUDGE_REDIS_PORT (6379) and any other JAXJUDGE_* variable;
# `up` notes them all in $JAXJUDGE_VAR/stack.json, where the jaxjudge commands find them.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VAR=${JAXJUDGE_VAR:-$ROOT/var}
export JAXJUDGE_VAR=$VAR  # the database, the packages cache and the secret key are under it
BIN=$ROOT/.venv/bin
PORT=${JAXJUDGE_PORT:-8000}
REDIS_PORT=${JAXJUDGE_REDIS_PORT:-6379}
export JAXJUDGE_REDIS_URL=${JAXJUDGE_REDIS_URL:-redis://127.0.0.1:$REDIS_PORT/0}
export JAXJUDGE_DATABASE_URL=${JAXJUDGE_DATABASE_URL:-sqlite:///$VAR/jaxjudge.db}
export JAXJUDGE_SANDBOX=${JAXJUDGE_SANDBOX:-zygote}
# Where an LMS reaches the tool (LTI URLs are built from it); behind a TLS proxy, set it
# to the public https URL and JAXJUDGE_TRUSTED_PROXY_HOPS.
export JAXJUDGE_PUBLIC_URL=${JAXJUDGE_PUBLIC_URL:-http://127.0.0.1:$PORT}
mkdir -p "$VAR/log" "$VAR/redis"

running() {  # running PID: it exists and has not exited (a zombie has: `up`'s shell is
    # gone, so init reaps it, and some inits only every few seconds)
    kill -0 "$1" 2>/dev/null && ! grep -qs '^State:[[:space:]]*Z' "/proc/$1/status"
}

stop_pid() {  # stop_pid NAME: TERM the process group in var/NAME.pid, wait, then KILL
    local file=$VAR/$1.pid
    [ -f "$file" ] || return 0
    local pid; pid=$(cat "$file")
    if running "$pid"; then
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 200); do running "$pid" || break; sleep 0.1; done
        kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$file"
    echo "stopped $1"
}

start_bg() {  # start_bg NAME CMD...: in its own session, pid in var/NAME.pid, log in var/log
    local name=$1; shift
    setsid "$@" >"$VAR/log/$name.log" 2>&1 < /dev/null &
    echo $! >"$VAR/$name.pid"
}

dev_key() {  # an admin key of tenant "dev" in var/dev-key, mode 0600 from its creation
    if [ ! -s "$VAR/dev-key" ]; then
        (umask 077 && "$BIN/jaxjudge" keys create --tenant dev --role admin --name "make up" \
            >"$VAR/dev-key.new") && mv "$VAR/dev-key.new" "$VAR/dev-key"
    fi
    chmod 600 "$VAR/dev-key"  # one written world-readable by an older make up, too
    [ "$(stat -c %a "$VAR/dev-key")" = 600 ] || { echo "$VAR/dev-key is not private" >&2; exit 1; }
}

up() {
    if ! redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; then
        command -v redis-server >/dev/null || apt-get install -y -q redis-server >/dev/null
        start_bg redis redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$VAR/redis" \
            --appendonly yes --appendfsync everysec --save ""
        for _ in $(seq 1 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
        echo "redis: started on 127.0.0.1:$REDIS_PORT"
    fi
    bash docker/engine.sh
    { docker image inspect jaxjudge-sandbox:latest >/dev/null 2>&1 && [ -s var/zygote-seccomp.json ]; } \
        || PYTHON=$BIN/python bash docker/build-image.sh
    # Every JAXJUDGE_* setting of the stack, for the operators' commands (jaxjudge keys,
    # lti, deliveries ...) run later from the checkout: they read $VAR/stack.json.
    rm -f "$VAR/public_url"  # what an older make up noted instead
    "$BIN/python" -m service.stack note
    "$BIN/jaxjudge" db upgrade
    stop_pid api; stop_pid worker; stop_pid webhooks; stop_pid sweeper
    # gevent: a greenlet per request, so long-polls (?wait=) hold no thread (api/longpoll.py).
    start_bg api "$BIN/gunicorn" --bind "127.0.0.1:$PORT" --worker-class gevent --workers 2 \
        --worker-connections 1000 --timeout 120 --access-logfile - 'app:create_app()'
    start_bg worker "$BIN/celery" -A workers.app worker -Q interactive,batch \
        -n "grader@%h" --loglevel INFO
    start_bg webhooks "$BIN/celery" -A workers.app worker -Q webhooks --pool threads \
        --concurrency 8 -n "webhooks@%h" --loglevel INFO
    start_bg sweeper "$BIN/python" -m workers.sweeper
    dev_key
    "$BIN/python" - "$VAR/demo-submission.json" <<'PY'
import json, sys
path = "problemsets/jax-sharding/partitionspec-layout/submissions/accepted/arithmetic.py"
json.dump({"problem": "jax-sharding/partitionspec-layout", "student_id": "demo",
           "code": open(path).read()}, open(sys.argv[1], "w"))
PY
    echo -n "waiting for the API, a worker and a warm sandbox"
    for i in $(seq 1 600); do  # 120 s, asked five times a second
        if curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; then break; fi
        [ $((i % 5)) -ne 0 ] || echo -n .
        sleep 0.2
    done
    echo
    curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null || { echo "not ready: see var/log/" >&2; exit 1; }
    cat <<MSG
jaxjudge is up: http://127.0.0.1:$PORT (API reference: http://127.0.0.1:$PORT/v1/docs)
logs in var/log/, stop it with: make down

Grade a seed solution (waits up to 60 s for the verdict):

curl -s -H "Authorization: Bearer $(cat "$VAR/dev-key")" -H 'Content-Type: application/json' \\
     --data @$VAR/demo-submission.json 'http://127.0.0.1:$PORT/v1/submissions?wait=60'

Instructor pages: http://127.0.0.1:$PORT/app/signin (sign in with the key in $VAR/dev-key)

What an LMS administrator needs (docs/lti.md; again with: $BIN/jaxjudge lti urls):
MSG
    "$BIN/jaxjudge" lti urls
}

down() {
    stop_pid sweeper; stop_pid webhooks; stop_pid worker; stop_pid api; stop_pid redis
}

case ${1:-} in
    up) up ;;
    down) down ;;
    dev-key) dev_key ;;
    *) echo "usage: $0 up|down|dev-key" >&2; exit 2 ;;
esac
