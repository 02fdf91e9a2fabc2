/*
 * hold.c - the per-thread records behind tutti__hold (hold.h). A record is made the first time
 * a thread enters an object, given back (cleared, not freed) when the thread exits, and taken
 * again by a later thread. The list lives in tutti__g.holds.
 */
#include "base/hold.h"
#include "base/global.h"

#include <stdlib.h>

struct tutti_hold {
    _Atomic(const void *) obj[TUTTI_HOLD_KINDS]; /* what this thread is inside, or NULL */
    _Atomic int taken;                           /* a live thread owns this record */
    struct tutti_hold *next;                     /* set once, before the record is listed */
};

/* A thread exits: its record is free for the next thread that needs one. */
static void give_back(void *arg)
{
    struct tutti_hold *h = arg;
    for (int k = 0; k < TUTTI_HOLD_KINDS; k++) {
        atomic_store(&h->obj[k], NULL);
    }
    atomic_store(&h->taken, 0);
    tutti__tls.hold = NULL;
}

static void make_key(void)
{
    tutti__g.holds.key_ok = pthread_key_create(&tutti__g.holds.key, give_back) == 0;
}

/* Unloaded (dlclose) or exiting: a thread that exits later must not run give_back, which may be
 * gone with the library. A thread that calls in after this takes the locked way (the key's
 * pthread_setspecific fails). */
__attribute__((destructor)) static void delete_key(void)
{
    if (tutti__g.holds.key_ok) {
        pthread_key_delete(tutti__g.holds.key);
    }
}

/* This thread's record: a given-back one if there is any, else a new one; NULL without memory
 * (the thread then always takes the locked way). */
static struct tutti_hold *own_record(void)
{
    pthread_once(&tutti__g.holds.once, make_key);
    if (!tutti__g.holds.key_ok) {
        return NULL;
    }
    struct tutti_hold *h = atomic_load(&tutti__g.holds.head);
    for (; h != NULL; h = h->next) {
        int free_one = 0;
        if (atomic_compare_exchange_strong(&h->taken, &free_one, 1)) {
            break;
        }
    }
    if (h == NULL) {
        h = calloc(1, sizeof(*h));
        if (h == NULL) {
            return NULL;
        }
        for (int k = 0; k < TUTTI_HOLD_KINDS; k++) {
            atomic_init(&h->obj[k], NULL);
        }
        atomic_init(&h->taken, 1);
        h->next = atomic_load(&tutti__g.holds.head);
        while (!atomic_compare_exchange_weak(&tutti__g.holds.head, &h->next, h)) {
        }
    }
    if (pthread_setspecific(tutti__g.holds.key, h) != 0) {
        atomic_store(&h->taken, 0);
        return NULL;
    }
    return h;
}

void tutti__hold_note(enum tutti_hold_kind kind, const void *obj, uint64_t takes)
{
    if (tutti__tls.hold == NULL) {
        tutti__tls.hold = own_record();
    }
    tutti__tls.hold_obj[kind] = obj;
    tutti__tls.hold_takes[kind] = takes;
}

int tutti__hold(enum tutti_hold_kind kind, const void *obj, const _Atomic uint64_t *takes)
{
    struct tutti_hold *h = tutti__tls.hold;
    if (h == NULL || tutti__tls.hold_obj[kind] != obj ||
        atomic_load_explicit(&h->obj[kind], memory_order_relaxed) != NULL) {
        return 0; /* not found live before, or this thread holds one already (nested calls) */
    }
    atomic_store(&h->obj[kind], obj); /* seen by a remover that counted its removal after this */
    if (atomic_load(takes) == tutti__tls.hold_takes[kind]) {
        return 1;
    }
    atomic_store_explicit(&h->obj[kind], NULL, memory_order_release);
    tutti__tls.hold_obj[kind] = NULL;
    return 0;
}

int tutti__unhold(enum tutti_hold_kind kind, const void *obj)
{
    struct tutti_hold *h = tutti__tls.hold;
    if (h == NULL || atomic_load_explicit(&h->obj[kind], memory_order_relaxed) != obj) {
        return 0;
    }
    atomic_store_explicit(&h->obj[kind], NULL, memory_order_release);
    return 1;
}

int tutti__held(enum tutti_hold_kind kind, const void *obj)
{
    for (struct tutti_hold *h = atomic_load(&tutti__g.holds.head); h != NULL; h = h->next) {
        if (atomic_load(&h->obj[kind]) == obj) {
            return 1;
        }
    }
    return 0;
}

int tutti__hold_records(void)
{
    int n = 0;
    for (struct tutti_hold *h = atomic_load(&tutti__g.holds.head); h != NULL; h = h->next) {
        n++;
    }
    return n;
}
