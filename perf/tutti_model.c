/*
 * tutti_model.c - tutti-model: scale by simulation. Predicts the time and bus bandwidth of ring,
 * tree and hierarchical all-reduce from 8 to 65,536 ranks with the tuner's cost model
 * (src/coll/tune.c) for given link figures, fits how small-message latency grows (ring ~ n,
 * tree ~ log n), prints the ring/tree crossover sizes, NCCL's own latency model beside ours, and
 * the bootstrap's cost (model_boot.c). --check turns the growth claims into an exit status.
 */
#include "model_boot.h"
#include "win/win.h"
#include "coll/tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct opts {
    int per_host, min_ranks, max_ranks, check;
    struct tutti_tune_links links;
    const char *intra, *inter;
};

static const char *const algos[] = {"ring", "tree", "hier"};
#define NALGOS 3

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tutti-model [options]\n"
            "  --intra KIND        link within a host: nvlink pcie shm tcp (default nvlink)\n"
            "  --inter KIND        link between hosts: ib tcp (default ib)\n"
            "  --per-host N        ranks per host (default 8)\n"
            "  --nics N            NICs per host (default: ranks per host)\n"
            "  --intra-gbps X, --inter-gbps X   bandwidth, GB/s per direction (per NIC across)\n"
            "  --intra-lat-us X, --inter-lat-us X   latency of one hop\n"
            "  --min-ranks N, --max-ranks N     range, doubling (default 8 .. 65536)\n"
            "  --boot-counts N     the bytes the bootstrap root moves for N ranks, star and tree\n"
            "                      (what its closing info line says; perf/check_boot_model.sh)\n"
            "  --check             exit 1 unless ring latency grows as n, tree as log n, the\n"
            "                      crossover grows with n, and the bootstrap tree has O(log n)\n"
            "                      levels, O(n) bytes at the root and a bounded busiest rank\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
    double v[4] = {-1, -1, -1, -1};
    int nics = 0;
    memset(o, 0, sizeof(*o));
    o->per_host = 8;
    o->min_ranks = 8;
    o->max_ranks = 65536;
    o->intra = "nvlink";
    o->inter = "ib";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        static const char *const dbl[] = {"--intra-gbps", "--inter-gbps", "--intra-lat-us",
                                          "--inter-lat-us"};
        int matched = 0;
        for (int k = 0; k < 4; k++) {
            if (strcmp(a, dbl[k]) == 0 && val != NULL) {
                v[k] = atof(val);
                matched = 1;
            }
        }
        if (strcmp(a, "--check") == 0) {
            o->check = 1;
            continue;
        }
        if (strcmp(a, "--boot-counts") == 0 && val != NULL) {
            /* What the root's closing info line should say, for perf/check_boot_model.sh */
            int n = atoi(val);
            /* this machine's test: no GPU, one host */
            struct model_boot_link bl = {1, 1, 1, 1, 0, n >= 2 && n <= TUTTI_WIN_CTL_RANKS};
            struct model_boot s, t;
            model_boot_star(n, &bl, &s);
            model_boot_tree(n, &bl, &t);
            printf("star %d ranks: %.0f bytes received, %.0f sent\n", n, s.root_bytes_in,
                   s.root_bytes_out);
            printf("tree %d ranks: %.0f bytes received, %.0f sent\n", n, t.root_bytes_in,
                   t.root_bytes_out);
            exit(n >= 1 ? 0 : 2);
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        }
        if (!matched && val != NULL && strcmp(a, "--intra") == 0) {
            o->intra = val;
        } else if (!matched && val != NULL && strcmp(a, "--inter") == 0) {
            o->inter = val;
        } else if (!matched && val != NULL && strcmp(a, "--per-host") == 0) {
            o->per_host = atoi(val);
        } else if (!matched && val != NULL && strcmp(a, "--nics") == 0) {
            nics = atoi(val);
        } else if (!matched && val != NULL && strcmp(a, "--min-ranks") == 0) {
            o->min_ranks = atoi(val);
        } else if (!matched && val != NULL && strcmp(a, "--max-ranks") == 0) {
            o->max_ranks = atoi(val);
        } else if (!matched) {
            fprintf(stderr, "tutti-model: unknown option or missing value: %s\n", a);
            usage(stderr);
            return -1;
        }
        i++;
    }
    int ki = tutti__link_parse(o->intra), ke = tutti__link_parse(o->inter);
    if (ki < 0 || ke < 0 || o->per_host < 1 || o->min_ranks < o->per_host ||
        o->max_ranks < o->min_ranks) {
        fprintf(stderr, "tutti-model: need link kinds among shm tcp ib nvlink pcie, --per-host "
                        ">= 1 and per-host <= min-ranks <= max-ranks\n");
        return -1;
    }
    tutti__tune_links_make(ki, ke, nics > 0 ? nics : o->per_host, &o->links);
    double *dst[4] = {&o->links.intra.gbps, &o->links.inter.gbps, &o->links.intra.lat_us,
                      &o->links.inter.lat_us};
    for (int k = 0; k < 4; k++) {
        if (v[k] >= 0) {
            *dst[k] = v[k];
        }
    }
    return 0;
}

