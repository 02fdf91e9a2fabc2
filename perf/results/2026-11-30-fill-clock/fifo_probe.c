#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>
#include <immintrin.h>
static int FILL,DRAIN;
static void ntcpy(char*d,const char*s,size_t n){for(size_t i=0;i<n;i+=64){__m256i a=_mm256_load_si256((const __m256i*)(s+i)),b=_mm256_load_si256((const __m256i*)(s+i+32));_mm256_stream_si256((__m256i*)(d+i),a);_mm256_stream_si256((__m256i*)(d+i+32),b);}_mm_sfence();}
static void flush(char*p,size_t n){for(size_t i=0;i<n;i+=64)_mm_clflushopt(p+i);_mm_sfence();}
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
#define NS 8
#define SZ (128*1024)
static _Alignas(64) _Atomic long head; static _Alignas(64) _Atomic long tail;
static char *slots; static char *src,*dst; static long N;
static double tfill, tdrain;
static void *rx(void*a){pin(1);for(long i=0;i<N;i++){while(atomic_load_explicit(&head,memory_order_acquire)<=i);double t=now();memcpy(dst+(i%8)*SZ,slots+(i%NS)*SZ,SZ);if(DRAIN)flush(slots+(i%NS)*SZ,SZ);tdrain+=now()-t;atomic_store_explicit(&tail,i+1,memory_order_release);}return 0;}
int main(int c,char**v){double dur=atof(v[1]);FILL=atoi(v[2]);DRAIN=atoi(v[3]);pin(0);slots=aligned_alloc(4096,NS*SZ);src=aligned_alloc(4096,8*SZ);dst=aligned_alloc(4096,8*SZ);memset(slots,1,NS*SZ);memset(src,2,8*SZ);memset(dst,3,8*SZ);
 double end=now()+dur;while(now()<end){N=4000;head=0;tail=0;tfill=tdrain=0;pthread_t b;pthread_create(&b,0,rx,0);double t0=now();
 for(long i=0;i<N;i++){while(atomic_load_explicit(&tail,memory_order_acquire)+NS<=i);double t=now();if(FILL)ntcpy(slots+(i%NS)*SZ,src+(i%8)*SZ,SZ);else memcpy(slots+(i%NS)*SZ,src+(i%8)*SZ,SZ);tfill+=now()-t;atomic_store_explicit(&head,i+1,memory_order_release);}
 pthread_join(b,0);double tt=now()-t0;printf("%.1f GB/s total, fill %.1f GB/s, drain %.1f GB/s\n",N*(double)SZ/tt/1e9,N*(double)SZ/tfill/1e9,N*(double)SZ/tdrain/1e9);fflush(stdout);}
 return 0;}
