#!/bin/sh
# shm_full.sh ALL_REDUCE_PERF: a /dev/shm too small for the FIFOs (a 3 MiB tmpfs mounted over it
# in a private mount namespace, as a container's default 64 MiB is for a big job) is a clear
# error on the ranks that cannot reserve theirs, naming the size, the mount and the way out,
# and every rank exits: never a SIGBUS, never a hang. (1 MiB: a small all-reduce travels in the
# control pages, a page per rank, and needs no FIFO.) Needs root (unshare -m, mount); skips
# (77) saying so otherwise.
perf=$1
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
    echo "SKIP: needs root and unshare(1) to mount a small tmpfs over /dev/shm"
    exit 77
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
TUTTI_TIMEOUT=30s timeout 120 unshare -m sh -c \
    'mount -t tmpfs -o size=3m tmpfs /dev/shm && exec "$0" -N 4 -b 1M -e 1M -n 1 -w 0' \
    "$perf" >"$out" 2>&1
rc=$?
cat "$out"
if [ $rc -eq 0 ] || [ $rc -ge 124 ]; then
    echo "FAIL: exit $rc: expected an error exit (not 0, a timeout or a signal)"
    exit 1
fi
for want in 'No space left on device' '/dev/shm has ' 'bytes free' 'shm-size'; do
    if ! grep -q -- "$want" "$out"; then
        echo "FAIL: the output does not say: $want"
        exit 1
    fi
done
echo "PASS: exit $rc with the reason named"
