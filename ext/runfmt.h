/* runfmt.h -- the run format of <name>_run (runfmt.c), shared by the
** persistence files (shadow.c, loader.c).
**
**   <name>_run(id INTEGER PRIMARY KEY, n INTEGER, keys BLOB, vals BLOB)
**   id     (run << RUN_SHIFT) | chunk: "ORDER BY id" reads runs oldest to
**          newest, each in key order
**   keys   n little-endian int64 keys, strictly ascending
**   vals   n entries: u32 length L then L bytes of a row record (row.c), or
**          L = SHADOW_TOMB for a key the run deletes; in format 2 followed by
**          a SHADOW_SUM-byte checksum of keys and entries (gpudsChunkSum);
**          in format 3, L = SHADOW_OVFL for a record too big for a chunk,
**          followed by a SHADOW_OVFL_REF-byte reference (GpudsOvfl) to its
**          pieces in <name>_ovfl
**
**   <name>_ovfl(id INTEGER PRIMARY KEY, data BLOB)   (format 3)
**   the pieces of spilled records: a record's pieces are the rows
**   iFirst..iFirst+nPiece-1, their data in order; each piece is referenced
**   by exactly one entry of one run (a merge that drops the entry deletes
**   the pieces)
**
** Format 4 (SHADOW_FORMAT_ENC) encodes keys and entries compactly; a
** varint is SQLite's (1 to 9 bytes, big-endian groups of 7 bits, the 9th
** byte all 8 bits):
**   keys   n varints: the first key zigzag-encoded ((k<<1) ^ (k>>63)),
**          then each key's difference from the one before (>= 1, unsigned)
**   vals   n entries, each a varint E: 0 a deletion, 1 a spilled record's
**          reference (SHADOW_OVFL_REF bytes follow, as in format 3), E >= 2
**          a record of E-2 bytes; then the checksum of the keys and vals
**          bytes before it (gpudsChunkSum)
**   record nCol varints, each column's serial type as in SQLite's record
**          format (0 NULL; 1, 2, 3, 4, 5, 6 an integer of 1, 2, 3, 4, 6, 8
**          bytes; 7 a real of 8 bytes; 8 and 9 the integers 0 and 1; N >= 12
**          even a blob, N >= 13 odd a text of (N-12)/2 bytes; 10 and 11
**          invalid), then each column's bytes, big-endian, nothing after
**          them.  Spilled records (<name>_ovfl) hold the same encoding.
**          Text is UTF-8.
**
** Format 5 is format 4 with two changes:
**   - text in the database's encoding (SHADOW_FORMAT_TEXT), byte for byte
**     as SQLite's own records hold it (in a UTF-8 database the two are the
**     same);
**   - every chunk's checksum seeded with its t_run id (SHADOW_FORMAT_DIGEST:
**     a chunk moved to another id no longer matches), and two digests in
**     <name>_meta, each a sum (mod 2^64) over the chunks: 'layout' of
**     gpudsChunkLayout(id, n, first key), which a lookup from disk checks
**     from its chunk index before it trusts a binary search, and 'digest'
**     of gpudsChunkDigest(id, n, first key, checksum), which a load checks
**     over everything it read (two copies of the table that differ in any
**     chunk differ in it).  Each commit updates both incrementally.
*/
#ifndef GPUDS_RUNFMT_H
#define GPUDS_RUNFMT_H

#include "varint.h"

#define SHADOW_FORMAT  5     /* written for new tables: varints, encoded records,
                             ** id-seeded checksums, digests, text as the
                             ** database encodes it */
#define SHADOW_FORMAT_MIN 1  /* oldest read and written: format 1, no checksums */
#define SHADOW_FORMAT_OVFL 3 /* first format with <name>_ovfl */
#define SHADOW_FORMAT_ENC 4  /* first format with varint keys, encoded records */
#define SHADOW_FORMAT_DIGEST 5  /* first with id-seeded checksums and digests */
#define SHADOW_FORMAT_TEXT 5 /* first format whose records hold text in the
                             ** database's encoding (before: UTF-8) */
