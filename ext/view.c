/*
** view.c -- the gpuds_view module: a read-only virtual table whose rows are
** a SELECT's result, computed each time it is read.
**
**   CREATE VIRTUAL TABLE temp.v USING gpuds_view(
**     SELECT s, v % 100 AS b, count(*), avg(r) FROM t WHERE v < :hi GROUP BY s, b);
**   SELECT * FROM v(5000);   -- or ... FROM v WHERE hi = 5000
**
** Its columns are the SELECT's result columns, named as SQLite names them,
** then one hidden column per named parameter (in order of first
** appearance), which table-valued-function arguments or "= ?" constraints
** bind (unbound: NULL).  The SELECT (viewdef.c) is checked at CREATE by
** SQLite itself (prepared, never run) and by the view's own parser, which
** names what it does not support; SQLite's names for the columns come from
** that statement.  A view in main persists as any virtual table (SQLite
** keeps the CREATE statement, the view the t_meta id of its table in its
** shadow table <view>_src); one in temp lives with the connection.
**
** Reading it (xFilter) finds the gfsl or gpuhash table of its FROM as
** SQLite would (temp, main, then attached schemas), catches up with other
** connections' commits and waits for a load in progress, binds the SELECT
** to the table's columns, and evaluates it (viewrun.c).  A table dropped,
** or dropped and created again (its t_meta id moved), is an error.  While
** a cursor holds a result, it holds the table and its rows (text is read
** from the rows when SQLite asks for it).
*/
#include "gpuds_int.h"
#include "runfmt.h"
SQLITE_EXTENSION_INIT3
#include "view_int.h"
#include <string.h>
#include <stdlib.h>

typedef struct GpudsView {
  sqlite3_vtab base;
  sqlite3 *db;
  char *zDb, *zName;          /* the view's schema and name */
  GpudsViewDef *pDef;
  int nResult;                /* result columns; the parameters' follow */
  sqlite3_stmt *pOps;         /* the operand statement, prepared on use */
  int64_t iSrcId;             /* t_meta id of the table it was made on (0:
                              ** unknown, taken at the first read) */
  GpudsViewStat stat;
  GpudsViewExact exact;       /* text constants known exact (viewrun.c) */
  GpudsInfoNode info;         /* its entry in gpuds_info() */
} GpudsView;

typedef struct GpudsViewCursor {
  sqlite3_vtab_cursor base;
  GpudsViewOut out;
  int64_t iRow;
  sqlite3_value **apParam;    /* the parameters bound by xFilter */
  GpudsTable *pHeld;          /* the table whose rows out refers to */
} GpudsViewCursor;

/* Set the view's error message (printf-style), return rc. */
static int viewError(GpudsView *v, int rc, const char *zFmt, ...){
  va_list ap;
  va_start(ap, zFmt);
  rc = gpudsErrorV(&v->base, rc, zFmt, ap);
  va_end(ap);
  return rc;
}

/* The view as JSON for gpuds_info(). */
static void viewInfo(void *pArg, sqlite3_str *s){
  GpudsView *v = (GpudsView*)pArg;
  const GpudsViewStat *st = &v->stat;
  sqlite3_str_appendf(s, "{\"name\":\"%w.%w\",\"table\":\"%w%s%w\",\"runs\":%lld,"
      "\"last\":{\"where\":\"%s\",\"rows_read\":%lld,\"rows_on_host\":%lld,"
      "\"left_over\":%lld,\"groups_redone\":%lld,\"rows\":%lld,\"us\":%lld}}",
      v->zDb, v->zName, v->pDef->zDb ? v->pDef->zDb : "", v->pDef->zDb ? "." : "",
      v->pDef->zTab, (long long)st->nRun, st->zWhere, (long long)st->nRead,
      (long long)st->nHost, (long long)st->nLeft, (long long)st->nExact,
      (long long)st->nGroup, (long long)st->nUs);
}

