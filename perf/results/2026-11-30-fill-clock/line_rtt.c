#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdatomic.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
static _Alignas(64) _Atomic long ping; static _Alignas(64) _Atomic long pong;
#define N 2000000
static void *th(void*a){pin(1);for(long i=1;i<=N;i++){while(atomic_load_explicit(&ping,memory_order_acquire)<i);atomic_store_explicit(&pong,i,memory_order_release);}return 0;}
int main(){pthread_t b;pin(0);pthread_create(&b,0,th,0);double t=now();for(long i=1;i<=N;i++){atomic_store_explicit(&ping,i,memory_order_release);while(atomic_load_explicit(&pong,memory_order_acquire)<i);}t=now()-t;pthread_join(b,0);printf("rtt %.0f ns\n",t/N*1e9);return 0;}
