/*
** plan.c -- query planning (xBestIndex) and the decoding of a plan's
** arguments in xFilter.
**
** A plan is a list of up to 7 xFilter arguments, each tagged with what it
** is; the tags are packed 4 bits each into idxNum, with two flag bits:
**   PLAN_EQ   key = ?            PLAN_IN   key IN (...) as one batch
**   PLAN_GT/GE/LT/LE  a bound    PLAN_LIMIT, PLAN_OFFSET
**   PLAN_DESC (bit 28)  produce keys in descending order
**   PLAN_COLS (bit 29)  a column plan (colset.c): further arguments are
**                       terms on non-key columns, listed after the NUL
**                       that ends idxStr's words (planText), with an
**                       ORDER BY a column
** idxStr says the plan in words for EXPLAIN QUERY PLAN.
**
** Column terms on INTEGER, REAL and NUMERIC columns are omitted (exact:
** SQLite applies NUMERIC affinity to the other side whatever it is); on
** other columns every term but IS [NOT] NULL is a superset SQLite checks
** again (colOpLetter).  Text is compared and ordered as SQLite's BINARY
** collation does in the database's encoding (its UTF-16 bytes in a UTF-16
** database: textenc.c), in the set and in the exact checks.
** Every key constraint the plan takes is omitted (the plan is exact, with
** SQLite's comparison rules for non-integer values); LIMIT and OFFSET are
** taken as a hint for the size of the first page only (not omitted, and the
** cursor never stops early), so SQLite still applies them: OFFSET stays right
** on every SQLite version, and so does a LIMIT that SQLite 3.40 offers while
** it still filters by a term it did not pass (WHERE d = k).
*/
#include "gpuds_int.h"
#include "runfmt.h"
SQLITE_EXTENSION_INIT3
#include "plan.h"
#include "schema.h"
#include "gpuds_sort.h"
#include <string.h>
#include <math.h>
#include <stdlib.h>

#define PLAN_EQ     1
#define PLAN_IN     2
#define PLAN_GT     3
#define PLAN_GE     4
#define PLAN_LT     5
#define PLAN_LE     6
#define PLAN_LIMIT  7
#define PLAN_OFFSET 8
#define PLAN_MAXARG 7
#define PLAN_DESC   (1<<28)
#define PLAN_COLS   (1<<29)   /* a column plan: idxStr ends with its terms */
#define PLAN_MAXCOLARG 16     /* column terms taken at most */

/* Costs of a column plan, in SQLite's unit (about one row stepped through
** by a full scan): a query on the column set costs a launch and a sync
** (as much as a few hundred rows of a scan) plus a pass over the arrays,
** COLS_SCAN_DIV times cheaper per row than stepping through them, plus the
** rows it returns.  The launch cost keeps a join from running one query
** per outer row where the outer table could be scanned instead. */
#define COLS_LAUNCH_COST 200.0
#define COLS_SCAN_DIV    50.0
/* A table with no column set builds one from every row first (each record
** decoded: a few row steps each).  Counted only for a plan on the key
** alone that is not a top-k (a hash table's key range, e.g. a range
** DELETE, whose own scan passes over the slots and sorts and reads only the
** keys in range; the set it would build is dropped or dirtied by the
** writes that follow).  Plans that
** filter or order by a column reuse the set they build, and keep choosing
** it; so does a full scan (HASH_SCAN_COST per row). */
#define COLS_BUILD_COST  2.0
/* A hash table's scan without a column set (and without its ordered host
** mirror, store.c, whose scans cost what gfsl's do: the costs below then
** take the ordered branches) snapshots its keys, sorts them and looks them
** up page by page: several times an ordinary table's scan, so a column
** plan serves its scans. */
#define HASH_SCAN_COST   4.0

/* A key range of a hash table at most this wide is answered by one batch
** lookup of its keys instead of a scan of every slot (planKeyRange)... */
#define HASH_RANGE_KEYS 65536
/* ... and only while it is at most HASH_RANGE_PER_ROW keys per row of the
** store plus HASH_RANGE_SLACK: a scan visits every slot and then
** snapshots, sorts and looks up every row, while a probe for an absent key
** stops at its first empty slot, so many probes per row are still cheaper;
** the slack keeps short ranges on empty or tiny tables on the batch path. */
#define HASH_RANGE_PER_ROW 16
#define HASH_RANGE_SLACK   64

#ifndef SQLITE_INDEX_CONSTRAINT_LIMIT
# define SQLITE_INDEX_CONSTRAINT_LIMIT  73
# define SQLITE_INDEX_CONSTRAINT_OFFSET 74
#endif

/* True if the running SQLite has sqlite3_vtab_in() (3.38.0). */
static int haveVtabIn(void){
  return sqlite3_libversion_number()>=3038000;
}

/* True if constraint column iColumn is the key. */
static int isKeyColumn(int iColumn){
  return iColumn<0 || iColumn==0;
}

