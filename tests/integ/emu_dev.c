/*
 * emu_dev.c - the emulated GPU of emu_dev.h: device memory as POSIX shared memory mapped
 * twice (IPC handles are its names), streams as threads, pinned memory as ordinary memory,
 * the reduction kernel as the CPU's fold.
 */
#include "emu_dev.h"
#include "gpu/devops.h"
#include "kernels/reduce.h"
#include "tutti.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { MAX_BUFS = 256 };

struct dev_buf {
    char *dev;   /* PROT_NONE: what users hold */
    char *alias; /* read-write view of the same pages, for the copy engine */
    size_t bytes;
    char name[48]; /* the shared memory object; unlinked by its owner at free */
    int owner;
};

enum op_kind { OP_COPY, OP_HOSTFN, OP_WAIT, OP_HOLD, OP_WRITE, OP_REDUCE };

enum { MAX_SRC = 8 };

struct emu_op {
    enum op_kind kind;
    void *dst;
    const void *src;
    size_t bytes;
    void (*fn)(void *);
    void *arg;
    const volatile uint64_t *word;
    uint64_t value;
    const void *srcs[MAX_SRC];
    int nsrc, divisor;
    size_t count;
    tutti_datatype_t dt;
    tutti_op_t rop;
    struct emu_op *next;
};

struct emu_stream {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct emu_op *head, *tail;
    int running; /* an operation is being run */
    int held;    /* at a hold, waiting for release */
    int stop;
    int capturing;
    pthread_t th;
};

static pthread_mutex_t bufs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dev_buf bufs[MAX_BUFS];
static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static emu_stream_t *default_stream;
static _Atomic long n_hostfn, n_pinned, n_reduces, n_names;

static void die(const char *what)
{
    fprintf(stderr, "emu_dev: %s\n", what);
    abort();
}

/* The writable view of p (device memory), or p itself (host memory). */
static void *view(const void *p, size_t bytes)
{
    uintptr_t a = (uintptr_t)p;
    pthread_mutex_lock(&bufs_lock);
    for (int i = 0; i < MAX_BUFS; i++) {
        uintptr_t d = (uintptr_t)bufs[i].dev;
        if (bufs[i].dev != NULL && a >= d && a < d + bufs[i].bytes) {
            if (a + bytes > d + bufs[i].bytes) {
                die("copy runs past the end of a device buffer");
            }
            void *v = bufs[i].alias + (a - d);
            pthread_mutex_unlock(&bufs_lock);
            return v;
        }
    }
    pthread_mutex_unlock(&bufs_lock);
    return (void *)p;
}

void *emu_dev_view(const void *p, size_t bytes)
{
    return view(p, bytes);
}

/* Map a shared memory object as a device buffer (PROT_NONE) and its alias; register it. */
static void *map_buf(const char *name, size_t len, int owner)
{
    int fd = shm_open(name, O_RDWR | (owner ? O_CREAT | O_EXCL : 0), 0600);
    if (fd < 0 || (owner && ftruncate(fd, (off_t)len) != 0)) {
        die("shm_open");
    }
    char *dev = mmap(NULL, len, PROT_NONE, MAP_SHARED, fd, 0);
    char *alias = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (dev == MAP_FAILED || alias == MAP_FAILED) {
        die("mmap");
    }
    pthread_mutex_lock(&bufs_lock);
    int i = 0;
    while (i < MAX_BUFS && bufs[i].dev != NULL) {
        i++;
    }
    if (i == MAX_BUFS) {
        die("too many device buffers");
    }
    bufs[i] = (struct dev_buf){dev, alias, len, "", owner};
    snprintf(bufs[i].name, sizeof(bufs[i].name), "%s", name);
    pthread_mutex_unlock(&bufs_lock);
    return dev;
}

void *emu_dev_malloc(size_t bytes)
{
    /* pid, a counter and the clock: a reused pid never meets a dead process's leftover */
    char name[48];
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    snprintf(name, sizeof(name), "/tutti-emu-%d-%ld-%lx", (int)getpid(),
             atomic_fetch_add(&n_names, 1), (unsigned long)t.tv_nsec);
    return map_buf(name, bytes > 0 ? bytes : 1, 1);
}

