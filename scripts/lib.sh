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

# stop_pidfile NAME PIDFILE: stop the process named in PIDFILE (if alive) and remove the file.
stop_pidfile() {
  local name=$1 pidfile=$2
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    kill "$(cat "$pidfile")"
    for _ in $(seq 1 40); do
      kill -0 "$(cat "$pidfile")" 2>/dev/null || break
      sleep 0.25
    done
    echo "[$name] stopped" >&2
  fi
  rm -f "$pidfile"
}