/* True if affinity a is INTEGER, REAL or NUMERIC: SQLite then applies
** NUMERIC affinity to the other side of a comparison, whatever it is, so a
** term on such a column is decided by its value alone. */
static int isNumericAff(char a){
  return gpudsAffNumeric(a);
}

/* The letter naming constraint op on a column of affinity aff in a column
** plan, or 0 if the column set does not take it.  On columns of other
** affinities the outcome depends on the affinity of the other side, which
** xBestIndex cannot see: those terms are taken as supersets that SQLite
** checks again (not omitted): 'a' =, 'A' IS, 'b' !=, 'B' IS NOT, ranges
** 'x'...'Y' on TEXT columns and 'z'...'W' on untyped ones.  The set
** orders text as SQLite's BINARY collation does in the database's
** encoding (textenc.c). */
static char colOpLetter(int op, char aff){
  int bNum = isNumericAff(aff);
  int bText = aff==GPUDS_AFF_TEXT;
  switch( op ){
    case SQLITE_INDEX_CONSTRAINT_EQ:        return bNum ? 'e' : 'a';
    case SQLITE_INDEX_CONSTRAINT_IS:        return bNum ? 'i' : 'A';
    case SQLITE_INDEX_CONSTRAINT_ISNULL:    return 'u';
    case SQLITE_INDEX_CONSTRAINT_ISNOTNULL: return 'U';
    case SQLITE_INDEX_CONSTRAINT_NE:        return bNum ? 'n' : 'b';
    case SQLITE_INDEX_CONSTRAINT_ISNOT:     return bNum ? 'I' : 'B';
    case SQLITE_INDEX_CONSTRAINT_LT:        return bNum ? 'l' : bText ? 'x' : 'z';
    case SQLITE_INDEX_CONSTRAINT_LE:        return bNum ? 'L' : bText ? 'X' : 'Z';
    case SQLITE_INDEX_CONSTRAINT_GT:        return bNum ? 'g' : bText ? 'y' : 'w';
    case SQLITE_INDEX_CONSTRAINT_GE:        return bNum ? 'G' : bText ? 'Y' : 'W';
  }
  return 0;
}

/* True for the letters of terms SQLite checks again (not omitted): the
** supersets on non-numeric columns (colOpLetter), and 'M', an IN list on
** one. */
static int colLetterSuperset(char c){
  return c!=0 && strchr("aAbBxXyYzZwWM", c)!=0;
}

/* The fraction of rows a column term of letter c is guessed to keep. */
static double colOpShare(char c){
  switch( c ){
    case 'e': case 'i': case 'a': case 'A': return 0.01;
    case 'u': return 0.1;
    case 'U': case 'n': case 'I': case 'b': case 'B': return 0.9;
  }
  return 0.25;
}

/* What gpudsBestIndex chooses: the arguments on the key, the terms on
** other columns, and how they are planned. */
typedef struct PlanChoice {
  int aiArg[PLAN_MAXARG];     /* key arguments: constraint index ... */
  int aeArg[PLAN_MAXARG];     /* ... and PLAN_xxx */
  int nArg;
  int iEq, bIn;               /* the key's = (or IN: bIn) constraint, or -1 */
  int nLo, nHi;               /* lower and upper bounds on the key taken */
  int nNotKey;                /* constraints left to SQLite by the key plan */
  int iLimit, iOffset;        /* LIMIT and OFFSET constraints, or -1 */
  int aiCol[PLAN_MAXCOLARG];  /* column terms: constraint index ... */
  char acCol[PLAN_MAXCOLARG]; /* ... and letter (colOpLetter) */
  int nColArg;
  double share;               /* rows the column terms are guessed to keep */
  int iOrderCol;              /* ORDER BY this non-key column, or -1 */
  int bCols;                  /* a column plan */
  int bColsOnceBuilt;         /* a key plan only because no set is built */
  double colRows, colCost;    /* the column plan's estimates */
} PlanChoice;

