#!/usr/bin/env python3
"""Fabricate a DGX-A100-like hwloc v2 XML topology for unit-testing topology logic.

2 packages x 1 NUMA node x CORES cores x 2 PUs; per package 2 PCIe switches
(Broadcom PEX 1000:c010), each switch holding 2 GPUs (A100 10de:20b2, with
OSDevs cudaN [CoProc] and nvmlN [GPU]) and 2 HCAs (ConnectX-6 15b3:101b, class
0207 InfiniBand, with OSDevs ibpXs0 [Net] and mlx5_N [OpenFabrics]).
Adds NUMALatency (10/21) and an all-to-all NVLinkBandwidth matrix over the nvml
OSDevs (NVSwitch-style, 12 links x 25 GB/s = 300000 MB/s) like hwloc's NVML
backend does.  Usage: gen_dgx_xml.py [--cores N] [--gpus-per-switch N] > dgx.xml
Load with: HWLOC_XMLFILE=dgx.xml prog   or   hwloc_topology_set_xml(t, "dgx.xml")
(then hwloc_topology_is_thissystem() == 0; set HWLOC_THISSYSTEM=1 to pretend).

Origin: the project's shared file /work/shared/topology/gen_dgx_xml.py, copied here for the
topology tests (tests/topo/). Local change: --nvlink-pairs "0-4,1-5" links only those GPU pairs
(the NVLinkBandwidth matrix is all-to-all without it), to test rings on partial NVLink.
"""
import argparse

ap = argparse.ArgumentParser()
ap.add_argument("--cores", type=int, default=16, help="cores per package")
ap.add_argument("--gpus-per-switch", type=int, default=2)
ap.add_argument("--nics-per-switch", type=int, default=2)
ap.add_argument("--switches-per-package", type=int, default=2)
ap.add_argument("--nvlink-mbps", type=int, default=300000)
ap.add_argument("--nvlink-pairs", default="", help='only these GPU pairs, e.g. "0-4,1-5"')
a = ap.parse_args()

PKGS = 2
gp = [1]
def gpi():
    gp[0] += 1
    return gp[0]

def cpuset(bits):
    v = 0
    for b in bits:
        v |= 1 << b
    words = []
    while True:
        words.append(v & 0xFFFFFFFF)
        v >>= 32
        if not v:
            break
    # hwloc format: comma-separated 32-bit words, most significant first
    return ",".join("0x%08x" % w for w in reversed(words))

def sets(pus, nodes):
    cs, ns = cpuset(pus), cpuset(nodes)
    return f'cpuset="{cs}" complete_cpuset="{cs}" nodeset="{ns}" complete_nodeset="{ns}"'

L = []
ind = lambda d: "  " * d
npu = PKGS * a.cores * 2
allpus = list(range(npu))
L.append('<?xml version="1.0" encoding="UTF-8"?>')
L.append('<!DOCTYPE topology SYSTEM "hwloc2.dtd">')
L.append('<topology version="2.0">')
ms = cpuset(allpus)
mn = cpuset(range(PKGS))
L.append(f'{ind(1)}<object type="Machine" os_index="0" cpuset="{ms}" complete_cpuset="{ms}" allowed_cpuset="{ms}" '
         f'nodeset="{mn}" complete_nodeset="{mn}" allowed_nodeset="{mn}" gp_index="1">')
for k, v in [("DMIProductName", "DGXA100 (fabricated test topology)"), ("Backend", "Linux"),
             ("OSName", "Linux"), ("Architecture", "x86_64"), ("HostName", "fake-dgx")]:
    L.append(f'{ind(2)}<info name="{k}" value="{v}"/>')

