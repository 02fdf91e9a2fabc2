/*
 * netns.c - namespaces as hosts for the integration tests (netns.h): made and removed with
 * ip(8), which the test runs as a child process.
 */
#include "netns.h"

#include "comm/comm.h"
#include "exec/registry.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#define NETNS_DIR "/run/netns"
#define NS_PREFIX "tutti-integ-"
#define BRIDGE_NS NETNS_MAX_HOSTS /* index of the bridge's namespace in ns_name */

/* The namespaces of this test process: "tutti-integ-<pid>-a" ..., and "tutti-integ-<pid>-br". */
static char ns_name[NETNS_MAX_HOSTS + 1][64];
static int ns_made[NETNS_MAX_HOSTS + 1];

int netns_ip(char *err, size_t errlen, const char *const *args)
{
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    const char *argv[24] = {"ip"};
    int n = 1;
    for (; args[n - 1] != NULL && n < 23; n++) {
        argv[n] = args[n - 1];
    }
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pipefd[1], 2);
        dup2(pipefd[1], 1);
        close(pipefd[0]);
        execvp("ip", (char *const *)argv);
        fprintf(stderr, "exec ip: %s", strerror(errno));
        _exit(127);
    }
    close(pipefd[1]);
    size_t got = 0;
    ssize_t r;
    err[0] = '\0';
    struct pollfd p = {pipefd[0], POLLIN, 0};
    /* ip answers at once; 10 s is a generous bound for a loaded machine. */
    while (got + 1 < errlen && poll(&p, 1, 10000) > 0 &&
           (r = read(pipefd[0], err + got, errlen - 1 - got)) > 0) {
        got += (size_t)r;
    }
    err[got] = '\0';
    close(pipefd[0]);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) {
        return -1;
    }
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Remove namespaces that earlier test processes (now dead) left behind. */
static void remove_stale_namespaces(void)
{
    DIR *d = opendir(NETNS_DIR);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        long pid = 0;
        if (strncmp(e->d_name, NS_PREFIX, strlen(NS_PREFIX)) != 0 ||
            sscanf(e->d_name + strlen(NS_PREFIX), "%ld-", &pid) != 1) {
            continue;
        }
        if (pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            char err[256];
            (void)NETNS_IP(err, "netns", "delete", e->d_name);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
}

void netns_teardown(void)
{
    char err[256];
    for (int i = 0; i <= NETNS_MAX_HOSTS; i++) {
        if (ns_made[i]) {
            (void)NETNS_IP(err, "netns", "delete", ns_name[i]); /* takes its veth ends along */
            ns_made[i] = 0;
        }
    }
}

/* Host i: its namespace, its veth pair (NETNS_IFNAME inside, h<i> in the bridge's namespace,
 * made in place), the address, everything up. NULL, or what failed. */
static const char *make_host(int i, char *err, size_t errlen)
{
    char peer[8], addr[32];
    snprintf(peer, sizeof(peer), "h%d", i);
    snprintf(addr, sizeof(addr), "10.77.0.%d/24", i + 1);
    const char *ns = ns_name[i], *br = ns_name[BRIDGE_NS];
    if (netns_ip(err, errlen, (const char *const[]){"netns", "add", ns, NULL}) != 0) {
        return "ip netns add";
    }
    ns_made[i] = 1;
    if (netns_ip(err, errlen,
                 (const char *const[]){"-n", ns, "link", "add", NETNS_IFNAME, "type", "veth",
                                       "peer", "name", peer, "netns", br, NULL}) != 0) {
        return "ip link add ... type veth peer ... netns";
    }
    if (netns_ip(err, errlen,
                 (const char *const[]){"-n", br, "link", "set", peer, "master", "br0", "up",
                                       NULL}) != 0 ||
        netns_ip(err, errlen,
                 (const char *const[]){"-n", ns, "addr", "add", addr, "dev", NETNS_IFNAME, NULL}) !=
            0 ||
        netns_ip(err, errlen,
                 (const char *const[]){"-n", ns, "link", "set", NETNS_IFNAME, "up", NULL}) != 0 ||
        netns_ip(err, errlen, (const char *const[]){"-n", ns, "link", "set", "lo", "up", NULL}) !=
            0) {
        return "configuring a veth pair";
    }
    return NULL;
}

void netns_setup(int nhosts)
{
    char err[512];
    const char *why = NULL;
    cr_assert(nhosts >= 2 && nhosts <= NETNS_MAX_HOSTS, "netns_setup(%d): 2..%d hosts", nhosts,
              NETNS_MAX_HOSTS);
    if (geteuid() != 0) {
        cr_skip_test("network namespaces need root (CAP_SYS_ADMIN): not root, skipped");
    }
    if (NETNS_IP(err, "-V") != 0) {
        cr_skip_test("ip(8) from iproute2 is not available: %s", err);
    }
    remove_stale_namespaces();
    int pid = (int)getpid();
    for (int i = 0; i < NETNS_MAX_HOSTS; i++) {
        snprintf(ns_name[i], sizeof(ns_name[i]), NS_PREFIX "%d-%c", pid, 'a' + i);
    }
    snprintf(ns_name[BRIDGE_NS], sizeof(ns_name[BRIDGE_NS]), NS_PREFIX "%d-br", pid);
    const char *br = ns_name[BRIDGE_NS];
    if (NETNS_IP(err, "netns", "add", br) != 0) {
        why = "ip netns add";
    }
    ns_made[BRIDGE_NS] = why == NULL;
    if (why == NULL && (NETNS_IP(err, "-n", br, "link", "add", "br0", "type", "bridge") != 0 ||
                        NETNS_IP(err, "-n", br, "link", "set", "br0", "up") != 0)) {
        why = "ip link add br0 type bridge";
    }
    for (int i = 0; i < nhosts && why == NULL; i++) {
        why = make_host(i, err, sizeof(err));
    }
    if (why != NULL) {
        netns_teardown();
        cr_skip_test("cannot make network namespaces (%s failed: %s): needs CAP_SYS_ADMIN and "
                     "CAP_NET_ADMIN",
                     why, err);
    }
}

const char *netns_name(int host)
{
    return ns_name[host];
}

int netns_enter(int host)
{
    char path[128];
    snprintf(path, sizeof(path), NETNS_DIR "/%s", ns_name[host]);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    int rc = setns(fd, CLONE_NEWNET);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int netns_comm_init(const struct integ_ctx *ctx, const int *host, int all_tcp,
                    tutti_comm_t **comm_p)
{
    struct netns_shared *sh = ctx->shared;
    int me = host[ctx->rank];
    ICHECK(netns_enter(me) == 0, "entering %s: %s", netns_name(me), strerror(errno));
    if (ctx->rank == 0) {
        ICHECK_OK(tutti_get_unique_id(&sh->id));
        atomic_store(&sh->id_ready, 1);
    } else {
        int64_t end = integ_now_ns() + 30000000000LL;
        while (!atomic_load(&sh->id_ready) && integ_now_ns() < end) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        ICHECK(atomic_load(&sh->id_ready), "rank 0 made no id within 30 s");
    }
    tutti_comm_t *comm = NULL;
    ICHECK_OK(tutti_comm_init_rank(&comm, ctx->nranks, &sh->id, ctx->rank));
    *comm_p = comm;
    /* Different namespaces are different hosts to tutti. (A look inside: which transport
     * reaches whom.) */
    for (int r = 0; r < ctx->nranks; r++) {
        int same = host[r] == me;
        int want = (same && !all_tcp) ? TUTTI_TRANSPORT_SHM : TUTTI_TRANSPORT_TCP;
        ICHECK(r == ctx->rank || comm->fab.net.peer_transport[r] == want,
               "rank %d (in %s, this rank in %s) is reached over %s, expected %s", r,
               netns_name(host[r]), netns_name(me),
               tutti__transport_name((tutti_transport_id_t)comm->fab.net.peer_transport[r]),
               tutti__transport_name((tutti_transport_id_t)want));
    }
    return 0;
}
