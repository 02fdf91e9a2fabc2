/*
 * test_ifmatch.c - TUTTI_SOCKET_IFNAME's patterns (src/net/ifmatch.c) as NCCL documents
 * NCCL_SOCKET_IFNAME: prefixes, lists, ^ to exclude, = for exact names.
 */
#include "net/ifmatch.h"

#include <criterion/criterion.h>

static void expect(const char *spec, const char *name, int want)
{
    cr_assert_eq(tutti__ifname_match(spec, name), want, "'%s' against %s: expected %s", spec, name,
                 want ? "a match" : "no match");
}

Test(ifmatch, a_name_is_a_prefix)
{
    expect("eth", "eth0", 1);
    expect("eth", "eth1", 1);
    expect("eth0", "eth0", 1);
    expect("eth0", "eth01", 1); /* a prefix, as in NCCL */
    expect("eth", "veth0", 0);
    expect("eth0", "eth", 0);
    expect("lo", "lo", 1);
}

Test(ifmatch, a_list_matches_any_of_its_entries)
{
    expect("ib,eth", "eth2", 1);
    expect("ib,eth", "ib0", 1);
    expect("ib,eth", "enp1s0", 0);
    expect("enp1s0,lo", "lo", 1);
}

Test(ifmatch, equals_asks_for_exact_names)
{
    expect("=eth0", "eth0", 1);
    expect("=eth0", "eth01", 0);
    expect("=eth0,eth1", "eth1", 1);
    expect("=eth0,eth1", "eth10", 0);
}

Test(ifmatch, caret_excludes)
{
    expect("^docker,lo", "eth0", 1);
    expect("^docker,lo", "docker0", 0);
    expect("^docker,lo", "lo", 0);
    expect("^=docker0", "docker0", 0);
    expect("^=docker0", "docker01", 1);
    expect("^=docker0", "eth0", 1);
}

Test(ifmatch, an_empty_pattern_matches_nothing)
{
    expect("", "eth0", 0);
    expect("^", "eth0", 0);
    expect("=", "eth0", 0);
}

Test(ifmatch, malformed_specs_say_why)
{
    static const char *bad[] = {
        "", "^", "^=", "eth0,", ",eth0", "eth0,,eth1", "a_name_longer_than_fifteen"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *why = NULL;
        cr_assert_eq(tutti__ifname_spec_check(bad[i], &why), -1, "'%s' was accepted", bad[i]);
        cr_assert(why != NULL && why[0] != '\0', "'%s': no reason given", bad[i]);
    }
    static const char *good[] = {"eth0", "eth", "^lo", "=eth0", "^=docker0,lo", "ib,eth"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        const char *why = NULL;
        cr_assert_eq(tutti__ifname_spec_check(good[i], &why), 0, "'%s' refused: %s", good[i], why);
    }
}
