/*
 * fill.c - the clock that decides how a connection's send slots are written (fill.h).
 *
 * On the AMD EPYC VM of issue 38 the two vCPUs share a cache in some seconds and not in
 * others (a cache line's round trip between them: 100-120 ns, then about 500 ns). When they do
 * not, a cached write of a slot that the receiver read runs at 2-4.5 GB/s against 25-30: every
 * line must first be taken back from the other core. Streamed (non-temporal) stores need no such
 * read and ran at 23-26 GB/s in both kinds of seconds, but then the receiver reads the slot from
 * memory, not from a cache (17-24 GB/s against 40-44 when the cache is shared). So a timed clock
 * writes through the caches, and streams while cached writes run at under a quarter of the
 * streamed ones' rate (back above 40%: cached again). Where the cache is shared, cached writes
 * of 32 KiB frames that the peer had just read ran at 7-10 GB/s against 25-34 streamed, a
 * third of it, and streaming them made the receiver slower than that saved: a third was too
 * close. Where it is not, cached writes ran at a fifth to a tenth of streamed ones.
 *
 * A cached write into a slot last streamed finds its lines in memory, not in the other core's
 * cache, and runs at about 9 GB/s in either kind of second: such writes (the `warm` frames after
 * a streamed one) are not timed. While cached, PROBE_TIMED streamed frames are timed every
 * `gap` frames; while streaming, a burst of warm + PROBE_TIMED cached frames, of which the last
 * PROBE_TIMED are timed. A probe's rate is the median of its frames': with one frame (or a mean
 * of two), a lone streamed frame at 14 GB/s against 3.7 cached kept it cached, and a first
 * cached frame of a burst that still met cold lines (8-9 GB/s) sent it back to cached writes,
 * in the seconds without a shared cache; 13-22% of a 256 MiB send/recv's frames went cached
 * there, which then took 55-73 ms against 40-45. gap is GAP_MIN after the choice changed, and
 * doubles, up to GAP_MAX, each time a probe leaves it as it was (a cached burst in the slow
 * seconds costs several frames).
 */
#include "exec/fill.h"

#define GAP_MIN     16
#define GAP_MAX     1024
#define PROBE_TIMED 3

int tutti__fill_pick(struct tutti_fill_clock *c)
{
    if (c->mode != TUTTI_FILL_TIMED) {
        return (int)c->stream;
    }
    c->frames++;
    if (c->burst > 0 || c->sburst > 0) {
        return c->sburst > 0;
    }
    if (c->rate[0] == 0) {
        return 0; /* cached first, until warm writes are timed */
    }
    if (c->rate[1] == 0 || (c->frames >= c->next_probe && !c->stream)) {
        c->sburst = PROBE_TIMED; /* cached: a streamed probe */
        c->nsamples = 0;
        return 1;
    }
    if (c->frames >= c->next_probe) { /* streaming: a cached burst */
        c->burst = c->warm + PROBE_TIMED;
        c->cold = c->warm;
        c->nsamples = 0;
        return 0;
    }
    return (int)c->stream;
}

/* The median of a probe's rates (0 where it took none). */
static double median(const struct tutti_fill_clock *c)
{
    double a[PROBE_TIMED];
    uint32_t n = c->nsamples;
    for (uint32_t i = 0; i < n; i++) { /* insertion sort of at most PROBE_TIMED */
        uint32_t j = i;
        for (; j > 0 && a[j - 1] > c->sample[i]; j--) {
            a[j] = a[j - 1];
        }
        a[j] = c->sample[i];
    }
    return n == 0 ? 0 : (n % 2 ? a[n / 2] : 0.5 * (a[n / 2 - 1] + a[n / 2]));
}

/* After a probe or a change: when the next probe comes. */
static void schedule(struct tutti_fill_clock *c, int changed)
{
    c->gap = changed || c->gap < GAP_MIN ? GAP_MIN : (c->gap < GAP_MAX ? 2 * c->gap : GAP_MAX);
    c->next_probe = c->frames + c->gap;
}

void tutti__fill_note(struct tutti_fill_clock *c, int streamed, size_t bytes, int64_t ns)
{
    if (c->mode != TUTTI_FILL_TIMED) {
        return;
    }
    double r = (double)bytes / (double)(ns > 0 ? ns : 1);
    int probe = c->burst > 0 || c->sburst > 0;
    int timed = streamed || c->cold == 0;
    if (streamed) {
        c->cold = c->warm;
    } else if (c->cold > 0) {
        c->cold--;
    }
    if (timed && probe && c->nsamples < PROBE_TIMED) {
        c->sample[c->nsamples++] = r;
    } else if (timed && !probe) {
        c->rate[streamed] = c->rate[streamed] == 0 ? r : 0.75 * c->rate[streamed] + 0.25 * r;
    }
    if ((c->burst > 0 && --c->burst > 0) || (c->sburst > 0 && --c->sburst > 0)) {
        return; /* the probe goes on */
    }
    if (probe && c->nsamples > 0) {
        c->rate[streamed] = median(c);
    }
    if (c->rate[0] == 0 || c->rate[1] == 0) {
        return;
    }
    uint32_t was = c->stream;
    c->stream = was ? 2.5 * c->rate[0] < c->rate[1] : 4 * c->rate[0] < c->rate[1];
    if (probe || c->stream != was) {
        schedule(c, c->stream != was);
    }
}