void emu_dev_free(void *dev)
{
    pthread_mutex_lock(&bufs_lock);
    for (int i = 0; i < MAX_BUFS; i++) {
        if (bufs[i].dev == dev) {
            munmap(bufs[i].dev, bufs[i].bytes);
            munmap(bufs[i].alias, bufs[i].bytes);
            if (bufs[i].owner) {
                shm_unlink(bufs[i].name);
            }
            bufs[i] = (struct dev_buf){0};
        }
    }
    pthread_mutex_unlock(&bufs_lock);
}

void emu_dev_upload(void *dev, const void *host, size_t bytes)
{
    memcpy(view(dev, bytes), host, bytes);
}

void emu_dev_download(void *host, const void *dev, size_t bytes)
{
    memcpy(host, view(dev, bytes), bytes);
}

static void run_op(emu_stream_t *s, struct emu_op *op)
{
    switch (op->kind) {
    case OP_COPY:
        if (op->bytes > 0) {
            memcpy(view(op->dst, op->bytes), view(op->src, op->bytes), op->bytes);
        }
        break;
    case OP_HOSTFN:
        op->fn(op->arg);
        break;
    case OP_WAIT:
        while (__atomic_load_n((const uint64_t *)view((const void *)op->word, 8),
                               __ATOMIC_ACQUIRE) < op->value) {
            usleep(20);
        }
        break;
    case OP_WRITE:
        __atomic_store_n((uint64_t *)view((const void *)op->word, 8), op->value, __ATOMIC_RELEASE);
        break;
    case OP_REDUCE: { /* the kernel's fold: left to right, AVG divided in the last step */
        size_t bytes = op->count * tutti_datatype_size(op->dt);
        char *dst = view(op->dst, bytes);
        char *tmp = malloc(bytes > 0 ? bytes : 1);
        if (tmp == NULL) {
            die("no memory");
        }
        memcpy(tmp, view(op->srcs[0], bytes), bytes);
        if (op->nsrc == 1 && op->rop == TUTTI_AVG && op->divisor > 1) {
            tutti__reduce_div(tmp, tmp, op->count, op->dt, op->divisor);
        }
        for (int k = 1; k < op->nsrc; k++) {
            tutti__reduce(tmp, NULL, tmp, view(op->srcs[k], bytes), op->count, op->dt, op->rop,
                          k == op->nsrc - 1 ? op->divisor : 1);
        }
        memcpy(dst, tmp, bytes);
        free(tmp);
        break;
    }
    case OP_HOLD:
        pthread_mutex_lock(&s->lock);
        s->held = 1;
        pthread_cond_broadcast(&s->cond); /* a release may be waiting for the stream to get here */
        while (s->held) {
            pthread_cond_wait(&s->cond, &s->lock);
        }
        pthread_mutex_unlock(&s->lock);
        break;
    }
}

static void *stream_main(void *arg)
{
    emu_stream_t *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->head == NULL && !s->stop) {
            pthread_cond_wait(&s->cond, &s->lock);
        }
        if (s->head == NULL) {
            break;
        }
        struct emu_op *op = s->head;
        s->head = op->next;
        if (s->head == NULL) {
            s->tail = NULL;
        }
        s->running = 1;
        pthread_mutex_unlock(&s->lock);
        run_op(s, op);
        free(op);
        pthread_mutex_lock(&s->lock);
        s->running = 0;
        pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

emu_stream_t *emu_stream_create(void)
{
    emu_stream_t *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        die("no memory");
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    if (pthread_create(&s->th, NULL, stream_main, s) != 0) {
        die("pthread_create");
    }
    return s;
}

static void make_default(void)
{
    default_stream = emu_stream_create();
}

static emu_stream_t *resolve(void *stream)
{
    if (stream != NULL) {
        return stream;
    }
    pthread_once(&default_once, make_default);
    return default_stream;
}

