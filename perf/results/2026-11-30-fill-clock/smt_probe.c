#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static volatile int go;
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
static float work(void){static __thread float a[4096];for(int i=0;i<4096;i++)a[i]=i*0.5f;float s0=0,s1=0,s2=0,s3=0,s4=0,s5=0,s6=0,s7=0;
 for(int r=0;r<800000;r++){for(int i=0;i<4096;i+=8){s0+=a[i];s1+=a[i+1];s2+=a[i+2];s3+=a[i+3];s4+=a[i+4];s5+=a[i+5];s6+=a[i+6];s7+=a[i+7];}}return s0+s1+s2+s3+s4+s5+s6+s7;}
static void *th(void*a){pin((int)(intptr_t)a);while(!go);double t=now();float r=work();t=now()-t;printf("cpu%ld %.3f s (%d) ",(long)(intptr_t)a,t,(int)(r>0));return 0;}
int main(){pthread_t a,b;
 go=0;pthread_create(&a,0,th,(void*)0);go=1;pthread_join(a,0);
 go=0;pthread_create(&a,0,th,(void*)0);pthread_create(&b,0,th,(void*)1);go=1;pthread_join(a,0);pthread_join(b,0);printf("\n");return 0;}
