/*
 * engine.h - drives plans to completion: advances them, and when nothing moves, spins, then
 * yields the CPU, then sleeps on the shared-memory doorbell or poll(), checking deadlines,
 * aborts and peer liveness all along. Nothing waits without a deadline.
 */
#ifndef TUTTI_ENGINE_H
#define TUTTI_ENGINE_H

#include "exec/exec.h"

/**
 * Run every exec to completion (several communicators at once for group calls). Each exec's
 * result is left in ex->status; a failure fails its communicator (peers are told) but the
 * others keep running.
 * @return TUTTI_OK, or the first error among the execs.
 */
tutti_status_t tutti__engine_run(struct tutti_exec **exs, int n);

#endif /* TUTTI_ENGINE_H */
