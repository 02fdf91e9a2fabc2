# netns_hosts.sh - sourced by the perf scripts (link_efficiency.sh, hosts_bench.sh): network
# namespaces as hosts, tbf shaping, and tutti jobs launched rank by rank across them.
#
# nsh_make NAME N SUBNET makes N namespaces tutti-NAME-<pid>-a, -b, ... (nsh_ns), each with one
# veth end named $NSH_IF holding SUBNET.<i+1>/24 (nsh_addr). Two hosts are joined by a veth pair,
# more by a bridge in a namespace of its own (tutti-NAME-<pid>-br). The links are made inside the
# namespaces, so the root namespace holds no link and no address of ours. nsh_cleanup stops what
# runs in the namespaces and removes them; nsh_trap runs it on exit, also after a failure.

NSH_IF=veth0
nsh_ns=()
nsh_addr=()
nsh_br=""

nsh_make() { # NAME N SUBNET
  local name="$1" n="$2" subnet="$3" i letters=abcdefghijklmnopqrstuvwxyz
  [ "$n" -ge 2 ] && [ "$n" -le 26 ] || { echo "nsh_make: 2..26 hosts, not $n" >&2; return 2; }
  for ((i = 0; i < n; i++)); do
    nsh_ns+=("tutti-$name-$$-${letters:$i:1}")
    nsh_addr+=("$subnet.$((i + 1))")
    ip netns add "${nsh_ns[$i]}"
  done
  if [ "$n" = 2 ]; then
    ip -n "${nsh_ns[0]}" link add "$NSH_IF" type veth peer name "$NSH_IF" netns "${nsh_ns[1]}"
  else
    nsh_br="tutti-$name-$$-br"
    ip netns add "$nsh_br"
    ip -n "$nsh_br" link add br0 type bridge
    ip -n "$nsh_br" link set br0 up
    for ((i = 0; i < n; i++)); do
      ip -n "${nsh_ns[$i]}" link add "$NSH_IF" type veth peer name "h$i" netns "$nsh_br"
      ip -n "$nsh_br" link set "h$i" master br0 up
    done
  fi
  for ((i = 0; i < n; i++)); do
    ip -n "${nsh_ns[$i]}" addr add "${nsh_addr[$i]}/24" dev "$NSH_IF"
    ip -n "${nsh_ns[$i]}" link set "$NSH_IF" up
    ip -n "${nsh_ns[$i]}" link set lo up
  done
}

# nsh_trap DIR: on exit (also after a failure or INT/TERM), nsh_cleanup and remove DIR.
nsh_work=""
nsh_trap() {
  nsh_work="$1"
  trap 'nsh_cleanup; [ -z "$nsh_work" ] || rm -rf "$nsh_work"' EXIT
  trap 'exit 130' INT TERM
}

nsh_cleanup() {
  local n p
  for n in "${nsh_ns[@]}" $nsh_br; do # what runs in the namespaces, then the namespaces
    for p in $(ip netns pids "$n" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
    ip netns delete "$n" 2>/dev/null || true # takes its veth ends along
  done
}

# nsh_shape RATE: "tc qdisc add dev veth0 root tbf rate RATE burst 1mb latency 10ms" on every
# host's veth end (its egress: what the host sends); RATE "raw": no qdisc.
nsh_shape() {
  local i
  for i in "${!nsh_ns[@]}"; do
    ip netns exec "${nsh_ns[$i]}" tc qdisc del dev "$NSH_IF" root 2>/dev/null || true
    [ "$1" = raw ] && continue
    ip netns exec "${nsh_ns[$i]}" tc qdisc add dev "$NSH_IF" root tbf rate "$1" burst 1mb latency 10ms
  done
}

nsh_tx() { # HOST: bytes its veth end has transmitted
  ip netns exec "${nsh_ns[$1]}" cat "/sys/class/net/$NSH_IF/statistics/tx_bytes"
}

# The host of rank R with PER ranks per host: "block" (0,0,1,1,...) or "cyclic" (0,1,0,1,...).
nsh_host_of() { # R PER PLACEMENT
  if [ "$3" = cyclic ]; then echo $(($1 % ${#nsh_ns[@]})); else echo $(($1 / $2)); fi
}

# nsh_launch DIR N PER PLACEMENT CMD...: one job of N tutti ranks, PER per host, launched as a
# launcher would (TUTTI_RANK, TUTTI_NRANKS, TUTTI_ROOT on host 0's address, a fresh
# TUTTI_SECRET, TUTTI_SOCKET_IFNAME=veth0), each under `timeout ${NSH_TIMEOUT:-600}` with its
# output in DIR/rank<r>.txt. Every rank gets the environment nsh_env (settings that must be
# equal on every rank), rank 0 also nsh_rank0_env and the arguments nsh_rank0_args. Returns 0
# when every rank exited with 0, else the first failure's status.
nsh_env=()
nsh_rank0_env=()
nsh_rank0_args=()
nsh_launch() {
  # The root's port lies below Linux's ephemeral range (32768 up): a port from inside it was
  # now and then a connection's local port already, and rank 0 could not listen on it.
  local dir="$1" n="$2" per="$3" place="$4" r h p rc=0 st secret port=$((12000 + RANDOM % 20000))
  shift 4
  secret="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  local pids=()
  for ((r = 0; r < n; r++)); do
    local env0=() args0=()
    [ "$r" = 0 ] && env0=("${nsh_rank0_env[@]}") && args0=("${nsh_rank0_args[@]}")
    h=$(nsh_host_of "$r" "$per" "$place")
    # nsenter, not `ip netns exec`: that one also gives every process its own mount namespace,
    # which makes each rank a host of its own to tutti (its host id includes the namespaces).
    nsenter --net="/run/netns/${nsh_ns[$h]}" env TUTTI_RANK="$r" TUTTI_NRANKS="$n" \
      TUTTI_ROOT="${nsh_addr[0]}:$port" TUTTI_SECRET="$secret" TUTTI_SOCKET_IFNAME="$NSH_IF" \
      "${nsh_env[@]}" "${env0[@]}" timeout -k 5 "${NSH_TIMEOUT:-600}" "$@" "${args0[@]}" >"$dir/rank$r.txt" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do
    st=0
    wait "$p" || st=$?
    [ "$rc" != 0 ] || rc=$st
  done
  return "$rc"
}