/* idxStr: the plan in words for EXPLAIN QUERY PLAN, e.g.
**   gfsl: k>? ORDER BY k DESC LIMIT ?
**   gpuhash: GPU column set: v=? AND s>? (checked again by SQLite) ORDER BY s DESC
** and, for a column plan, after the words' terminating NUL (so that EXPLAIN
** QUERY PLAN, which prints idxStr with %s, never shows it), the terms for
** decodeCols: "{<column><letter>,...[;o<column><a|d>]}".  SQLite hands
** xFilter the very buffer xBestIndex made (it frees it with sqlite3_free()
** once the statement is finalized).  NULL if out of memory. */
static char *planText(GpudsTable *p, sqlite3_index_info *pInfo,
                      const PlanChoice *x, int bOrdered){
  static const char *azOp[] = { "", "=?", " IN (...) as one batch", ">?", ">=?", "<?", "<=?" };
  static const char *azC = "eiaAuUnIlLgGNxXyYbBzZwWM";
  static const char *azW[] = { "=?", " IS ?", "=?", " IS ?", " IS NULL", " IS NOT NULL",
    "!=?", " IS NOT ?", "<?", "<=?", ">?", ">=?", " IN (...)",
    "<?", "<=?", ">?", ">=?", "!=?", " IS NOT ?", "<?", "<=?", ">?", ">=?", " IN (...)" };
  sqlite3_str *pStr = sqlite3_str_new(0);
  const char *zKey = p->azCol[0];
  int i, nWhere = 0, bLimit = 0, bOffset = 0;

  sqlite3_str_appendf(pStr, "%s: ", p->eKind==GPUDS_ORDERED ? "gfsl"
                      : (bOrdered ? "gpuhash (ordered mirror)" : "gpuhash"));
  if( x->bCols ){
    sqlite3_str_appendf(pStr, "%s column set: ",
                        strcmp(gpudsColsBackend(p), "host")==0 ? "host" : "GPU");
  }
  for(i=0; i<x->nArg; i++){
    if( x->aeArg[i]==PLAN_LIMIT ){ bLimit = 1; continue; }
    if( x->aeArg[i]==PLAN_OFFSET ){ bOffset = 1; continue; }
    sqlite3_str_appendf(pStr, "%s%s%s", nWhere++ ? " AND " : "", zKey, azOp[x->aeArg[i]]);
  }
  for(i=0; i<x->nColArg; i++){
    int iW = (int)(strchr(azC, x->acCol[i]) - azC);
    sqlite3_str_appendf(pStr, "%s%s%s%s", nWhere++ ? " AND " : "",
                        p->azCol[pInfo->aConstraint[x->aiCol[i]].iColumn], azW[iW],
                        colLetterSuperset(x->acCol[i]) ? " (checked again by SQLite)" : "");
  }
  if( nWhere==0 ) sqlite3_str_appendall(pStr, x->bCols && x->iOrderCol>0 ? "every row" : "full scan");
  if( x->bCols && x->iOrderCol>0 ){
    sqlite3_str_appendf(pStr, " ORDER BY %s%s", p->azCol[x->iOrderCol],
                        pInfo->aOrderBy[0].desc ? " DESC" : "");
  }else if( pInfo->orderByConsumed ){
    sqlite3_str_appendf(pStr, " ORDER BY %s%s", zKey,
                        (pInfo->idxNum & PLAN_DESC) ? " DESC" : "");
  }
  if( bLimit ) sqlite3_str_appendall(pStr, bOffset ? " LIMIT ? OFFSET ?" : " LIMIT ?");
  if( x->bCols && !gpudsColsBuilt(p) ){
    sqlite3_str_appendall(pStr, " (the column set is not built yet: the first run builds it)");
  }
  if( x->bColsOnceBuilt ){
    sqlite3_str_appendall(pStr, " (a column-set plan once the column set is built)");
  }
  if( x->bCols ){
    sqlite3_str_appendchar(pStr, 1, 0);
    sqlite3_str_appendchar(pStr, 1, '{');
    for(i=0; i<x->nColArg; i++){
      sqlite3_str_appendf(pStr, "%s%d%c", i ? "," : "",
                          pInfo->aConstraint[x->aiCol[i]].iColumn, x->acCol[i]);
    }
    if( x->iOrderCol>0 ){
      sqlite3_str_appendf(pStr, ";o%d%c", x->iOrderCol, pInfo->aOrderBy[0].desc ? 'd' : 'a');
    }
    sqlite3_str_appendchar(pStr, 1, '}');
  }
  if( sqlite3_str_errcode(pStr) ){
    sqlite3_free(sqlite3_str_finish(pStr));
    return 0;
  }
  return sqlite3_str_finish(pStr);
}

/* Pass 1 of a plan: the equality (or IN) on the key, preferring plain =
** over IN. */
static void planKeyEq(sqlite3_index_info *pInfo, PlanChoice *x){
  int i;
  for(i=0; i<pInfo->nConstraint; i++){
    const struct sqlite3_index_constraint *c = &pInfo->aConstraint[i];
    if( !c->usable || !isKeyColumn(c->iColumn) ) continue;
    if( c->op!=SQLITE_INDEX_CONSTRAINT_EQ ) continue;
    if( haveVtabIn() && sqlite3_vtab_in(pInfo, i, -1) ){
      if( x->iEq<0 ){ x->iEq = i; x->bIn = 1; }
    }else if( x->iEq<0 || x->bIn ){
      x->iEq = i; x->bIn = 0;
    }
  }
  if( x->iEq>=0 ){
    x->aiArg[x->nArg] = x->iEq;
    x->aeArg[x->nArg++] = x->bIn ? PLAN_IN : PLAN_EQ;
    if( x->bIn ) sqlite3_vtab_in(pInfo, x->iEq, 1);
  }
}

