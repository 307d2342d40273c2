/*
** sampler.c -- where a process's main thread spends its time, on machines
** without perf (the GPU machines have neither perf nor gdb).  Built as a
** shared object and preloaded:
**
**   cc -O2 -shared -fPIC -o sampler.so bench/sampler.c -lpthread -lrt -ldl
**   SAMPLER_OUT=/tmp/s SAMPLER_US=250 LD_PRELOAD=./sampler.so ./sqlbench ...
**   python3 bench/sampler.py resolve /tmp/s > /tmp/s.sym
**   python3 bench/sampler.py bins /tmp/s.sym        (find a phase's window)
**   python3 bench/sampler.py top /tmp/s.sym T0 T1   (functions within it)
**
** Every SAMPLER_US microseconds of wall-clock time (default 1000; a
** CLOCK_MONOTONIC timer aimed at the thread that loaded it, since a CPU-time
** timer only fires at the kernel's tick) a SIGPROF handler records the
** interrupted instruction, its caller read through the frame pointer (build
** the code of interest with -fno-omit-frame-pointer, else the caller is
** noise) and the time since start.  At exit the samples go to SAMPLER_OUT,
** one line each ("pc caller seconds", hexadecimal addresses); a thread
** appends the executable mappings of /proc/self/maps to SAMPLER_OUT.maps
** every 0.3 s, so libraries loaded and unloaded while it runs (a SQLite
** extension) are still resolved.  Samples past SAMPLER_MAX (default 2^21)
** are counted and dropped.  Child processes are not sampled: SAMPLER_OUT
** and LD_PRELOAD are removed from the environment at start.
**
** SAMPLER_THREADS=1 samples every thread the process starts as well (this
** library's pthread_create gives each new thread a timer of its own): where
** threads that should run side by side wait for one another.  A thread
** blocked in the kernel is sampled where it entered it (a futex wait, a
** driver call), which is the point: wall-clock time, not CPU time.
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <ucontext.h>
#include <unistd.h>

static char zOut[1024];          /* SAMPLER_OUT, or "" when not sampling */
static double tStart;            /* CLOCK_MONOTONIC seconds at start */
static uintptr_t *aPc;           /* 2 a sample: pc, caller */
static float *aT;                /* seconds since start, one a sample */
static long nMax;
static volatile long nSample;    /* samples taken, kept or not */

static double monotonic(void){
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec*1e-9;
}

/* SIGPROF: record the interrupted pc, its caller and the time. */
static void onSample(int sig, siginfo_t *si, void *pCtx){
  ucontext_t *uc = (ucontext_t*)pCtx;
  long i = __sync_fetch_and_add(&nSample, 1);
  uintptr_t bp, sp, ret = 0;
  (void)sig; (void)si;
  if( i>=nMax ) return;
  aT[i] = (float)(monotonic() - tStart);
  aPc[2*i] = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  bp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
  sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
  /* a frame pointer just above the stack pointer: its return address */
  if( bp>sp && bp-sp<((uintptr_t)1<<20) && (bp & 7)==0 ) ret = ((uintptr_t*)bp)[1];
  aPc[2*i+1] = ret;
}

/* Copy the executable mappings to SAMPLER_OUT.maps, every 0.3 s. */
static void *mapsThread(void *pArg){
  char zMaps[1100], zLine[4096];
  (void)pArg;
  snprintf(zMaps, sizeof(zMaps), "%s.maps", zOut);
  for(;;){
    FILE *in = fopen("/proc/self/maps", "r");
    FILE *out = fopen(zMaps, "a");
    while( in && out && fgets(zLine, sizeof(zLine), in) ){
      if( strstr(zLine, " r-xp ") ) fputs(zLine, out);
    }
    if( in ) fclose(in);
    if( out ) fclose(out);
    usleep(300000);
  }
  return 0;
}