#define SHADOW_SUM     8     /* bytes of a format-2 chunk's checksum */
#define SHADOW_CHUNK   65536 /* keys per chunk at most */
#define SHADOW_TOMB    0xffffffffu
#define SHADOW_OVFL    0xfffffffeu  /* entry: a spilled record's reference */
#define SHADOW_OVFL_REF 24   /* bytes of the reference: i64 iFirst, u32 nRec,
                             ** u32 nPiece, u64 checksum of the record */
#define SHADOW_SLACK   64    /* bytes of a t_run row besides its keys and vals
                             ** (record header, id, n), kept free under the
                             ** length limit */
#define RUN_SHIFT      20

/* What <name>_meta says of a table (gpudsMetaRead). */
struct GpudsMeta {
  int iFormat;            /* 'format' */
  int64_t iGeneration;    /* commits so far */
  int64_t nRows;          /* rows after the last commit */
  int64_t iId;            /* the table's identity (0: made before 'id' existed) */
  int64_t nEntries;       /* sum of t_run.n, or -1 (made before 'entries') */
  int64_t iStamp;         /* random, new with every commit (0: none yet) */
  uint64_t uDigest;       /* format 5: sum of gpudsChunkDigest over the chunks */
  uint64_t uLayout;       /* format 5: sum of gpudsChunkLayout over the chunks */
};

/* The digests of a set of chunks, summed as they are read or written. */
typedef struct GpudsDigest {
  uint64_t uDigest;       /* sum of gpudsChunkDigest */
  uint64_t uLayout;       /* sum of gpudsChunkLayout */
  int64_t nEntries;       /* sum of their entry counts */
} GpudsDigest;

/* How table p's records hold text (eText, gpuds_int.h): the one place
** that decides it from the storage format.  From format
** SHADOW_FORMAT_TEXT on, in the database's encoding, byte for byte as
** SQLite's records hold it; before, as UTF-8 (what SQLite's conversion
** made of it), which in a UTF-16 database orders as the UTF-16 SQLite
** makes of it again.  Inline: every xColumn of text asks. */
static inline int gpudsTableText(const GpudsTable *p){
  if( p->iFormat>=SHADOW_FORMAT_TEXT || p->eEnc==SQLITE_UTF8 ) return p->eEnc;
  return p->eEnc | GPUDS_TEXT_UTF8;
}

/* Where a spilled record lies in <name>_ovfl. */
typedef struct GpudsOvfl {
  int64_t iFirst;         /* id of its first piece (> 0) */
  uint32_t nRec;          /* record bytes */
  uint32_t nPiece;        /* pieces: ids iFirst..iFirst+nPiece-1 */
  uint64_t sum;           /* gpudsChunkSum of the record bytes */
} GpudsOvfl;

/* The format-4 entry at a[*pOff..n) of a chunk's vals: its varint E in
** *pE (0 a deletion, 1 a spilled record's reference, >= 2 a record of E-2
** bytes), *pOff moved past the varint, and its body (none, the
** SHADOW_OVFL_REF-byte reference, or the record) checked to lie within n.
** Returns 0, or why the entry is damaged (the walks of loader.c, runfmt.c's
** reader and diskread.c report it as they report damage). */
static inline const char *gpudsEntryNext(const unsigned char *a, size_t n, size_t *pOff,
                                         uint64_t *pE){
  size_t off = *pOff;
  int m;
  if( off<n && a[off]<0x80 ){ *pE = a[off]; m = 1; }
  else if( (m = gpudsVarintGet(a+off, n-off, pE))==0 ) return "entry past the end of vals";
  off += (size_t)m;
  *pOff = off;
  if( *pE==1 && SHADOW_OVFL_REF > n-off ) return "bad spilled record reference";
  if( *pE>=2 && *pE-2 > n-off ) return "entry length past the end of vals";
  return 0;
}

