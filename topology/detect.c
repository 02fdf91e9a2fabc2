/*
 * detect.c - one machine with hwloc, live or from an hwloc XML file: packages, NUMA nodes,
 * cores, the hardware threads this process may use, and the I/O side reduced to what schedules
 * need: PCIe switches and host bridges, GPUs and NICs with their package, NUMA node, switch and
 * host bridge, NVLink between GPUs (the file's NVLinkBandwidth matrix; live: NVML, nvml.c) and
 * each GPU's nearest NIC. The process's own machine is loaded once (tutti__topo) from
 * TUTTI_TOPO_FILE or by detection; when hwloc fails, sysconf's CPU count stands in.
 */
#include "topology/topo.h"
#include "topology/host_share.h"
#include "topology/xml_probe.h"
#include "base/check.h"
#include "base/env.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <hwloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PCI_VENDOR_NVIDIA 0x10de
#define MAX_BRIDGES       64 /* switches and host bridges numbered per machine */

/* Bridges seen during one load, numbered in the order found (per load, on the stack). */
struct bridges {
    hwloc_obj_t obj[MAX_BRIDGES];
    int n;
};

static int bridge_index(struct bridges *b, hwloc_obj_t o)
{
    for (int i = 0; i < b->n; i++) {
        if (b->obj[i] == o) {
            return i;
        }
    }
    if (b->n == MAX_BRIDGES) {
        return -1;
    }
    b->obj[b->n] = o;
    return b->n++;
}

/* A PCIe switch: its upstream port is a PCI-to-PCI bridge with two or more downstream ports. */
static int is_switch(hwloc_obj_t o)
{
    if (o->type != HWLOC_OBJ_BRIDGE || o->attr->bridge.upstream_type != HWLOC_OBJ_BRIDGE_PCI) {
        return 0;
    }
    int ports = 0;
    for (hwloc_obj_t c = o->io_first_child; c != NULL; c = c->next_sibling) {
        ports += c->type == HWLOC_OBJ_BRIDGE;
    }
    return ports >= 2;
}