static void viewFree(GpudsView *v){
  if( v==0 ) return;
  gpudsInfoRemove(&v->info);
  gpudsViewExactClear(&v->exact);
  sqlite3_finalize(v->pOps);
  gpudsViewDefFree(v->pDef);
  sqlite3_free(v->zDb);
  sqlite3_free(v->zName);
  sqlite3_free(v->base.zErrMsg);
  sqlite3_free(v);
}

/* The gfsl or gpuhash table of the view's FROM, as SQLite resolves the
** name (temp, main, then the attached schemas), connected if it was not
** yet; NULL if there is none. */
static GpudsTable *viewSource(sqlite3 *db, const GpudsViewDef *d){
  GpudsTable *p = 0;
  int bTouched = 0;
  for(;;){
    if( d->zDb ){
      p = gpudsTableFindExact(db, d->zDb, d->zTab);
    }else{
      p = gpudsTableFindExact(db, "temp", d->zTab);
      if( p==0 ) p = gpudsTableFindExact(db, "main", d->zTab);
      if( p==0 ){
        sqlite3_stmt *pStmt = 0;
        if( sqlite3_prepare_v2(db, "PRAGMA database_list", -1, &pStmt, 0)==SQLITE_OK ){
          while( p==0 && sqlite3_step(pStmt)==SQLITE_ROW ){
            const char *zS = (const char*)sqlite3_column_text(pStmt, 1);
            if( zS ) p = gpudsTableFindExact(db, zS, d->zTab);
          }
        }
        sqlite3_finalize(pStmt);
      }
    }
    if( p || bTouched ) return p;
    {
      /* not connected yet: touch it */
      char *zSql = d->zDb ? sqlite3_mprintf("SELECT 1 FROM \"%w\".\"%w\" LIMIT 0", d->zDb, d->zTab)
                          : sqlite3_mprintf("SELECT 1 FROM \"%w\" LIMIT 0", d->zTab);
      if( zSql ){ sqlite3_exec(db, zSql, 0, 0, 0); sqlite3_free(zSql); }
      bTouched = 1;
    }
  }
}

/* The t_meta id of table p as its shadow table says now (0 if unread). */
static int64_t sourceId(sqlite3 *db, const GpudsTable *p){
  sqlite3_stmt *pStmt = 0;
  int64_t id = 0;
  char *zSql = sqlite3_mprintf("SELECT value FROM \"%w\".\"%w_meta\" WHERE key='id'",
                               p->zDb, p->zName);
  if( zSql && sqlite3_prepare_v2(db, zSql, -1, &pStmt, 0)==SQLITE_OK
   && sqlite3_step(pStmt)==SQLITE_ROW ){
    id = sqlite3_column_int64(pStmt, 0);
  }
  sqlite3_finalize(pStmt);
  sqlite3_free(zSql);
  return id;
}

/* A view in a schema that persists keeps the t_meta id of its table in
** its shadow table "<view>_src" (id), so that a table dropped and created
** again is told apart in a later connection too. */
static int srcWrite(GpudsView *v){
  char *zSql = sqlite3_mprintf("CREATE TABLE \"%w\".\"%w_src\" AS SELECT %lld AS id",
                               v->zDb, v->zName, (long long)v->iSrcId);
  int rc = zSql ? sqlite3_exec(v->db, zSql, 0, 0, 0) : SQLITE_NOMEM;
  sqlite3_free(zSql);
  return rc;
}
static int srcRead(GpudsView *v){
  sqlite3_stmt *pStmt = 0;
  char *zSql = sqlite3_mprintf("SELECT id FROM \"%w\".\"%w_src\"", v->zDb, v->zName);
  int rc = zSql ? SQLITE_OK : SQLITE_NOMEM;
  /* (missing: the id is unknown, taken at the first read; the view must
  ** still connect, if only to be dropped) */
  if( zSql && sqlite3_prepare_v2(v->db, zSql, -1, &pStmt, 0)==SQLITE_OK
   && sqlite3_step(pStmt)==SQLITE_ROW ){
    v->iSrcId = sqlite3_column_int64(pStmt, 0);
  }
  sqlite3_finalize(pStmt);
  sqlite3_free(zSql);
  return rc;
}

