#!/bin/bash
# srun_hosts.sh LAUNCH_PROG: a job started by Slurm's srun --mpi=pmix on two nodes, with a root
# address and no TUTTI_SECRET, is authenticated with a secret rank 0 handed out through Slurm's
# PMIx plugin (issue 36). The test runs its own cluster: slurmctld and a slurmd for node n1 in
# one network namespace, a slurmd for n2 in another (with its own /tmp: Slurm's PMIx plugin keeps
# per-node directories there), joined by a veth pair (netns_pair.sh), munge for authentication
# (started here when it is not running). Needs root, ip(8), nsenter and unshare (util-linux),
# and slurm-wlm; skips (77) saying so otherwise.
prog=$1
for t in ip nsenter unshare slurmctld slurmd srun munged; do
    if [ "$(id -u)" != 0 ] || ! command -v "$t" >/dev/null; then
        echo "SKIP: needs root, ip(8), nsenter, unshare and Slurm (slurm-wlm: slurmctld, slurmd, srun, munge); missing: $t"
        exit 77
    fi
done
. "$(dirname "$0")/netns_pair.sh"
work=$(mktemp -d /var/tmp/tutti-srun.XXXXXX) # not /tmp: n2 gets a /tmp of its own
munge_pid=""
cleanup() {
    local f
    for f in "$work"/*.pid; do [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
    sleep 0.5
    for f in "$work"/*.pid; do [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
    [ -n "$munge_pid" ] && kill "$munge_pid" 2>/dev/null
    netns_pair_down
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "== $f"; tail -5 "$f"; done; exit 1; }
netns_pair_up 80 tutti-sl || fail "cannot make the network namespaces"

# munge: Slurm's daemons and srun authenticate each other through it
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
    mkdir -p /run/munge && chown munge:munge /run/munge 2>/dev/null
    [ -s /etc/munge/munge.key ] || { mungekey --create 2>/dev/null || create-munge-key -f; } >/dev/null 2>&1
    runuser -u munge -- munged --pid-file=/run/munge/tutti-test.pid ||
        fail "munged does not start"
    munge_pid=$(cat /run/munge/tutti-test.pid 2>/dev/null)
    munge -n </dev/null | unmunge >/dev/null 2>&1 || fail "munge does not work"
fi

mkdir -p "$work/state" "$work/spool/n1" "$work/spool/n2"
cat >"$work/slurm.conf" <<CONF
ClusterName=tutti
SlurmctldHost=$(hostname -s)(${addr[0]})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool/%n
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.%n.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.%n.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
MpiDefault=none
ReturnToService=2
NodeName=n1 NodeAddr=${addr[0]} CPUs=2 State=UNKNOWN
NodeName=n2 NodeAddr=${addr[1]} CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF=$work/slurm.conf
A=(nsenter --net="/var/run/netns/${ns[0]}")
B=(nsenter --net="/var/run/netns/${ns[1]}")
"${A[@]}" slurmctld -f "$SLURM_CONF" || fail "slurmctld does not start"
"${A[@]}" slurmd -f "$SLURM_CONF" -N n1 || fail "slurmd n1 does not start"
"${B[@]}" unshare -m sh -c 'mount --make-rprivate / && mount -t tmpfs tutti-n2-tmp /tmp &&
    exec slurmd -f "$SLURM_CONF" -N n2' || fail "slurmd n2 does not start"
for _ in $(seq 60); do
    [ "$("${A[@]}" sinfo -h -N -o '%T' 2>/dev/null | grep -c idle)" = 2 ] && break
    sleep 0.5
done
[ "$("${A[@]}" sinfo -h -N -o '%T' 2>/dev/null | grep -c idle)" = 2 ] || fail "the nodes are not idle: $("${A[@]}" sinfo -N 2>&1)"

# The program and its libtutti go where n2 sees them too: its /tmp is its own, and the build
# may be under /tmp (CI clones there).
mkdir -p "$work/bin"
cp "$prog" "$work/bin/" || fail "cannot copy $prog"
lib=$(ldd "$prog" | awk '/libtutti/ { print $3 }')
[ -n "$lib" ] && cp -L "$lib" "$work/bin/" || fail "no libtutti for $prog: $(ldd "$prog" | grep tutti)"
port=$(( 20000 + $$ % 20000 ))
# (LD_LIBRARY_PATH in srun's own environment: --export=ALL,LD_LIBRARY_PATH=... does not replace
# one that is set already, as meson sets it)
LD_LIBRARY_PATH="$work/bin" timeout 120 "${A[@]}" srun -N 2 -n 2 --mpi=pmix --chdir="$work" \
    --export=ALL,TUTTI_LOG_LEVEL=info,TUTTI_ROOT="${addr[0]}:$port" \
    "$work/bin/$(basename "$prog")" >"$work/job.log" 2>&1
rc=$?
grep -E 'secret|launcher slurm|WARN|rank [01] of 2 ready' "$work/job.log"
[ $rc = 0 ] || { tail -20 "$work/job.log"; fail "srun exited $rc"; }
n=$(grep -c "the job's secret came from PMIx" "$work/job.log")
[ "$n" = 2 ] || fail "$n of 2 ranks say their secret came from PMIx"
! grep -q 'public job identifiers' "$work/job.log" || fail "a rank warned that its key is public"
hosts=$(grep -c '1 on this host' "$work/job.log")
[ "$hosts" = 2 ] || fail "the ranks do not see two hosts ($hosts say '1 on this host')"
echo "PASS: srun --mpi=pmix, 2 ranks on 2 Slurm nodes (namespaces): the secret came from Slurm's PMIx plugin, no warning"
