/*
 * turn.c - the communicator's turn (turn.h), kept in its runner's queue beside the requests it
 * orders.
 */
#include "run/turn.h"
#include "run/runner.h"

void tutti__turn_take(struct tutti_runner *runner)
{
    struct tutti_comm_queue *q = &runner->queue;
    pthread_mutex_lock(&q->lock);
    while (q->busy || q->head != NULL) {
        pthread_cond_wait(&q->cond, &q->lock);
    }
    q->busy = 1;
    pthread_mutex_unlock(&q->lock);
}

int tutti__turn_try(struct tutti_runner *runner)
{
    struct tutti_comm_queue *q = &runner->queue;
    pthread_mutex_lock(&q->lock);
    int mine = (q->head == NULL && !q->busy);
    if (mine) {
        q->busy = 1;
    }
    pthread_mutex_unlock(&q->lock);
    return mine;
}

void tutti__turn_give(struct tutti_runner *runner)
{
    struct tutti_comm_queue *q = &runner->queue;
    pthread_mutex_lock(&q->lock);
    q->busy = 0;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}