typedef struct RunWriter {
  sqlite3_stmt *pIns;
  int64_t nLimit;         /* largest blob the connection accepts */
  int64_t iRun;
  int iChunk;
  int n;
  int64_t *aKey;          /* SHADOW_CHUNK keys */
  unsigned char *aVal;    /* the chunk's vals */
  size_t nVal, nValAlloc;
  int64_t nTotal;
  int bSum;               /* format 2: end each chunk with its checksum */
  int bOvfl;              /* format 3: spill records too big for a chunk */
  sqlite3_stmt *pOvflIns; /* INSERT INTO <name>_ovfl, once needed */
  int64_t iOvflNext;      /* id of the next piece (0: not yet looked up) */
  int bEnc;               /* format 4: varint keys, encoded records */
  unsigned char *aKeyEnc; /* format 4: the chunk's keys, encoded */
  size_t nKeyEnc;         /* bytes of the chunk's keys (n*8 before format 4) */
  unsigned char *aRec;    /* formats 1 to 3: one record in the legacy layout */
  size_t nRecAlloc;
  GpudsDigest dig;        /* of the chunks written */
} RunWriter;

/* A merge's output: one key and its newest record: inline (aRec, nRec),
** spilled (pOvfl, aRec NULL), or deleted (aRec and pOvfl NULL). */
typedef int (*MergeOut)(GpudsTable*, void*, int64_t, const unsigned char*, uint32_t,
                        const GpudsOvfl*);
#define MERGE_DROP_TOMB 1    /* gpudsRunMerge: leave deletions out */
#define MERGE_FREE_OVFL 2    /* delete the pieces of overridden spilled records */

uint64_t gpudsChunkSum(uint64_t uSeed, const unsigned char *aK, size_t nK,
                       const unsigned char *aV, size_t nV);
uint64_t gpudsChunkSeed(int iFormat, int64_t iRow);
uint64_t gpudsChunkLayout(int64_t iRow, int64_t n, int64_t k0);
uint64_t gpudsChunkDigest(int64_t iRow, int64_t n, int64_t k0, uint64_t uSum);
void gpudsDigestAdd(GpudsDigest *d, int64_t iRow, int64_t n, int64_t k0, uint64_t uSum);
int gpudsMetaRead(GpudsTable *p, GpudsMeta *pMeta);
int gpudsRunListCap(GpudsTable *p, int64_t **paRun, int64_t **paN, int64_t **paCap,
                    int *pnRun);
int gpudsRunList(GpudsTable *p, int64_t **paRun, int64_t **paN, int *pnRun);
int gpudsRunEntries(GpudsTable *p, int64_t *pnEnt);
int gpudsRunMerge(GpudsTable *p, const int64_t *aRun, int nRun, int mFlags,
                  MergeOut xOut, void *pCtx, GpudsDigest *pSeen);
int64_t gpudsRunInlineMax(GpudsTable *p);
int gpudsOvflParse(const unsigned char *a, GpudsOvfl *o);
int gpudsOvflRead(GpudsTable *p, int64_t iRun, const GpudsOvfl *o, int nCol,
                  unsigned char **paRec);
int gpudsOvflDelete(GpudsTable *p, const GpudsOvfl *o);
int gpudsOvflDeleteAll(GpudsTable *p);
int gpudsRunWriterOpen(GpudsTable *p, int64_t iRun, RunWriter *w);
int gpudsRunWriterFlush(GpudsTable *p, RunWriter *w);
int gpudsRunWriterAdd(GpudsTable *p, RunWriter *w, int64_t k,
                      const unsigned char *aRec, uint32_t nRec);
int gpudsRunWriterAddRow(GpudsTable *p, RunWriter *w, int64_t k, const GpudsRow *pRow);
int gpudsRunRecord(GpudsTable *p, const unsigned char *a, uint32_t n,
                   unsigned char **paRow);
int gpudsRecCheck(const unsigned char *a, uint32_t n, int nCol, uint32_t *pnHdr,
                  size_t *pnByte);
int gpudsKeysDecode(const unsigned char *a, size_t nA, int64_t *aKey, int n);
int gpudsRunWriterAddOvfl(GpudsTable *p, RunWriter *w, int64_t k, const GpudsOvfl *o);
void gpudsRunWriterClose(RunWriter *w);

/* loader.c: load the store from the runs (generation iGen). */
int gpudsShadowLoad(GpudsTable *p, const GpudsMeta *m);

#endif /* GPUDS_RUNFMT_H */
