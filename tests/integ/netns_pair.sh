# netns_pair.sh - sourced by the launcher tests (mpirun_hosts.sh, srun_hosts.sh): two network
# namespaces joined by a veth pair, "hosts" ${addr[0]} and ${addr[1]} (10.<net>.<tag>.1 and .2),
# named ${ns[0]} and ${ns[1]}, removed by netns_pair_down. netns_pair_up NET PREFIX.
netns_pair_up() {
    local net=$1 prefix=$2 tag=$(( $$ % 250 + 1 ))
    ns=("$prefix-$$-a" "$prefix-$$-b")
    veth=("${prefix:0:6}$$a" "${prefix:0:6}$$b")
    addr=("10.$net.$tag.1" "10.$net.$tag.2")
    ip netns add "${ns[0]}" && ip netns add "${ns[1]}" &&
        ip link add "${veth[0]}" type veth peer name "${veth[1]}" || return 1
    local i
    for i in 0 1; do
        ip link set "${veth[$i]}" netns "${ns[$i]}" &&
            ip -n "${ns[$i]}" addr add "${addr[$i]}/24" dev "${veth[$i]}" &&
            ip -n "${ns[$i]}" link set "${veth[$i]}" up &&
            ip -n "${ns[$i]}" link set lo up || return 1
    done
}
netns_pair_down() {
    local n
    for n in "${ns[@]}"; do ip netns delete "$n" 2>/dev/null; done
}
