/*
** config.c -- the one place gpuds reads its environment (gpuds_config.h).
** Every variable is checked: a value it does not take is refused with a
** message naming the variable and the values it takes, and then nothing
** of the environment is taken.
*/
#include "gpuds_config.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static gpuds_config gCfg;
static int gLoaded = 0;

/* Where a load stands: the first bad value's message, if any. */
typedef struct EnvCheck {
  char *zErr;               /* the message's buffer, or NULL */
  size_t nErr;
  int bBad;                 /* a value was refused */
} EnvCheck;

/* Record that variable zVar holds a value it does not take; zFmt says what
** it takes.  Only the first is reported. */
static void envBad(EnvCheck *pChk, const char *zVar, const char *zFmt, ...){
  va_list ap;
  int n;
  if( pChk->bBad ) return;
  pChk->bBad = 1;
  if( pChk->zErr==0 || pChk->nErr==0 ) return;
  n = snprintf(pChk->zErr, pChk->nErr, "%s=%s is refused: it takes ",
               zVar, getenv(zVar));
  if( n<0 || (size_t)n>=pChk->nErr ) return;
  va_start(ap, zFmt);
  vsnprintf(pChk->zErr + n, pChk->nErr - (size_t)n, zFmt, ap);
  va_end(ap);
}

/* The value of variable zVar as a whole number from iMin to iMax, or
** iDefault when it is unset or empty. */
static long long envInt(EnvCheck *pChk, const char *zVar, long long iDefault,
                        long long iMin, long long iMax, const char *zTakes){
  const char *z = getenv(zVar);
  char *zEnd = 0;
  long long x;
  if( !z || !*z ) return iDefault;
  errno = 0;
  x = strtoll(z, &zEnd, 10);
  if( errno || zEnd==z || *zEnd || x<iMin || x>iMax ){
    envBad(pChk, zVar, "%s", zTakes);
    return iDefault;
  }
  return x;
}

/* The index in azValue[0..nValue) of variable zVar's value (any case), or
** iDefault when it is unset or empty, or another value (refused). */
static int envPick(EnvCheck *pChk, const char *zVar, const char *const *azValue,
                   int nValue, int iDefault, const char *zTakes){
  const char *z = getenv(zVar);
  int i;
  if( !z || !*z ) return iDefault;
  for(i=0; i<nValue; i++){
    if( strcasecmp(z, azValue[i])==0 ) return i;
  }
  envBad(pChk, zVar, "%s", zTakes);
  return iDefault;
}

int gpudsParseBytes(const char *z, uint64_t *pn){
  uint64_t x = 0, nUnit = 1;
  const char *zDigit = z;
  while( *z>='0' && *z<='9' ){
    if( x > (UINT64_MAX - (uint64_t)(*z-'0'))/10 ) return 1;
    x = x*10 + (uint64_t)(*z-'0');
    z++;
  }
  if( z==zDigit ) return 1;
  switch( *z ){
    case 'k': case 'K': nUnit = (uint64_t)1<<10; z++; break;
    case 'm': case 'M': nUnit = (uint64_t)1<<20; z++; break;
    case 'g': case 'G': nUnit = (uint64_t)1<<30; z++; break;
  }
  if( *z ) return 1;
  if( x > UINT64_MAX/nUnit ) return 1;
  *pn = x*nUnit;
  return 0;
}

/* GPUDS_GPU_MEMORY into c (nGpuMemCap, bGpuMemCap, zGpuMemory): unset or
** empty, no cap; else a number of bytes (gpudsParseBytes) or refused. */
static void envGpuMemory(EnvCheck *pChk, gpuds_config *c){
  const char *z = getenv("GPUDS_GPU_MEMORY");
  if( !z || !*z ) return;
  if( strlen(z)>=sizeof(c->zGpuMemory) || gpudsParseBytes(z, &c->nGpuMemCap) ){
    envBad(pChk, "GPUDS_GPU_MEMORY", "a whole number of bytes, optionally followed by "
           "K, M or G (2^10, 2^20, 2^30), e.g. 512M; unset, no cap");
    c->nGpuMemCap = 0;
    return;
  }
  c->bGpuMemCap = 1;
  memcpy(c->zGpuMemory, z, strlen(z)+1);
}

