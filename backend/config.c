/*
** config.c -- the one place gpuds reads its environment (gpuds_config.h).
*/
#include "gpuds_config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gpuds_config gCfg;
static int gLoaded = 0;

/* The value of variable zVar as a non-negative integer, or iDefault when it
** is unset, empty or not a whole number. */
static long long envInt(const char *zVar, long long iDefault){
  const char *z = getenv(zVar);
  char *zEnd = 0;
  long long x;
  if( !z || !*z ) return iDefault;
  x = strtoll(z, &zEnd, 10);
  if( !zEnd || *zEnd ) return iDefault;
  return x;
}

/* True when variable zVar is set to exactly zValue. */
static int envIs(const char *zVar, const char *zValue){
  const char *z = getenv(zVar);
  return z && strcmp(z, zValue)==0;
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

/* GPUDS_GPU_MEMORY into c: 0, or 1 with the message in zErr[0..nErr) if
** its value is not one it takes. */
static int envGpuMemory(gpuds_config *c, char *zErr, size_t nErr){
  const char *z = getenv("GPUDS_GPU_MEMORY");
  if( !z || !*z ) return 0;
  if( strlen(z)>=sizeof(c->zGpuMemory) || gpudsParseBytes(z, &c->nGpuMemCap) ){
    if( zErr && nErr ){
      snprintf(zErr, nErr, "GPUDS_GPU_MEMORY=%.40s%s is refused: it takes a whole "
               "number of bytes, optionally followed by K, M or G (2^10, 2^20, "
               "2^30), e.g. 512M; unset, no cap", z, strlen(z)>40 ? "..." : "");
    }
    c->nGpuMemCap = 0;
    return 1;
  }
  c->bGpuMemCap = 1;
  memcpy(c->zGpuMemory, z, strlen(z)+1);
  return 0;
}

int gpudsConfigLoad(char *zErr, size_t nErr){
  gpuds_config c;
  long long x;
  int bBad;
  if( zErr && nErr ) zErr[0] = 0;
  memset(&c, 0, sizeof(c));
  bBad = envGpuMemory(&c, zErr, nErr);
  if( bBad && gLoaded ) return 1;           /* the settings in force stay */
  c.bForceHost = envIs("GPUDS_BACKEND", "host");
  c.nFlushRows = envInt("GPUDS_FLUSH_ROWS", GPUDS_DEFAULT_FLUSH_ROWS);
  if( c.nFlushRows<1 ) c.nFlushRows = 1;
  c.eMirror = envIs("GPUDS_MIRROR", "0") ? GPUDS_MIRROR_NEVER
            : envIs("GPUDS_MIRROR", "1") ? GPUDS_MIRROR_ALWAYS : GPUDS_MIRROR_DEFAULT;
  x = envInt("GPUDS_HOST_CHUNK", (long long)GPUDS_DEFAULT_HOST_CHUNK);
  if( x<0 ) x = (long long)GPUDS_DEFAULT_HOST_CHUNK;
  c.nHostChunk = (size_t)x>GPUDS_MAX_HOST_CHUNK ? GPUDS_MAX_HOST_CHUNK : (size_t)x;
  c.eGfslRebuild = envIs("GFSL_REBUILD", "never") ? GPUDS_REBUILD_NEVER
                 : envIs("GFSL_REBUILD", "always") ? GPUDS_REBUILD_ALWAYS
                 : GPUDS_REBUILD_AUTO;
  c.eColPlans = envIs("GPUDS_COLUMN_PLANS", "off") ? GPUDS_COLPLAN_OFF
              : envIs("GPUDS_COLUMN_PLANS", "always") ? GPUDS_COLPLAN_ALWAYS
              : GPUDS_COLPLAN_AUTO;
  c.eLazyLoad = envIs("GPUDS_LAZY_LOAD", "off") ? GPUDS_LAZY_OFF
              : envIs("GPUDS_LAZY_LOAD", "always") ? GPUDS_LAZY_ALWAYS
              : envIs("GPUDS_LAZY_LOAD", "hold") ? GPUDS_LAZY_HOLD
              : GPUDS_LAZY_AUTO;
  c.bHugePages = !envIs("GPUDS_HUGE_PAGES", "0");
  c.eColsOnLoad = envIs("GPUDS_COLUMNS_ON_LOAD", "0") || c.eColPlans==GPUDS_COLPLAN_OFF
                  ? GPUDS_COLSLOAD_OFF
                : envIs("GPUDS_COLUMNS_ON_LOAD", "1") ? GPUDS_COLSLOAD_ALWAYS
                : GPUDS_COLSLOAD_AUTO;
  gCfg = c;
  gLoaded = 1;
  return bBad;
}

const gpuds_config *gpudsConfig(void){
  if( !gLoaded ) gpudsConfigLoad(0, 0);
  return &gCfg;
}
