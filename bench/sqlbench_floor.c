/*
** sqlbench_floor.c -- the floor table: sqlbench's own virtual table over a
** plain array of the rows, writes dropped, whose time is SQLite's own cost
** of a workload through the virtual-table interface.
*/
#include "sqlbench.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ floor table
** Module "floor" (table t_floor): the cheapest virtual table there can be
** for these rows, so that its time is SQLite's own cost of a workload
** through the virtual-table interface.  Its rows are the generator's N
** rows, made once into an array (row i: key keyOf(i), columns vOf/rOf/sOf
** of the key), found by arithmetic (i = k/KEY_SPACING); writes are accepted
** and dropped.  It takes = and ranges on the key and ORDER BY the key both
** ways, as gfsl does, and runs only the workloads whose rows it knows: the
** inserts (each row goes through SQLite's INSERT and xUpdate; the check
** then reads the N rows it has anyway), point, join, range, desc and
** delete (SQLite's scan of the range, its list of rowids and one xUpdate a
** row; the rows stay, so its answer is the count of rows deleted) (not
** IN, whose bound is in_floor: a table may take the list at once through
** sqlite3_vtab_in(), as gpuds does).  Its rate over the ordinary table's
** bounds what any virtual table can gain there.  So that
** xColumn costs no more than handing a value over, the rows are made once
** (at the first floor table's connect, kept to the end): an array in key
** order, each row's values side by side (one stream of memory for a scan,
** one cache line for a lookup), s NUL-terminated and handed over as
** SQLITE_STATIC (SQLite then neither copies it nor terminates it). */
typedef struct FloorRow {
  int64_t k, v;
  double r;
  char zS[26];           /* s: at most 25 characters, NUL-terminated */
} FloorRow;
typedef struct FloorCur {
  sqlite3_vtab_cursor base;
  int64_t i, iEnd;       /* current row, and the last one (inclusive) */
  int bDesc;             /* rows in descending key order */
} FloorCur;
static FloorRow *aFloorRow;      /* the N rows, key order */

/* Make aFloorRow, once. */
static void floorMake(void){
  int64_t i;
  if( aFloorRow ) return;
  aFloorRow = xmalloc(sizeof(FloorRow)*(size_t)g.nRow);
  for(i=0; i<g.nRow; i++){
    FloorRow *e = &aFloorRow[i];
    e->k = keyOf(i);
    e->v = vOf(e->k);
    e->r = rOf(e->k);
    sOf(e->k, e->zS);
  }
}

/* idxNum bits of a floor plan; its arguments come in this order. */
#define FLOOR_EQ   1     /* k = ?  */
#define FLOOR_LO   2     /* k >= ? (k > ?: with FLOOR_LOX) */
#define FLOOR_LOX  4
#define FLOOR_HI   8     /* k <= ? (k < ?: with FLOOR_HIX) */
#define FLOOR_HIX  16
#define FLOOR_DESC 32    /* ORDER BY k DESC */

static int floorConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                        sqlite3_vtab **ppVtab, char **pzErr){
  sqlite3_vtab *p;
  int rc;
  (void)pAux; (void)argc; (void)argv; (void)pzErr;
  rc = sqlite3_declare_vtab(db, "CREATE TABLE x(k INTEGER PRIMARY KEY, v INTEGER, r REAL, s TEXT)");
  if( rc!=SQLITE_OK ) return rc;
  floorMake();
  p = sqlite3_malloc(sizeof(*p));
  if( p==0 ) return SQLITE_NOMEM;
  memset(p, 0, sizeof(*p));
  *ppVtab = p;
  return SQLITE_OK;
}
static int floorDisconnect(sqlite3_vtab *p){ sqlite3_free(p); return SQLITE_OK; }