/* The SQL of the module arguments argv[3..argc): SQLite split them at the
** commas outside parentheses. */
static char *argsJoin(int argc, const char *const*argv){
  sqlite3_str *s = sqlite3_str_new(0);
  int i;
  for(i=3; i<argc; i++) sqlite3_str_appendf(s, "%s%s", i>3 ? "," : "", argv[i]);
  return sqlite3_str_finish(s);
}

/* Append name zName to the declaration, made distinct from azSeen[0..n)
** as SQLite makes a view's column names distinct ("name:1"). */
static char *nameDistinct(char **azSeen, int n, const char *zName){
  char *z = sqlite3_mprintf("%s", zName);
  int cnt = 0, i;
  while( z ){
    for(i=0; i<n && sqlite3_stricmp(azSeen[i], z)!=0; i++){}
    if( i==n ) return z;
    {
      int nBase = (int)strlen(zName), j;
      for(j=nBase-1; j>0 && zName[j]>='0' && zName[j]<='9'; j--){}
      if( zName[j]==':' ) nBase = j;
      sqlite3_free(z);
      z = sqlite3_mprintf("%.*s:%d", nBase, zName, ++cnt);
    }
  }
  return 0;
}

/* xCreate and xConnect. */
static int viewInit(sqlite3 *db, void *pAux, int argc, const char *const*argv,
                    sqlite3_vtab **ppVtab, char **pzErr, int bCreate){
  GpudsView *v;
  GpudsViewDef *d = 0;
  sqlite3_stmt *pSel = 0;
  sqlite3_str *pDecl;
  char *zSql, *zErr = 0, *zDecl;
  char **azName = 0;
  int rc, i, nName = 0;
  (void)pAux;
  *ppVtab = 0;
  if( argc<4 ){
    *pzErr = sqlite3_mprintf("gpuds_view: give the SELECT, e.g. "
                             "USING gpuds_view(SELECT k %% 10, count(*) FROM t GROUP BY 1)");
    return SQLITE_ERROR;
  }
  zSql = argsJoin(argc, argv);
  if( zSql==0 ) return SQLITE_NOMEM;
  rc = gpudsViewParse(zSql, &d, &zErr);
  if( rc ){
    *pzErr = zErr ? zErr : sqlite3_mprintf("out of memory");
    sqlite3_free(zSql);
    return rc;
  }
  /* SQLite's own check of the SELECT, and its names for the columns */
  rc = sqlite3_prepare_v2(db, zSql, -1, &pSel, 0);
  sqlite3_free(zSql);
  if( rc && bCreate ){
    *pzErr = sqlite3_mprintf("gpuds_view: %s", sqlite3_errmsg(db));
    gpudsViewDefFree(d);
    return SQLITE_ERROR;
  }
  if( pSel && sqlite3_column_count(pSel)!=d->nCol ){
    *pzErr = sqlite3_mprintf("gpuds_view: the SELECT's result columns were misread");
    sqlite3_finalize(pSel);
    gpudsViewDefFree(d);
    return SQLITE_ERROR;
  }
  if( bCreate ){
    GpudsTable *p = viewSource(db, d);
    if( p==0 ){
      *pzErr = sqlite3_mprintf("gpuds_view: %s%s%s is not a gfsl or gpuhash table",
                               d->zDb ? d->zDb : "", d->zDb ? "." : "", d->zTab);
      rc = SQLITE_ERROR;
    }else{
      rc = gpudsViewBind(d, p->zName, p->nCol, p->azCol, &zErr);
      if( rc ) *pzErr = zErr;
    }
    if( rc ){ sqlite3_finalize(pSel); gpudsViewDefFree(d); return rc; }
  }
  v = sqlite3_malloc(sizeof(*v));
  if( v==0 ){ sqlite3_finalize(pSel); gpudsViewDefFree(d); return SQLITE_NOMEM; }
  memset(v, 0, sizeof(*v));
  v->db = db;
  v->pDef = d;
  v->nResult = d->nCol;
  v->zDb = sqlite3_mprintf("%s", argv[1]);
  v->zName = sqlite3_mprintf("%s", argv[2]);
  sqlite3_snprintf(sizeof(v->stat.zWhere), v->stat.zWhere, "none");
  if( bCreate ){
    GpudsTable *p = viewSource(db, d);
    if( p ) v->iSrcId = sourceId(db, p);
  }
  if( rc==SQLITE_OK && sqlite3_stricmp(argv[1], "temp")!=0 ){
    /* a view that persists keeps the id of its table in <view>_src */
    rc = bCreate ? srcWrite(v) : srcRead(v);
    if( rc ){
      *pzErr = sqlite3_mprintf("gpuds_view: %s_src: %s", v->zName, sqlite3_errmsg(db));
      sqlite3_finalize(pSel);
      viewFree(v);
      return rc;
    }
  }
  /* the declaration: the results' names, then the parameters (HIDDEN) */
  azName = sqlite3_malloc64(sizeof(char*)*(size_t)(d->nCol + d->nParam + 1));
  pDecl = sqlite3_str_new(0);
  rc = (v->zDb && v->zName && azName) ? SQLITE_OK : SQLITE_NOMEM;
  sqlite3_str_appendall(pDecl, "CREATE TABLE x(");
  for(i=0; i<d->nCol && rc==SQLITE_OK; i++){
    const GpudsVCol *c = &d->aCol[i];
    const char *zN = pSel ? sqlite3_column_name(pSel, i) : 0;
    if( zN==0 ) zN = c->zAlias ? c->zAlias : (!c->bAgg && c->e.op==GPUDS_AGGKEY_COL) ? c->e.zCol : c->zSpan;
    azName[nName] = nameDistinct(azName, nName, zN);
    if( azName[nName]==0 ){ rc = SQLITE_NOMEM; break; }
    sqlite3_str_appendf(pDecl, "%s\"%w\"", i ? ", " : "", azName[nName++]);
  }
  for(i=0; i<d->nParam && rc==SQLITE_OK; i++){
    int j;
    for(j=0; j<nName && sqlite3_stricmp(azName[j], d->azParam[i])!=0; j++){}
    if( j<nName ){
      *pzErr = sqlite3_mprintf("gpuds_view: parameter :%s has the name of a result column: "
                               "rename one of them", d->azParam[i]);
      rc = SQLITE_ERROR;
      break;
    }
    sqlite3_str_appendf(pDecl, "%s\"%w\" HIDDEN", nName ? ", " : "", d->azParam[i]);
  }
  sqlite3_str_appendall(pDecl, ")");
  zDecl = sqlite3_str_finish(pDecl);
  for(i=0; i<nName; i++) sqlite3_free(azName[i]);
  sqlite3_free(azName);
  sqlite3_finalize(pSel);
  if( rc==SQLITE_OK && zDecl==0 ) rc = SQLITE_NOMEM;
  if( rc==SQLITE_OK ){
    rc = sqlite3_declare_vtab(db, zDecl);
    if( rc ) *pzErr = sqlite3_mprintf("gpuds_view: cannot declare \"%s\": %s", zDecl, sqlite3_errmsg(db));
  }
  sqlite3_free(zDecl);
  if( rc ){ viewFree(v); return rc; }
  v->info.db = db;
  v->info.pArg = v;
  v->info.xJson = viewInfo;
  gpudsInfoAdd(&v->info);
  *ppVtab = &v->base;
  return SQLITE_OK;
}
static int viewCreate(sqlite3 *db, void *pAux, int argc, const char *const*argv,
                      sqlite3_vtab **ppVtab, char **pzErr){
  return viewInit(db, pAux, argc, argv, ppVtab, pzErr, 1);
}
static int viewConnect(sqlite3 *db, void *pAux, int argc, const char *const*argv,
                       sqlite3_vtab **ppVtab, char **pzErr){
  return viewInit(db, pAux, argc, argv, ppVtab, pzErr, 0);
}