nvml_gp = []
gpu = nic = 0
bus = 0x07
for p in range(PKGS):
    pus = [p * a.cores + c for c in range(a.cores)] + [npu // 2 + p * a.cores + c for c in range(a.cores)]
    L.append(f'{ind(2)}<object type="Package" os_index="{p}" {sets(pus, [p])} gp_index="{gpi()}">')
    L.append(f'{ind(3)}<info name="CPUVendor" value="AuthenticAMD"/><info name="CPUModel" value="AMD EPYC 7742 64-Core Processor"/>')
    L.append(f'{ind(3)}<object type="NUMANode" os_index="{p}" {sets(pus, [p])} gp_index="{gpi()}" local_memory="{512 << 30}"/>')
    L.append(f'{ind(3)}<object type="L3Cache" {sets(pus, [p])} gp_index="{gpi()}" cache_size="16777216" depth="3" cache_linesize="64" cache_associativity="16" cache_type="0">')
    for c in range(a.cores):
        t0, t1 = p * a.cores + c, npu // 2 + p * a.cores + c
        L.append(f'{ind(4)}<object type="Core" os_index="{p*a.cores+c}" {sets([t0,t1],[p])} gp_index="{gpi()}">')
        L.append(f'{ind(5)}<object type="PU" os_index="{t0}" {sets([t0],[p])} gp_index="{gpi()}"/>')
        L.append(f'{ind(5)}<object type="PU" os_index="{t1}" {sets([t1],[p])} gp_index="{gpi()}"/>')
        L.append(f'{ind(4)}</object>')
    L.append(f'{ind(3)}</object>')
    for s in range(a.switches_per_package):
        ndev = a.gpus_per_switch + a.nics_per_switch
        first, last = bus, bus + 1 + ndev
        # host bridge -> root port -> switch upstream port -> downstream ports -> endpoints
        L.append(f'{ind(3)}<object type="Bridge" gp_index="{gpi()}" bridge_type="0-1" depth="0" bridge_pci="0000:[{first:02x}-{last:02x}]">')
        L.append(f'{ind(4)}<object type="Bridge" gp_index="{gpi()}" bridge_type="1-1" depth="1" bridge_pci="0000:[{first:02x}-{last:02x}]" '
                 f'pci_busid="0000:{first-1:02x}:01.1" pci_type="0604 [1022:1483] [0000:0000] 00" pci_link_speed="31.507692">')
        L.append(f'{ind(5)}<object type="Bridge" gp_index="{gpi()}" bridge_type="1-1" depth="2" bridge_pci="0000:[{first+1:02x}-{last:02x}]" '
                 f'pci_busid="0000:{first:02x}:00.0" pci_type="0604 [1000:c010] [1000:a064] b0" pci_link_speed="31.507692">')
        for d in range(ndev):
            b = first + 1 + d
            L.append(f'{ind(6)}<object type="Bridge" gp_index="{gpi()}" bridge_type="1-1" depth="3" bridge_pci="0000:[{b+1:02x}-{b+1:02x}]" '
                     f'pci_busid="0000:{b:02x}:{d:02x}.0" pci_type="0604 [1000:c010] [1000:a064] b0" pci_link_speed="31.507692">')
            ep = f"0000:{b+1:02x}:00.0"
            if d < a.gpus_per_switch:
                L.append(f'{ind(7)}<object type="PCIDev" gp_index="{gpi()}" pci_busid="{ep}" pci_type="0302 [10de:20b2] [10de:147f] a1" pci_link_speed="31.507692">')
                L.append(f'{ind(8)}<info name="PCIVendor" value="NVIDIA Corporation"/><info name="PCIDevice" value="GA100 [A100 SXM4 80GB]"/>')
                L.append(f'{ind(8)}<object type="OSDev" gp_index="{gpi()}" name="cuda{gpu}" subtype="CUDA" osdev_type="5">'
                         f'<info name="Backend" value="CUDA"/><info name="GPUVendor" value="NVIDIA Corporation"/>'
                         f'<info name="GPUModel" value="NVIDIA A100-SXM4-80GB"/><info name="CUDAGlobalMemorySize" value="83886080"/></object>')
                g = gpi(); nvml_gp.append(g)
                L.append(f'{ind(8)}<object type="OSDev" gp_index="{g}" name="nvml{gpu}" subtype="NVML" osdev_type="1">'
                         f'<info name="Backend" value="NVML"/><info name="GPUModel" value="NVIDIA A100-SXM4-80GB"/>'
                         f'<info name="NVIDIAUUID" value="GPU-00000000-0000-0000-0000-00000000000{gpu}"/></object>')
                gpu += 1
            else:
                L.append(f'{ind(7)}<object type="PCIDev" gp_index="{gpi()}" pci_busid="{ep}" pci_type="0207 [15b3:101b] [15b3:0006] 00" pci_link_speed="31.507692">')
                L.append(f'{ind(8)}<info name="PCIVendor" value="Mellanox Technologies"/><info name="PCIDevice" value="MT28908 Family [ConnectX-6]"/>')
                L.append(f'{ind(8)}<object type="OSDev" gp_index="{gpi()}" name="ibp{b+1}s0" osdev_type="2">'
                         f'<info name="Address" value="00:00:10:29:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:00:00:{nic:02x}"/><info name="Port" value="1"/></object>')
                L.append(f'{ind(8)}<object type="OSDev" gp_index="{gpi()}" name="mlx5_{nic}" osdev_type="3">'
                         f'<info name="NodeGUID" value="0c42:a103:0000:00{nic:02x}"/><info name="SysImageGUID" value="0c42:a103:0000:00{nic:02x}"/>'
                         f'<info name="Port1State" value="4"/><info name="Port1LID" value="0x{nic+1:x}"/><info name="Port1LMC" value="0"/>'
                         f'<info name="Port1GID0" value="fe80:0000:0000:0000:0c42:a103:0000:00{nic:02x}"/></object>')
                nic += 1
            L.append(f'{ind(7)}</object>')
            L.append(f'{ind(6)}</object>')
        L.append(f'{ind(5)}</object>')
        L.append(f'{ind(4)}</object>')
        L.append(f'{ind(3)}</object>')
        bus = last + 0x30
    L.append(f'{ind(2)}</object>')
L.append(f'{ind(1)}</object>')

def vals(tag, items):
    s = " ".join(str(x) for x in items) + " "
    return f'{ind(2)}<{tag} length="{len(s)}">{s}</{tag}>'

# NUMA latency (os indexing), kind 5 = FROM_OS|MEANS_LATENCY
L.append(f'{ind(1)}<distances2 type="NUMANode" nbobjs="{PKGS}" kind="5" name="NUMALatency" indexing="os">')
L.append(vals("indexes", range(PKGS)))
L.append(vals("u64values", [10 if i == j else 21 for i in range(PKGS) for j in range(PKGS)]))
L.append(f'{ind(1)}</distances2>')
# NVLink bandwidth between nvml OSDevs (gp indexing), kind 9 = FROM_OS|MEANS_BANDWIDTH
n = len(nvml_gp)
L.append(f'{ind(1)}<distances2 type="OSDev" nbobjs="{n}" kind="9" name="NVLinkBandwidth" indexing="gp">')
L.append(vals("indexes", nvml_gp))
pairs = set()
for p in filter(None, a.nvlink_pairs.split(",")):
    x, y = (int(v) for v in p.split("-"))
    pairs |= {(x, y), (y, x)}
def bw(i, j):
    return 0 if i == j or (pairs and (i, j) not in pairs) else a.nvlink_mbps
L.append(vals("u64values", [bw(i, j) for i in range(n) for j in range(n)]))
L.append(f'{ind(1)}</distances2>')
L.append('</topology>')
print("\n".join(L))
