# Shared by scripts/llm.sh and scripts/kafka.sh (sourced, not run).

# wait_ready NAME PIDFILE LOGFILE TRIES INTERVAL CHECK: poll CHECK until it succeeds; fail early,
# showing the log, if the process dies; fail after TRIES polls.
wait_ready() {
  local name=$1 pidfile=$2 logfile=$3 tries=$4 interval=$5 check=$6
  for _ in $(seq 1 "$tries"); do
    if "$check"; then
      return 0
    fi
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "[$name] exited; last lines of its log:" >&2
      tail -n 20 "$logfile" >&2
      return 1
    fi
    sleep "$interval"
  done
  echo "[$name] not ready after $tries checks, $interval s apart" >&2
  return 1
}

# stop_pidfile NAME PIDFILE: stop the process named in PIDFILE (if alive) and remove the file:
# SIGTERM, up to 30 s to exit (a busy LLM server finishes its calls first), then SIGKILL. The
# file goes only once the process is gone, so a later `start` never meets an orphan.
stop_pidfile() {
  local name=$1 pidfile=$2 pid
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    pid="$(cat "$pidfile")"
    kill "$pid"
    for _ in $(seq 1 120); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "[$name] still running after 30 s: killed" >&2
      kill -9 "$pid" 2>/dev/null || true
      for _ in $(seq 1 20); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.25
      done
    fi
    echo "[$name] stopped" >&2
  fi
  rm -f "$pidfile"
}