static int viewDisconnect(sqlite3_vtab *pVtab){
  viewFree((GpudsView*)pVtab);
  return SQLITE_OK;
}

/* xDestroy: DROP TABLE of the view; its shadow table goes too. */
static int viewDestroy(sqlite3_vtab *pVtab){
  GpudsView *v = (GpudsView*)pVtab;
  if( sqlite3_stricmp(v->zDb, "temp")!=0 ){
    char *zSql = sqlite3_mprintf("DROP TABLE IF EXISTS \"%w\".\"%w_src\"", v->zDb, v->zName);
    int rc = zSql ? sqlite3_exec(v->db, zSql, 0, 0, 0) : SQLITE_NOMEM;
    sqlite3_free(zSql);
    if( rc ) return viewError(v, rc, "gpuds_view: %s", sqlite3_errmsg(v->db));
  }
  viewFree(v);
  return SQLITE_OK;
}

/* xRename: the shadow table takes the new name. */
static int viewRename(sqlite3_vtab *pVtab, const char *zNew){
  GpudsView *v = (GpudsView*)pVtab;
  char *zName = sqlite3_mprintf("%s", zNew);
  int rc = zName ? SQLITE_OK : SQLITE_NOMEM;
  if( rc==SQLITE_OK && sqlite3_stricmp(v->zDb, "temp")!=0 ){
    char *zSql = sqlite3_mprintf("ALTER TABLE \"%w\".\"%w_src\" RENAME TO \"%w_src\"",
                                 v->zDb, v->zName, zNew);
    rc = zSql ? sqlite3_exec(v->db, zSql, 0, 0, 0) : SQLITE_NOMEM;
    sqlite3_free(zSql);
  }
  if( rc ){
    sqlite3_free(zName);
    return viewError(v, rc, "gpuds_view: %s", sqlite3_errmsg(v->db));
  }
  sqlite3_free(v->zName);
  v->zName = zName;
  return SQLITE_OK;
}