/* Pass 2 of a plan: bounds on the key, LIMIT and OFFSET. */
static void planKeyBounds(sqlite3_index_info *pInfo, PlanChoice *x){
  int i;
  for(i=0; i<pInfo->nConstraint; i++){
    const struct sqlite3_index_constraint *c = &pInfo->aConstraint[i];
    int e = 0;
    if( i==x->iEq ) continue;
    if( c->op==SQLITE_INDEX_CONSTRAINT_LIMIT ){ if( c->usable ) x->iLimit = i; continue; }
    if( c->op==SQLITE_INDEX_CONSTRAINT_OFFSET ){ if( c->usable ) x->iOffset = i; continue; }
    if( c->usable && isKeyColumn(c->iColumn) ){
      switch( c->op ){
        case SQLITE_INDEX_CONSTRAINT_GT: e = PLAN_GT; break;
        case SQLITE_INDEX_CONSTRAINT_GE: e = PLAN_GE; break;
        case SQLITE_INDEX_CONSTRAINT_LT: e = PLAN_LT; break;
        case SQLITE_INDEX_CONSTRAINT_LE: e = PLAN_LE; break;
      }
    }
    if( e && x->nArg<PLAN_MAXARG-2 ){
      x->aiArg[x->nArg] = i;
      x->aeArg[x->nArg++] = e;
      if( e==PLAN_GT || e==PLAN_GE ) x->nLo++; else x->nHi++;
    }else{
      x->nNotKey++;
    }
  }
}

/* The terms on non-key columns the column set takes (x->aiCol, x->acCol,
** and the share of rows they keep), and an ORDER BY on one (x->iOrderCol). */
static void planColTerms(GpudsTable *p, sqlite3_index_info *pInfo, PlanChoice *x){
  int i;
  for(i=0; i<pInfo->nConstraint && x->nColArg<PLAN_MAXCOLARG; i++){
    const struct sqlite3_index_constraint *c = &pInfo->aConstraint[i];
    char cOp;
    const char *zColl;
    if( !c->usable || isKeyColumn(c->iColumn) || c->iColumn>=p->nCol ) continue;
    cOp = colOpLetter(c->op, p->aAff[c->iColumn]);
    if( haveVtabIn() && sqlite3_vtab_in(pInfo, i, -1) ){
      /* An IN list, all values at once, one query: exact on a numeric
      ** column ('N'), a superset SQLite checks again on others ('M').
      ** (Without all-at-once SQLite would loop over the values and check
      ** each row again with an affinity other than the IN operator's:
      ** wherecode.c, the vtab IN loop.) */
      cOp = cOp=='e' ? 'N' : 'M';
    }
    if( cOp==0 ) continue;
    zColl = sqlite3_vtab_collation(pInfo, i);
    if( cOp!='u' && cOp!='U' && zColl && sqlite3_stricmp(zColl, "BINARY")!=0 ) continue;
    x->aiCol[x->nColArg] = i;
    x->acCol[x->nColArg++] = cOp;
    x->share *= colOpShare(cOp);
  }
  if( pInfo->nOrderBy>=1 && !isKeyColumn(pInfo->aOrderBy[0].iColumn)
   && pInfo->aOrderBy[0].iColumn<p->nCol
   && (pInfo->nOrderBy==1
       || (pInfo->nOrderBy==2 && isKeyColumn(pInfo->aOrderBy[1].iColumn)
           && !pInfo->aOrderBy[1].desc)) ){
    x->iOrderCol = pInfo->aOrderBy[0].iColumn;
  }
}

/* The rows guessed in the key range of x (a quarter of the nRow rows for
** one bound, a sixteenth for two), or nRow where x has no bound. */
static double planRangeRows(const PlanChoice *x, double nRow){
  return (x->nLo || x->nHi) ? nRow/((x->nLo && x->nHi) ? 16 : 4) : nRow;
}

