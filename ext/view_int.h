/* view_int.h -- declarations shared by the files of the gpuds_view
** module: its SELECT and its binding to a table (viewdef.c), its
** evaluation (viewrun.c, viewexact.c) and the module (view.c). */
#ifndef GPUDS_VIEW_INT_H
#define GPUDS_VIEW_INT_H

/* An expression on a column: the column, or its "/ n" or "% n"
** (GPUDS_AGGKEY_xxx). */
typedef struct GpudsVExpr {
  char *zTab;                 /* its qualifier as written, or NULL */
  char *zCol;                 /* the column's name as written */
  int iCol;                   /* bound: the table's column (0: the key) */
  int op;                     /* GPUDS_AGGKEY_COL, _DIV, _MOD */
  int64_t n;                  /* DIV, MOD: the divisor */
} GpudsVExpr;

/* Aggregates of a view */
#define VAGG_COUNTSTAR 1
#define VAGG_COUNT     2
#define VAGG_COUNTD    3
#define VAGG_SUM       4
#define VAGG_TOTAL     5
#define VAGG_AVG       6
#define VAGG_MIN       7
#define VAGG_MAX       8
typedef struct GpudsVAgg {
  int eFn;                    /* VAGG_xxx */
  GpudsVExpr e;               /* its argument (not for count(*)) */
} GpudsVAgg;

/* A result column. */
#define VCOL_KEY  1           /* a GROUP BY expression: i is the key */
#define VCOL_BARE 2           /* another expression: the representative's */
#define VCOL_AGG  3           /* an aggregate: i is the aggregate */
typedef struct GpudsVCol {
  char *zSpan;                /* the expression as written */
  char *zAlias;               /* its AS name, or NULL */
  int eKind;                  /* bound: VCOL_xxx */
  int i;
  GpudsVExpr e;               /* the expression (VCOL_KEY, VCOL_BARE) */
  GpudsVAgg agg;              /* the aggregate as written (VCOL_AGG) */
  int bAgg;                   /* written as an aggregate */
} GpudsVCol;

/* A GROUP BY term as written: an expression, a result column's alias or
** number (bound to an expression). */
typedef struct GpudsVGroup {
  GpudsVExpr e;               /* bound: the expression grouped by */
  char *zName;                /* a bare name: a column, else an alias */
  int iResult;                /* a number: the result column (1-based), or 0 */
} GpudsVGroup;

/* A term of the WHERE conjunction: a column compared with constant
** operands (the operand statement's columns iArg..iArg+nArg-1). */
#define VTERM_EQ      1
#define VTERM_IS      2
#define VTERM_NE      3
#define VTERM_ISNOT   4
#define VTERM_LT      5
#define VTERM_LE      6
#define VTERM_GT      7
#define VTERM_GE      8
#define VTERM_ISNULL  9
#define VTERM_NOTNULL 10
#define VTERM_IN      11
#define VTERM_BETWEEN 12
typedef struct GpudsVTerm {
  GpudsVExpr e;               /* the column (op COL) */
  int eOp;                    /* VTERM_xxx */
  int iArg, nArg;
} GpudsVTerm;

/* A view's SELECT. */
typedef struct GpudsViewDef {
  char *zSql;                 /* the SELECT as given */
  char *zDb;                  /* FROM: schema, or NULL */
  char *zTab;                 /* FROM: table */
  char *zAlias;               /* FROM: alias, or NULL */
  GpudsVCol *aCol; int nCol;
  GpudsVGroup *aGroup; int nGroup;
  GpudsVTerm *aTerm; int nTerm;
  char *zOperands;            /* "SELECT <operand>, ..." (parameters as
                              ** ?N, N the parameter's number), or NULL */
  int nOperand;
  char **azParam; int nParam; /* named parameters, in order of appearance */
  /* bound to a table (gpudsViewBind): */
  GpudsVExpr *aKey; int nKey; /* the GROUP BY keys, duplicates merged */
  GpudsVAgg *aAgg; int nAgg;  /* the aggregates, duplicates merged, in
                              ** order of first appearance */
  int iRepAgg;                /* the last MIN or MAX aggregate, or -1: it
                              ** picks a group's representative row */
} GpudsViewDef;

/* ------------------------------------------------------- evaluation */

/* A cell of a view's result: a number, NULL, or column iCol (0-based,
** non-key) of row record hRow (text and blobs: read when SQLite asks). */
#define VCELL_ROW 6
typedef struct GpudsVCell {
  union { int64_t i; double r; } u;
  uint64_t hRow;
  int32_t iCol;
  uint8_t eType;              /* SQLITE_INTEGER, _FLOAT, _NULL, VCELL_ROW */
} GpudsVCell;

/* The rows of one evaluation: nRow rows of nCol cells. */
typedef struct GpudsViewOut {
  int nCol;
  int64_t nRow, nAlloc;
  GpudsVCell *aCell;
} GpudsViewOut;

/* What the last evaluation did (gpuds_info()). */
typedef struct GpudsViewStat {
  char zWhere[16];            /* "cuda", "host" (the set's xAgg), "cuda index",
                              ** "host index" (the few rows of a selective
                              ** filter from the set, evaluated on their
                              ** records) or "exact" (no set) */
  int64_t nRun;               /* evaluations so far */
  int64_t nRead;              /* rows the column set read */
  int64_t nHost;              /* rows evaluated on their records */
  int64_t nLeft;              /* of them, left over by the set */
  int64_t nExact;             /* groups computed again from their rows */
  int64_t nGroup;             /* rows of the result */
  int64_t nUs;                /* microseconds */
} GpudsViewStat;