static double best(const struct opts *o, const char *algo, int n, double bytes,
                   struct tutti_tune_cfg *cfg)
{
    struct tutti_tune_sys s = {n, n / o->per_host, o->links};
    return tutti__tune_best(TUTTI_COLL_ALLREDUCE, algo, (size_t)bytes, &s, cfg);
}

static double busbw(int n, double bytes, double us)
{
    return us > 0 ? 2.0 * (n - 1) / n * bytes / (us * 1e3) : 0;
}

static void print_table(const struct opts *o)
{
    static const double sizes[] = {8, 64 << 10, 1 << 20, 64 << 20, 1 << 30};
    printf("\n## all-reduce: predicted time (us) and busbw (GB/s); the tuner's pick among them\n\n");
    printf("| ranks | hosts | size | ring us | ring busbw | tree us | tree busbw | hier us | "
           "hier busbw | pick (channels, chunk, protocol) |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (int n = o->min_ranks; n <= o->max_ranks; n *= 8) {
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            printf("| %d | %d | %.0f |", n, n / o->per_host, sizes[i]);
            for (int a = 0; a < NALGOS; a++) {
                double t = best(o, algos[a], n, sizes[i], NULL);
                printf(" %.1f | %.2f |", t, busbw(n, sizes[i], t));
            }
            struct tutti_tune_choice ch;
            tutti__tune_pick(TUTTI_COLL_ALLREDUCE, (size_t)sizes[i], n, n / o->per_host, algos,
                             NALGOS, &o->links, NULL, &ch);
            printf(" %s (%d, %zu KiB, %s) |\n", ch.algo, ch.cfg.nchannels, ch.cfg.chunk_bytes >> 10,
                   tutti__proto_name(ch.cfg.proto));
        }
        if (n < o->max_ranks && n * 8 > o->max_ranks) {
            n = o->max_ranks / 8; /* end on max_ranks */
        }
    }
}

/* Least squares y = a + b x; returns b, and R^2 in *r2. */
static double fit(const double *x, const double *y, int k, double *r2)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
    for (int i = 0; i < k; i++) {
        sx += x[i];
        sy += y[i];
        sxx += x[i] * x[i];
        sxy += x[i] * y[i];
        syy += y[i] * y[i];
    }
    double cov = k * sxy - sx * sy, vx = k * sxx - sx * sx, vy = k * syy - sy * sy;
    *r2 = vx > 0 && vy > 0 ? cov * cov / (vx * vy) : 1;
    return vx > 0 ? cov / vx : 0;
}

/* The size from which ring is at least as fast as tree (1% steps), or INFINITY. */
static double crossover(const struct opts *o, int n)
{
    for (double b = 8; b <= 1e13; b *= 1.01) {
        if (best(o, "ring", n, b, NULL) <= best(o, "tree", n, b, NULL)) {
            return b;
        }
    }
    return INFINITY;
}

/* NCCL's own latency model for the LL protocol (src/graph/tuning.cc, stored version 01afd20):
 * ring base 3.6 + intra steps x .47 x 1.8 + inter steps x 2.7 us; tree base 4.4 + 2 (local
 * hops x .52 x 1.8 + floor(log2 hosts) x 5.0) us (NVLink within hosts). */
static double nccl_ll_us(int tree, int n, int h)
{
    int lg = 0;
    while ((2 << lg) <= h) {
        lg++;
    }
    double intra = h > 1 ? 1.8 : 1.0;
    if (tree) {
        return 4.4 + 2 * ((n / h - 1) * .52 * intra + lg * 5.0);
    }
    return 3.6 + (2.0 * (n - 1) - 2.0 * (h - 1)) * .47 * intra + 2.0 * (h - 1) * 2.7;
}

struct growth {
    double ring_slope, ring_r2, tree_slope_log, tree_r2, tree_per_doubling;
    int crossover_grows, boot_ok;
};