/* The cost model's choice between the column plan of x and the key plan
** on a table of nRow rows, read in key order where bOrdered: x->bCols
** where the column plan costs less (or GPUDS_COLUMN_PLANS=always), with
** its estimates x->colRows and x->colCost; x->bColsOnceBuilt where it
** would cost less once the column set is built.  A hash table's own scan
** costs more than its column set's (HASH_SCAN_COST); a short key range
** there is still a batch lookup, which planKeyRange decides when it sees
** the bounds. */
static void planColCost(GpudsTable *p, sqlite3_index_info *pInfo, PlanChoice *x,
                        int bOrdered, double nRow){
  int bRange = x->nLo || x->nHi;
  double nRange = planRangeRows(x, nRow);
  double keyCost = bOrdered ? nRange + (bRange ? log2(nRow+1) : 10)
                            : HASH_SCAN_COST*nRow + 10;
  double colCost, keyCostBuilt, colCostBuilt;
  x->colRows = nRange*x->share;
  if( x->colRows<1 ) x->colRows = 1;
  colCost = COLS_LAUNCH_COST + nRow/COLS_SCAN_DIV + x->colRows;
  keyCostBuilt = keyCost;
  colCostBuilt = colCost;
  if( !gpudsColsBuilt(p) && x->nColArg==0 && x->iOrderCol<0
   && !(x->iLimit>=0 && pInfo->nOrderBy>0) ){
    /* no set yet, a plan on the key alone: the set would be built from
    ** every row, while the hash scan's snapshot passes over the slots and
    ** sorts and reads only the keys in range.  Not for a top-k (ORDER BY
    ** k LIMIT n): the hash scan sorts every key in range for each query,
    ** the set selects the first n in one pass */
    colCost += COLS_BUILD_COST*nRow;
    if( !bOrdered && bRange ) keyCost = nRow/COLS_SCAN_DIV + HASH_SCAN_COST*nRange;
  }
  if( x->iOrderCol>0 && x->nColArg==0 ) keyCost += nRange*log2(nRange+1);  /* the sort saved */
  x->colCost = colCost;
  x->bCols = gpudsConfig()->eColPlans==GPUDS_COLPLAN_ALWAYS || colCost<keyCost;
  /* the same statement planned once the set exists (the cost of building
  ** it aside) would take the column set: the plan says so */
  x->bColsOnceBuilt = !x->bCols && colCostBuilt<keyCostBuilt;
}

/* The key plan's estimates, in *pRows and *pCost: a point read costs about
** one probe, an IN list a batch of probes, a range its rows plus a
** descent, a scan every row.  A hash table streams a scan from every slot,
** however narrow the bounds. */
static void planKeyCost(sqlite3_index_info *pInfo, const PlanChoice *x, int bOrdered,
                        double nRow, double *pRows, double *pCost){
  if( x->iEq>=0 && !x->bIn ){
    *pRows = 1; *pCost = 1;
    pInfo->idxFlags |= SQLITE_INDEX_SCAN_UNIQUE;
  }else if( x->iEq>=0 ){
    *pRows = 10; *pCost = 10;
  }else if( bOrdered && (x->nLo || x->nHi) ){
    *pRows = planRangeRows(x, nRow);
    if( *pRows<1 ) *pRows = 1;
    *pCost = *pRows + log2(nRow+1);
  }else{
    *pRows = nRow; *pCost = nRow + 10;
  }
}

/* Tell SQLite what plan x takes: the order it produces, the arguments
** xFilter gets and which constraints it may omit, all in idxNum. */
static void planUsage(sqlite3_index_info *pInfo, PlanChoice *x){
  int i, bAllUsed = 1;
  /* Ordering: key order is produced by every plan (a hash table's scans
  ** sort their snapshot of the keys, its EQ/IN plans sort their keys); a
  ** column plan orders by its column, ties by the key. */
  if( x->bCols && x->iOrderCol>0 ){
    pInfo->orderByConsumed = 1;
  }else if( pInfo->nOrderBy>=1 && isKeyColumn(pInfo->aOrderBy[0].iColumn) ){
    pInfo->orderByConsumed = 1;
    if( pInfo->aOrderBy[0].desc ) pInfo->idxNum |= PLAN_DESC;
  }
  /* A column term taken is all used unless SQLite checks it again; every
  ** constraint not taken leaves rows for SQLite to filter. */
  for(i=0; i<x->nColArg; i++){
    if( colLetterSuperset(x->acCol[i]) ) bAllUsed = 0;
  }
  if( x->nNotKey>x->nColArg ) bAllUsed = 0;
  /* LIMIT/OFFSET: a hint, usable when no row is filtered after us. */
  if( bAllUsed && (pInfo->nOrderBy==0 || pInfo->orderByConsumed) ){
    if( x->iLimit>=0 ){ x->aiArg[x->nArg] = x->iLimit; x->aeArg[x->nArg++] = PLAN_LIMIT; }
    if( x->iLimit>=0 && x->iOffset>=0 ){
      x->aiArg[x->nArg] = x->iOffset; x->aeArg[x->nArg++] = PLAN_OFFSET;
    }
  }

  for(i=0; i<x->nArg; i++){
    pInfo->aConstraintUsage[x->aiArg[i]].argvIndex = i+1;
    pInfo->aConstraintUsage[x->aiArg[i]].omit =
        (x->aeArg[i]!=PLAN_LIMIT && x->aeArg[i]!=PLAN_OFFSET);
    pInfo->idxNum |= x->aeArg[i] << (4*i);
  }
  for(i=0; i<x->nColArg; i++){
    pInfo->aConstraintUsage[x->aiCol[i]].argvIndex = x->nArg+i+1;
    /* IN: text and blob values of the list are a superset (SQLite checks) */
    pInfo->aConstraintUsage[x->aiCol[i]].omit = !colLetterSuperset(x->acCol[i]);
    if( x->acCol[i]=='N' || x->acCol[i]=='M' ) sqlite3_vtab_in(pInfo, x->aiCol[i], 1);
  }
  if( x->bCols ) pInfo->idxNum |= PLAN_COLS;
}

