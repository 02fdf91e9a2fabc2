#!/bin/bash
# mpirun_hosts.sh LAUNCH_PROG: a job started by Open MPI's mpirun on two hosts, with a root
# address and no TUTTI_SECRET, is authenticated with a secret rank 0 handed out through mpirun's
# PMIx server (issue 36), not a key derived from public job identifiers. The two hosts are
# network namespaces joined by a veth pair (10.79.<tag>.1 and .2, netns_pair.sh); mpirun runs in the first and
# starts its daemon in the second through a launch agent (what ssh does between real hosts),
# and the daemons connect over the veth pair. Then the same job with TUTTI_PMIX=0 warns that
# the key is public: the test can tell the two apart. Needs root, ip(8) and mpirun; skips (77)
# saying so otherwise.
prog=$1
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v mpirun >/dev/null; then
    echo "SKIP: needs root, ip(8) (network namespaces) and mpirun (openmpi-bin)"
    exit 77
fi
. "$(dirname "$0")/netns_pair.sh"
work=$(mktemp -d)
cleanup() {
    netns_pair_down
    rm -rf "$work"
}
trap cleanup EXIT
netns_pair_up 79 tutti-mh || { echo "FAIL: cannot make the network namespaces"; exit 1; }
# The launch agent: "agent [options] HOST COMMAND..." runs COMMAND in HOST's namespace.
cat >"$work/agent" <<AGENT
#!/bin/sh
while [ "\${1#-}" != "\$1" ]; do shift; done
host=\$1; shift
case "\$host" in
    ${addr[0]}) n=${ns[0]} ;;
    ${addr[1]}) n=${ns[1]} ;;
    *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
echo "agent: \$host in \$n" >>"$work/agent.log"
exec ip netns exec "\$n" sh -c "\$*"
AGENT
chmod +x "$work/agent"
port=$(( 20000 + $$ % 20000 ))
job() { # job OUT [VAR=VALUE...]: mpirun with its own environment additions
    local out=$1
    shift
    env "$@" timeout 120 ip netns exec "${ns[0]}" mpirun --allow-run-as-root \
        --host "${addr[0]},${addr[1]}" -np 2 --mca plm_rsh_agent "$work/agent" \
        -x PATH -x TUTTI_LOG_LEVEL=info -x TUTTI_ROOT="${addr[0]}:$port" -x TUTTI_PMIX \
        "$prog" >"$out" 2>&1
}
fail() { echo "FAIL: $*"; exit 1; }
TUTTI_PMIX=1 job "$work/pmix"
rc=$?
grep -E 'secret|launcher mpirun|WARN|rank [01] of 2 ready' "$work/pmix"
[ $rc = 0 ] || { tail -20 "$work/pmix"; fail "the job exited $rc"; }
grep -q "agent: ${addr[1]} in ${ns[1]}" "$work/agent.log" ||
    fail "mpirun did not start the second host through the agent: $(cat "$work/agent.log")"
n=$(grep -c "the job's secret came from PMIx" "$work/pmix")
[ "$n" = 2 ] || fail "$n of 2 ranks say their secret came from PMIx"
! grep -q 'public job identifiers' "$work/pmix" || fail "a rank warned that its key is public"
hosts=$(grep -c '1 on this host' "$work/pmix")
[ "$hosts" = 2 ] || fail "the ranks do not see two hosts ($hosts say '1 on this host')"
port=$((port + 1))
TUTTI_PMIX=0 job "$work/public"
rc=$?
[ $rc = 0 ] || { tail -20 "$work/public"; fail "the job with TUTTI_PMIX=0 exited $rc"; }
grep -q 'public job identifiers' "$work/public" || fail "TUTTI_PMIX=0: no warning of a public key"
echo "PASS: 2 ranks on 2 hosts (namespaces) took their secret from mpirun's PMIx server, no warning; with TUTTI_PMIX=0 the key is public and they say so"
