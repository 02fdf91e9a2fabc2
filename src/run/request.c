/*
 * request.c - owns the runner's queue (runner.h): the progress thread that runs asynchronous
 * operations in order and the requests users test and wait on; blocking calls wait for the queue to
 * empty (the communicator's turn, turn.c) and all run through run.c. The thread is started on the
 * first asynchronous call, so programs that only block never pay for it. A request handed to the
 * user is in the live set (tutti__g.live_reqs) until tutti_request_free takes it out: a freed one
 * is refused, not read.
 */
#include "run/request.h"
#include "base/check.h"
#include "coll/coll.h"
#include "run/runner.h"
#include "exec/fail.h"
#include "exec/op.h"
#include "base/global.h"
#include "run/run.h"
#include "run/turn.h"

#include <stdlib.h>
#include <string.h>

/* Finish req. A stream-ordered request belongs to its batch (stream.c), which may free it as
 * soon as on_done has run: on_done comes last, and the worker touches req no more. */
static void complete(struct tutti_request *req, tutti_status_t st)
{
    void (*on_done)(void *, tutti_status_t) = req->on_done;
    void *arg = req->on_done_arg;
    pthread_mutex_lock(&req->lock);
    req->status = st;
    req->done = 1;
    int detached = req->detached;
    pthread_cond_broadcast(&req->cond);
    pthread_mutex_unlock(&req->lock);
    if (detached) {
        tutti__request_release(req);
    } else if (on_done != NULL) {
        on_done(arg, st);
    }
}

void tutti__request_release(struct tutti_request *req)
{
    tutti__plan_free(&req->plan);
    pthread_mutex_destroy(&req->lock);
    pthread_cond_destroy(&req->cond);
    free((void *)req->ops);
    free(req->owned_v);
    free(req);
}

/* A gated request at the head waits for its stream (tutti_comm_destroy too waits for it),
 * unless the communicator failed or is being aborted: then it completes with that error (its
 * ticket lets the stream go on; the results are undefined, as after any failure). */
static int head_waits(struct tutti_runner *runner)
{
    struct tutti_comm_queue *q = &runner->queue;
    return q->head != NULL && q->head->gated && !atomic_load(&runner->fab->state.aborting) &&
           atomic_load(&runner->fab->state.status) == TUTTI_OK;
}

/* Run a request: one call, or a group's batch (stream.c). */
static tutti_status_t run_request(struct tutti_runner *runner, struct tutti_request *req)
{
    if (req->gated) { /* failed or aborted before its stream came */
        tutti_status_t st = tutti__fabric_health(runner->fab);
        if (st != TUTTI_OK) {
            return st;
        }
        return tutti__set_error(tutti__fabric_err(runner->fab), TUTTI_ERR_ABORTED,
                                "%s on a stream: the communicator was aborted before the stream "
                                "reached the call",
                                tutti__coll_name(req->op.coll));
    }
    if (req->nops > 1) {
        return tutti__run_batch(runner, req->ops, req->nops);
    }
    return tutti__run_op(runner, &req->op, &req->plan);
}