/* Choose a plan.  Always succeeds (a full scan is always possible). */
int gpudsBestIndex(GpudsTable *p, sqlite3_index_info *pInfo){
  /* Reads in key order: gfsl, or gpuhash with its host mirror (a B+tree,
  ** store.c), whose ranges and scans then cost what gfsl's do.  Fixed at
  ** the table's creation, so the order and costs planned here are what
  ** xFilter will find. */
  int bOrdered = gpudsStoreOrdered(p);
  double nRow = (double)gpudsShadowRows(p) + (double)p->wb.nOver;
  double rows, cost;
  PlanChoice x;

  if( nRow<1 ) nRow = 1;
  memset(&x, 0, sizeof(x));
  x.iEq = x.iLimit = x.iOffset = x.iOrderCol = -1;
  x.share = 1.0;
  planKeyEq(pInfo, &x);
  planKeyBounds(pInfo, &x);
  /* Terms on non-key columns and an ORDER BY on one: a column plan, where
  ** there is no key equality and it costs less than the key plan. */
  if( x.iEq<0 && gpudsConfig()->eColPlans!=GPUDS_COLPLAN_OFF ){
    planColTerms(p, pInfo, &x);
    if( x.nColArg>0 || x.iOrderCol>0 || !bOrdered ) planColCost(p, pInfo, &x, bOrdered, nRow);
    if( !x.bCols ){ x.nColArg = 0; x.iOrderCol = -1; }
  }
  planUsage(pInfo, &x);

  planKeyCost(pInfo, &x, bOrdered, nRow, &rows, &cost);
  if( x.bCols ){ rows = x.colRows; cost = x.colCost; }
  pInfo->estimatedRows = (sqlite3_int64)rows;
  pInfo->estimatedCost = cost;
  pInfo->idxStr = planText(p, pInfo, &x, bOrdered);
  pInfo->needToFreeIdxStr = 1;
  return pInfo->idxStr ? SQLITE_OK : SQLITE_NOMEM;
}

/* The GPUDS_CMP_xxx operator of key bound PLAN_GT, _GE, _LT or _LE. */
static int planBoundOp(int e){
  return e==PLAN_GT ? GPUDS_CMP_GT : e==PLAN_GE ? GPUDS_CMP_GE
       : e==PLAN_LT ? GPUDS_CMP_LT : GPUDS_CMP_LE;
}

