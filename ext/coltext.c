/*
** coltext.c -- which 8-byte values of a column set's column stand for more
** than one TEXT or BLOB value.  A column set holds a text as its first 4
** bytes and a 32-bit hash of all (gpuds_colval.h): two texts may share
** them.  Where no two do, equal 8 bytes mean equal texts, and a view can
** group, count distinct and take extremes on the set alone; the values
** that are shared are handed to the set as "ambiguous" (gpuds_agg's
** aAmbig), whose rows the view then checks on their records.
**
** Found on demand, once per column and column set (GpudsColState.aText,
** dropped with the set): every row of the store read on one thread per CPU,
** each with a hash table of the values it saw (8 bytes -> the first row
** holding them, compared exactly with every later one), the tables then
** merged.  The store's rows are a superset of the set's unchanged ones
** (rows changed since the set was built are the skipped keys), so a value
** found unambiguous there is unambiguous in the set for as long as it
** lives.  A column that holds no TEXT or BLOB (colbuild.c's aBytes) needs
** no pass.  Below colset.c and the views; reads the store (store.c) and
** the rows (row.c).
*/
#include "gpuds_int.h"
#include "runfmt.h"
SQLITE_EXTENSION_INIT3
#include "gpuds_mix.h"
#include "gpuds_sort.h"
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <pthread.h>

/* One value seen: its 8 bytes and tag, the first row holding it. */
typedef struct TextEntry {
  uint64_t val;
  uint64_t hRow;
  uint8_t tag, bUsed, bAmbig;
} TextEntry;

typedef struct TextMap {
  TextEntry *a;
  uint64_t nSlot;
  int64_t n;
} TextMap;

/* One thread's share of the rows. */
typedef struct TextJob {
  const uint64_t *aRow;
  int64_t i0, i1;
  int iCol, eText;
  TextMap m;
  int rc;
  pthread_t tid;
  int bThread;
} TextJob;

#define TEXT_THREAD_MIN 65536
#define TEXT_MAX_THREADS 16

static uint64_t textHash(uint8_t tag, uint64_t val){
  return gpudsMix64(val ^ ((uint64_t)tag<<59));
}

/* The entry of (tag, val) in m, made (bUsed 0 until filled) if absent;
** NULL out of memory. */
static TextEntry *mapSlot(TextMap *m, uint8_t tag, uint64_t val){
  uint64_t h;
  if( (uint64_t)(m->n+1)*2 > m->nSlot ){
    uint64_t nNew = m->nSlot ? m->nSlot*2 : 1024, i;
    TextEntry *a = calloc(nNew, sizeof(TextEntry));
    if( a==0 ) return 0;
    for(i=0; i<m->nSlot; i++){
      if( !m->a[i].bUsed ) continue;
      h = textHash(m->a[i].tag, m->a[i].val) & (nNew-1);
      while( a[h].bUsed ) h = (h+1) & (nNew-1);
      a[h] = m->a[i];
    }
    free(m->a);
    m->a = a; m->nSlot = nNew;
  }
  h = textHash(tag, val) & (m->nSlot-1);
  while( m->a[h].bUsed && (m->a[h].tag!=tag || m->a[h].val!=val) ) h = (h+1) & (m->nSlot-1);
  return &m->a[h];
}

/* Note that row hRow holds (tag, val) in column iCol: a value seen before
** with other bytes behind the same 8 is ambiguous. */
static int mapAdd(TextMap *m, uint8_t tag, uint64_t val, uint64_t hRow, int iCol,
                  int eText, int bAmbig){
  TextEntry *e = mapSlot(m, tag, val);
  if( e==0 ) return SQLITE_NOMEM;
  if( !e->bUsed ){
    e->bUsed = 1; e->tag = tag; e->val = val; e->hRow = hRow; e->bAmbig = (uint8_t)bAmbig;
    m->n++;
  }else if( !e->bAmbig ){
    if( bAmbig || gpudsRowColCmpRows(gpudsRowOf(e->hRow), gpudsRowOf(hRow), iCol, eText)!=0 ){
      e->bAmbig = 1;
    }
  }
  return SQLITE_OK;
}

static void *textRun(void *pArg){
  TextJob *j = (TextJob*)pArg;
  int64_t i;
  for(i=j->i0; i<j->i1 && j->rc==SQLITE_OK; i++){
    uint8_t tag;
    uint64_t val;
    gpudsRowColVal(gpudsRowOf(j->aRow[i]), j->iCol, j->eText, &tag, &val);
    if( tag!=GPUDS_TAG_TEXT && tag!=GPUDS_TAG_BLOB ) continue;
    j->rc = mapAdd(&j->m, tag, val, j->aRow[i], j->iCol, j->eText, 0);
  }
  return 0;
}

/* Rows of the store, gathered (gpudsStoreEach). */
typedef struct Gather { uint64_t *aRow; int64_t n, nAlloc; } Gather;
static int gatherCb(GpudsTable *p, void *pCtx, const int64_t *aK, const uint64_t *aV, size_t n){
  Gather *g = (Gather*)pCtx;
  (void)p; (void)aK;
  if( g->n + (int64_t)n > g->nAlloc ) return SQLITE_CORRUPT_VTAB;
  memcpy(&g->aRow[g->n], aV, n*8);
  g->n += (int64_t)n;
  return SQLITE_OK;
}

