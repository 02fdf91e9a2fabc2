/*
 * test_root_addr.c - where a launcher job's bootstrap root listens (src/comm/root_addr.c): on the
 * root address itself when it is an address of this host, on TUTTI_SOCKET_IFNAME's address when
 * that is set, on every interface only when the root address cannot tell; and a root port
 * outside TUTTI_PORT_RANGE is an error naming both. Each test runs in its own process, so its
 * setenv() comes before the environment is read.
 */
#include "comm/launch.h"
#include "tutti.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A launcher job as tutti_comm_init_env sees it, with the root address `root`. */
static struct tutti_launch job(const char *root, int rank)
{
    struct tutti_launch l;
    memset(&l, 0, sizeof(l));
    l.source = "tutti";
    l.rank = rank;
    l.nranks = 2;
    l.root_from = "TUTTI_ROOT";
    snprintf(l.root, sizeof(l.root), "%s", root);
    cr_assert_eq(tutti__sockaddr_parse(root, -1, AF_INET, &l.boot.root), TUTTI_OK, "%s",
                 tutti_last_error(NULL));
    return l;
}

static const char *str(const union tutti_sockaddr *a)
{
    static char buf[4][80];
    static int k;
    k = (k + 1) % 4;
    return tutti__sockaddr_str(a, buf[k], sizeof(buf[k]));
}

/* Where the root of `l` listens, as "ip:port". */
static const char *listens_at(struct tutti_launch *l)
{
    union tutti_sockaddr at;
    cr_assert_eq(tutti__root_addrs(l, &at), TUTTI_OK, "%s", tutti_last_error(NULL));
    return str(&at);
}

/* The first IPv4 address of an interface that is up and not loopback, or "" when none. */
static void non_loopback_v4(char *host, size_t len)
{
    struct ifaddrs *ifs;
    host[0] = '\0';
    cr_assert_eq(getifaddrs(&ifs), 0);
    for (struct ifaddrs *i = ifs; i != NULL && host[0] == '\0'; i = i->ifa_next) {
        if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET &&
            (i->ifa_flags & IFF_UP) != 0 && (i->ifa_flags & IFF_LOOPBACK) == 0) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, host,
                      (socklen_t)len);
        }
    }
    freeifaddrs(ifs);
}

Test(root_addr, a_loopback_literal_root_listens_on_itself)
{
    struct tutti_launch l = job("127.0.0.1:29600", 0);
    cr_assert_str_eq(listens_at(&l), "127.0.0.1:29600");
}

Test(root_addr, a_root_on_another_interface_of_this_host_listens_there_only)
{
    char host[INET_ADDRSTRLEN], root[64], want[64];
    non_loopback_v4(host, sizeof(host));
    if (host[0] == '\0') {
        cr_skip_test("no IPv4 interface but loopback");
    }
    snprintf(root, sizeof(root), "%s:29600", host);
    snprintf(want, sizeof(want), "%s:29600", host);
    struct tutti_launch l = job(root, 0);
    cr_assert_str_eq(listens_at(&l), want);
}

Test(root_addr, a_root_that_is_not_an_address_of_this_host_listens_everywhere)
{
    struct tutti_launch l = job("203.0.113.7:29600", 0); /* TEST-NET-3: nobody's address */
    cr_assert_str_eq(listens_at(&l), "0.0.0.0:29600");
    cr_assert_str_eq(str(&l.boot.root), "203.0.113.7:29600", "the ranks' address changed");
}

Test(root_addr, a_host_name_that_resolves_to_loopback_listens_everywhere_unless_one_host)
{
    char name[256] = "", root[300];
    union tutti_sockaddr a;
    gethostname(name, sizeof(name) - 1);
    snprintf(root, sizeof(root), "%s:29600", name);
    if (tutti__sockaddr_parse(root, -1, AF_INET, &a) != TUTTI_OK ||
        (ntohl(a.in.sin_addr.s_addr) >> 24) != 127) {
        cr_skip_test("the host name %s does not resolve to loopback here", name);
    }
    struct tutti_launch l = job(root, 0);
    cr_assert_str_eq(listens_at(&l), "0.0.0.0:29600");
    l.single_host = 1; /* the launcher says one host: loopback is all anyone needs */
    cr_assert_eq(strncmp(listens_at(&l), "127.", 4), 0);
}

