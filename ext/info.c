/*
** info.c -- the SQL functions that describe gpuds:
**   gpuds_info()       JSON for programs: the extension, the backend in use,
**                      the GPU and every gfsl/gpuhash table of the connection
**   gpuds_info('t')    a few lines for people about table t
**   gpuds_check('t')   'ok' or the first problem found in table t
**   gpuds_version()    the version, e.g. '0.1.0'
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include <string.h>
#include <stdlib.h>
#include <pthread.h>

/* Bytes for one store's xInfo() text in gpuds_info(): its few fields take a
** few hundred (a store writes "{}" where its text would not fit). */
#define INFO_STORE_MAX 4096

static pthread_mutex_t tableListMutex = PTHREAD_MUTEX_INITIALIZER;
static GpudsTable *pTableList = 0;

static GpudsInfoNode *pInfoList = 0;

/* Add a node (a view) to what gpuds_info() lists for its connection. */
void gpudsInfoAdd(GpudsInfoNode *pNode){
  pthread_mutex_lock(&tableListMutex);
  pNode->pNext = pInfoList;
  pInfoList = pNode;
  pthread_mutex_unlock(&tableListMutex);
}

/* Remove a node (no-op if absent). */
void gpudsInfoRemove(GpudsInfoNode *pNode){
  GpudsInfoNode **pp;
  pthread_mutex_lock(&tableListMutex);
  for(pp=&pInfoList; *pp; pp=&(*pp)->pNext){
    if( *pp==pNode ){ *pp = pNode->pNext; break; }
  }
  pthread_mutex_unlock(&tableListMutex);
}

/* Add p to the list of live tables. */
void gpudsTableListAdd(GpudsTable *p){
  pthread_mutex_lock(&tableListMutex);
  p->pNextTable = pTableList;
  pTableList = p;
  pthread_mutex_unlock(&tableListMutex);
}

/* Remove p from the list (no-op if absent). */
void gpudsTableListRemove(GpudsTable *p){
  GpudsTable **pp;
  pthread_mutex_lock(&tableListMutex);
  for(pp=&pTableList; *pp; pp=&(*pp)->pNextTable){
    if( *pp==p ){ *pp = p->pNextTable; break; }
  }
  pthread_mutex_unlock(&tableListMutex);
}

/* The table zName (unquoted; "name" or "schema.name") of connection db, or
** NULL.  A table whose own name is zName ("a.b" included) is found first;
** otherwise zName is split at its first dot into schema and name. */
GpudsTable *gpudsTableFind(sqlite3 *db, const char *zName){
  GpudsTable *p, *pFound = 0;
  const char *zDot = strchr(zName, '.');
  pthread_mutex_lock(&tableListMutex);
  for(p=pTableList; p && !pFound; p=p->pNextTable){
    if( p->db==db && sqlite3_stricmp(p->zName, zName)==0 ) pFound = p;
  }
  for(p=pTableList; p && !pFound && zDot; p=p->pNextTable){
    if( p->db==db && sqlite3_strnicmp(p->zDb, zName, (int)(zDot-zName))==0
     && p->zDb[zDot-zName]==0 && sqlite3_stricmp(p->zName, zDot+1)==0 ) pFound = p;
  }
  pthread_mutex_unlock(&tableListMutex);
  return pFound;
}

/* The table of connection db in schema zDb named zName (exact names), or
** NULL. */
GpudsTable *gpudsTableFindExact(sqlite3 *db, const char *zDb, const char *zName){
  GpudsTable *p;
  pthread_mutex_lock(&tableListMutex);
  for(p=pTableList; p; p=p->pNextTable){
    if( p->db==db && sqlite3_stricmp(p->zDb, zDb)==0
     && sqlite3_stricmp(p->zName, zName)==0 ) break;
  }
  pthread_mutex_unlock(&tableListMutex);
  return p;
}