static int is_host_bridge(hwloc_obj_t o)
{
    return o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

/* An OS device of the given type (and subtype, when not NULL) below PCI device o, or NULL. */
static hwloc_obj_t osdev(hwloc_obj_t o, hwloc_obj_osdev_type_t type, const char *subtype)
{
    for (hwloc_obj_t c = o->io_first_child; c != NULL; c = c->next_sibling) {
        if (c->type == HWLOC_OBJ_OS_DEVICE && c->attr->osdev.type == type && c->name != NULL &&
            (subtype == NULL || (c->subtype != NULL && strcmp(c->subtype, subtype) == 0))) {
            return c;
        }
    }
    return NULL;
}

/*
 * A GPU is an NVIDIA display controller, or a device hwloc's CUDA or NVML backend reported
 * (those report NVIDIA devices only, even where a file's PCI ids are blank). Other coprocessors
 * (OpenCL on an AMD GPU, a Xeon Phi, a NEC vector engine) are not GPUs tutti can use.
 */
static int is_gpu(hwloc_obj_t o)
{
    unsigned cls = o->attr->pcidev.class_id >> 8;
    return (cls == 0x03 && o->attr->pcidev.vendor_id == PCI_VENDOR_NVIDIA) ||
           osdev(o, HWLOC_OBJ_OSDEV_COPROC, "CUDA") != NULL ||
           osdev(o, HWLOC_OBJ_OSDEV_GPU, "NVML") != NULL;
}

/* A NIC that this host can name: it has a network interface or an RDMA device. */
static int has_port(hwloc_obj_t o)
{
    return osdev(o, HWLOC_OBJ_OSDEV_OPENFABRICS, NULL) != NULL ||
           osdev(o, HWLOC_OBJ_OSDEV_NETWORK, NULL) != NULL;
}

static int is_nic(hwloc_obj_t o)
{
    return (o->attr->pcidev.class_id >> 8) == 0x02 || has_port(o);
}

/*
 * The NUMA node of nodeset ns: its only node, else its only ordinary memory node (no subtype,
 * or "DRAM"), leaving out GPU memory, MCDRAM/HBM and NVM; NULL if none or several.
 */
static hwloc_obj_t dram_node(hwloc_topology_t topo, hwloc_const_nodeset_t ns)
{
    if (hwloc_bitmap_weight(ns) == 1) {
        return hwloc_get_numanode_obj_by_os_index(topo, (unsigned)hwloc_bitmap_first(ns));
    }
    hwloc_obj_t found = NULL;
    for (int i = hwloc_bitmap_first(ns); i >= 0; i = hwloc_bitmap_next(ns, i)) {
        hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(topo, (unsigned)i);
        if (n != NULL && (n->subtype == NULL || strcmp(n->subtype, "DRAM") == 0)) {
            if (found != NULL) {
                return NULL;
            }
            found = n;
        }
    }
    return found;
}

/* Logical index of the object of `type` that holds all of o's CPUs, -1 if none or several. */
static int cpu_ancestor(hwloc_topology_t topo, hwloc_obj_t o, hwloc_obj_type_t type)
{
    hwloc_obj_t a = hwloc_get_non_io_ancestor_obj(topo, o);
    if (a == NULL || a->cpuset == NULL) {
        return -1;
    }
    if (type == HWLOC_OBJ_NUMANODE) {
        hwloc_obj_t n = a->nodeset != NULL ? dram_node(topo, a->nodeset) : NULL;
        return n != NULL ? (int)n->logical_index : -1;
    }
    hwloc_obj_t p = a->type == type ? a : hwloc_get_ancestor_obj_by_type(topo, type, a);
    if (p == NULL && hwloc_get_nbobjs_by_type(topo, type) == 1) {
        p = hwloc_get_obj_by_type(topo, type, 0); /* I/O hung off the machine, one package */
    }
    return p != NULL ? (int)p->logical_index : -1;
}

static void fill_dev(hwloc_topology_t topo, hwloc_obj_t o, struct bridges *sw, struct bridges *hb,
                     struct tutti_topo_dev *d)
{
    memset(d, 0, sizeof(*d));
    const struct hwloc_pcidev_attr_s *p = &o->attr->pcidev;
    snprintf(d->busid, sizeof(d->busid), "%04x:%02x:%02x.%x", p->domain, p->bus, p->dev, p->func);
    d->package = cpu_ancestor(topo, o, HWLOC_OBJ_PACKAGE);
    d->numa = cpu_ancestor(topo, o, HWLOC_OBJ_NUMANODE);
    d->pci_switch = d->host_bridge = d->nic = -1;
    d->nic_link = TUTTI_LINK_COUNT;
    for (hwloc_obj_t a = o->parent; a != NULL && a->type == HWLOC_OBJ_BRIDGE; a = a->parent) {
        if (d->pci_switch < 0 && is_switch(a)) {
            d->pci_switch = bridge_index(sw, a);
        }
        if (is_host_bridge(a)) {
            d->host_bridge = bridge_index(hb, a);
        }
    }
}

static void name_gpu(hwloc_obj_t o, struct tutti_topo_dev *d)
{
    hwloc_obj_t os = osdev(o, HWLOC_OBJ_OSDEV_COPROC, "CUDA");
    if (os == NULL) {
        os = osdev(o, HWLOC_OBJ_OSDEV_GPU, NULL);
    }
    snprintf(d->name, sizeof(d->name), "%s", os != NULL ? os->name : d->busid);
}

static void name_nic(hwloc_obj_t o, struct tutti_topo_dev *d)
{
    hwloc_obj_t of = osdev(o, HWLOC_OBJ_OSDEV_OPENFABRICS, NULL);
    hwloc_obj_t net = osdev(o, HWLOC_OBJ_OSDEV_NETWORK, NULL);
    d->rdma = of != NULL;
    d->port = of != NULL || net != NULL;
    snprintf(d->name, sizeof(d->name), "%s",
             of != NULL    ? of->name
             : net != NULL ? net->name
                           : d->busid);
    if (of != NULL && net != NULL) {
        snprintf(d->alias, sizeof(d->alias), "%s", net->name);
    }
}

static void keep_nic(hwloc_topology_t topo, hwloc_obj_t o, struct bridges *sw, struct bridges *hb,
                     struct tutti_topo *t)
{
    if (t->nnics < TUTTI_TOPO_MAX_NICS) {
        fill_dev(topo, o, sw, hb, &t->nic[t->nnics]);
        name_nic(o, &t->nic[t->nnics++]);
    }
    t->nics_seen++;
}

/*
 * GPUs and NICs, the PCI counts. NICs with a network interface or RDMA device come first, then
 * the network functions this host has no port on (SR-IOV virtual functions left for guests,
 * usNIC functions), so that those never push a usable NIC out of the bounded list.
 */
static void walk_pci(hwloc_topology_t topo, struct tutti_topo *t)
{
    struct bridges sw = {.n = 0}, hb = {.n = 0};
    for (hwloc_obj_t b = NULL; (b = hwloc_get_next_bridge(topo, b)) != NULL;) {
        if (is_switch(b)) {
            bridge_index(&sw, b);
        } else if (is_host_bridge(b)) {
            bridge_index(&hb, b);
        }
    }
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_pcidev(topo, o)) != NULL;) {
        t->pci_devices++;
        if (is_gpu(o)) {
            if (t->ngpus < TUTTI_TOPO_MAX_GPUS) {
                fill_dev(topo, o, &sw, &hb, &t->gpu[t->ngpus]);
                name_gpu(o, &t->gpu[t->ngpus++]);
            }
            t->gpus_seen++;
        } else if (is_nic(o) && has_port(o)) {
            keep_nic(topo, o, &sw, &hb, t);
        }
    }
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_pcidev(topo, o)) != NULL;) {
        if (!is_gpu(o) && is_nic(o) && !has_port(o)) {
            keep_nic(topo, o, &sw, &hb, t);
        }
    }
    t->pci_switches = sw.n;
    t->host_bridges = hb.n;
}

