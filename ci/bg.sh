#!/usr/bin/env bash
# Background builds of `make test`: a long step that waits mostly on the network or the disk (an image
# build, a download) runs niced beside the CPU-bound Go builds, and a later step waits for it.
#
#   ci/bg.sh start NAME COMMAND...  run COMMAND (nice -n 10) in the background; output to NAME.log
#   ci/bg.sh wait NAME              wait for it (a line of its log every 30 s meanwhile); exit 0 when it
#                                   succeeded, else print the end of its log and exit 1
#
# The job's files (NAME.pid, NAME.log, NAME.start, NAME.rc) are in $DIHERA_BG_DIR (default: build/bg in
# the checkout). `wait` works from another shell than `start` (each Make recipe line is one): the job
# writes its exit status to NAME.rc when it ends.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${DIHERA_BG_DIR:-$(dirname "$here")/build/bg}

say() { printf '[bg] %s\n' "$*"; }
last() { tail -n 1 "$dir/$1.log" | cut -c1-160 | sed 's/^./; last line: &/'; } # last NAME: "; last line: ..." or nothing

start() { # start NAME COMMAND...
  local name=$1
  shift
  mkdir -p "$dir"
  rm -f "$dir/$name.rc" "$dir/$name.pid"
  date +%s > "$dir/$name.start"
  (
    rc=0
    nice -n 10 "$@" > "$dir/$name.log" 2>&1 || rc=$?
    echo "$rc" > "$dir/$name.rc.tmp" && mv "$dir/$name.rc.tmp" "$dir/$name.rc"
  ) < /dev/null > /dev/null 2>&1 &
  echo $! > "$dir/$name.pid"
  say "$name: started in the background (log: $dir/$name.log)"
}

wait_for() { # wait NAME
  local name=$1 pid since=$SECONDS report=30 rc took
  [[ -f $dir/$name.pid ]] || { say "$name: never started (no $dir/$name.pid)"; return 1; }
  pid=$(cat "$dir/$name.pid")
  while [[ ! -f $dir/$name.rc ]]; do
    if ! kill -0 "$pid" 2>/dev/null && [[ ! -f $dir/$name.rc ]]; then
      echo 137 > "$dir/$name.rc" # the job was killed before it could write its status
      break
    fi
    if ((SECONDS - since >= report)); then
      say "$name: still running (waited $((SECONDS - since))s)$(last "$name")"
      report=$((report + 30))
    fi
    sleep 1
  done
  rc=$(cat "$dir/$name.rc")
  took=$(($(stat -c %Y "$dir/$name.rc") - $(cat "$dir/$name.start")))
  if [[ $rc != 0 ]]; then
    tail -n 40 "$dir/$name.log"
    say "$name: FAILED (exit $rc after ${took}s; whole log: $dir/$name.log)"
    return 1
  fi
  say "$name: done in ${took}s (waited $((SECONDS - since))s for it)$(last "$name")"
}

case ${1:-} in
  start) [[ $# -ge 3 ]] || { echo "usage: $0 start NAME COMMAND..." >&2; exit 2; }; shift; start "$@" ;;
  wait) [[ $# -eq 2 ]] || { echo "usage: $0 wait NAME" >&2; exit 2; }; wait_for "$2" ;;
  *) echo "usage: $0 start NAME COMMAND... | wait NAME" >&2; exit 2 ;;
esac