/* xShadowName: "<view>_src". */
static int viewShadowName(const char *zSuffix){
  return sqlite3_stricmp(zSuffix, "src")==0;
}

/* xBestIndex: "= ?" on a parameter's column binds it (idxNum: a bit per
** parameter bound, in argument order).  Such a constraint that cannot be
** used in this plan makes the plan unusable, so that SQLite orders a join
** to bind it.  Nothing else is taken: SQLite filters and orders the rows. */
static int viewBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo){
  GpudsView *v = (GpudsView*)pVtab;
  const GpudsViewDef *d = v->pDef;
  int aiCons[64], i, nArg = 0, bUnusable = 0;
  unsigned int mask = 0;
  sqlite3_str *s;
  for(i=0; i<64; i++) aiCons[i] = -1;
  for(i=0; i<pInfo->nConstraint; i++){
    const struct sqlite3_index_constraint *c = &pInfo->aConstraint[i];
    int iP = c->iColumn - v->nResult;
    if( iP<0 || iP>=d->nParam || iP>=32 ) continue;
    if( c->op!=SQLITE_INDEX_CONSTRAINT_EQ ) continue;
    if( !c->usable ){ bUnusable = 1; continue; }
    if( aiCons[iP]<0 ) aiCons[iP] = i;
  }
  s = sqlite3_str_new(0);
  sqlite3_str_appendf(s, "gpuds_view of %s%s%s", d->zDb ? d->zDb : "", d->zDb ? "." : "", d->zTab);
  {
    /* where it will run, as far as the connected table says */
    GpudsTable *p = d->zDb ? gpudsTableFindExact(v->db, d->zDb, d->zTab)
                  : gpudsTableFindExact(v->db, "temp", d->zTab);
    if( p==0 && d->zDb==0 ) p = gpudsTableFindExact(v->db, "main", d->zTab);
    if( p ){
      sqlite3_str_appendf(s, " on the %s column set",
                          strcmp(gpudsColsBackend(p), "host")==0 ? "host" : "GPU");
    }
  }
  for(i=0; i<d->nParam && i<32; i++){
    if( aiCons[i]<0 ) continue;
    pInfo->aConstraintUsage[aiCons[i]].argvIndex = ++nArg;
    pInfo->aConstraintUsage[aiCons[i]].omit = 1;
    mask |= 1u<<i;
    sqlite3_str_appendf(s, "%s%s=?", nArg==1 ? " (" : ", ", d->azParam[i]);
  }
  if( nArg ) sqlite3_str_appendall(s, ")");
  pInfo->idxNum = (int)mask;
  pInfo->idxStr = sqlite3_str_finish(s);
  pInfo->needToFreeIdxStr = 1;
  pInfo->estimatedCost = 1000.0;
  pInfo->estimatedRows = 100;
  if( bUnusable && nArg<d->nParam ){
    pInfo->estimatedCost = 1e18;
    return SQLITE_CONSTRAINT;
  }
  return SQLITE_OK;
}

