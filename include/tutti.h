/*
 * tutti.h - the whole public API of tutti, a collective communication library.
 *
 *   tutti/status.h   status codes and their messages
 *   tutti/types.h    datatypes, ops, unique id, opaque handles
 *   tutti/comm.h     communicators: create from an id or the launcher's environment, split, abort
 *   tutti/coll.h     collectives, send/recv, groups, asynchronous requests
 *   tutti/mem.h      host symmetric memory: tutti_mem_alloc and windows
 *   tutti/version.h  version macros and tutti_version()
 */
#ifndef TUTTI_H
#define TUTTI_H

#include "tutti/version.h"
#include "tutti/status.h"
#include "tutti/types.h"
#include "tutti/comm.h"
#include "tutti/coll.h"
#include "tutti/mem.h"

#endif /* TUTTI_H */