/* The GPU whose PCI device is o or holds OS device o; -1 if none. */
static int gpu_of(const struct tutti_topo *t, hwloc_obj_t o)
{
    while (o != NULL && o->type != HWLOC_OBJ_PCI_DEVICE) {
        o = o->parent;
    }
    if (o == NULL) {
        return -1;
    }
    char busid[TUTTI_TOPO_NAME];
    const struct hwloc_pcidev_attr_s *p = &o->attr->pcidev;
    snprintf(busid, sizeof(busid), "%04x:%02x:%02x.%x", p->domain, p->bus, p->dev, p->func);
    for (int g = 0; g < t->ngpus; g++) {
        if (strcmp(t->gpu[g].busid, busid) == 0) {
            return g;
        }
    }
    return -1;
}

/* NVLink from the NVLinkBandwidth matrix hwloc's NVML backend writes (kept in XML files). */
static void nvlink_from_distances(hwloc_topology_t topo, struct tutti_topo *t)
{
    unsigned nr = 1;
    struct hwloc_distances_s *d = NULL;
    if (hwloc_distances_get_by_name(topo, "NVLinkBandwidth", &nr, &d, 0) != 0 || nr == 0) {
        return;
    }
    for (unsigned i = 0; i < d->nbobjs; i++) {
        int gi = gpu_of(t, d->objs[i]);
        for (unsigned j = 0; j < d->nbobjs && gi >= 0; j++) {
            int gj = gpu_of(t, d->objs[j]);
            if (gj >= 0 && gj != gi && d->values[i * d->nbobjs + j] > 0) {
                t->gpu[gi].nvlink |= 1u << gj;
                t->gpu[gj].nvlink |= 1u << gi;
                t->nvlink_source = 1;
            }
        }
    }
    hwloc_distances_release(topo, d);
}

/* How close two PCI devices of one machine are. */
static tutti_link_t dev_link(const struct tutti_topo_dev *a, const struct tutti_topo_dev *b)
{
    struct tutti_topo_place pa = {a->package, a->numa, a->pci_switch, a->host_bridge};
    struct tutti_topo_place pb = {b->package, b->numa, b->pci_switch, b->host_bridge};
    return tutti__topo_place_link(&pa, &pb);
}