/* Decode a column plan: the terms planText wrote after the NUL that ends
** idxStr's words ("{<column><letter>,...[;o<column><a|d>]}"), their
** constants in argv. */
static int decodeCols(GpudsTable *p, const char *idxStr, int argc,
                      sqlite3_value **argv, GpudsPlan *pPlan){
  const char *z = idxStr ? idxStr + strlen(idxStr) + 1 : 0;
  int n = 0, rc;
  if( z==0 || z[0]!='{' ) return SQLITE_INTERNAL;
  pPlan->bCols = 1;
  pPlan->aTerm = sqlite3_malloc64(sizeof(GpudsColTerm)*(argc>0 ? argc : 1));
  if( pPlan->aTerm==0 ) return SQLITE_NOMEM;
  memset(pPlan->aTerm, 0, sizeof(GpudsColTerm)*(argc>0 ? argc : 1));
  z++;
  pPlan->bRecheck = 1;
  while( *z>='0' && *z<='9' ){
    int iCol = 0, op = 0;
    char c;
    GpudsColTerm *t;
    while( *z>='0' && *z<='9' ) iCol = iCol*10 + (*z++ - '0');
    c = *z++;
    if( n>=argc || iCol<1 || iCol>=p->nCol ) return SQLITE_INTERNAL;
    if( !colLetterSuperset(c) ) pPlan->bRecheck = 0;
    t = &pPlan->aTerm[n];
    if( c=='N' || c=='M' ){
      pPlan->nTerm = ++n;      /* owns the list from here */
      rc = gpudsTermInVtab(argv[n-1], p->aAff[iCol], gpudsTableText(p), c=='M', t);
      if( rc ) return rc;
      t->t.iCol = iCol-1;
      t->t.op = GPUDS_CMP_IN;
      if( *z==',' ) z++;
      continue;
    }
    rc = gpudsTermConst(argv[n], p->aAff[iCol], gpudsTableText(p), &t->v);
    pPlan->nTerm = ++n;        /* owns t->v.z from here */
    if( rc ) return rc;
    switch( c ){
      case 'e': op = GPUDS_CMP_EQ; break;
      case 'a': op = GPUDS_CMP_ANYEQ; break;
      case 'i': op = t->v.tag==GPUDS_TAG_NULL ? GPUDS_CMP_ISNULL : GPUDS_CMP_EQ; break;
      case 'A': op = t->v.tag==GPUDS_TAG_NULL ? GPUDS_CMP_ISNULL : GPUDS_CMP_ANYEQ; break;
      /* != and IS NOT on other columns ('b', 'B') as on numeric ones: the
      ** set leaves out only values equal to c and of its class, equal
      ** under any affinity (which converts only between text and numbers),
      ** so they are a superset as they are */
      case 'I': case 'B': op = t->v.tag==GPUDS_TAG_NULL ? GPUDS_CMP_NOTNULL : GPUDS_CMP_ISNOT; break;
      case 'u': op = GPUDS_CMP_ISNULL; break;
      case 'U': op = GPUDS_CMP_NOTNULL; break;
      case 'n': case 'b': op = GPUDS_CMP_NE; break;
      case 'l': op = GPUDS_CMP_LT; break;
      case 'L': op = GPUDS_CMP_LE; break;
      case 'g': op = GPUDS_CMP_GT; break;
      case 'G': op = GPUDS_CMP_GE; break;
      case 'x': op = GPUDS_CMP_TLT; break;
      case 'X': op = GPUDS_CMP_TLE; break;
      case 'y': op = GPUDS_CMP_TGT; break;
      case 'Y': op = GPUDS_CMP_TGE; break;
      case 'z': op = GPUDS_CMP_ULT; break;
      case 'Z': op = GPUDS_CMP_ULE; break;
      case 'w': op = GPUDS_CMP_UGT; break;
      case 'W': op = GPUDS_CMP_UGE; break;
      default: return SQLITE_INTERNAL;
    }
    if( (op==GPUDS_CMP_TLT || op==GPUDS_CMP_TLE)
     && (t->v.tag==GPUDS_TAG_INT || t->v.tag==GPUDS_TAG_REAL) ){
      /* a number against a TEXT column: as SQLite's text of it, which TEXT
      ** affinity makes of it where the other side has none; where it has a
      ** numeric one, only text that reads as a number can be less, which
      ** the set keeps as "maybe" */
      rc = gpudsTermConstText(argv[n-1], gpudsTableText(p), &t->v);
      if( rc ) return rc;
    }   /* (> and >= a number: every text and blob, as the values compare) */
    t->t.iCol = iCol-1;
    t->t.op = op;
    t->t.tag = t->v.tag;
    t->t.val = t->v.val;
    /* the set compares text and blobs by prefix and hash: where it says
    ** "maybe" to a term SQLite will not check again, check it exactly */
    t->bRefine = !colLetterSuperset(c)
              && (t->v.tag==GPUDS_TAG_TEXT || t->v.tag==GPUDS_TAG_BLOB);
    if( *z==',' ) z++;
  }
  if( n==0 ) pPlan->bRecheck = 0;
  if( z[0]==';' && z[1]=='o' ){
    int iCol = 0;
    z += 2;
    while( *z>='0' && *z<='9' ) iCol = iCol*10 + (*z++ - '0');
    if( iCol<1 || iCol>=p->nCol ) return SQLITE_INTERNAL;
    pPlan->iOrderCol = iCol-1;
    pPlan->bOrderDesc = *z=='d';
  }
  return SQLITE_OK;
}

/* Free what a decoded plan holds. */
void gpudsPlanFree(GpudsPlan *pPlan){
  int i;
  if( pPlan->aKey==&pPlan->iKey1 ) pPlan->aKey = 0;
  if( pPlan->aKey==0 && pPlan->aTerm==0 ) return;   /* (every xFilter) */
  for(i=0; i<pPlan->nTerm; i++) gpudsTermFree(&pPlan->aTerm[i]);
  sqlite3_free(pPlan->aTerm);
  free(pPlan->aKey);
  pPlan->aTerm = 0; pPlan->nTerm = 0; pPlan->aKey = 0;
}

/* A short key range of a hash table that has no ordered mirror, or whose
** store is being built (the runs on disk answer key lookups only), with
** no column term or order: every key of it as the plan's list, looked up
** in one batch rather than a visit of every slot.  SQLITE_OK, or
** SQLITE_NOMEM. */
static int planKeyRange(GpudsTable *p, GpudsPlan *pPlan){
  uint64_t nSpan = (uint64_t)pPlan->hi - (uint64_t)pPlan->lo;
  int64_t n, i;
  if( pPlan->bEmpty || pPlan->bList || p->eKind!=GPUDS_HASH ) return SQLITE_OK;
  if( pPlan->bCols && (pPlan->nTerm>0 || pPlan->iOrderCol>=0) ) return SQLITE_OK;
  if( gpudsStoreOrdered(p) && !gpudsShadowPending(p) ) return SQLITE_OK;
  if( nSpan>=HASH_RANGE_KEYS
   || (int64_t)nSpan > HASH_RANGE_PER_ROW*gpudsShadowRows(p) + HASH_RANGE_SLACK ){
    return SQLITE_OK;
  }
  n = (int64_t)nSpan + 1;
  pPlan->aKey = malloc((size_t)n*8);
  if( pPlan->aKey==0 ) return SQLITE_NOMEM;
  for(i=0; i<n; i++) pPlan->aKey[i] = (int64_t)((uint64_t)pPlan->lo + (uint64_t)i);
  pPlan->nKey = n;
  pPlan->bList = 1;
  pPlan->bCols = 0;
  return SQLITE_OK;
}