static void print_growth(const struct opts *o, struct growth *g)
{
    double lx[32], ly_ring[32], lg2[32], y_tree[32], ly_tree[32];
    int k = 0;
    double base = o->links.base_us;
    printf("\n## small-message (8 B) latency less the base (%.2f us), and the ring/tree "
           "crossover\n\n",
           base);
    printf("| ranks | hosts | ring us | tree us | hier us | NCCL model LL ring us (NVLink+net) | NCCL model LL tree us | "
           "ring = tree at |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    double prev_x = 0;
    g->crossover_grows = 1;
    for (int n = o->min_ranks; n <= o->max_ranks && k < 32; n *= 2, k++) {
        int h = n / o->per_host;
        double r = best(o, "ring", n, 8, NULL) - base, t = best(o, "tree", n, 8, NULL) - base;
        double x = h > 1 ? crossover(o, n) : NAN;
        lx[k] = log((double)n);
        ly_ring[k] = log(r);
        lg2[k] = log2((double)n);
        y_tree[k] = t;
        ly_tree[k] = log(t);
        printf("| %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.3g B |\n", n, h, r, t,
               best(o, "hier", n, 8, NULL) - base, nccl_ll_us(0, n, h), nccl_ll_us(1, n, h), x);
        if (h > 1 && !(x >= prev_x)) {
            g->crossover_grows = 0;
        }
        prev_x = h > 1 ? x : prev_x;
    }
    double r2;
    g->ring_slope = fit(lx, ly_ring, k, &g->ring_r2);
    g->tree_per_doubling = fit(lg2, y_tree, k, &g->tree_r2);
    g->tree_slope_log = fit(lx, ly_tree, k, &r2);
    printf("\nfit over %d rank counts: ring latency ~ n^%.3f (R^2 %.4f); tree latency = a + %.2f us "
           "x log2 n (R^2 %.4f), ~ n^%.3f\n",
           k, g->ring_slope, g->ring_r2, g->tree_per_doubling, g->tree_r2, g->tree_slope_log);
}

static void print_boot(const struct opts *o, struct growth *g)
{
    /* tutti's bootstrap runs on TCP: the measured latency and CPU time per message (a send
     * or a receive), a handshake of 3 messages and 2 HMACs (~1 us each), over a 10 GbE link
     * (1.25 GB/s). */
    const struct tutti_link *tcp = tutti__link_default(TUTTI_LINK_TCP);
    struct model_boot_link bl = {tcp->lat_us, tcp->cpu_us, 3 * tcp->cpu_us + 2, 1.25, 1, 0};
    printf("\n## bootstrap: building a communicator of n ranks (link: %.0f us, %.0f us per "
           "message at the root, %.0f us per handshake, %.2f GB/s; hosts with GPUs)\n\n",
           bl.lat_us, bl.msg_us, bl.hs_us, bl.gbps);
    printf("| ranks | star: msgs per rank | star: root msgs | star: root MB out | star: s | "
           "tree: levels | tree: msgs of rank 0 | tree: root msgs | tree: root KB out | tree: s "
           "|\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    g->boot_ok = 1;
    double per_rank = -1;
    for (int n = o->min_ranks; n <= o->max_ranks; n *= 2) {
        struct model_boot s, t;
        model_boot_star(n, &bl, &s);
        model_boot_tree(n, &bl, &t);
        printf("| %d | %.0f | %.0f | %.1f | %.3g | %d | %.0f | %.0f | %.1f | %.3g |\n", n,
               s.rank_msgs, s.root_msgs, s.root_bytes_out / 1e6, s.time_s, model_boot_depth(n),
               t.rank_msgs, t.root_msgs, t.root_bytes_out / 1e3, t.time_s);
        /* The tree's claims: O(log n) levels, the root's traffic O(n), the busiest rank's
         * messages bounded whatever n is. */
        double lim = log((double)n) / log(8.0) + 1;
        if (model_boot_depth(n) > lim || t.rank_msgs > 200 ||
            (per_rank >= 0 && fabs(t.root_bytes_out / n - per_rank) > 1e-9)) {
            g->boot_ok = 0;
        }
        per_rank = t.root_bytes_out / n;
    }
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse(argc, argv, &o) != 0) {
        return 2;
    }
    const struct tutti_tune_links *l = &o.links;
    printf("# tutti-model: %d ranks per host, within a host %s (%.3g us, %.4g GB/s), between "
           "hosts %s (%.3g us, %.4g GB/s per NIC, %d NICs), base %.2f us, up to %d channels\n",
           o.per_host, o.intra, l->intra.lat_us, l->intra.gbps, o.inter, l->inter.lat_us,
           l->inter.gbps, l->nics, l->base_us, l->max_channels);
    print_table(&o);
    struct growth g;
    print_growth(&o, &g);
    print_boot(&o, &g);
    if (!o.check) {
        return 0;
    }
    int ok_ring = fabs(g.ring_slope - 1) < 0.1 && g.ring_r2 > 0.99;
    int ok_tree = g.tree_r2 > 0.98 && g.tree_slope_log < 0.35 && g.tree_per_doubling > 0;
    printf("\ncheck: ring latency grows as n (exponent %.3f): %s\n", g.ring_slope,
           ok_ring ? "ok" : "FAILED");
    printf("check: tree latency grows as log n (R^2 %.4f, exponent %.3f): %s\n", g.tree_r2,
           g.tree_slope_log, ok_tree ? "ok" : "FAILED");
    printf("check: the ring/tree crossover grows with n: %s\n", g.crossover_grows ? "ok" : "FAILED");
    printf("check: bootstrap tree: O(log n) levels, O(n) root bytes, bounded rank 0: %s\n",
           g.boot_ok ? "ok" : "FAILED");
    return ok_ring && ok_tree && g.crossover_grows && g.boot_ok ? 0 : 1;
}
