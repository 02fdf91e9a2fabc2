/*
 * turn.c - the communicator's turn (turn.h), kept in its runner's queue beside the requests it
 * orders.
 *
 * The turn is the queue's `busy` flag, taken by a compare-and-swap from 0. With nothing queued
 * a caller takes and gives it without the queue's lock, two atomic operations where a blocking
 * call used to pay two lock round trips and a broadcast. Whoever must wait for it does so under
 * the lock on the queue's condition: a caller counts itself in `sleepers` first, the worker
 * waits only while requests are queued; so one who gives the turn back stores busy = 0 and then
 * takes the lock to wake them only when sleepers or queued says someone may wait. Both sides
 * are sequentially consistent (store, then load the other's word), so one of them sees the
 * other: no wake-up is lost.
 */
#include "run/turn.h"
#include "run/runner.h"

/* Take the turn if it is free: 1 when taken. */
static int grab(struct tutti_comm_queue *q)
{
    int free_ = 0;
    return atomic_compare_exchange_strong(&q->busy, &free_, 1);
}

void tutti__turn_take(struct tutti_runner *runner)
{
    struct tutti_comm_queue *q = &runner->queue;
    if (atomic_load(&q->queued) == 0 && grab(q)) {
        return;
    }
    pthread_mutex_lock(&q->lock);
    while (q->head != NULL || !grab(q)) {
        atomic_fetch_add(&q->sleepers, 1);
        if (q->head != NULL || atomic_load(&q->busy)) { /* looked at after counting ourselves */
            pthread_cond_wait(&q->cond, &q->lock);
        }
        atomic_fetch_sub(&q->sleepers, 1);
    }
    pthread_mutex_unlock(&q->lock);
}

int tutti__turn_try(struct tutti_runner *runner)
{
    struct tutti_comm_queue *q = &runner->queue;
    if (atomic_load(&q->queued) == 0 && grab(q)) {
        return 1;
    }
    pthread_mutex_lock(&q->lock);
    int mine = q->head == NULL && grab(q);
    pthread_mutex_unlock(&q->lock);
    return mine;
}

void tutti__turn_give(struct tutti_runner *runner)
{
    struct tutti_comm_queue *q = &runner->queue;
    atomic_store(&q->busy, 0);
    if (atomic_load(&q->sleepers) > 0 || atomic_load(&q->queued) > 0) {
        pthread_mutex_lock(&q->lock);
        pthread_cond_broadcast(&q->cond);
        pthread_mutex_unlock(&q->lock);
    }
}