static int viewOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCur){
  GpudsViewCursor *c = sqlite3_malloc(sizeof(*c));
  if( c==0 ) return SQLITE_NOMEM;
  memset(c, 0, sizeof(*c));
  c->out.nCol = ((GpudsView*)pVtab)->nResult;
  *ppCur = &c->base;
  return SQLITE_OK;
}

/* Drop what the cursor holds: its result, its parameters, the table. */
static void cursorReset(GpudsViewCursor *c){
  GpudsView *v = (GpudsView*)c->base.pVtab;
  int i;
  gpudsViewOutFree(&c->out);
  c->iRow = 0;
  for(i=0; c->apParam && i<v->pDef->nParam; i++) sqlite3_value_free(c->apParam[i]);
  sqlite3_free(c->apParam);
  c->apParam = 0;
  if( c->pHeld ){ gpudsTableRelease(c->pHeld); c->pHeld = 0; }
}

static int viewClose(sqlite3_vtab_cursor *pCur){
  cursorReset((GpudsViewCursor*)pCur);
  sqlite3_free(pCur);
  return SQLITE_OK;
}

/* xFilter: bind the parameters, find the table, evaluate. */
static int viewFilter(sqlite3_vtab_cursor *pCur, int idxNum, const char *idxStr,
                      int argc, sqlite3_value **argv){
  GpudsViewCursor *c = (GpudsViewCursor*)pCur;
  GpudsView *v = (GpudsView*)pCur->pVtab;
  GpudsViewDef *d = v->pDef;
  GpudsTable *p;
  char *zErr = 0;
  int i, k = 0, rc;
  (void)idxStr;
  cursorReset(c);
  if( d->nParam ){
    c->apParam = sqlite3_malloc64(sizeof(sqlite3_value*)*(size_t)d->nParam);
    if( c->apParam==0 ) return SQLITE_NOMEM;
    memset(c->apParam, 0, sizeof(sqlite3_value*)*(size_t)d->nParam);
    for(i=0; i<d->nParam && i<32; i++){
      if( (idxNum & (1<<i)) && k<argc ){
        c->apParam[i] = sqlite3_value_dup(argv[k++]);
        if( c->apParam[i]==0 ) return SQLITE_NOMEM;
      }
    }
  }
  p = viewSource(v->db, d);
  if( p==0 ){
    return viewError(v, SQLITE_ERROR, "gpuds_view %s: its table %s%s%s no longer exists "
                     "(or is no gfsl or gpuhash table)", v->zName, d->zDb ? d->zDb : "",
                     d->zDb ? "." : "", d->zTab);
  }
  rc = gpudsShadowRefresh(p);
  if( rc==SQLITE_OK ) rc = gpudsShadowReady(p);
  if( rc==SQLITE_OK && p->bBroken ){
    rc = gpudsVtabError(p, SQLITE_NOMEM, "%s: a rollback ran out of memory; "
                        "roll the transaction back", p->zName);
  }
  if( rc ) goto filter_err;
  if( v->iSrcId==0 ) v->iSrcId = p->iTableId;
  if( p->iTableId!=0 && v->iSrcId!=p->iTableId ){
    return viewError(v, SQLITE_ERROR, "gpuds_view %s: its table %s was dropped and created "
                     "again since the view was made: create the view again", v->zName, p->zName);
  }
  rc = gpudsViewBind(d, p->zName, p->nCol, p->azCol, &zErr);
  if( rc ){
    rc = viewError(v, rc, "gpuds_view %s: %s (its table changed)", v->zName, zErr ? zErr : "error");
    sqlite3_free(zErr);
    return rc;
  }
  if( d->zOperands && v->pOps==0 ){
    rc = sqlite3_prepare_v2(v->db, d->zOperands, -1, &v->pOps, 0);
    if( rc ) return viewError(v, rc, "gpuds_view %s: %s", v->zName, sqlite3_errmsg(v->db));
  }
  gpudsTableHold(p);
  c->pHeld = p;
  rc = gpudsViewRun(p, d, v->pOps, c->apParam, &v->exact, &c->out, &v->stat);
  if( rc ) goto filter_err;
  return SQLITE_OK;
filter_err:
  viewError(v, rc, "%s", p->base.zErrMsg ? p->base.zErrMsg : sqlite3_errstr(rc));
  sqlite3_free(p->base.zErrMsg);
  p->base.zErrMsg = 0;
  return rc;
}

