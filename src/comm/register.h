/*
 * register.h - what the rest of the library calls in register.c (tutti_comm_register and
 * tutti_comm_deregister are public: include/tutti/comm.h).
 */
#ifndef TUTTI_REGISTER_H
#define TUTTI_REGISTER_H

struct tutti_comm;

/** Undo every registration tutti_comm_register made and the program left (at destroy, before
 *  the transports that hold them are closed). */
void tutti__reg_free_all(struct tutti_comm *comm);

#endif
