#define _GNU_SOURCE
/* one-off: per-call time of ncclBroadcast (shim) vs tutti_broadcast, 8 B in place, 2 forked ranks */
#include "nccl.h"
#include "tutti.h"
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  int iters=argc>1?atoi(argv[1]):200000; int mode=argc>2?atoi(argv[2]):0;
  ncclUniqueId id; tutti_unique_id_t tid;
  if(mode==0) ncclGetUniqueId(&id); else tutti_get_unique_id(&tid);
  for(int r=0;r<2;r++){ if(fork()==0){
    cpu_set_t s; CPU_ZERO(&s); CPU_SET(r,&s); sched_setaffinity(0,sizeof s,&s);
    double x[1]={1}; double t0=0;
    if(mode==0){ ncclComm_t c; if(ncclCommInitRank(&c,2,id,r)!=ncclSuccess){fprintf(stderr,"init\n");_exit(1);}
      for(int i=0;i<iters+1000;i++){ if(i==1000){ncclAllReduce(x,x,1,ncclFloat64,ncclSum,c,NULL); t0=now();}
        if(ncclBroadcast(x,x,1,ncclFloat64,0,c,NULL)!=ncclSuccess){fprintf(stderr,"bc\n");_exit(1);} }
      double t=now()-t0; ncclAllReduce(x,x,1,ncclFloat64,ncclSum,c,NULL); printf("shim rank %d %.3f us\n",r,t/iters*1e6); ncclCommDestroy(c);
    } else { tutti_comm_t *c; if(tutti_comm_init_rank(&c,2,&tid,r)!=TUTTI_OK){fprintf(stderr,"init\n");_exit(1);}
      for(int i=0;i<iters+1000;i++){ if(i==1000){tutti_allreduce(x,x,1,TUTTI_FLOAT64,TUTTI_SUM,c,NULL); t0=now();}
        tutti_broadcast(x,x,1,TUTTI_FLOAT64,0,c,NULL); }
      double t=now()-t0; tutti_allreduce(x,x,1,TUTTI_FLOAT64,TUTTI_SUM,c,NULL); printf("tutti rank %d %.3f us\n",r,t/iters*1e6); tutti_comm_destroy(c);}
    fflush(stdout); _exit(0);} }
  while(wait(NULL)>0); return 0; }