void emu_stream_destroy(emu_stream_t *s)
{
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->th, NULL);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
}

static void push(void *stream, struct emu_op op)
{
    emu_stream_t *s = resolve(stream);
    struct emu_op *o = malloc(sizeof(*o));
    if (o == NULL) {
        die("no memory");
    }
    *o = op;
    o->next = NULL;
    pthread_mutex_lock(&s->lock);
    if (s->tail != NULL) {
        s->tail->next = o;
    } else {
        s->head = o;
    }
    s->tail = o;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

int emu_stream_sync(emu_stream_t *stream, int timeout_ms)
{
    emu_stream_t *s = resolve(stream);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    while ((s->head != NULL || s->running) && rc == 0) {
        rc = pthread_cond_timedwait(&s->cond, &s->lock, &until);
    }
    pthread_mutex_unlock(&s->lock);
    return rc == 0 ? 0 : -1;
}

void emu_stream_run(emu_stream_t *s, void (*fn)(void *), void *arg)
{
    push(s, (struct emu_op){.kind = OP_HOSTFN, .fn = fn, .arg = arg});
}

void emu_stream_hold(emu_stream_t *s)
{
    push(s, (struct emu_op){.kind = OP_HOLD});
}

void emu_stream_release(emu_stream_t *stream)
{
    emu_stream_t *s = resolve(stream);
    pthread_mutex_lock(&s->lock);
    while (!s->held) { /* the stream may not have reached the hold yet */
        pthread_cond_wait(&s->cond, &s->lock);
    }
    s->held = 0;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

void emu_stream_set_capturing(emu_stream_t *s, int capturing)
{
    resolve(s)->capturing = capturing;
}

long emu_host_funcs(void)
{
    return atomic_load(&n_hostfn);
}

long emu_pinned_live(void)
{
    return atomic_load(&n_pinned);
}

long emu_reduces(void)
{
    return atomic_load(&n_reduces);
}

/* ---- struct tutti_devops ---- */

static int e_is_device(const void *ptr, int *dev_p)
{
    *dev_p = view(ptr, 0) != ptr;
    return 0;
}

static int e_capturing(void *stream, int *capturing_p)
{
    *capturing_p = resolve(stream)->capturing;
    return 0;
}

static int e_host_alloc(void **ptr_p, size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes > 0 ? bytes : 1) != 0) {
        return 2; /* as cudaErrorMemoryAllocation */
    }
    atomic_fetch_add(&n_pinned, 1);
    *ptr_p = p;
    return 0;
}

static int e_host_free(void *ptr)
{
    atomic_fetch_sub(&n_pinned, 1);
    free(ptr);
    return 0;
}

static int e_copy_async(void *dst, const void *src, size_t bytes, void *stream)
{
    push(stream, (struct emu_op){.kind = OP_COPY, .dst = dst, .src = src, .bytes = bytes});
    return 0;
}

static int e_host_func(void *stream, void (*fn)(void *), void *arg)
{
    atomic_fetch_add(&n_hostfn, 1);
    push(stream, (struct emu_op){.kind = OP_HOSTFN, .fn = fn, .arg = arg});
    return 0;
}

static int e_wait_geq(void *stream, const volatile uint64_t *word, uint64_t value)
{
    push(stream, (struct emu_op){.kind = OP_WAIT, .word = word, .value = value});
    return 0;
}

static int e_dev_alloc(void **ptr_p, size_t bytes)
{
    *ptr_p = emu_dev_malloc(bytes);
    return 0;
}

static int e_dev_free(void *ptr)
{
    emu_dev_free(ptr);
    return 0;
}

/* The handle is the shared memory object's name, then its size. */
static int e_ipc_export(void *ptr, struct tutti_ipc_handle *h)
{
    memset(h, 0, sizeof(*h));
    pthread_mutex_lock(&bufs_lock);
    for (int i = 0; i < MAX_BUFS; i++) {
        if (bufs[i].dev == ptr) {
            memcpy(h->bytes, bufs[i].name, 48);
            memcpy(h->bytes + 48, &bufs[i].bytes, sizeof(size_t));
        }
    }
    pthread_mutex_unlock(&bufs_lock);
    return h->bytes[0] == 0 ? 1 : 0; /* as cudaErrorInvalidValue: not an allocation's start */
}

