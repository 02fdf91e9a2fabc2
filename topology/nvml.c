/*
 * nvml.c - NVLink between the GPUs of this machine, from NVML loaded at run time with
 * dlopen("libnvidia-ml.so.1") (Debian ships no NVML header: the few types and functions used are
 * declared here, from NVIDIA's documented API). For every GPU hwloc found, NVML's device with
 * the same PCI bus id is asked for the state and remote end of each NVLink: a remote GPU is a
 * direct peer; a remote that is no GPU is an NVSwitch, and GPUs that reach NVSwitches all reach
 * each other. Missing NVML is normal (no driver, a container without it): the note says so.
 */
#include "topology/topo.h"
#include "base/log.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* From nvml.h (NVML API, CUDA 11+); only what is used below. */
typedef struct nvml_device *nvml_device_t;
typedef int nvml_return_t; /* NVML_SUCCESS = 0 */
typedef struct {
    char bus_id_legacy[16];
    unsigned int domain, bus, device;
    unsigned int pci_device_id, pci_subsystem_id;
    char bus_id[32];
} nvml_pci_info_t; /* nvmlPciInfo_t */
#define NVML_NVLINK_MAX_LINKS 18
#define NVML_FEATURE_ENABLED  1

struct nvml_api {
    nvml_return_t (*init)(void);
    nvml_return_t (*shutdown)(void);
    nvml_return_t (*count)(unsigned int *);
    nvml_return_t (*handle)(unsigned int, nvml_device_t *);
    nvml_return_t (*pci)(nvml_device_t, nvml_pci_info_t *);
    nvml_return_t (*link_state)(nvml_device_t, unsigned int, int *);
    nvml_return_t (*link_remote)(nvml_device_t, unsigned int, nvml_pci_info_t *);
};

static int resolve(void *lib, struct nvml_api *api)
{
    /* dlsym returns void *; POSIX guarantees it converts to a function pointer. */
    *(void **)&api->init = dlsym(lib, "nvmlInit_v2");
    *(void **)&api->shutdown = dlsym(lib, "nvmlShutdown");
    *(void **)&api->count = dlsym(lib, "nvmlDeviceGetCount_v2");
    *(void **)&api->handle = dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&api->pci = dlsym(lib, "nvmlDeviceGetPciInfo_v3");
    *(void **)&api->link_state = dlsym(lib, "nvmlDeviceGetNvLinkState");
    *(void **)&api->link_remote = dlsym(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    return api->init != NULL && api->shutdown != NULL && api->count != NULL &&
           api->handle != NULL && api->pci != NULL && api->link_state != NULL &&
           api->link_remote != NULL;
}

/* hwloc's "0000:08:00.0" and NVML's domain/bus/device name the same function 0? */
static int same_bus(const char *hwloc_busid, const nvml_pci_info_t *p)
{
    unsigned dom, bus, dev, fn;
    return sscanf(hwloc_busid, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) == 4 && dom == p->domain &&
           bus == p->bus && dev == p->device;
}

static int gpu_by_pci(const struct tutti_topo *t, const nvml_pci_info_t *p)
{
    for (int g = 0; g < t->ngpus; g++) {
        if (same_bus(t->gpu[g].busid, p)) {
            return g;
        }
    }
    return -1;
}

/* NVLinks of one NVML device: direct GPU peers into t, *nvswitch_p if one goes to an NVSwitch. */
static int scan_links(const struct nvml_api *api, nvml_device_t dev, struct tutti_topo *t, int g,
                      int *nvswitch_p)
{
    int up = 0;
    for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
        int state = 0;
        nvml_pci_info_t remote;
        if (api->link_state(dev, l, &state) != 0 || state != NVML_FEATURE_ENABLED ||
            api->link_remote(dev, l, &remote) != 0) {
            continue;
        }
        up++;
        int peer = gpu_by_pci(t, &remote);
        if (peer >= 0 && peer != g) {
            t->gpu[g].nvlink |= 1u << peer;
            t->gpu[peer].nvlink |= 1u << g;
        } else if (peer < 0) {
            *nvswitch_p = 1;
        }
    }
    return up;
}

static void ask(const struct nvml_api *api, struct tutti_topo *t)
{
    unsigned n = 0;
    if (api->count(&n) != 0) {
        snprintf(t->nvml_note, sizeof(t->nvml_note), "loaded, but nvmlDeviceGetCount failed");
        return;
    }
    uint32_t on_switch = 0;
    int links = 0, matched = 0;
    for (unsigned i = 0; i < n; i++) {
        nvml_device_t dev;
        nvml_pci_info_t pci;
        if (api->handle(i, &dev) != 0 || api->pci(dev, &pci) != 0) {
            continue;
        }
        int g = gpu_by_pci(t, &pci);
        if (g < 0) {
            continue; /* a GPU hwloc did not list (hidden from this container's PCI view) */
        }
        matched++;
        int nvswitch = 0;
        links += scan_links(api, dev, t, g, &nvswitch);
        on_switch |= nvswitch ? 1u << g : 0;
    }
    for (int g = 0; g < t->ngpus; g++) {
        if (on_switch & (1u << g)) {
            t->gpu[g].nvlink |= on_switch & ~(1u << g);
        }
    }
    if (links > 0) {
        t->nvlink_source = 2;
    }
    snprintf(t->nvml_note, sizeof(t->nvml_note),
             "%u GPU(s), %d matched to hwloc's, %d NVLink(s) up%s", n, matched, links,
             on_switch ? ", through NVSwitch" : "");
}

void tutti__topo_nvml(struct tutti_topo *t)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        snprintf(t->nvml_note, sizeof(t->nvml_note),
                 "libnvidia-ml.so.1 not found (no NVIDIA driver in this system or container)");
        return;
    }
    struct nvml_api api;
    if (!resolve(lib, &api)) {
        snprintf(t->nvml_note, sizeof(t->nvml_note), "libnvidia-ml.so.1 lacks NVLink queries");
    } else if (api.init() != 0) {
        snprintf(t->nvml_note, sizeof(t->nvml_note), "nvmlInit failed (driver not loaded?)");
    } else {
        ask(&api, t);
        api.shutdown();
    }
    tutti_debug(TUTTI_SUBSYS_TOPO, "NVML: %s", t->nvml_note);
    dlclose(lib);
}