static int viewNext(sqlite3_vtab_cursor *pCur){
  ((GpudsViewCursor*)pCur)->iRow++;
  return SQLITE_OK;
}

static int viewEof(sqlite3_vtab_cursor *pCur){
  GpudsViewCursor *c = (GpudsViewCursor*)pCur;
  return c->iRow>=c->out.nRow;
}

static int viewColumn(sqlite3_vtab_cursor *pCur, sqlite3_context *ctx, int i){
  GpudsViewCursor *c = (GpudsViewCursor*)pCur;
  GpudsView *v = (GpudsView*)pCur->pVtab;
  if( i>=v->nResult ){
    sqlite3_value *pV = c->apParam ? c->apParam[i-v->nResult] : 0;
    if( pV ) sqlite3_result_value(ctx, pV);
    else sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  {
    const GpudsVCell *x = &c->out.aCell[c->iRow*c->out.nCol + i];
    switch( x->eType ){
      case SQLITE_INTEGER: sqlite3_result_int64(ctx, x->u.i); break;
      case SQLITE_FLOAT:   sqlite3_result_double(ctx, x->u.r); break;
      case VCELL_ROW:
        gpudsRowResult(gpudsRowOf(x->hRow), x->iCol, ctx, 0, gpudsTableText(c->pHeld));
        break;
      default:             sqlite3_result_null(ctx); break;
    }
  }
  return SQLITE_OK;
}

static int viewRowid(sqlite3_vtab_cursor *pCur, sqlite3_int64 *pRowid){
  *pRowid = ((GpudsViewCursor*)pCur)->iRow + 1;
  return SQLITE_OK;
}

static sqlite3_module gpudsViewModule = {
  3, viewCreate, viewConnect, viewBestIndex, viewDisconnect, viewDestroy,
  viewOpen, viewClose, viewFilter, viewNext, viewEof, viewColumn, viewRowid,
  0 /* xUpdate: read-only */, 0, 0, 0, 0, 0, viewRename, 0, 0, 0, viewShadowName
};

/* Register the gpuds_view module on db. */
int gpudsRegisterView(sqlite3 *db){
  return sqlite3_create_module_v2(db, "gpuds_view", &gpudsViewModule, 0, 0);
}