/*
 * Each GPU's nearest NIC: the closest link; among equals an RDMA NIC, then one with a port on
 * this host, then the one fewer GPUs chose so far (two GPUs and two NICs under one switch get
 * one NIC each), then the first.
 */
static void pick_nics(struct tutti_topo *t)
{
    int load[TUTTI_TOPO_MAX_NICS] = {0};
    for (int g = 0; g < t->ngpus; g++) {
        struct tutti_topo_dev *gpu = &t->gpu[g];
        for (int n = 0; n < t->nnics; n++) {
            tutti_link_t l = dev_link(gpu, &t->nic[n]);
            int better = gpu->nic < 0 || l < gpu->nic_link;
            if (!better && l == gpu->nic_link) {
                const struct tutti_topo_dev *cur = &t->nic[gpu->nic];
                const struct tutti_topo_dev *cand = &t->nic[n];
                better = cand->rdma != cur->rdma   ? cand->rdma > cur->rdma
                         : cand->port != cur->port ? cand->port > cur->port
                                                   : load[n] < load[gpu->nic];
            }
            if (better) {
                gpu->nic = n;
                gpu->nic_link = l;
            }
        }
        if (gpu->nic >= 0) {
            load[gpu->nic]++;
        }
    }
}

/* Where this process may run: one package / NUMA node, or -1. Live machines only. */
static void cpu_locality(hwloc_topology_t topo, struct tutti_topo *t)
{
    t->cpu_package = t->cpu_numa = -1;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set != NULL && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
        hwloc_obj_t o = hwloc_get_obj_covering_cpuset(topo, set);
        if (o != NULL) {
            t->cpu_package = cpu_ancestor(topo, o, HWLOC_OBJ_PACKAGE);
            t->cpu_numa = cpu_ancestor(topo, o, HWLOC_OBJ_NUMANODE);
        }
    }
    hwloc_bitmap_free(set);
}

/* Each PU's package and NUMA node, for ranks placed from a shared detection (host_share.h). */
static void map_pus(hwloc_topology_t topo, struct tutti_topo_pus *m)
{
    m->n = 0;
    int npu = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    for (int i = 0; i < npu; i++) {
        hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned)i);
        if (pu == NULL || pu->os_index >= TUTTI_TOPO_MAX_PUS) {
            continue;
        }
        for (int k = m->n; k < (int)pu->os_index; k++) {
            m->package[k] = m->numa[k] = -1; /* holes in the OS numbering */
        }
        m->n = TUTTI_MAX(m->n, (int)pu->os_index + 1);
        m->package[pu->os_index] = (int16_t)cpu_ancestor(topo, pu, HWLOC_OBJ_PACKAGE);
        m->numa[pu->os_index] = (int16_t)cpu_ancestor(topo, pu, HWLOC_OBJ_NUMANODE);
    }
}

static void fallback(struct tutti_topo *t)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    t->pus = t->cores = n > 0 ? (int)n : 1;
    t->packages = t->numa_nodes = 1;
    t->cpu_package = t->cpu_numa = -1;
    cpu_set_t set;
    int ok = sched_getaffinity(0, sizeof(set), &set) == 0;
    t->allowed_pus = ok ? CPU_COUNT(&set) : t->pus;
    t->first_pu = -1;
    for (int c = 0; ok && c < CPU_SETSIZE && t->first_pu < 0; c++) {
        t->first_pu = CPU_ISSET(c, &set) ? c : -1;
    }
}

/* The kernel this process runs on: its boot id (else the host name), hashed (FNV-1a). Every
 * network namespace and container of a machine shares it, and with it the machine's CPUs. */
static uint64_t machine_id(void)
{
    char id[256] = {0};
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f == NULL || fgets(id, sizeof(id), f) == NULL) {
        (void)gethostname(id, sizeof(id) - 1);
    }
    if (f != NULL) {
        fclose(f);
    }
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = id; *p != '\0'; p++) {
        h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
    }
    return h;
}