static void *worker_main(void *arg)
{
    struct tutti_runner *runner = arg;
    struct tutti_comm_queue *q = &runner->queue;
    tutti__tls.rank = runner->fab->rank;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        /* A request to run, the end (stopped with nothing queued), or wait. A gated head keeps
         * us waiting even when stopped: destroy waits for its stream's host function. */
        int free_ = 0; /* the turn, taken as turn.c takes it (a caller may, without the lock) */
        if (q->head != NULL && !head_waits(runner) &&
            atomic_compare_exchange_strong(&q->busy, &free_, 1)) {
            /* run it, below */
        } else if (q->head == NULL && q->stop) {
            break;
        } else {
            pthread_cond_wait(&q->cond, &q->lock);
            continue;
        }
        struct tutti_request *req = q->head;
        q->head = req->next;
        if (q->head == NULL) {
            q->tail = NULL;
        }
        atomic_fetch_sub(&q->queued, 1);
        pthread_mutex_unlock(&q->lock);
        atomic_fetch_add(&runner->fab->state.inflight, 1); /* tutti_comm_abort waits for us */
        tutti_status_t st = run_request(runner, req);
        atomic_fetch_sub(&runner->fab->state.inflight, 1);
        complete(req, st);
        pthread_mutex_lock(&q->lock);
        atomic_store(&q->busy, 0);
        pthread_cond_broadcast(&q->cond);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

static tutti_status_t request_new(struct tutti_runner *runner, const struct tutti_op_desc *op,
                                  struct tutti_request **req_p)
{
    struct tutti_request *req = calloc(1, sizeof(*req));
    if (req == NULL) {
        return tutti__set_error(tutti__fabric_err(runner->fab), TUTTI_ERR_NO_MEMORY,
                                "no memory for a request");
    }
    req->runner = runner;
    req->op = *op;
    req->status = TUTTI_IN_PROGRESS;
    pthread_mutex_init(&req->lock, NULL);
    pthread_cond_init(&req->cond, NULL);
    *req_p = req;
    return TUTTI_OK;
}

static tutti_status_t enqueue(struct tutti_runner *runner, struct tutti_request *req)
{
    struct tutti_comm_queue *q = &runner->queue;
    pthread_mutex_lock(&q->lock);
    if (!q->worker_started) {
        int err = pthread_create(&q->worker, NULL, worker_main, runner);
        if (err != 0) {
            pthread_mutex_unlock(&q->lock);
            return tutti__set_error(tutti__fabric_err(runner->fab), TUTTI_ERR_SYSTEM,
                                    "starting the progress thread: %s", strerror(err));
        }
        q->worker_started = 1;
    }
    if (q->tail != NULL) {
        q->tail->next = req;
    } else {
        q->head = req;
    }
    q->tail = req;
    atomic_fetch_add(&q->queued, 1); /* before a caller's turn_give looks (turn.c) */
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
    return TUTTI_OK;
}

tutti_status_t tutti__submit_gated(struct tutti_runner *runner, const struct tutti_op_desc *ops,
                                   int nops, void (*on_done)(void *, tutti_status_t), void *arg,
                                   tutti_request_t **req_p)
{
    struct tutti_request *req = NULL;
    TUTTI_CHECK(request_new(runner, &ops[0], &req));
    if (nops > 1) {
        struct tutti_op_desc *copy = malloc((size_t)nops * sizeof(*copy));
        if (copy == NULL) {
            tutti__request_release(req);
            return tutti__set_error(tutti__fabric_err(runner->fab), TUTTI_ERR_NO_MEMORY,
                                    "no memory for a group's batch");
        }
        memcpy(copy, ops, (size_t)nops * sizeof(*copy));
        req->ops = copy;
    }
    req->nops = nops;
    req->gated = 1;
    req->on_done = on_done;
    req->on_done_arg = arg;
    tutti_status_t st = enqueue(runner, req);
    if (st != TUTTI_OK) {
        tutti__request_release(req);
        return st;
    }
    *req_p = req;
    return TUTTI_OK;
}

void tutti__request_open(tutti_request_t *req)
{
    struct tutti_comm_queue *q = &req->runner->queue;
    pthread_mutex_lock(&q->lock);
    req->gated = 0;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

tutti_status_t tutti__submit(struct tutti_runner *runner, const struct tutti_op_desc *op,
                             tutti_request_t **req_p)
{
    struct tutti_request *req = NULL;
    TUTTI_CHECK(request_new(runner, op, &req));
    int failed = 0;
    req->owned_v =
        tutti__op_own_counts(&req->op, runner->fab->nranks, &failed); /* the caller's go */
    if (failed) {
        tutti__request_release(req);
        return tutti__set_error(tutti__fabric_err(runner->fab), TUTTI_ERR_NO_MEMORY,
                                "no memory for a request's counts");
    }
    /* Live before it is queued: the worker may complete it at once, and the caller frees it. */
    tutti_status_t st = tutti__handle_add(&tutti__g.live_reqs, req);
    if (st == TUTTI_OK) {
        st = enqueue(runner, req);
        if (st != TUTTI_OK) {
            (void)tutti__handle_take(&tutti__g.live_reqs, req);
        }
    }
    if (st != TUTTI_OK) {
        tutti__request_release(req);
        return st;
    }
    *req_p = req;
    return TUTTI_OK;
}

tutti_status_t tutti__run_service(struct tutti_runner *runner, struct tutti_op_desc *op)
{
    tutti__fp_issue(runner->fab, op);
    return tutti__run_blocking(runner, op);
}

tutti_status_t tutti__run_blocking(struct tutti_runner *runner, const struct tutti_op_desc *op)
{
    if (!tutti__turn_try(runner)) {
        /* Asynchronous operations are queued or running: go after them, in order. */
        tutti_request_t *req = NULL;
        TUTTI_CHECK(tutti__submit(runner, op, &req));
        tutti_status_t st = tutti_wait(req);
        tutti_request_free(req);
        return st;
    }
    tutti_status_t st = tutti__run_op(runner, op, &runner->plan);
    tutti__turn_give(runner);
    return st;
}

void tutti__queue_drain(struct tutti_runner *runner)
{
    struct tutti_comm_queue *q = &runner->queue;
    pthread_mutex_lock(&q->lock);
    q->stop = 1;
    pthread_cond_broadcast(&q->cond);
    int started = q->worker_started;
    q->worker_started = 0;
    pthread_mutex_unlock(&q->lock);
    if (started) {
        pthread_join(q->worker, NULL);
    }
}

/* The error for a handle that is not a live request. */
static tutti_status_t not_live(const tutti_request_t *req, const char *what)
{
    return tutti__set_error(NULL, TUTTI_ERR_INVALID_USAGE,
                            "%s: req %p is not a live request (freed already, or not made by "
                            "tutti)",
                            what, (const void *)req);
}

tutti_status_t tutti_test(tutti_request_t *req, int *done_p)
{
    if (req == NULL || done_p == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "%s is NULL",
                                req == NULL ? "req" : "done_p");
    }
    if (!tutti__handle_live(&tutti__g.live_reqs, req)) {
        return not_live(req, "tutti_test");
    }
    pthread_mutex_lock(&req->lock);
    int done = req->done;
    tutti_status_t st = done ? req->status : TUTTI_OK;
    pthread_mutex_unlock(&req->lock);
    *done_p = done;
    return st;
}

tutti_status_t tutti_wait(tutti_request_t *req)
{
    if (req == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "req is NULL");
    }
    if (!tutti__handle_live(&tutti__g.live_reqs, req)) {
        return not_live(req, "tutti_wait");
    }
    pthread_mutex_lock(&req->lock);
    while (!req->done) {
        pthread_cond_wait(&req->cond, &req->lock);
    }
    tutti_status_t st = req->status;
    pthread_mutex_unlock(&req->lock);
    return st;
}

tutti_status_t tutti_request_free(tutti_request_t *req)
{
    if (req == NULL) {
        return tutti__set_error(NULL, TUTTI_ERR_INVALID_ARG, "req is NULL");
    }
    /* Out of the live set first: a second free (or a test or wait after this one) is refused. */
    if (!tutti__handle_take(&tutti__g.live_reqs, req)) {
        return not_live(req, "tutti_request_free");
    }
    pthread_mutex_lock(&req->lock);
    if (!req->done) {
        req->detached = 1; /* the worker frees it when the operation completes */
        pthread_mutex_unlock(&req->lock);
        return TUTTI_OK;
    }
    pthread_mutex_unlock(&req->lock);
    tutti__request_release(req);
    return TUTTI_OK;
}
