/*
 * ib_hca.h - TUTTI_IB_HCA: which RDMA devices and ports tutti may use, with NCCL_IB_HCA's
 * syntax: a comma-separated list of `device[:port]`; a leading `^` makes it a list of what to
 * leave out; a leading `=` (after `^`, if any) makes names match exactly instead of as prefixes
 * ("mlx5" is mlx5_0, mlx5_1, ...). Empty: everything.
 */
#ifndef TUTTI_TRANSPORTS_IB_HCA_H
#define TUTTI_TRANSPORTS_IB_HCA_H

#include <stddef.h>

#define TUTTI_IB_HCA_MAX 32 /* entries in one TUTTI_IB_HCA */

struct tutti_ib_hca_spec {
    int exclude; /* ^: the list says what not to use */
    int exact;   /* =: names match whole */
    int n;
    struct {
        char dev[64];
        int port; /* 0: any port */
    } e[TUTTI_IB_HCA_MAX];
};

/**
 * Parse spec (NULL or "" allows everything). Returns 0, or -1 with `why` naming the bad entry
 * (an empty name, a port that is not a number from 1 to 255, a name too long, too many).
 */
int tutti__ib_hca_parse(const char *spec, struct tutti_ib_hca_spec *out, char *why, size_t len);

/** May tutti use port `port` of device `dev` under this spec? */
int tutti__ib_hca_allows(const struct tutti_ib_hca_spec *s, const char *dev, int port);

#endif /* TUTTI_TRANSPORTS_IB_HCA_H */
