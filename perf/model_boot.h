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
};

struct model_boot {
    double rank_msgs;  /* messages the busiest non-root rank sends and receives */
    double root_msgs;  /* messages the root (rendezvous) handles */
    double root_bytes; /* bytes the root sends */
    double time_s;     /* predicted set-up time */
};

/** tutti's bootstrap today: a star through the root. */
void model_boot_star(int n, const struct model_boot_link *l, struct model_boot *out);

/** The proposed design: a rendezvous for hellos only, then a binomial tree. */
void model_boot_tree(int n, const struct model_boot_link *l, struct model_boot *out);

#endif /* TUTTI_MODEL_BOOT_H */