/* The settings of every topology tutti loads (also in the probe process of xml_probe.c). */
static void configure(hwloc_topology_t topo)
{
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    /* GPUs come from PCI and NVML: leave out the OpenCL and OpenGL plugins, which load vendor
     * ICDs and X11 (slow, and the ICD loader leaks what valgrind and LSan then report). */
    (void)hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "opencl");
    (void)hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "gl");
}

/* Why hwloc would not load `xml` (or the buffer, or this machine); e: hwloc's errno. */
static tutti_status_t refused(const char *xml, const char *buf, int e, char *err, size_t len)
{
    if (xml != NULL) {
        snprintf(err, len,
                 "topology file %s is not a valid hwloc XML topology (hwloc: %s; "
                 "`lstopo --input %s` shows hwloc's reason)",
                 xml, strerror(e), xml);
    } else if (buf != NULL) {
        snprintf(err, len, "not a valid hwloc XML topology (hwloc: %s)", strerror(e));
    } else {
        snprintf(err, len, "hwloc could not detect this machine: %s", strerror(e));
    }
    return xml != NULL || buf != NULL ? TUTTI_ERR_INVALID_ARG : TUTTI_ERR_SYSTEM;
}

/*
 * An hwloc topology with the I/O objects kept: live, from the file `xml` (checked for a clear
 * error), or from the XML text buf[0..buflen) when buf is not NULL. A file or buffer is tried
 * in a probe process first (xml_probe.c); one that hwloc refuses there is not loaded here.
 */
static tutti_status_t open_topology(const char *xml, const char *buf, size_t buflen,
                                    hwloc_topology_t *topo_p, char *err, size_t len)
{
    if (xml != NULL) {
        FILE *f = fopen(xml, "r");
        if (f == NULL) {
            snprintf(err, len, "topology file %s: %s", xml, strerror(errno));
            return TUTTI_ERR_INVALID_ARG;
        }
        fclose(f);
    }
    if (xml != NULL || buf != NULL) {
        int hwloc_errno = 0;
        int probe = tutti__topo_xml_probe(xml, buf, buflen, configure, &hwloc_errno, err, len);
        if (probe == TUTTI_TOPO_PROBE_FAILED) {
            return TUTTI_ERR_INVALID_ARG;
        }
        if (probe == TUTTI_TOPO_PROBE_REFUSED) {
            return refused(xml, buf, hwloc_errno, err, len);
        }
    }
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) {
        snprintf(err, len, "hwloc_topology_init: %s", strerror(errno));
        return TUTTI_ERR_SYSTEM;
    }
    configure(topo);
    /* hwloc parses the file in set_xml (errno EINVAL) or in load: one message for both. */
    if ((buf != NULL && hwloc_topology_set_xmlbuffer(topo, buf, (int)buflen) != 0) ||
        (xml != NULL && hwloc_topology_set_xml(topo, xml) != 0) || hwloc_topology_load(topo) != 0) {
        int e = errno;
        hwloc_topology_destroy(topo);
        return refused(xml, buf, e, err, len);
    }
    *topo_p = topo;
    return TUTTI_OK;
}

static tutti_status_t load(const char *xml, const char *buf, size_t buflen, struct tutti_topo *t,
                           struct tutti_topo_pus *pus)
{
    memset(t, 0, sizeof(*t));
    fallback(t);
    snprintf(t->source, sizeof(t->source), "%s",
             xml != NULL   ? xml
             : buf != NULL ? "an XML buffer"
                           : "this machine");
    int live = xml == NULL && buf == NULL;
    t->from_file = !live;
    hwloc_topology_t topo;
    tutti_status_t st = open_topology(xml, buf, buflen, &topo, t->error, sizeof(t->error));
    if (st != TUTTI_OK) {
        return st;
    }
    t->ok = 1;
    t->packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    t->numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    t->cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    t->pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    if (live) {
        cpu_locality(topo, t);
        if (pus != NULL) {
            map_pus(topo, pus);
        }
    } else {
        t->allowed_pus = t->pus; /* the file's machine, not ours */
        t->first_pu = 0;
    }
    walk_pci(topo, t);
    nvlink_from_distances(topo, t);
    hwloc_topology_destroy(topo);
    if (live) {
        tutti__topo_nvml(t);
    } else {
        snprintf(t->nvml_note, sizeof(t->nvml_note), "not asked (topology from a file)");
    }
    pick_nics(t);
    return TUTTI_OK;
}