/* At exit: stop sampling, write the samples. */
static void writeSamples(void){
  long i, n = nSample<nMax ? nSample : nMax;
  FILE *f;
  signal(SIGPROF, SIG_IGN);
  f = fopen(zOut, "w");
  if( f==0 ){ perror(zOut); return; }
  for(i=0; i<n; i++){
    fprintf(f, "%lx %lx %.4f\n", (unsigned long)aPc[2*i],
            (unsigned long)aPc[2*i+1], aT[i]);
  }
  fclose(f);
  fprintf(stderr, "sampler: %ld samples to %s (%ld dropped)\n", n, zOut, nSample-n);
}

static long nPeriodUs;           /* SAMPLER_US */
static int bThreads;             /* SAMPLER_THREADS=1 */

/* Aim a CLOCK_MONOTONIC timer at the calling thread: 1 if *pTm is it. */
static int timerForThisThread(timer_t *pTm){
  struct sigevent se;
  struct itimerspec its;
  timer_t tm;
  memset(&se, 0, sizeof(se));
  se.sigev_notify = SIGEV_THREAD_ID;
  se.sigev_signo = SIGPROF;
  se._sigev_un._tid = gettid();
  if( timer_create(CLOCK_MONOTONIC, &se, &tm) ){ perror("sampler: timer_create"); return 0; }
  its.it_interval.tv_sec = nPeriodUs/1000000;
  its.it_interval.tv_nsec = (nPeriodUs%1000000)*1000L;
  its.it_value = its.it_interval;
  timer_settime(tm, 0, &its, 0);
  *pTm = tm;
  return 1;
}

/* A new thread's start (SAMPLER_THREADS): its own timer, then its work. */
typedef struct ThreadStart { void *(*xMain)(void*); void *pArg; } ThreadStart;
static void *threadMain(void *pArg){
  ThreadStart s = *(ThreadStart*)pArg;
  timer_t tm;
  int bTimer;
  void *pRet;
  free(pArg);
  bTimer = timerForThisThread(&tm);
  pRet = s.xMain(s.pArg);
  if( bTimer ) timer_delete(tm);     /* it would fire on for nobody */
  return pRet;
}

/* pthread_create, which with SAMPLER_THREADS samples the new thread too. */
int pthread_create(pthread_t *pTid, const pthread_attr_t *pAttr,
                   void *(*xMain)(void*), void *pArg){
  static int (*xReal)(pthread_t*, const pthread_attr_t*, void *(*)(void*), void*);
  ThreadStart *s;
  if( xReal==0 ) xReal = dlsym(RTLD_NEXT, "pthread_create");
  if( !bThreads || zOut[0]==0 || (s = malloc(sizeof(*s)))==0 ){
    return xReal(pTid, pAttr, xMain, pArg);
  }
  s->xMain = xMain;
  s->pArg = pArg;
  {
    int rc = xReal(pTid, pAttr, threadMain, s);
    if( rc ) free(s);
    return rc;
  }
}

__attribute__((constructor)) static void samplerStart(void){
  const char *z = getenv("SAMPLER_OUT");
  struct sigaction sa;
  pthread_t tid;
  long us = getenv("SAMPLER_US") ? atol(getenv("SAMPLER_US")) : 1000;
  char zMaps[1100];
  if( z==0 || z[0]==0 ) return;
  snprintf(zOut, sizeof(zOut), "%s", z);
  unsetenv("SAMPLER_OUT");
  unsetenv("LD_PRELOAD");
  nMax = getenv("SAMPLER_MAX") ? atol(getenv("SAMPLER_MAX")) : (1L<<21);
  if( us<10 ) us = 10;
  nPeriodUs = us;
  bThreads = getenv("SAMPLER_THREADS") && atoi(getenv("SAMPLER_THREADS"))==1;
  aPc = malloc(sizeof(uintptr_t)*2*(size_t)nMax);
  aT = malloc(sizeof(float)*(size_t)nMax);
  if( aPc==0 || aT==0 ){ zOut[0] = 0; return; }
  snprintf(zMaps, sizeof(zMaps), "%s.maps", zOut);
  unlink(zMaps);
  tStart = monotonic();
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = onSample;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, 0);
  {
    timer_t tm;
    int b = bThreads;
    timerForThisThread(&tm);
    bThreads = 0;                 /* the maps thread is not sampled */
    pthread_create(&tid, 0, mapsThread, 0);
    bThreads = b;
  }
  atexit(writeSamples);
}