/* The gfsl or gpuhash table named by argument pArg of SQL function zFunc,
** or NULL with an error set on ctx. */
static GpudsTable *tableArg(sqlite3_context *ctx, const char *zFunc, sqlite3_value *pArg){
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  const char *zName = (const char*)sqlite3_value_text(pArg);
  GpudsTable *p;
  if( zName==0 ){
    char *zErr = sqlite3_mprintf("%s: table name expected", zFunc);
    sqlite3_result_error(ctx, zErr ? zErr : zFunc, -1);
    sqlite3_free(zErr);
    return 0;
  }
  p = gpudsTableFind(db, zName);
  if( p==0 ){
    /* The table may exist but not be connected yet: touch it, by its whole
    ** name first, then as schema.name. */
    const char *zDot = strchr(zName, '.');
    char *zSql = sqlite3_mprintf("SELECT 1 FROM \"%w\" LIMIT 0", zName);
    if( zSql ){ sqlite3_exec(db, zSql, 0, 0, 0); sqlite3_free(zSql); }
    if( zDot ){
      zSql = sqlite3_mprintf("SELECT 1 FROM \"%.*w\".\"%w\" LIMIT 0",
                             (int)(zDot-zName), zName, zDot+1);
      if( zSql ){ sqlite3_exec(db, zSql, 0, 0, 0); sqlite3_free(zSql); }
    }
    p = gpudsTableFind(db, zName);
  }
  if( p==0 ){
    char *zErr = sqlite3_mprintf("%s: no gfsl or gpuhash table named %s", zFunc, zName);
    sqlite3_result_error(ctx, zErr ? zErr : zFunc, -1);
    sqlite3_free(zErr);
  }
  return p;
}

/* gpuds_check('table'): 'ok', or the first disagreement between the
** structure and the shadow tables, or a failed structure invariant. */
static void checkFunc(sqlite3_context *ctx, int argc, sqlite3_value **argv){
  GpudsTable *p = tableArg(ctx, "gpuds_check", argv[0]);
  char *zRes = 0;
  int rc;
  if( p==0 ) return;
  rc = gpudsShadowCheck(p, &zRes);
  if( rc ){
    sqlite3_result_error(ctx, p->base.zErrMsg ? p->base.zErrMsg : "gpuds_check failed", -1);
    sqlite3_result_error_code(ctx, rc);
    return;
  }
  sqlite3_result_text(ctx, zRes, -1, sqlite3_free);
  (void)argc;
}

/* Append z to s as a JSON string: quoted, with '"', '\\' and control
** characters escaped. */
static void jsonString(sqlite3_str *s, const char *z){
  sqlite3_str_appendchar(s, 1, '"');
  for(; *z; z++){
    unsigned char c = (unsigned char)*z;
    if( c=='"' || c=='\\' ){
      sqlite3_str_appendf(s, "\\%c", c);
    }else if( c<0x20 ){
      sqlite3_str_appendf(s, "\\u%04x", c);
    }else{
      sqlite3_str_appendchar(s, 1, (char)c);
    }
  }
  sqlite3_str_appendchar(s, 1, '"');
}

/* The number after "zKey": in the JSON object text zJson, or -1. */
static long long jsonNumber(const char *zJson, const char *zKey){
  size_t n = strlen(zKey);
  const char *z;
  for(z=strchr(zJson, '"'); z; z=strchr(z+1, '"')){
    if( strncmp(z+1, zKey, n)==0 && z[n+1]=='"' && z[n+2]==':' ){
      return strtoll(z+n+3, 0, 10);
    }
  }
  return -1;
}

/* Append n bytes to s as a person reads a size: "512 B", "17.7 KiB"... */
static void appendBytes(sqlite3_str *s, long long n){
  static const char *azUnit[] = { "KiB", "MiB", "GiB", "TiB" };
  double x = (double)n;
  int i = -1;
  while( x>=1024.0 && i<3 ){ x /= 1024.0; i++; }
  if( i<0 ) sqlite3_str_appendf(s, "%lld B", n);
  else sqlite3_str_appendf(s, "%.1f %s", x, azUnit[i]);
}

/* Why table p's store (bCols 0) or column set (1) is on the host, given
** the device probe's answer (bGpu, zDev); NULL where it is on the GPU. */
static const char *whyHost(const GpudsTable *p, int bCols, int bGpu, const char *zDev){
  const char *zBackend = bCols ? gpudsColsBackend(p) : gpudsStoreBackend(p);
  const char *zWhy = bCols ? gpudsColsWhy(p) : gpudsStoreWhy(p);
  if( strcmp(zBackend, "host")!=0 ) return 0;
  if( zWhy[0] ) return zWhy;
  if( !bGpu ) return zDev;
  return gpudsConfig()->bForceHost ? "GPUDS_BACKEND=host" : "no GPU store for it";
}

/* Append ",\"placement\":{...}" to s: where table p's store and column
** set live (gpu or host) and, for one on the host, why. */
static void placementJson(sqlite3_str *s, const GpudsTable *p, int bGpu, const char *zDev){
  int i;
  sqlite3_str_appendall(s, ",\"placement\":{");
  for(i=0; i<2; i++){
    const char *zWhy = whyHost(p, i, bGpu, zDev);
    sqlite3_str_appendf(s, "%s\"%s\":\"%s\",\"%s_why\":", i ? "," : "",
                        i ? "column_set" : "store", zWhy ? "host" : "gpu",
                        i ? "column_set" : "store");
    if( zWhy ) jsonString(s, zWhy); else sqlite3_str_appendall(s, "null");
  }
  sqlite3_str_appendall(s, "}");
}