tutti_status_t tutti__topo_load(const char *xml, struct tutti_topo *t)
{
    return load(xml, NULL, 0, t, NULL);
}

tutti_status_t tutti__topo_load_buffer(const char *buf, size_t len, struct tutti_topo *t)
{
    return load(NULL, buf, len, t, NULL);
}

tutti_status_t tutti__topo_dump(const char *xml, const char *out, char *err, size_t errlen)
{
    hwloc_topology_t topo;
    TUTTI_CHECK(open_topology(xml, NULL, 0, &topo, err, errlen));
    tutti_status_t st = TUTTI_OK;
    if (hwloc_topology_export_xml(topo, out, 0) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", out, strerror(errno));
        st = TUTTI_ERR_SYSTEM;
    }
    hwloc_topology_destroy(topo);
    return st;
}

void tutti__topo_place(struct tutti_topo *t, const struct tutti_topo_pus *pus)
{
    struct tutti_topo mine;
    fallback(&mine); /* this process's affinity */
    t->allowed_pus = mine.allowed_pus;
    t->first_pu = mine.first_pu;
    t->cpu_package = t->cpu_numa = -1;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        return;
    }
    int package = -2, numa = -2; /* -2: no PU seen yet; -1: several, or unknown */
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set)) {
            continue;
        }
        int p = c < pus->n ? pus->package[c] : -1, n = c < pus->n ? pus->numa[c] : -1;
        package = package == -2 || package == p ? p : -1;
        numa = numa == -2 || numa == n ? n : -1;
    }
    t->cpu_package = TUTTI_MAX(package, -1);
    t->cpu_numa = TUTTI_MAX(numa, -1);
}

/* The process's own machine, filled once by load_process. Not in tutti__g (global.h) with
 * the rest of the process state: topology/ sits below src/ and includes only its base layer. */
static struct tutti_topo process_topo;
static pthread_mutex_t process_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int process_loaded;

static tutti_status_t detect_live(struct tutti_topo *t, struct tutti_topo_pus *pus)
{
    return load(NULL, NULL, 0, t, pus);
}

static void load_process(const char *share)
{
    struct tutti_topo *t = &process_topo;
    const char *file = tutti__env()->TOPO_FILE;
    if (file[0] == '\0' && share != NULL) {
        (void)tutti__topo_share(share, detect_live, t);
        if (!t->ok) {
            tutti_warn("%s", t->error);
        }
    } else if (tutti__topo_load(file[0] != '\0' ? file : NULL, t) != TUTTI_OK && !t->from_file) {
        tutti_warn("%s", t->error); /* a bad TUTTI_TOPO_FILE is an init error (view.c) */
    }
    if (t->from_file) {
        struct tutti_topo real; /* our own CPU budget, whatever machine the file describes */
        fallback(&real);
        t->allowed_pus = real.allowed_pus;
        t->first_pu = real.first_pu;
    }
    t->machine = machine_id();
    tutti_debug(TUTTI_SUBSYS_TOPO,
                "%s: %d package(s), %d NUMA node(s), %d core(s), %d/%d PUs usable, %d GPU(s), "
                "%d NIC(s), %d PCIe switch(es)",
                t->source, t->packages, t->numa_nodes, t->cores, t->allowed_pus, t->pus, t->ngpus,
                t->nnics, t->pci_switches);
}

const struct tutti_topo *tutti__topo_host(const char *share)
{
    if (!atomic_load_explicit(&process_loaded, memory_order_acquire)) {
        pthread_mutex_lock(&process_lock); /* guards the one detection */
        if (!atomic_load_explicit(&process_loaded, memory_order_relaxed)) {
            load_process(share);
            atomic_store_explicit(&process_loaded, 1, memory_order_release);
        }
        pthread_mutex_unlock(&process_lock);
    }
    return &process_topo;
}

const struct tutti_topo *tutti__topo(void)
{
    return tutti__topo_host(NULL);
}
