/*
 * tcp_pair.h - two ranks of the TCP transport for its unit tests (test_tcp.c, test_tcp_frames.c):
 * each builds its own struct tutti_tctx_args by hand, and the two swap their peer records (with
 * the published listening address) through pipes, which also serve as barriers. A pair is this
 * process (rank 0) and a forked rank 1, which reports a failed check through its exit status
 * (the line of the check; its stderr names the file). Messages of known sizes, bytes and
 * fingerprints for the streams.
 */
#ifndef TUTTI_TEST_TCP_PAIR_H
#define TUTTI_TEST_TCP_PAIR_H

#include "base/env.h"
#include "net/sock.h"
#include "transports/tcp/tcp.h"
#include "tutti.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define OPS  (&tutti__tcp_ops)
#define SLOT 32768
#define SEC  1000000000LL

#include "expect.h"

struct rank {
    int rank;
    struct tutti_env env;
    struct tutti_tctx_args args;
    struct tutti_tpeer peers[2]; /* the transport's view of both ranks */
    uint8_t secret[TUTTI_SECRET_BYTES];
    union tutti_sockaddr hint;
    void *tctx;
    struct tutti_tconn *conn[TUTTI_MAX_CHANNELS];
    int to_peer, from_peer; /* pipes: record exchange and barriers */
    int64_t timeout_ns;     /* 0: 10 s */
    size_t slot_size;       /* 0: SLOT */
};

/** The job's secret and communicator id both ranks use. */
extern const uint8_t secret[TUTTI_SECRET_BYTES];
extern const uint64_t comm_id;

int full_write(int fd, const void *buf, size_t n);
int full_read(int fd, void *buf, size_t n);
/** Both ranks write and read one byte through the pipes: 0, or the failed line. */
int barrier(struct rank *r);
/** init, and this rank's peer record with the published address. */
int rank_publish(struct rank *r, int rank, int nsocks);
/** Swap peer records through the pipes, then attach. */
int rank_join(struct rank *r);
int rank_setup(struct rank *r, int rank, int nsocks);
/** Connect channels 0..nch-1 to the other rank. */
int connect_channels(struct rank *r, int nch);
void rank_teardown(struct rank *r);

uint32_t mix(uint32_t x);
/** Message i of `sender` on channel ch: sizes 0, 1, 7, slot-1, slot, random; known content. */
size_t msg_size(int sender, int ch, uint32_t i);
uint8_t msg_byte(int sender, int ch, uint32_t i, size_t j);
/** The fingerprint message i of `sender` on channel ch goes with. */
struct tutti_fp msg_fp(int sender, int ch, uint32_t i);

typedef int (*rank_fn)(struct rank *r, int nsocks);

struct pair {
    pid_t child;
    struct rank r; /* rank 0, this process */
};

/** Fork rank 1 running fn; set up rank 0 here. */
void start_pair(struct pair *p, int nsocks, rank_fn fn);
/** Exit status of rank 1: 0 when all its checks passed. */
int child_status(struct pair *p);
void finish_pair(struct pair *p);
/** Progress and peek on c until it stops saying "in progress"; fails the test after 5 s. */
tutti_status_t wait_recv(struct tutti_tconn *c);

#endif