/* What a view learnt of one column set (viewrun.c): text constants of its
** terms found to be the only text behind their 8 bytes there (equal 8
** bytes mean equal), and the filters that matched more rows of it than the
** index path takes (no use asking the set for them again). */
#define VIEW_EXACT_CACHE 16
#define VIEW_MANY_CACHE 16
typedef struct GpudsViewExact {
  int64_t iBuildId;           /* the set the verdicts are for */
  struct {
    int iCol;                 /* 0-based, non-key */
    GpudsValue v;             /* the constant (bytes sqlite3_malloc'd) */
    int bOk;
  } a[VIEW_EXACT_CACHE];
  int n, iNext;
  uint64_t aMany[VIEW_MANY_CACHE];  /* fingerprints of those filters */
  int nMany, iManyNext;
} GpudsViewExact;
void gpudsViewExactClear(GpudsViewExact *pX);

/* One evaluation's context (viewrun.c), shared with the exact evaluator
** (viewexact.c). */
typedef struct VRun {
  GpudsTable *p;
  const GpudsViewDef *d;
  int eText;
  GpudsColTerm *aTerm;        /* the WHERE terms (t.iCol -1: the key) */
  int nTerm;
  int64_t lo, hi;             /* key bounds the terms set */
  int bEmpty;                 /* no row can match */
  sqlite3_stmt *pNum;         /* "SELECT ?1": a value as sum() reads it */
  sqlite3_stmt *pDiv;         /* "SELECT ?1 / ?2" */
  sqlite3_stmt *pMod;         /* "SELECT ?1 % ?2" */
} VRun;

/* The exact evaluator (viewexact.c): rows given in key order, each
** evaluated on its record exactly as SQLite would. */
typedef struct XEval XEval;
typedef struct XGroup XGroup;
typedef struct XAgg {
  int64_t n;                  /* non-NULL values (COUNTD: distinct ones) */
  int64_t nNonInt;            /* SUM: values that are no integer */
  __int128 iSum;              /* SUM: the integers' exact sum */
  int64_t iPos, iNeg;         /* ... its positive and negative parts,
                              ** saturated (to merge with a set's group) */
  double s, c;                /* SUM: compensated sum of the others */
  int64_t iSeq;               /* SUM: SQLite's running integer sum ... */
  uint8_t bApprox, bOvfl;     /* ... until the first non-integer; overflowed */
  uint8_t tag;                /* MIN, MAX: the extreme (NULL: none yet) */
  uint64_t val;
  int64_t key;                /* ... and the first row holding it */
  uint64_t hRow;
  void *pDist;                /* COUNTD: the distinct values */
} XAgg;
struct XGroup {
  uint8_t kt[GPUDS_AGG_KEY_MAX];  /* canonical key tuple */
  uint64_t kv[GPUDS_AGG_KEY_MAX];
  int64_t kId;                /* a row of the group (its text keys, */
  uint64_t hId;               /* exactly) */
  int64_t iBack;              /* the column set's group, or -1 */
  int bExact;                 /* computed from all its rows (no merge) */
  int64_t rows;
  int64_t kFirst, kLast;
  uint64_t hFirst, hLast;
  XAgg *aAgg;
  XGroup *pNext;              /* hash chain */
};
struct XEval {
  VRun *r;
  XGroup **aHash;
  uint64_t nHash;
  XGroup **aGroup;            /* in order of creation */
  int64_t nGroup, nAlloc;
};

int gpudsViewRowKeys(VRun *r, int64_t key, uint64_t hRow, uint8_t *kt, uint64_t *kv);
int gpudsViewKeysSame(VRun *r, const uint8_t *kt, const uint64_t *kv, uint64_t hA,
                      uint64_t hB);
int gpudsViewFilter(VRun *r, int64_t key, uint64_t hRow);
int gpudsViewExpr(VRun *r, const GpudsVExpr *e, int64_t key, uint64_t hRow,
                  uint8_t *pTag, uint64_t *pVal);
int gpudsViewSumValue(VRun *r, uint64_t hRow, int iCol, int *pbInt, int64_t *pi, double *pr);
int gpudsXInit(XEval *x, VRun *r);
void gpudsXFree(XEval *x);
int gpudsXRow(XEval *x, int64_t key, uint64_t hRow, int bMake, XGroup **ppG);
XGroup *gpudsXFind(XEval *x, const uint8_t *kt, const uint64_t *kv, int64_t key,
                   uint64_t hRow, int bMake);
int gpudsXCompare(VRun *r, int iCol, uint8_t ta, uint64_t va, uint64_t ha,
                  uint8_t tb, uint64_t vb, uint64_t hb);

int gpudsViewRun(GpudsTable *p, GpudsViewDef *d, sqlite3_stmt *pOps, sqlite3_value **apParam,
                 GpudsViewExact *pExact, GpudsViewOut *pOut, GpudsViewStat *pStat);
void gpudsViewOutFree(GpudsViewOut *pOut);

int gpudsViewParse(const char *zSql, GpudsViewDef **ppDef, char **pzErr);
void gpudsViewDefFree(GpudsViewDef *pDef);
int gpudsViewBind(GpudsViewDef *pDef, const char *zName, int nCol, char *const*azCol,
                  char **pzErr);

#endif