/* The first usable =, lower and upper bound on the key (column k or the
** rowid), and ORDER BY k in either direction. */
static int floorBestIndex(sqlite3_vtab *pTab, sqlite3_index_info *pInfo){
  int i, iEq = -1, iLo = -1, iHi = -1, n = 0, m = 0;
  (void)pTab;
  for(i=0; i<pInfo->nConstraint; i++){
    const struct sqlite3_index_constraint *c = &pInfo->aConstraint[i];
    if( !c->usable || c->iColumn>0 ) continue;
    switch( c->op ){
      case SQLITE_INDEX_CONSTRAINT_EQ: if( iEq<0 ) iEq = i; break;
      case SQLITE_INDEX_CONSTRAINT_GT: case SQLITE_INDEX_CONSTRAINT_GE: if( iLo<0 ) iLo = i; break;
      case SQLITE_INDEX_CONSTRAINT_LT: case SQLITE_INDEX_CONSTRAINT_LE: if( iHi<0 ) iHi = i; break;
    }
  }
  if( iEq>=0 ){
    m = FLOOR_EQ;
    pInfo->aConstraintUsage[iEq].argvIndex = ++n;
    pInfo->aConstraintUsage[iEq].omit = 1;
    pInfo->estimatedCost = 1;
    pInfo->estimatedRows = 1;
    pInfo->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
  }else{
    if( iLo>=0 ){
      m |= FLOOR_LO | (pInfo->aConstraint[iLo].op==SQLITE_INDEX_CONSTRAINT_GT ? FLOOR_LOX : 0);
      pInfo->aConstraintUsage[iLo].argvIndex = ++n;
      pInfo->aConstraintUsage[iLo].omit = 1;
    }
    if( iHi>=0 ){
      m |= FLOOR_HI | (pInfo->aConstraint[iHi].op==SQLITE_INDEX_CONSTRAINT_LT ? FLOOR_HIX : 0);
      pInfo->aConstraintUsage[iHi].argvIndex = ++n;
      pInfo->aConstraintUsage[iHi].omit = 1;
    }
    pInfo->estimatedRows = (iLo>=0 && iHi>=0) ? 1000 : (iLo>=0 || iHi>=0) ? g.nRow/2 : g.nRow;
    pInfo->estimatedCost = 10 + (double)pInfo->estimatedRows;
  }
  if( pInfo->nOrderBy==1 && pInfo->aOrderBy[0].iColumn<=0 ){
    if( pInfo->aOrderBy[0].desc ) m |= FLOOR_DESC;
    pInfo->orderByConsumed = 1;
  }
  pInfo->idxNum = m;
  return SQLITE_OK;
}

static int floorOpen(sqlite3_vtab *pTab, sqlite3_vtab_cursor **ppCur){
  FloorCur *c = sqlite3_malloc(sizeof(*c));
  (void)pTab;
  if( c==0 ) return SQLITE_NOMEM;
  memset(c, 0, sizeof(*c));
  *ppCur = &c->base;
  return SQLITE_OK;
}
static int floorClose(sqlite3_vtab_cursor *pCur){ sqlite3_free(pCur); return SQLITE_OK; }

/* The first row whose key is >= k (N if none), and the last whose key is
** <= k (-1 if none). */
static int64_t floorFirstGe(int64_t k){
  int64_t i;
  if( k<=0 ) return 0;
  i = k/KEY_SPACING;
  if( i>=g.nRow ) return g.nRow;
  return aFloorRow[i].k>=k ? i : i+1;
}
static int64_t floorLastLe(int64_t k){
  int64_t i;
  if( k<0 ) return -1;
  i = k/KEY_SPACING;
  if( i>=g.nRow ) return g.nRow-1;
  return aFloorRow[i].k<=k ? i : i-1;
}