/* Find the ambiguous values of column iCol over every row of the store. */
static int textPass(GpudsTable *p, int iCol, GpudsColText *pT){
  TextJob aJob[TEXT_MAX_THREADS];
  Gather g;
  int64_t nStore = gpudsStoreCount(p), k = 0;
  int nJob = 1, i, rc = SQLITE_OK;
  uint64_t s;
  memset(&g, 0, sizeof(g));
  memset(aJob, 0, sizeof(aJob));
  g.nAlloc = nStore>0 ? nStore : 1;
  g.aRow = malloc((size_t)g.nAlloc*8);
  if( g.aRow==0 ) return gpudsVtabError(p, SQLITE_NOMEM, "out of memory");
  rc = gpudsStoreEach(p, gatherCb, &g);
  if( rc ){
    free(g.aRow);
    if( p->base.zErrMsg==0 ) gpudsVtabError(p, rc, "column set: the store's count and its rows disagree");
    return rc;
  }
#ifdef _SC_NPROCESSORS_ONLN
  if( g.n>=TEXT_THREAD_MIN ) nJob = (int)sysconf(_SC_NPROCESSORS_ONLN);
#endif
  if( nJob<1 ) nJob = 1;
  if( nJob>TEXT_MAX_THREADS ) nJob = TEXT_MAX_THREADS;
  for(i=0; i<nJob; i++){
    aJob[i].aRow = g.aRow;
    aJob[i].i0 = g.n*i/nJob; aJob[i].i1 = g.n*(i+1)/nJob;
    aJob[i].iCol = iCol; aJob[i].eText = gpudsTableText(p);
    aJob[i].bThread = i>0 && pthread_create(&aJob[i].tid, 0, textRun, &aJob[i])==0;
  }
  textRun(&aJob[0]);
  for(i=1; i<nJob; i++){
    if( aJob[i].bThread ) pthread_join(aJob[i].tid, 0);
    else textRun(&aJob[i]);
  }
  for(i=0; i<nJob; i++) if( aJob[i].rc ) rc = aJob[i].rc;
  /* the other threads' values into the first's table */
  for(i=1; i<nJob && rc==SQLITE_OK; i++){
    for(s=0; s<aJob[i].m.nSlot && rc==SQLITE_OK; s++){
      TextEntry *e = &aJob[i].m.a[s];
      if( e->bUsed ) rc = mapAdd(&aJob[0].m, e->tag, e->val, e->hRow, iCol, gpudsTableText(p), e->bAmbig);
    }
  }
  if( rc==SQLITE_OK ){
    for(s=0; s<aJob[0].m.nSlot; s++) k += aJob[0].m.a[s].bUsed && aJob[0].m.a[s].bAmbig;
    pT->aAmbig = malloc((size_t)(k ? k : 1)*8);
    if( pT->aAmbig==0 ) rc = SQLITE_NOMEM;
  }
  if( rc==SQLITE_OK ){
    k = 0;
    for(s=0; s<aJob[0].m.nSlot; s++){
      if( aJob[0].m.a[s].bUsed && aJob[0].m.a[s].bAmbig ) pT->aAmbig[k++] = aJob[0].m.a[s].val;
    }
    /* ascending, distinct (a text and a blob may share 8 bytes) */
    if( gpudsSortU64(pT->aAmbig, 0, (size_t)k) ) rc = SQLITE_NOMEM;
  }
  if( rc==SQLITE_OK ){
    int64_t a, b = 0;
    for(a=0; a<k; a++) if( b==0 || pT->aAmbig[b-1]!=pT->aAmbig[a] ) pT->aAmbig[b++] = pT->aAmbig[a];
    pT->nAmbig = b;
    pT->bDone = 1;
  }else{
    free(pT->aAmbig);
    pT->aAmbig = 0;
    gpudsVtabError(p, rc, "out of memory");
  }
  for(i=0; i<nJob; i++) free(aJob[i].m.a);
  free(g.aRow);
  return rc;
}

/* The 8-byte values of column iCol (0-based, non-key) of the table's column
** set that stand for more than one TEXT or BLOB value: *paAmbig (owned by
** the set: valid while it lives, which the caller's hold of the latch for
** reading assures), *pn of them, ascending.  None for a column without
** TEXT or BLOB.  Found once per set, under the copy's muCols. */
int gpudsColsAmbig(GpudsTable *p, int iCol, const uint64_t **paAmbig, int64_t *pn){
  GpudsCopy *c = p->pCopy;
  GpudsColState *cs = &c->cs;
  int rc = SQLITE_OK;
  *paAmbig = 0; *pn = 0;
  if( !gpudsColsBuilt(p) || iCol<0 || iCol>=p->nCol-1 ) return SQLITE_OK;
  gpudsLatchRead(p);              /* (muCols only ever under the latch) */
  gpudsColsLock(p);
  if( !gpudsColsBuilt(p) ) goto ambig_out;      /* dropped while p waited */
  if( cs->aBytes && !cs->aBytes[iCol] ) goto ambig_out;
  if( cs->aText==0 ){
    cs->aText = calloc((size_t)(p->nCol>1 ? p->nCol-1 : 1), sizeof(GpudsColText));
    if( cs->aText==0 ){ rc = gpudsVtabError(p, SQLITE_NOMEM, "out of memory"); goto ambig_out; }
  }
  if( !cs->aText[iCol].bDone ){
    rc = textPass(p, iCol, &cs->aText[iCol]);
    if( rc ) goto ambig_out;
  }
  *paAmbig = cs->aText[iCol].aAmbig;
  *pn = cs->aText[iCol].nAmbig;
ambig_out:
  gpudsColsUnlock(p);
  gpudsLatchReadEnd(p);
  return rc;
}
