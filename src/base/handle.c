/*
 * handle.c - sets of live handles (handle.h): open addressing with linear probing over the
 * pointer values, so that a lookup never reads the memory a pointer points at. Removal leaves a
 * tombstone; the table is rebuilt when live entries and tombstones fill half of it. The sets
 * themselves (communicators, requests) live in tutti__g.
 */
#include "base/handle.h"
#include "base/check.h"

#include <stdlib.h>

#define EMPTY ((uintptr_t)0)
#define TOMB  ((uintptr_t)1)

/* Pointers are at least 8-aligned: drop those bits, then a multiplicative hash. */
static size_t slot_of(uintptr_t p, size_t cap)
{
    return (size_t)(((uint64_t)(p >> 3) * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

void tutti__handle_lock(struct tutti_handle_set *s)
{
    pthread_mutex_lock(&s->lock);
}

void tutti__handle_unlock(struct tutti_handle_set *s)
{
    pthread_mutex_unlock(&s->lock);
}

int tutti__handle_find_locked(const struct tutti_handle_set *s, const void *p)
{
    uintptr_t v = (uintptr_t)p;
    if (s->cap == 0 || v <= TOMB) {
        return 0;
    }
    for (size_t i = slot_of(v, s->cap), n = 0; n < s->cap; i = (i + 1) & (s->cap - 1), n++) {
        if (s->slots[i] == v) {
            return 1;
        }
        if (s->slots[i] == EMPTY) {
            return 0;
        }
    }
    return 0;
}

static void put(uintptr_t *slots, size_t cap, uintptr_t v)
{
    size_t i = slot_of(v, cap);
    while (slots[i] > TOMB) {
        i = (i + 1) & (cap - 1);
    }
    slots[i] = v;
}

/* Room for one more, keeping the table at most half full (live entries and tombstones): else
 * rebuild it without tombstones, at most a quarter full of live ones. */
static int make_room(struct tutti_handle_set *s)
{
    if (s->cap != 0 && 2 * (s->used + s->tombs + 1) <= s->cap) {
        return 0;
    }
    size_t cap = 64;
    while (4 * (s->used + 1) > cap) {
        cap *= 2;
    }
    uintptr_t *slots = calloc(cap, sizeof(*slots));
    if (slots == NULL) {
        return -1;
    }
    for (size_t i = 0; i < s->cap; i++) {
        if (s->slots[i] > TOMB) {
            put(slots, cap, s->slots[i]);
        }
    }
    free(s->slots);
    s->slots = slots;
    s->cap = cap;
    s->tombs = 0;
    return 0;
}

tutti_status_t tutti__handle_add(struct tutti_handle_set *s, const void *p)
{
    pthread_mutex_lock(&s->lock);
    int rc = make_room(s);
    if (rc == 0) {
        put(s->slots, s->cap, (uintptr_t)p);
        s->used++;
    }
    pthread_mutex_unlock(&s->lock);
    if (rc != 0) {
        return tutti__set_error(NULL, TUTTI_ERR_NO_MEMORY, "no memory to track a handle");
    }
    return TUTTI_OK;
}

int tutti__handle_take(struct tutti_handle_set *s, const void *p)
{
    uintptr_t v = (uintptr_t)p;
    int found = 0;
    pthread_mutex_lock(&s->lock);
    if (s->cap != 0 && v > TOMB) {
        for (size_t i = slot_of(v, s->cap), n = 0; n < s->cap && s->slots[i] != EMPTY;
             i = (i + 1) & (s->cap - 1), n++) {
            if (s->slots[i] == v) {
                s->slots[i] = TOMB;
                s->used--;
                s->tombs++;
                atomic_fetch_add(&s->takes, 1); /* before anyone who looked it up is counted */
                found = 1;
                break;
            }
        }
    }
    pthread_mutex_unlock(&s->lock);
    return found;
}

uint64_t tutti__handle_takes(const struct tutti_handle_set *s)
{
    return atomic_load(&s->takes);
}

int tutti__handle_live(struct tutti_handle_set *s, const void *p)
{
    pthread_mutex_lock(&s->lock);
    int found = tutti__handle_find_locked(s, p);
    pthread_mutex_unlock(&s->lock);
    return found;
}