static int e_ipc_import(const struct tutti_ipc_handle *h, void **ptr_p)
{
    char name[48];
    size_t bytes;
    memcpy(name, h->bytes, 48);
    name[47] = '\0';
    memcpy(&bytes, h->bytes + 48, sizeof(size_t));
    *ptr_p = map_buf(name, bytes, 0);
    return 0;
}

static int e_ipc_close(void *ptr)
{
    emu_dev_free(ptr);
    return 0;
}

static int e_host_register(void *ptr, size_t bytes)
{
    (void)ptr, (void)bytes;
    return 0;
}

static int e_host_unregister(void *ptr)
{
    (void)ptr;
    return 0;
}

static int e_write_value(void *stream, volatile uint64_t *word, uint64_t value)
{
    push(stream, (struct emu_op){.kind = OP_WRITE, .word = word, .value = value});
    return 0;
}

static int e_reduce(const void *const *src, int nsrc, void *dst, size_t count, tutti_datatype_t dt,
                    tutti_op_t op, int divisor, void *stream)
{
    if (nsrc < 1 || nsrc > MAX_SRC) {
        return 1;
    }
    struct emu_op o = {.kind = OP_REDUCE,
                       .dst = dst,
                       .nsrc = nsrc,
                       .count = count,
                       .dt = dt,
                       .rop = op,
                       .divisor = divisor};
    memcpy(o.srcs, src, (size_t)nsrc * sizeof(*src));
    atomic_fetch_add(&n_reduces, 1);
    push(stream, o);
    return 0;
}

static const char *e_error_string(int err)
{
    return err == 2 ? "emulated: out of memory" : "emulated: error";
}

static const struct tutti_devops emu_ops = {
    .name = "emulated",
    .is_device = e_is_device,
    .capturing = e_capturing,
    .host_alloc = e_host_alloc,
    .host_free = e_host_free,
    .copy_async = e_copy_async,
    .host_func = e_host_func,
    .wait_geq = e_wait_geq,
    .error_string = e_error_string,
    .dev_alloc = e_dev_alloc,
    .dev_free = e_dev_free,
    .ipc_export = e_ipc_export,
    .ipc_import = e_ipc_import,
    .ipc_close = e_ipc_close,
    .host_register = e_host_register,
    .host_unregister = e_host_unregister,
    .write_value = e_write_value,
    .reduce = e_reduce,
};

/* Unlink the device memory of processes that are gone (ranks a test killed or let die leave
 * theirs behind; nobody can import it any more). */
static void sweep_dead(void)
{
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        int pid = 0;
        if (sscanf(e->d_name, "tutti-emu-%d-", &pid) == 1 && pid > 0 && kill(pid, 0) != 0 &&
            errno == ESRCH) {
            char name[300];
            snprintf(name, sizeof(name), "/%s", e->d_name);
            shm_unlink(name);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
}

/* At exit, the names this process made and never freed (a rank that ends on an error keeps its
 * device memory to the end), so that a run leaves nothing in /dev/shm. Only names of this pid:
 * a forked rank's copy of its parent's table is not its own. */
static void unlink_own(void)
{
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "/tutti-emu-%d-", (int)getpid());
    for (int i = 0; i < MAX_BUFS; i++) {
        if (bufs[i].dev != NULL && bufs[i].owner &&
            strncmp(bufs[i].name, prefix, strlen(prefix)) == 0) {
            shm_unlink(bufs[i].name);
        }
    }
}

static void at_exit_unlink_own(void)
{
    atexit(unlink_own);
}

void emu_dev_install(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT; /* one atexit per process */
    sweep_dead();
    pthread_once(&once, at_exit_unlink_own);
    tutti__devops_install(&emu_ops);
}
