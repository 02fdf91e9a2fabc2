/*
 * test_ib_hca.c - TUTTI_IB_HCA (transports/ibverbs/ib_hca.c): NCCL_IB_HCA's syntax, prefixes,
 * exact names, ports, exclusion, and the refusals; and the port enumeration on a machine
 * without RDMA, which must say why it found nothing.
 */
#include "transports/ibverbs/ib_devices.h"
#include "transports/ibverbs/ib_hca.h"
#include "transports/ibverbs/ib.h"

#include <criterion/criterion.h>
#include <string.h>

static struct tutti_ib_hca_spec parse_ok(const char *spec)
{
    struct tutti_ib_hca_spec s;
    char why[160] = "";
    cr_assert_eq(tutti__ib_hca_parse(spec, &s, why, sizeof(why)), 0, "'%s' refused: %s", spec, why);
    return s;
}

Test(ib_hca, empty_allows_everything)
{
    struct tutti_ib_hca_spec s = parse_ok("");
    cr_assert(tutti__ib_hca_allows(&s, "mlx5_0", 1));
    s = parse_ok(NULL);
    cr_assert(tutti__ib_hca_allows(&s, "rxe0", 2));
}

Test(ib_hca, names_are_prefixes_unless_exact)
{
    struct tutti_ib_hca_spec s = parse_ok("mlx5");
    cr_assert(tutti__ib_hca_allows(&s, "mlx5_0", 1));
    cr_assert(tutti__ib_hca_allows(&s, "mlx5_11", 1));
    cr_assert_not(tutti__ib_hca_allows(&s, "rxe0", 1));
    s = parse_ok("=mlx5_1");
    cr_assert(tutti__ib_hca_allows(&s, "mlx5_1", 1));
    cr_assert_not(tutti__ib_hca_allows(&s, "mlx5_10", 1), "= must match the whole name");
}

Test(ib_hca, ports_restrict_an_entry)
{
    struct tutti_ib_hca_spec s = parse_ok("mlx5_0:1,mlx5_1:2");
    cr_assert_eq(s.n, 2);
    cr_assert(tutti__ib_hca_allows(&s, "mlx5_0", 1));
    cr_assert_not(tutti__ib_hca_allows(&s, "mlx5_0", 2));
    cr_assert(tutti__ib_hca_allows(&s, "mlx5_1", 2));
    cr_assert_not(tutti__ib_hca_allows(&s, "mlx5_1", 1));
}

Test(ib_hca, a_caret_excludes)
{
    struct tutti_ib_hca_spec s = parse_ok("^rxe1,mlx5_0:2");
    cr_assert(tutti__ib_hca_allows(&s, "rxe0", 1));
    cr_assert_not(tutti__ib_hca_allows(&s, "rxe1", 1));
    cr_assert_not(tutti__ib_hca_allows(&s, "mlx5_0", 2));
    cr_assert(tutti__ib_hca_allows(&s, "mlx5_0", 1));
    s = parse_ok("^=rxe");
    cr_assert(tutti__ib_hca_allows(&s, "rxe0", 1), "^= leaves out the exact name only");
    cr_assert_not(tutti__ib_hca_allows(&s, "rxe", 1));
}

Test(ib_hca, malformed_specs_are_refused_naming_the_entry)
{
    const char *bad[] = {"mlx5_0:", "mlx5_0:0", "mlx5_0:256", "mlx5_0:x", ",",
                         "a,,b",    "a,",       "^",          "=",        ":1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct tutti_ib_hca_spec s;
        char why[160] = "";
        cr_assert_eq(tutti__ib_hca_parse(bad[i], &s, why, sizeof(why)), -1, "'%s' accepted",
                     bad[i]);
        cr_assert(strstr(why, "TUTTI_IB_HCA") != NULL, "'%s': message '%s'", bad[i], why);
    }
}

Test(ib_hca, too_many_entries_are_refused)
{
    char spec[400] = "";
    for (int i = 0; i < TUTTI_IB_HCA_MAX + 1; i++) {
        char e[16];
        snprintf(e, sizeof(e), "%sd%d", i ? "," : "", i);
        strcat(spec, e);
    }
    struct tutti_ib_hca_spec s;
    char why[160];
    cr_assert_eq(tutti__ib_hca_parse(spec, &s, why, sizeof(why)), -1);
}

/* Where there are no RDMA devices (this machine, CI) the enumeration finds none and says why;
 * where there are (the Soft-RoCE VM, tests/rdma), every port has a name and a port number. */
Test(ib_devices, the_ports_or_why_there_are_none)
{
    struct tutti_ib_port p[TUTTI_IB_MAX_PORTS];
    char why[256] = "";
    int n = tutti__ib_ports(p, TUTTI_IB_MAX_PORTS, why, sizeof(why));
    cr_assert_geq(n, 0, "%s", why);
    if (n == 0) {
        cr_assert(strstr(why, "RDMA") != NULL, "no ports and no reason: '%s'", why);
        return;
    }
    for (int i = 0; i < n; i++) {
        cr_assert(p[i].dev[0] != '\0' && p[i].port >= 1);
    }
}

Test(ib_hca, a_rank_takes_the_nic_nearest_its_gpu_else_spreads_by_local_index)
{
    struct tutti_ib_port p[3] = {
        {.dev = "mlx5_0", .port = 1}, {.dev = "mlx5_1", .port = 1}, {.dev = "mlx5_1", .port = 2}};
    cr_assert_eq(tutti__ib_pick_port(p, 3, 0, "mlx5_1"), 1, "the first port of the hinted NIC");
    cr_assert_eq(tutti__ib_pick_port(p, 3, 2, "mlx5_1"), 1, "the hint wins over the index");
    cr_assert_eq(tutti__ib_pick_port(p, 3, 4, ""), 1, "local rank 4 of 3 ports");
    cr_assert_eq(tutti__ib_pick_port(p, 3, 2, NULL), 2);
    cr_assert_eq(tutti__ib_pick_port(p, 3, 5, "mlx5_7"), 2, "a hint that is not usable");
}