static int floorFilter(sqlite3_vtab_cursor *pCur, int idxNum, const char *idxStr,
                       int argc, sqlite3_value **argv){
  FloorCur *c = (FloorCur*)pCur;
  int64_t lo = 0, hi = g.nRow-1;
  int n = 0;
  (void)idxStr; (void)argc;
  if( idxNum & FLOOR_EQ ){
    int64_t k = sqlite3_value_int64(argv[n++]);
    lo = floorFirstGe(k);
    hi = lo<g.nRow && aFloorRow[lo].k==k ? lo : lo-1;
  }
  if( idxNum & FLOOR_LO ){
    int64_t k = sqlite3_value_int64(argv[n++]);
    lo = !(idxNum & FLOOR_LOX) ? floorFirstGe(k) : k==INT64_MAX ? g.nRow : floorFirstGe(k+1);
  }
  if( idxNum & FLOOR_HI ){
    int64_t k = sqlite3_value_int64(argv[n++]);
    hi = !(idxNum & FLOOR_HIX) ? floorLastLe(k) : k==INT64_MIN ? -1 : floorLastLe(k-1);
  }
  c->bDesc = (idxNum & FLOOR_DESC)!=0;
  c->i = c->bDesc ? hi : lo;
  c->iEnd = c->bDesc ? lo : hi;
  return SQLITE_OK;
}
static int floorNext(sqlite3_vtab_cursor *pCur){
  FloorCur *c = (FloorCur*)pCur;
  c->i += c->bDesc ? -1 : 1;
  return SQLITE_OK;
}
static int floorEof(sqlite3_vtab_cursor *pCur){
  const FloorCur *c = (const FloorCur*)pCur;
  return c->bDesc ? c->i<c->iEnd : c->i>c->iEnd;
}
static int floorColumn(sqlite3_vtab_cursor *pCur, sqlite3_context *ctx, int iCol){
  const FloorRow *e = &aFloorRow[((const FloorCur*)pCur)->i];
  switch( iCol ){
    case 0: sqlite3_result_int64(ctx, e->k); break;
    case 1: sqlite3_result_int64(ctx, e->v); break;
    case 2: sqlite3_result_double(ctx, e->r); break;
    default: sqlite3_result_text(ctx, e->zS, -1, SQLITE_STATIC); break;
  }
  return SQLITE_OK;
}
static int floorRowid(sqlite3_vtab_cursor *pCur, sqlite3_int64 *pRowid){
  *pRowid = aFloorRow[((FloorCur*)pCur)->i].k;
  return SQLITE_OK;
}
/* Every write is accepted and dropped (an INSERT's rowid: its key). */
static int floorUpdate(sqlite3_vtab *pTab, int argc, sqlite3_value **argv, sqlite3_int64 *pRowid){
  (void)pTab;
  if( argc>2 && sqlite3_value_type(argv[0])==SQLITE_NULL ){
    *pRowid = sqlite3_value_int64(sqlite3_value_type(argv[1])!=SQLITE_NULL ? argv[1] : argv[2]);
  }
  return SQLITE_OK;
}

static sqlite3_module floorModule = {
  0, floorConnect, floorConnect, floorBestIndex, floorDisconnect, floorDisconnect,
  floorOpen, floorClose, floorFilter, floorNext, floorEof, floorColumn, floorRowid,
  floorUpdate, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
};

/* True if table t runs workload w: every table in use, but the floor table
** only the workloads whose rows it knows (see above). */
int tableRuns(int t, const Work *w){
  static const char *const azFloor[] = { "insert", "point", "range", "desc", "join", "delete", 0 };
  int i;
  if( !g.aUse[t] ) return 0;
  if( t!=T_FLOOR ) return 1;
  for(i=0; azFloor[i]; i++){
    if( strcmp(w->zGroup, azFloor[i])==0 || strcmp(w->zName, azFloor[i])==0 ) return 1;
  }
  return 0;
}

/* Register the floor module on db. */
int floorRegister(sqlite3 *db){
  return sqlite3_create_module(db, "floor", &floorModule, 0);
}

/* Free the floor table's rows (made at its first connect). */
void floorFree(void){
  free(aFloorRow);
  aFloorRow = 0;
}