Test(root_addr, names_of_loopback_itself_are_told_from_host_names)
{
    cr_assert(tutti__root_names_loopback("127.0.0.1:1"));
    cr_assert(tutti__root_names_loopback("127.0.1.1:1"));
    cr_assert(tutti__root_names_loopback("[::1]:1"));
    cr_assert(tutti__root_names_loopback("localhost:1"));
    cr_assert(tutti__root_names_loopback("localhost.localdomain:1"));
    cr_assert_not(tutti__root_names_loopback("node1:1"));
    cr_assert_not(tutti__root_names_loopback("gpu-07.cluster:29500"));
}

Test(root_addr, with_ifname_the_root_listens_on_its_address_and_loopback_roots_follow)
{
    setenv("TUTTI_SOCKET_IFNAME", "lo", 1);
    struct tutti_launch l = job("127.0.0.5:29600", 1);
    cr_assert_str_eq(listens_at(&l), "127.0.0.1:29600");
    cr_assert_str_eq(str(&l.boot.root), "127.0.0.1:29600",
                     "a rank on the root's host must connect where the root listens");
    l = job("203.0.113.7:29600", 0);
    cr_assert_str_eq(listens_at(&l), "127.0.0.1:29600");
    cr_assert_str_eq(str(&l.boot.root), "203.0.113.7:29600", "a remote root address changed");
}

Test(root_addr, with_ifname_a_root_on_another_local_interface_is_an_error_naming_both)
{
    char host[INET_ADDRSTRLEN], root[64];
    non_loopback_v4(host, sizeof(host));
    if (host[0] == '\0') {
        cr_skip_test("no IPv4 interface but loopback");
    }
    setenv("TUTTI_SOCKET_IFNAME", "lo", 1);
    snprintf(root, sizeof(root), "%s:29600", host);
    struct tutti_launch l = job(root, 0);
    union tutti_sockaddr at;
    cr_assert_eq(tutti__root_addrs(&l, &at), TUTTI_ERR_INVALID_ARG);
    const char *msg = tutti_last_error(NULL);
    cr_assert(strstr(msg, root) != NULL && strstr(msg, "TUTTI_SOCKET_IFNAME lo") != NULL &&
                  strstr(msg, "127.0.0.1:29600") != NULL,
              "%s", msg);
}

Test(root_addr, another_rank_on_the_roots_host_may_use_another_interface)
{
    char host[INET_ADDRSTRLEN], root[64];
    non_loopback_v4(host, sizeof(host));
    if (host[0] == '\0') {
        cr_skip_test("no IPv4 interface but loopback");
    }
    setenv("TUTTI_SOCKET_IFNAME", "lo", 1);
    snprintf(root, sizeof(root), "%s:29600", host);
    struct tutti_launch l = job(root, 1);
    union tutti_sockaddr at;
    cr_assert_eq(tutti__root_addrs(&l, &at), TUTTI_OK, "%s", tutti_last_error(NULL));
    cr_assert_str_eq(str(&l.boot.root), root, "rank 1 must connect to the root as given");
}

Test(root_addr, a_root_port_outside_the_port_range_is_an_error_naming_both)
{
    setenv("TUTTI_PORT_RANGE", "30000-30010", 1);
    struct tutti_launch l = job("127.0.0.1:29600", 1);
    cr_assert_eq(tutti__root_port_check(&l), TUTTI_ERR_INVALID_ARG);
    const char *msg = tutti_last_error(NULL);
    cr_assert(strstr(msg, "29600") != NULL && strstr(msg, "30000-30010") != NULL &&
                  strstr(msg, "TUTTI_ROOT") != NULL,
              "%s", msg);
    l = job("127.0.0.1:30010", 1);
    cr_assert_eq(tutti__root_port_check(&l), TUTTI_OK);
    l = job("127.0.0.1:0", 0);
    cr_assert_eq(tutti__root_port_check(&l), TUTTI_OK, "port 0 is taken from the range");
}

Test(root_addr, slurm_root_ports_fall_inside_the_port_range)
{
    for (long job_id = 1; job_id < 2000; job_id += 37) {
        int p = tutti__slurm_root_port(job_id, job_id % 5, 30000, 30010);
        cr_assert(p >= 30000 && p <= 30010, "job %ld: port %d", job_id, p);
        p = tutti__slurm_root_port(job_id, 0, 0, 0);
        cr_assert_eq(p, 20000 + (job_id * 16) % 20000, "job %ld: no range, port %d", job_id, p);
    }
}