/* Append the GPU memory gpuds holds in this process to s, as JSON. */
static void gpuMemJson(sqlite3_str *s){
  const gpuds_config *c = gpudsConfig();
  gpuds_gpumem m;
  gpudsGpuMemory(&m);
  sqlite3_str_appendall(s, "\"gpu_memory\":{\"cap\":");
  if( c->bGpuMemCap ){
    sqlite3_str_appendf(s, "%llu,\"cap_setting\":", (unsigned long long)c->nGpuMemCap);
    jsonString(s, c->zGpuMemory);
  }else{
    sqlite3_str_appendall(s, "null,\"cap_setting\":null");
  }
  sqlite3_str_appendf(s, ",\"held\":%llu,\"peak\":%llu,\"refused_by_cap\":%llu,"
                      "\"refused_by_gpu\":%llu},",
                      (unsigned long long)m.nHeld, (unsigned long long)m.nPeak,
                      (unsigned long long)m.nRefusedCap, (unsigned long long)m.nRefusedGpu);
}

/* gpuds_info('table'): table p described in a few lines of text for people
** (gpuds_info() without an argument gives the same and more as JSON). */
static void tableText(sqlite3_context *ctx, GpudsTable *p){
  char *zStore = sqlite3_malloc(INFO_STORE_MAX);
  char zDev[256];
  int bGpu = gpudsCudaDevice(zDev, sizeof(zDev), 0, 0);
  int bCuda = strcmp(gpudsStoreBackend(p), "cuda")==0;
  int bHash = p->eKind==GPUDS_HASH;
  const char *zCols = gpudsColsBackend(p);
  const char *zWhy;
  sqlite3_str *s = sqlite3_str_new(0);
  long long nBytes;
  int n;
  char *z;

  if( zStore==0 ){ sqlite3_free(sqlite3_str_finish(s)); sqlite3_result_error_nomem(ctx); return; }
  sqlite3_str_appendf(s, "%s.%s: %s table, ", p->zDb, p->zName, bHash ? "gpuhash" : "gfsl");
  if( p->bLoaded || p->pBuild ){
    sqlite3_str_appendf(s, "%lld committed rows, %s\n", (long long)gpudsShadowRows(p),
        p->pBuild ? "being loaded in the background (key lookups answered from disk)" : "loaded");
  }else{
    sqlite3_str_appendall(s, "not loaded yet (its first statement loads it)\n");
  }
  gpudsStoreInfo(p, 0, zStore, INFO_STORE_MAX);
  nBytes = jsonNumber(zStore, bCuda ? "device_bytes" : "bytes");
  sqlite3_str_appendf(s, "store: %s", gpudsStoreKind(p)==GPUDS_HASH ? "hash table"
                      : bCuda ? "skiplist (GFSL)" : "B+tree");
  sqlite3_str_appendall(s, bCuda ? " on the GPU" : " on the host");
  if( nBytes>=0 ){
    sqlite3_str_appendall(s, ", ");
    appendBytes(s, nBytes);
    sqlite3_str_appendall(s, bCuda ? " of GPU memory" : "");
  }
  if( bCuda ){
    sqlite3_str_appendf(s, " (%s)\n", zDev);
  }else if( gpudsStoreWhy(p)[0] ){
    sqlite3_str_appendf(s, "; the GPU could not hold it: %s\n", gpudsStoreWhy(p));
  }else{
    sqlite3_str_appendf(s, "; the GPU is not used: %s\n", whyHost(p, 0, bGpu, zDev));
  }
  if( gpudsStoreInfo(p, 1, zStore, INFO_STORE_MAX) ){
    nBytes = jsonNumber(zStore, "bytes");
    sqlite3_str_appendall(s, "host mirror: B+tree (point lookups and key order)");
    if( nBytes>=0 ){ sqlite3_str_appendall(s, ", "); appendBytes(s, nBytes); }
    sqlite3_str_appendall(s, "\n");
  }
  sqlite3_str_appendf(s, "column set (%s): ", strcmp(zCols, "cuda")==0 ? "GPU" : "host");
  gpudsLatchRead(p);
  if( gpudsColsBuilt(p) ){
    const GpudsColState *cs = &p->pCopy->cs;
    sqlite3_str_appendf(s, "built over %lld rows, ", (long long)cs->nRows);
    appendBytes(s, gpudsColsBytes(p));
    sqlite3_str_appendf(s, "; queries: %lld; keys changed since the build: %lld",
                        (long long)cs->nQuery, (long long)cs->nDirty);
  }else{
    sqlite3_str_appendall(s, "not built (the first filter or ORDER BY on a non-key column builds it)");
  }
  zWhy = gpudsColsWhy(p)[0] ? gpudsColsWhy(p) : 0;
  gpudsLatchReadEnd(p);
  if( zWhy ) sqlite3_str_appendf(s, "; the GPU could not hold it: %s", zWhy);
  sqlite3_str_appendall(s, "\n");
  if( bGpu ){
    gpuds_gpumem m;
    gpudsGpuMemory(&m);
    sqlite3_str_appendall(s, "GPU memory gpuds holds in this process: ");
    appendBytes(s, (long long)m.nHeld);
    if( gpudsConfig()->bGpuMemCap ){
      sqlite3_str_appendf(s, " of a cap of ");
      appendBytes(s, (long long)gpudsConfig()->nGpuMemCap);
      sqlite3_str_appendf(s, " (GPUDS_GPU_MEMORY=%s)", gpudsConfig()->zGpuMemory);
    }
    sqlite3_str_appendall(s, "\n");
  }
  if( p->wb.nOver>0 ){
    sqlite3_str_appendf(s, "this transaction: %lld keys written, not yet applied to the store\n",
                        (long long)p->wb.nOver);
  }
  {
    int nUsers = gpudsCopyUsers(p);
    if( nUsers>1 ){
      sqlite3_str_appendf(s, "shared with %d other table object%s of this process\n",
                          nUsers-1, nUsers>2 ? "s" : "");
    }
  }
  sqlite3_free(zStore);
  n = sqlite3_str_length(s);
  z = sqlite3_str_finish(s);
  if( z==0 ){ sqlite3_result_error_nomem(ctx); return; }
  if( n>0 && z[n-1]=='\n' ) z[--n] = 0;
  sqlite3_result_text(ctx, z, n, sqlite3_free);
}