/* Decode the arguments of plan idxNum into *pPlan.  Collects the keys of an
** EQ or IN plan (sorted, distinct, within the bounds), or of a short key
** range of a hash table (planKeyRange).  The caller frees what *pPlan
** holds with gpudsPlanFree, on error too. */
int gpudsPlanDecode(GpudsTable *p, int idxNum, const char *idxStr, int argc,
                    sqlite3_value **argv, GpudsPlan *pPlan){
  int i, nKeyArg = 0;
  int64_t nLimit = -1, nOffset = 0;
  memset(pPlan, 0, sizeof(*pPlan));
  pPlan->iOrderCol = -1;
  pPlan->lo = INT64_MIN;
  pPlan->hi = INT64_MAX;
  pPlan->bDesc = (idxNum & PLAN_DESC)!=0;
  pPlan->nHint = -1;
  for(i=0; i<argc && i<PLAN_MAXARG; i++){
    int e = (idxNum >> (4*i)) & 0xf;
    if( e ) nKeyArg = i+1;
    switch( e ){
      case PLAN_EQ: {
        int64_t k;
        pPlan->bList = 1;
        pPlan->aKey = &pPlan->iKey1;     /* xBestIndex takes one = at most */
        if( gpudsValueToKey(argv[i], &k) ){ pPlan->aKey[0] = k; pPlan->nKey = 1; }
        break;
      }
      case PLAN_IN: {
        sqlite3_value *pVal = 0;
        int64_t nAlloc = 0;
        int rc;
        pPlan->bList = 1;
        for(rc = sqlite3_vtab_in_first(argv[i], &pVal);
            rc==SQLITE_OK && pVal;
            rc = sqlite3_vtab_in_next(argv[i], &pVal)){
          int64_t k;
          if( !gpudsValueToKey(pVal, &k) ) continue;
          if( pPlan->nKey==nAlloc ){
            int64_t *a;
            nAlloc = nAlloc ? nAlloc*2 : 64;
            a = realloc(pPlan->aKey, (size_t)nAlloc*8);
            if( a==0 ) return SQLITE_NOMEM;
            pPlan->aKey = a;
          }
          pPlan->aKey[pPlan->nKey++] = k;
        }
        if( rc!=SQLITE_OK && rc!=SQLITE_DONE ) return rc;
        break;
      }
      case PLAN_GT: case PLAN_GE: case PLAN_LT: case PLAN_LE:
        if( !gpudsKeyBound(planBoundOp(e), argv[i], &pPlan->lo, &pPlan->hi) ) pPlan->bEmpty = 1;
        break;
      case PLAN_LIMIT:
        if( sqlite3_value_type(argv[i])==SQLITE_INTEGER ) nLimit = sqlite3_value_int64(argv[i]);
        break;
      case PLAN_OFFSET:
        if( sqlite3_value_type(argv[i])==SQLITE_INTEGER ) nOffset = sqlite3_value_int64(argv[i]);
        break;
    }
  }
  if( pPlan->lo>pPlan->hi ) pPlan->bEmpty = 1;
  if( idxNum & PLAN_COLS ){
    int rc = decodeCols(p, idxStr, argc-nKeyArg, argv+nKeyArg, pPlan);
    if( rc ) return rc;
  }
  if( nLimit>=0 ){
    if( nOffset<0 ) nOffset = 0;
    pPlan->nHint = (nLimit > INT64_MAX - nOffset) ? -1 : nLimit + nOffset;
  }
  if( pPlan->bList && pPlan->nKey==1 ){
    if( pPlan->aKey[0]<pPlan->lo || pPlan->aKey[0]>pPlan->hi ) pPlan->nKey = 0;
  }else if( pPlan->bList && pPlan->nKey>0 ){
    /* Sort, drop duplicates and keys outside the bounds. */
    int64_t j, n = 0;
    if( gpudsSortKeys(pPlan->aKey, 0, (size_t)pPlan->nKey) ) return SQLITE_NOMEM;
    for(j=0; j<pPlan->nKey; j++){
      int64_t k = pPlan->aKey[j];
      if( k<pPlan->lo || k>pPlan->hi ) continue;
      if( n>0 && pPlan->aKey[n-1]==k ) continue;
      pPlan->aKey[n++] = k;
    }
    pPlan->nKey = n;
  }
  return planKeyRange(p, pPlan);
}
