/*
** config.c -- the one place gpuds reads its environment (gpuds_config.h).
*/
#include "gpuds_config.h"
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

void gpudsConfigLoad(void){
  gpuds_config c;
  long long x;
  memset(&c, 0, sizeof(c));
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
}

const gpuds_config *gpudsConfig(void){
  if( !gLoaded ) gpudsConfigLoad();
  return &gCfg;
}