/* Read every setting into *c, checking each. */
static void envRead(EnvCheck *pChk, gpuds_config *c){
  static const char *const azBackend[] = { "auto", "host" };
  static const char *const azMirror[] = { "auto", "0", "1" };
  static const char *const azRebuild[] = { "auto", "never", "always" };
  static const char *const azPlans[] = { "auto", "off", "always" };
  static const char *const azLazy[] = { "auto", "off", "always", "hold" };
  static const char *const azHuge[] = { "1", "0" };
  static const char *const azColsLoad[] = { "auto", "0", "1" };
  static const int aMirror[] = { GPUDS_MIRROR_DEFAULT, GPUDS_MIRROR_NEVER, GPUDS_MIRROR_ALWAYS };
  static const int aRebuild[] = { GPUDS_REBUILD_AUTO, GPUDS_REBUILD_NEVER, GPUDS_REBUILD_ALWAYS };
  static const int aPlans[] = { GPUDS_COLPLAN_AUTO, GPUDS_COLPLAN_OFF, GPUDS_COLPLAN_ALWAYS };
  static const int aLazy[] = { GPUDS_LAZY_AUTO, GPUDS_LAZY_OFF, GPUDS_LAZY_ALWAYS, GPUDS_LAZY_HOLD };
  static const int aColsLoad[] = { GPUDS_COLSLOAD_AUTO, GPUDS_COLSLOAD_OFF, GPUDS_COLSLOAD_ALWAYS };
  memset(c, 0, sizeof(*c));
  c->bForceHost = envPick(pChk, "GPUDS_BACKEND", azBackend, 2, 0,
      "host (the host backend) or auto (the GPU where one is usable, as unset)");
  c->nFlushRows = envInt(pChk, "GPUDS_FLUSH_ROWS", GPUDS_DEFAULT_FLUSH_ROWS, 1, INT64_MAX,
      "a whole number of keys from 1");
  c->eMirror = aMirror[envPick(pChk, "GPUDS_MIRROR", azMirror, 3, 0,
      "0 (no host mirror), 1 (host stores mirrored too) or auto (as unset)")];
  c->nHostChunk = (size_t)envInt(pChk, "GPUDS_HOST_CHUNK", (long long)GPUDS_DEFAULT_HOST_CHUNK,
      0, (long long)GPUDS_MAX_HOST_CHUNK, "a whole number of keys from 0 to 16777216");
  c->eGfslRebuild = aRebuild[envPick(pChk, "GFSL_REBUILD", azRebuild, 3, 0,
      "never, always or auto (as unset)")];
  c->eColPlans = aPlans[envPick(pChk, "GPUDS_COLUMN_PLANS", azPlans, 3, 0,
      "off, always or auto (as unset)")];
  c->eLazyLoad = aLazy[envPick(pChk, "GPUDS_LAZY_LOAD", azLazy, 4, 0,
      "off, always, hold or auto (as unset)")];
  c->bHugePages = envPick(pChk, "GPUDS_HUGE_PAGES", azHuge, 2, 0,
      "0 (no huge pages) or 1 (as unset)")==0;
  c->eColsOnLoad = aColsLoad[envPick(pChk, "GPUDS_COLUMNS_ON_LOAD", azColsLoad, 3, 0,
      "0, 1 or auto (as unset)")];
  if( c->eColPlans==GPUDS_COLPLAN_OFF ) c->eColsOnLoad = GPUDS_COLSLOAD_OFF;
  c->bNoShare = envPick(pChk, "GPUDS_SHARE", azHuge, 2, 0,
      "0 (each connection its own copy of a table) or 1 (as unset)")==1;
  envGpuMemory(pChk, c);
}

int gpudsConfigLoad(char *zErr, size_t nErr){
  gpuds_config c;
  EnvCheck chk;
  chk.zErr = zErr; chk.nErr = nErr; chk.bBad = 0;
  if( zErr && nErr ) zErr[0] = 0;
  envRead(&chk, &c);
  if( chk.bBad ){
    if( !gLoaded ){                /* the defaults, as if nothing were set */
      memset(&c, 0, sizeof(c));
      c.nFlushRows = GPUDS_DEFAULT_FLUSH_ROWS;
      c.nHostChunk = GPUDS_DEFAULT_HOST_CHUNK;
      c.bHugePages = 1;
      gCfg = c;
      gLoaded = 1;
    }
    return 1;
  }
  gCfg = c;
  gLoaded = 1;
  return 0;
}

const gpuds_config *gpudsConfig(void){
  if( !gLoaded ) gpudsConfigLoad(0, 0);
  return &gCfg;
}