/* gpuds_version(): the version of this build, as CMakeLists.txt's project
** version gives it. */
static void versionFunc(sqlite3_context *ctx, int argc, sqlite3_value **argv){
  sqlite3_result_text(ctx, GPUDS_VERSION, -1, SQLITE_STATIC);
  (void)argc; (void)argv;
}

/* gpuds_info(): JSON text; gpuds_info('table'): tableText. */
static void infoFunc(sqlite3_context *ctx, int argc, sqlite3_value **argv){
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  char zDev[256];
  uint64_t nFree = 0, nTotal = 0;
  int bGpu = gpudsCudaDevice(zDev, sizeof(zDev), &nFree, &nTotal);
  const char *zOrd = gpudsStoreKindBackend(GPUDS_ORDERED);
  const char *zHash = gpudsStoreKindBackend(GPUDS_HASH);
  sqlite3_str *s = sqlite3_str_new(0);
  GpudsTable *p;
  int nTab = 0;
  char *zStore;

  if( argc==1 ){
    sqlite3_free(sqlite3_str_finish(s));
    p = tableArg(ctx, "gpuds_info", argv[0]);
    if( p ) tableText(ctx, p);
    return;
  }
  sqlite3_str_appendf(s, "{\"version\":\"%s\",", GPUDS_VERSION);
  sqlite3_str_appendf(s, "\"backend\":\"%s\",",
      (strcmp(zOrd, "cuda")==0 || strcmp(zHash, "cuda")==0) ? "cuda" : "host");
  sqlite3_str_appendf(s, "\"backends\":{\"gfsl\":\"%s\",\"gpuhash\":\"%s\"},",
                      zOrd, zHash);
  sqlite3_str_appendall(s, "\"device\":");
  jsonString(s, bGpu ? zDev : "none");
  sqlite3_str_appendall(s, ",");
  if( !bGpu ){
    sqlite3_str_appendall(s, "\"why_no_gpu\":");
    jsonString(s, zDev);
    sqlite3_str_appendall(s, ",");
  }
  sqlite3_str_appendf(s, "\"gpu_memory_total\":%llu,\"gpu_memory_free\":%llu,",
                      (unsigned long long)nTotal, (unsigned long long)nFree);
  gpuMemJson(s);
  sqlite3_str_appendf(s, "\"sqlite\":\"%s\",\"tables\":[", sqlite3_libversion());
  zStore = sqlite3_malloc(INFO_STORE_MAX*2);
  pthread_mutex_lock(&tableListMutex);
  for(p=pTableList; p; p=p->pNextTable){
    if( p->db!=db ) continue;
    char *zFull = sqlite3_mprintf("%s.%s", p->zDb, p->zName);
    char *zMir = zStore ? zStore + INFO_STORE_MAX : 0;
    const GpudsColState *cs = &p->pCopy->cs;
    if( zStore ) gpudsStoreInfo(p, 0, zStore, INFO_STORE_MAX);
    if( zMir ) gpudsStoreInfo(p, 1, zMir, INFO_STORE_MAX);
    gpudsLatchRead(p);
    sqlite3_str_appendf(s, "%s{\"name\":", nTab++ ? "," : "");
    jsonString(s, zFull ? zFull : "");
    sqlite3_free(zFull);
    placementJson(s, p, bGpu, zDev);
    sqlite3_str_appendf(s, ",\"module\":\"%s\",\"backend\":\"%s\","
        "\"host_mirror\":%s,\"load\":\"%s\","
        "\"rows\":%lld,\"pending\":%lld,\"batches\":%lld,\"store\":%s,\"mirror\":%s,"
        "\"column_set\":{\"backend\":\"%s\",\"built\":%s,\"rows\":%lld,"
        "\"bytes\":%lld,\"bytes_per_row\":%.1f,\"changed_keys\":%lld,"
        "\"builds\":%lld,\"queries\":%lld,\"scanned_instead\":%lld},"
        "\"copy\":{\"tables\":%d,\"versions\":%lld}}",
        p->eKind==GPUDS_ORDERED ? "gfsl" : "gpuhash", gpudsStoreBackend(p),
        gpudsStoreHasMirror(p) ? "true" : "false",
        p->pBuild ? "background" : p->bLoaded ? "loaded" : "not loaded",
        (long long)gpudsShadowRows(p), (long long)p->wb.nOver,
        (long long)p->nFlush, zStore && zStore[0] ? zStore : "{}",
        zMir && zMir[0] ? zMir : "null",
        gpudsColsBackend(p), gpudsColsBuilt(p) ? "true" : "false",
        (long long)cs->nRows, (long long)gpudsColsBytes(p),
        cs->nRows ? (double)gpudsColsBytes(p)/(double)cs->nRows : 0.0,
        (long long)cs->nDirty, (long long)cs->nBuild, (long long)cs->nQuery,
        (long long)cs->nCapped, gpudsCopyUsers(p), (long long)gpudsCopyVersions(p));
    gpudsLatchReadEnd(p);
  }
  sqlite3_str_appendall(s, "],\"views\":[");
  {
    GpudsInfoNode *pN;
    int nView = 0;
    for(pN=pInfoList; pN; pN=pN->pNext){
      if( pN->db!=db ) continue;
      if( nView++ ) sqlite3_str_appendall(s, ",");
      pN->xJson(pN->pArg, s);
    }
  }
  pthread_mutex_unlock(&tableListMutex);
  sqlite3_free(zStore);
  sqlite3_str_appendf(s, "]}");
  {
    int n = sqlite3_str_length(s);
    char *z = sqlite3_str_finish(s);
    if( z==0 ){ sqlite3_result_error_nomem(ctx); return; }
    sqlite3_result_text(ctx, z, n, sqlite3_free);
  }
  (void)argc; (void)argv;
}

/* Register gpuds_info(), gpuds_info(table), gpuds_check(table) and
** gpuds_version() on db. */
int gpudsRegisterFunctions(sqlite3 *db){
  int rc = sqlite3_create_function(db, "gpuds_info", 0, SQLITE_UTF8, 0,
                                   infoFunc, 0, 0);
  if( rc==SQLITE_OK ){
    rc = sqlite3_create_function(db, "gpuds_info", 1, SQLITE_UTF8, 0,
                                 infoFunc, 0, 0);
  }
  if( rc==SQLITE_OK ){
    rc = sqlite3_create_function(db, "gpuds_check", 1, SQLITE_UTF8, 0,
                                 checkFunc, 0, 0);
    if( rc ){                 /* a failed load leaves nothing of this library */
      sqlite3_create_function(db, "gpuds_info", 0, SQLITE_UTF8, 0, 0, 0, 0);
    }
  }
  if( rc==SQLITE_OK ){
    rc = sqlite3_create_function(db, "gpuds_version", 0,
                                 SQLITE_UTF8|SQLITE_DETERMINISTIC|SQLITE_INNOCUOUS, 0,
                                 versionFunc, 0, 0);
  }
  return rc;
}
