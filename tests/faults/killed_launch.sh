#!/bin/sh
# killed_launch.sh ALL_REDUCE_PERF: a job of forked local ranks stopped by a signal at any
# moment of its set-up or its calls (SIGTERM from timeout(1), as a batch system or Ctrl-C
# would) leaves nothing in /dev/shm: the parent passes the signal to the ranks, waits for them,
# and removes what ranks killed mid-set-up had made. Each try runs in a private mount namespace
# with its own /dev/shm, so other jobs on the machine neither disturb nor are counted. Needs
# root (unshare -m, mount); skips (77) saying so otherwise.
perf=$1
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
    echo "SKIP: needs root and unshare(1) to give the job a /dev/shm of its own"
    exit 77
fi
fails=0
for delay in 0.4 0.6 0.8 1.0 1.2 1.4 1.6 2.0 2.5; do
    left=$(timeout 60 unshare -m sh -c '
        mount -t tmpfs -o size=512m tmpfs /dev/shm || exit 3
        timeout -s TERM "$1" "$0" -N 48 -b 8 -e 64M -n 2 -w 1 >/dev/null 2>&1
        rc=$?
        ls /dev/shm | tr "\n" " "; echo "(exit $rc)"' "$perf" "$delay")
    echo "stopped after $delay s: left in /dev/shm: $left"
    case "$left" in
    "(exit "*) ;;
    *) fails=$((fails + 1)) ;;
    esac
done
if [ $fails -ne 0 ]; then
    echo "FAIL: $fails of 9 stopped jobs left segments in /dev/shm"
    exit 1
fi
echo "PASS: 9 jobs of 48 ranks stopped at 0.4-2.5 s left nothing in /dev/shm"
