/*
 * model_boot.h - the bootstrap's cost in messages, bytes and time (model_boot.c says what is
 * counted and from where).
 */
#ifndef TUTTI_MODEL_BOOT_H
#define TUTTI_MODEL_BOOT_H

/** The link the bootstrap runs on (TCP) and what the root spends per message. */
struct model_boot_link {
    double lat_us; /* one message's latency */
    double msg_us; /* the root's cost to receive or send one message */
    double hs_us;  /* the root's cost of one authenticated connection (handshake) */
    double gbps;   /* the root's link */
    int gpus;      /* some host has GPUs: the topology views take an all-gather of their own */
    int ctl;       /* one host, 2 to TUTTI_WIN_CTL_RANKS ranks: the control pages take two */
};

struct model_boot {
    double rank_msgs; /* messages the busiest rank sends and receives */
    double root_msgs; /* messages the root (rendezvous) handles, handshakes included */
    double root_bytes_in, root_bytes_out; /* bytes the root receives and sends, beyond the
                                             handshakes */
    double time_s; /* predicted set-up time */
};

/** Levels below rank 0 in the bootstrap tree of n ranks. */
int model_boot_depth(int n);

/** The star through the root (fewer than TUTTI_BOOT_TREE ranks). */
void model_boot_star(int n, const struct model_boot_link *l, struct model_boot *out);

/** The tree between the ranks, the root serving the rendezvous only. */
void model_boot_tree(int n, const struct model_boot_link *l, struct model_boot *out);

#endif /* TUTTI_MODEL_BOOT_H */
