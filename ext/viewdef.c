/*
** viewdef.c -- the SELECT of a gpuds_view: parsed (gpudsViewParse) into a
** GpudsViewDef, and bound to a table's columns (gpudsViewBind).
**
** The subset taken:
**   SELECT <result>, ... FROM [<schema>.]<table> [[AS] <alias>]
**     [WHERE <term> AND ...] [GROUP BY <group>, ...]
**   <result>  <expr> | count(*) | count([DISTINCT] <col>) | sum(<col>)
**             | total(<col>) | avg(<col>) | min(<col>) | max(<col>),
**             each with an optional [AS] <name>
**   <expr>    <col> | <col> / N | <col> % N  (N an integer literal)
**   <group>   <expr> | a result's name | a result's number
**   <term>    <col> <op> <operand> (or the operand first), <op> one of
**             = == != <> < <= > >= IS [NOT]; <col> [NOT] NULL, ISNULL,
**             NOTNULL, IS [NOT] NULL; <col> BETWEEN <operand> AND
**             <operand>; <col> IN (<operand>, ...)
**   <operand> a constant expression: literals, named parameters (:p, @p,
**             $p), unary and binary arithmetic, parentheses.
** Anything else is refused with a message naming it.  The operands are not
** evaluated here: they become the columns of one statement
** ("SELECT <operand>, ...", zOperands) that the view runs with its
** parameters bound, so that SQLite itself reads every literal.
**
** Names resolve as SQLite resolves them: in WHERE and in the result a
** name is a column of the table, else (WHERE) the name of a result that
** is a column; in GROUP BY a column first, then a result's name.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "view_int.h"
#include <string.h>
#include <stdlib.h>
#include <ctype.h>

/* ------------------------------------------------------------- tokens */
#define TK_EOF    0
#define TK_ID     1           /* a name, bare or quoted */
#define TK_NUM    2
#define TK_STR    3
#define TK_BLOB   4
#define TK_PARAM  5           /* :name @name $name */
#define TK_QPARAM 6           /* ? or ?NNN */
#define TK_OP     7           /* punctuation and operators */

typedef struct Tok {
  int eType;
  int iStart, n;              /* its text: zSql[iStart .. iStart+n) */
  int bQuoted;                /* TK_ID: "x", [x] or `x` */
} Tok;

typedef struct Parse {
  const char *z;
  Tok *aTok; int nTok, nAlloc;
  int i;                      /* next token */
  char *zErr;
  int rc;
  GpudsViewDef *pDef;
  sqlite3_str *pOps;          /* zOperands in the making */
} Parse;

/* Set the parse's error (the first one wins). */
static void perr(Parse *p, const char *zFmt, ...){
  va_list ap;
  if( p->rc ) return;
  va_start(ap, zFmt);
  p->zErr = sqlite3_vmprintf(zFmt, ap);
  va_end(ap);
  p->rc = SQLITE_ERROR;
}

/* Split p->z into tokens.  SQLITE_OK, or an error in p. */
static int tokenize(Parse *p){
  const char *z = p->z;
  int i = 0;
  for(;;){
    Tok t;
    unsigned char c;
    while( z[i] ){
      if( isspace((unsigned char)z[i]) ){ i++; continue; }
      if( z[i]=='-' && z[i+1]=='-' ){ while( z[i] && z[i]!='\n' ) i++; continue; }
      if( z[i]=='/' && z[i+1]=='*' ){
        i += 2;
        while( z[i] && !(z[i]=='*' && z[i+1]=='/') ) i++;
        if( z[i] ) i += 2;
        continue;
      }
      break;
    }
    memset(&t, 0, sizeof(t));
    t.iStart = i;
    c = (unsigned char)z[i];
    if( c==0 ){
      t.eType = TK_EOF;
    }else if( (c=='x' || c=='X') && z[i+1]=='\'' ){
      int j = i+2;
      while( z[j] && z[j]!='\'' ) j++;
      if( z[j]==0 ){ perr(p, "unterminated blob literal"); return p->rc; }
      t.eType = TK_BLOB; i = j+1;
    }else if( isalpha(c) || c=='_' || c>=0x80 ){
      while( isalnum((unsigned char)z[i]) || z[i]=='_' || z[i]=='$' || (unsigned char)z[i]>=0x80 ) i++;
      t.eType = TK_ID;
    }else if( c=='"' || c=='`' || c=='[' ){
      char cEnd = c=='[' ? ']' : (char)c;
      int j = i+1;
      for(;;){
        if( z[j]==0 ){ perr(p, "unterminated name"); return p->rc; }
        if( z[j]==cEnd ){
          if( cEnd!=']' && z[j+1]==cEnd ){ j += 2; continue; }
          break;
        }
        j++;
      }
      t.eType = TK_ID; t.bQuoted = 1; i = j+1;
    }else if( c=='\'' ){
      int j = i+1;
      for(;;){
        if( z[j]==0 ){ perr(p, "unterminated string"); return p->rc; }
        if( z[j]=='\'' ){ if( z[j+1]=='\'' ){ j += 2; continue; } break; }
        j++;
      }
      t.eType = TK_STR; i = j+1;
    }else if( isdigit(c) || (c=='.' && isdigit((unsigned char)z[i+1])) ){
      if( c=='0' && (z[i+1]=='x' || z[i+1]=='X') ){
        i += 2;
        while( isxdigit((unsigned char)z[i]) ) i++;
      }else{
        while( isdigit((unsigned char)z[i]) || z[i]=='_' ) i++;
        if( z[i]=='.' ){ i++; while( isdigit((unsigned char)z[i]) || z[i]=='_' ) i++; }
        if( (z[i]=='e' || z[i]=='E')
         && (isdigit((unsigned char)z[i+1])
             || ((z[i+1]=='+' || z[i+1]=='-') && isdigit((unsigned char)z[i+2]))) ){
          i += 2;
          while( isdigit((unsigned char)z[i]) ) i++;
        }
      }
      if( isalpha((unsigned char)z[i]) || z[i]=='_' ){ perr(p, "bad number near \"%.20s\"", &z[t.iStart]); return p->rc; }
      t.eType = TK_NUM;
    }else if( c==':' || c=='@' || c=='$' ){
      i++;
      while( isalnum((unsigned char)z[i]) || z[i]=='_' || (unsigned char)z[i]>=0x80 ) i++;
      if( i==t.iStart+1 ){ perr(p, "bad parameter near \"%.20s\"", &z[t.iStart]); return p->rc; }
      t.eType = TK_PARAM;
    }else if( c=='?' ){
      i++;
      while( isdigit((unsigned char)z[i]) ) i++;
      t.eType = TK_QPARAM;
    }else{
      static const char *azOp2[] = { "<=", ">=", "!=", "<>", "==", "||", "<<", ">>", 0 };
      int k;
      t.eType = TK_OP;
      for(k=0; azOp2[k]; k++) if( z[i]==azOp2[k][0] && z[i+1]==azOp2[k][1] ) break;
      if( azOp2[k] ) i += 2;
      else if( strchr("(),.;+-*/%<>=&|~", c) ) i++;
      else{ perr(p, "unexpected character \"%c\"", c); return p->rc; }
    }
    t.n = i - t.iStart;
    if( p->nTok==p->nAlloc ){
      int nNew = p->nAlloc ? p->nAlloc*2 : 64;
      Tok *a = sqlite3_realloc64(p->aTok, sizeof(Tok)*(size_t)nNew);
      if( a==0 ){ p->rc = SQLITE_NOMEM; return p->rc; }
      p->aTok = a; p->nAlloc = nNew;
    }
    p->aTok[p->nTok++] = t;
    if( t.eType==TK_EOF ) return SQLITE_OK;
  }
}

static Tok *peek(Parse *p){ return &p->aTok[p->i]; }
static Tok *peekAt(Parse *p, int k){
  return p->i+k < p->nTok ? &p->aTok[p->i+k] : &p->aTok[p->nTok-1];
}

/* Is token t the keyword (or operator) zWord? */
static int tokIs(Parse *p, const Tok *t, const char *zWord){
  int n = (int)strlen(zWord);
  if( t->eType==TK_ID && t->bQuoted ) return 0;
  if( t->eType!=TK_ID && t->eType!=TK_OP ) return 0;
  return t->n==n && sqlite3_strnicmp(&p->z[t->iStart], zWord, n)==0;
}
static int isKw(Parse *p, const char *zWord){ return tokIs(p, peek(p), zWord); }
static int eat(Parse *p, const char *zWord){
  if( p->rc==0 && isKw(p, zWord) ){ p->i++; return 1; }
  return 0;
}

/* The words that end an expression or are not names here. */
static int isReserved(Parse *p, const Tok *t){
  static const char *az[] = { "SELECT", "FROM", "WHERE", "GROUP", "BY", "HAVING",
    "ORDER", "LIMIT", "AND", "OR", "NOT", "IS", "NULL", "IN", "BETWEEN", "AS",
    "DISTINCT", "ALL", "ISNULL", "NOTNULL", "LIKE", "GLOB", "REGEXP", "MATCH",
    "ESCAPE", "COLLATE", "UNION", "EXCEPT", "INTERSECT", "WINDOW", "JOIN",
    "ON", "USING", "CASE", "CAST", "EXISTS", "OFFSET", "VALUES", "WITH",
    "NATURAL", "LEFT", "RIGHT", "FULL", "INNER", "OUTER", "CROSS", "FILTER",
    "OVER", "TRUE", "FALSE", 0 };
  int k;
  if( t->eType!=TK_ID || t->bQuoted ) return 0;
  for(k=0; az[k]; k++) if( tokIs(p, t, az[k]) ) return 1;
  return 0;
}

/* A name token's text, unquoted (sqlite3_malloc'd). */
static char *tokName(Parse *p, const Tok *t){
  const char *z = &p->z[t->iStart];
  char *zOut;
  int i, j = 0;
  if( !t->bQuoted ){
    zOut = sqlite3_mprintf("%.*s", t->n, z);
  }else{
    char cEnd = z[0]=='[' ? ']' : z[0];
    zOut = sqlite3_malloc(t->n);
    if( zOut ){
      for(i=1; i<t->n-1; i++){
        zOut[j++] = z[i];
        if( z[i]==cEnd && cEnd!=']' ) i++;
      }
      zOut[j] = 0;
    }
  }
  if( zOut==0 ) p->rc = SQLITE_NOMEM;
  return zOut;
}

/* The text of tokens [i0, i1) as written (sqlite3_malloc'd). */
static char *spanText(Parse *p, int i0, int i1){
  char *z;
  if( i1<=i0 ) return sqlite3_mprintf("");
  z = sqlite3_mprintf("%.*s", p->aTok[i1-1].iStart + p->aTok[i1-1].n - p->aTok[i0].iStart,
                      &p->z[p->aTok[i0].iStart]);
  if( z==0 ) p->rc = SQLITE_NOMEM;
  return z;
}

/* Refuse what the token at hand starts, by name. */
static void unsupported(Parse *p, const char *zWhat){
  Tok *t = peek(p);
  if( t->eType==TK_EOF ) perr(p, "gpuds_view: %s: unexpected end", zWhat);
  else perr(p, "gpuds_view: %s not supported (near \"%.*s\")", zWhat,
            t->n>40 ? 40 : t->n, &p->z[t->iStart]);
}

/* ----------------------------------------------------------- operands */

/* The number of named parameter zName (appended if new): 1-based. */
static int paramNumber(Parse *p, const char *zName){
  GpudsViewDef *d = p->pDef;
  char **az;
  int i;
  for(i=0; i<d->nParam; i++) if( strcmp(d->azParam[i], zName)==0 ) return i+1;
  for(i=0; i<d->nParam; i++){
    if( sqlite3_stricmp(d->azParam[i], zName)==0 ){
      perr(p, "gpuds_view: parameters \"%s\" and \"%s\" differ only in case: "
           "their columns would have one name", d->azParam[i], zName);
      return 0;
    }
  }
  az = sqlite3_realloc64(d->azParam, sizeof(char*)*(size_t)(d->nParam+1));
  if( az==0 ){ p->rc = SQLITE_NOMEM; return 0; }
  d->azParam = az;
  az[d->nParam] = sqlite3_mprintf("%s", zName);
  if( az[d->nParam]==0 ){ p->rc = SQLITE_NOMEM; return 0; }
  return ++d->nParam;
}

static void operandExpr(Parse *p);

/* A primary operand: a literal, a parameter, or a parenthesised operand,
** after any unary operators. */
static void operandPrimary(Parse *p){
  Tok *t = peek(p);
  if( p->rc ) return;
  if( tokIs(p, t, "-") || tokIs(p, t, "+") || tokIs(p, t, "~") ){
    sqlite3_str_appendf(p->pOps, "%.*s", t->n, &p->z[t->iStart]);
    p->i++;
    operandPrimary(p);
    return;
  }
  switch( t->eType ){
    case TK_NUM: case TK_STR: case TK_BLOB:
      sqlite3_str_appendf(p->pOps, "%.*s", t->n, &p->z[t->iStart]);
      p->i++;
      return;
    case TK_PARAM: {
      char *zName = sqlite3_mprintf("%.*s", t->n-1, &p->z[t->iStart+1]);
      int iParam = zName ? paramNumber(p, zName) : 0;
      sqlite3_free(zName);
      if( zName==0 ) p->rc = SQLITE_NOMEM;
      if( p->rc ) return;
      sqlite3_str_appendf(p->pOps, "?%d", iParam);
      p->i++;
      return;
    }
    case TK_QPARAM:
      perr(p, "gpuds_view: parameter \"%.*s\" has no name: use :name, @name or $name "
           "(a view's parameters are its hidden columns)", t->n, &p->z[t->iStart]);
      return;
    case TK_OP:
      if( tokIs(p, t, "(") ){
        sqlite3_str_appendall(p->pOps, "(");
        p->i++;
        operandExpr(p);
        if( !eat(p, ")") ){ unsupported(p, "this operand"); return; }
        sqlite3_str_appendall(p->pOps, ")");
        return;
      }
      break;
    case TK_ID:
      if( tokIs(p, t, "NULL") || tokIs(p, t, "TRUE") || tokIs(p, t, "FALSE") ){
        sqlite3_str_appendf(p->pOps, "%.*s", t->n, &p->z[t->iStart]);
        p->i++;
        return;
      }
      perr(p, "gpuds_view: a term compares a column with a constant or a parameter, "
           "not with \"%.*s\"", t->n, &p->z[t->iStart]);
      return;
  }
  unsupported(p, "this operand");
}

/* An operand: primaries joined by arithmetic operators (an AND, as
** BETWEEN's, ends it). */
static void operandExpr(Parse *p){
  static const char *azBin[] = { "+", "-", "*", "/", "%", "||", "&", "|", "<<", ">>", 0 };
  for(;;){
    int k;
    operandPrimary(p);
    if( p->rc ) return;
    for(k=0; azBin[k] && !isKw(p, azBin[k]); k++){}
    if( azBin[k]==0 ) break;
    sqlite3_str_appendf(p->pOps, " %s ", azBin[k]);
    p->i++;
  }
}

/* One operand of a term: appended to the operand statement; its column
** number there. */
static int operand(Parse *p){
  int iArg = p->pDef->nOperand;
  sqlite3_str_appendall(p->pOps, iArg ? ", " : "SELECT ");
  operandExpr(p);
  p->pDef->nOperand++;
  return iArg;
}

/* ----------------------------------------------------- column terms */

/* Does the token at hand start an operand (rather than a column)? */
static int atOperand(Parse *p){
  Tok *t = peek(p);
  if( t->eType==TK_NUM || t->eType==TK_STR || t->eType==TK_BLOB
   || t->eType==TK_PARAM || t->eType==TK_QPARAM ) return 1;
  if( tokIs(p, t, "-") || tokIs(p, t, "+") || tokIs(p, t, "(") || tokIs(p, t, "~") ) return 1;
  return tokIs(p, t, "NULL") || tokIs(p, t, "TRUE") || tokIs(p, t, "FALSE");
}

/* A column reference: [[schema.]table.]column. */
static void colRef(Parse *p, GpudsVExpr *e){
  Tok *a = peek(p);
  char *z1 = 0, *z2 = 0, *z3 = 0;
  if( a->eType!=TK_ID || isReserved(p, a) ){ unsupported(p, "this expression"); return; }
  z1 = tokName(p, a); p->i++;
  if( isKw(p, ".") && peekAt(p, 1)->eType==TK_ID ){
    p->i++;
    z2 = tokName(p, peek(p)); p->i++;
    if( isKw(p, ".") && peekAt(p, 1)->eType==TK_ID ){
      p->i++;
      z3 = tokName(p, peek(p)); p->i++;
    }
  }
  if( z3 ){                     /* schema.table.column: the schema must be the FROM's */
    sqlite3_free(e->zTab);
    e->zTab = sqlite3_mprintf("%s.%s", z1, z2);
    e->zCol = z3;
    sqlite3_free(z1); sqlite3_free(z2);
  }else if( z2 ){
    e->zTab = z1; e->zCol = z2;
  }else{
    e->zCol = z1;
  }
  if( isKw(p, "(") ) unsupported(p, "this function");
}

/* An integer literal, possibly negative: *pn.  0 if the tokens at hand
** are none (or it does not fit in 64 bits). */
static int intLiteral(Parse *p, int64_t *pn){
  int bNeg = 0, k = 0, j;
  uint64_t v = 0;
  Tok *t;
  if( isKw(p, "-") ){ bNeg = 1; k = 1; }
  else if( isKw(p, "+") ) k = 1;
  t = peekAt(p, k);
  if( t->eType!=TK_NUM ) return 0;
  for(j=0; j<t->n; j++){
    int c = p->z[t->iStart+j];
    if( !isdigit(c) ) return 0;
    if( v > (UINT64_C(1)<<63)/10 ) return 0;
    v = v*10 + (uint64_t)(c-'0');
  }
  if( v > (UINT64_C(1)<<63) || (v==(UINT64_C(1)<<63) && !bNeg) ) return 0;
  *pn = bNeg ? (int64_t)(0 - v) : (int64_t)v;
  p->i += k+1;
  return 1;
}

/* An expression of a result or a GROUP BY: a column, or a column "/ N" or
** "% N"; parentheses around it. */
static void colExpr(Parse *p, GpudsVExpr *e){
  if( eat(p, "(") ){
    colExpr(p, e);
    if( !p->rc && !eat(p, ")") ) unsupported(p, "this expression");
    return;
  }
  colRef(p, e);
  if( p->rc ) return;
  e->op = GPUDS_AGGKEY_COL;
  if( isKw(p, "/") || isKw(p, "%") ){
    e->op = isKw(p, "/") ? GPUDS_AGGKEY_DIV : GPUDS_AGGKEY_MOD;
    p->i++;
    if( !intLiteral(p, &e->n) ){
      unsupported(p, "a divisor other than an integer literal");
      return;
    }
  }
  if( isKw(p, "+") || isKw(p, "-") || isKw(p, "*") || isKw(p, "/") || isKw(p, "%")
   || isKw(p, "||") || isKw(p, "COLLATE") ){
    unsupported(p, "this arithmetic (a column, column / N or column % N only)");
  }
}

/* Append term t to the view. */
static GpudsVTerm *termNew(Parse *p){
  GpudsViewDef *d = p->pDef;
  GpudsVTerm *a = sqlite3_realloc64(d->aTerm, sizeof(GpudsVTerm)*(size_t)(d->nTerm+1));
  if( a==0 ){ p->rc = SQLITE_NOMEM; return 0; }
  d->aTerm = a;
  memset(&a[d->nTerm], 0, sizeof(GpudsVTerm));
  return &a[d->nTerm++];
}

/* The VTERM_xxx of a comparison operator token, 0 if none; bFlip: the
** operand comes first (so "<" is ">"). */
static int compareOp(Parse *p, int bFlip){
  static const struct { const char *z; int e, eFlip; } a[] = {
    {"=", VTERM_EQ, VTERM_EQ}, {"==", VTERM_EQ, VTERM_EQ}, {"!=", VTERM_NE, VTERM_NE},
    {"<>", VTERM_NE, VTERM_NE}, {"<", VTERM_LT, VTERM_GT}, {"<=", VTERM_LE, VTERM_GE},
    {">", VTERM_GT, VTERM_LT}, {">=", VTERM_GE, VTERM_LE} };
  int k;
  for(k=0; k<(int)(sizeof(a)/sizeof(a[0])); k++){
    if( isKw(p, a[k].z) ){ p->i++; return bFlip ? a[k].eFlip : a[k].e; }
  }
  return 0;
}

/* At "(": does it open an operand (the token after its ")" compares)
** rather than a parenthesised conjunction? */
static int atOperandAfterParen(Parse *p){
  int k = 0, nDepth = 0;
  for(;;){
    Tok *t = peekAt(p, k);
    if( t->eType==TK_EOF ) return 0;
    if( tokIs(p, t, "(") ) nDepth++;
    if( tokIs(p, t, ")") && --nDepth==0 ) break;
    k++;
  }
  {
    Tok *t = peekAt(p, k+1);
    static const char *az[] = { "=", "==", "!=", "<>", "<", "<=", ">", ">=", "IS",
      "+", "-", "*", "/", "%", "||", 0 };
    int j;
    for(j=0; az[j]; j++) if( tokIs(p, t, az[j]) ) return 1;
  }
  return 0;
}

/* One term of the WHERE conjunction (or a parenthesised conjunction). */
static void whereTerm(Parse *p){
  GpudsVTerm *t;
  if( p->rc ) return;
  if( isKw(p, "(") && !atOperandAfterParen(p) ){
    p->i++;
    whereTerm(p);
    while( p->rc==0 && eat(p, "AND") ) whereTerm(p);
    if( p->rc==0 && !eat(p, ")") ) unsupported(p, "this WHERE clause (a conjunction of terms)");
    return;
  }
  if( isKw(p, "NOT") ){ unsupported(p, "NOT"); return; }
  t = termNew(p);
  if( t==0 ) return;
  if( atOperand(p) ){
    /* <operand> <op> <column> */
    int iArg = operand(p), e;
    if( p->rc ) return;
    e = compareOp(p, 1);
    if( e==0 ){ unsupported(p, "this comparison (a column against a constant)"); return; }
    colRef(p, &t->e);
    t->e.op = GPUDS_AGGKEY_COL;
    t->eOp = e; t->iArg = iArg; t->nArg = 1;
    return;
  }
  colRef(p, &t->e);
  if( p->rc ) return;
  t->e.op = GPUDS_AGGKEY_COL;
  if( (t->eOp = compareOp(p, 0))!=0 ){
    t->iArg = operand(p); t->nArg = 1;
  }else if( eat(p, "ISNULL") ){
    t->eOp = VTERM_ISNULL;
  }else if( eat(p, "NOTNULL") ){
    t->eOp = VTERM_NOTNULL;
  }else if( isKw(p, "NOT") && tokIs(p, peekAt(p, 1), "NULL") ){
    p->i += 2;
    t->eOp = VTERM_NOTNULL;
  }else if( eat(p, "IS") ){
    int bNot = eat(p, "NOT");
    if( eat(p, "NULL") ){
      t->eOp = bNot ? VTERM_NOTNULL : VTERM_ISNULL;
    }else{
      if( isKw(p, "DISTINCT") ){ unsupported(p, "IS [NOT] DISTINCT FROM"); return; }
      t->eOp = bNot ? VTERM_ISNOT : VTERM_IS;
      t->iArg = operand(p); t->nArg = 1;
    }
  }else if( eat(p, "BETWEEN") ){
    t->eOp = VTERM_BETWEEN;
    t->iArg = operand(p);
    if( p->rc ) return;
    if( !eat(p, "AND") ){ unsupported(p, "this BETWEEN"); return; }
    operand(p);
    t->nArg = 2;
  }else if( eat(p, "IN") ){
    if( !eat(p, "(") ){ unsupported(p, "IN of a table or a subquery (an IN list only)"); return; }
    if( isKw(p, "SELECT") || isKw(p, "VALUES") ){ unsupported(p, "a subquery"); return; }
    t->eOp = VTERM_IN;
    t->iArg = p->pDef->nOperand;
    if( !isKw(p, ")") ){
      do{ operand(p); t->nArg++; }while( p->rc==0 && eat(p, ",") );
    }
    if( p->rc==0 && !eat(p, ")") ) unsupported(p, "this IN list");
  }else if( isKw(p, "NOT") ){
    unsupported(p, "NOT IN, NOT BETWEEN and NOT LIKE");
  }else{
    unsupported(p, "this term (a column compared with a constant)");
  }
}

/* ------------------------------------------------------------ results */

/* The VAGG_xxx of the aggregate function named by token t (0 if none). */
static int aggNamed(Parse *p, const Tok *t){
  static const struct { const char *z; int e; } a[] = {
    {"count", VAGG_COUNT}, {"sum", VAGG_SUM}, {"total", VAGG_TOTAL},
    {"avg", VAGG_AVG}, {"min", VAGG_MIN}, {"max", VAGG_MAX} };
  int k;
  if( t->eType!=TK_ID || t->bQuoted ) return 0;
  for(k=0; k<(int)(sizeof(a)/sizeof(a[0])); k++) if( tokIs(p, t, a[k].z) ) return a[k].e;
  return 0;
}

/* One result column. */
static void resultCol(Parse *p, GpudsVCol *c){
  int i0 = p->i, eFn;
  Tok *t = peek(p);
  if( tokIs(p, t, "*") || (t->eType==TK_ID && tokIs(p, peekAt(p, 1), ".")
                           && tokIs(p, peekAt(p, 2), "*")) ){
    unsupported(p, "\"*\" in the result (name the columns)");
    return;
  }
  eFn = aggNamed(p, t);
  if( eFn && tokIs(p, peekAt(p, 1), "(") ){
    int bDistinct = 0;
    p->i += 2;
    c->bAgg = 1;
    c->agg.eFn = eFn;
    if( eFn==VAGG_COUNT && eat(p, "*") ){
      c->agg.eFn = VAGG_COUNTSTAR;
    }else{
      if( eat(p, "DISTINCT") ) bDistinct = 1;
      else eat(p, "ALL");
      if( bDistinct && eFn!=VAGG_COUNT ){
        perr(p, "gpuds_view: DISTINCT is supported in count() only");
        return;
      }
      if( bDistinct ) c->agg.eFn = VAGG_COUNTD;
      colRef(p, &c->agg.e);
      c->agg.e.op = GPUDS_AGGKEY_COL;
      if( p->rc ) return;
      if( isKw(p, ",") ){
        if( eFn==VAGG_MIN || eFn==VAGG_MAX ){
          perr(p, "gpuds_view: %s() of several arguments is a scalar function, not an aggregate",
               eFn==VAGG_MIN ? "min" : "max");
        }else{
          unsupported(p, "a second argument");
        }
        return;
      }
      if( !isKw(p, ")") ){ unsupported(p, "this aggregate's argument (a column only)"); return; }
    }
    if( !eat(p, ")") ){ unsupported(p, "this aggregate"); return; }
    if( isKw(p, "FILTER") || isKw(p, "OVER") ){ unsupported(p, "FILTER and OVER"); return; }
    if( !isKw(p, ",") && !isKw(p, "AS") && !isKw(p, "FROM") && peek(p)->eType!=TK_ID
     && peek(p)->eType!=TK_STR ){
      unsupported(p, "arithmetic on aggregates");
      return;
    }
  }else if( t->eType==TK_ID && !isReserved(p, t) && tokIs(p, peekAt(p, 1), "(") ){
    perr(p, "gpuds_view: function %.*s() not supported (count, sum, total, avg, "
         "min and max of a column)", t->n, &p->z[t->iStart]);
    return;
  }else{
    colExpr(p, &c->e);
    if( p->rc ) return;
  }
  c->zSpan = spanText(p, i0, p->i);
  if( eat(p, "AS") ){
    Tok *a = peek(p);
    if( a->eType!=TK_ID && a->eType!=TK_STR ){ unsupported(p, "this name"); return; }
    c->zAlias = a->eType==TK_ID ? tokName(p, a)
              : sqlite3_mprintf("%.*s", a->n-2, &p->z[a->iStart+1]);
    if( c->zAlias==0 ) p->rc = SQLITE_NOMEM;
    p->i++;
  }else if( (peek(p)->eType==TK_ID && !isReserved(p, peek(p))) || peek(p)->eType==TK_STR ){
    Tok *a = peek(p);
    c->zAlias = a->eType==TK_ID ? tokName(p, a)
              : sqlite3_mprintf("%.*s", a->n-2, &p->z[a->iStart+1]);
    if( c->zAlias==0 ) p->rc = SQLITE_NOMEM;
    p->i++;
  }
}

/* One GROUP BY term. */
static void groupTerm(Parse *p, GpudsVGroup *g){
  Tok *t = peek(p);
  int64_t n;
  if( aggNamed(p, t) && tokIs(p, peekAt(p, 1), "(") ){
    perr(p, "gpuds_view: aggregate functions are not allowed in the GROUP BY clause");
    return;
  }
  if( t->eType==TK_NUM && intLiteral(p, &n) ){
    if( n<1 || n>p->pDef->nCol ){
      perr(p, "gpuds_view: GROUP BY term out of range - should be between 1 and %d", p->pDef->nCol);
      return;
    }
    g->iResult = (int)n;
    return;
  }
  if( t->eType==TK_ID && !isReserved(p, t) && !tokIs(p, peekAt(p, 1), ".")
   && !tokIs(p, peekAt(p, 1), "/") && !tokIs(p, peekAt(p, 1), "%")
   && !tokIs(p, peekAt(p, 1), "(") ){
    g->zName = tokName(p, t);
    p->i++;
    return;
  }
  colExpr(p, &g->e);
}

/* ---------------------------------------------------------- the SELECT */

/* Free the strings of e. */
static void exprClear(GpudsVExpr *e){
  sqlite3_free(e->zTab); sqlite3_free(e->zCol);
  e->zTab = e->zCol = 0;
}

/* Free a view's SELECT. */
void gpudsViewDefFree(GpudsViewDef *d){
  int i;
  if( d==0 ) return;
  for(i=0; i<d->nCol; i++){
    sqlite3_free(d->aCol[i].zSpan); sqlite3_free(d->aCol[i].zAlias);
    exprClear(&d->aCol[i].e); exprClear(&d->aCol[i].agg.e);
  }
  for(i=0; i<d->nGroup; i++){ exprClear(&d->aGroup[i].e); sqlite3_free(d->aGroup[i].zName); }
  for(i=0; i<d->nTerm; i++) exprClear(&d->aTerm[i].e);
  for(i=0; i<d->nParam; i++) sqlite3_free(d->azParam[i]);
  sqlite3_free(d->aCol); sqlite3_free(d->aGroup); sqlite3_free(d->aTerm);
  sqlite3_free(d->azParam);
  sqlite3_free(d->aKey); sqlite3_free(d->aAgg);
  sqlite3_free(d->zSql); sqlite3_free(d->zDb); sqlite3_free(d->zTab); sqlite3_free(d->zAlias);
  sqlite3_free(d->zOperands);
  sqlite3_free(d);
}

/* Parse the SELECT zSql into *ppDef (gpudsViewDefFree).  SQLITE_OK, or an
** error with *pzErr (sqlite3_malloc'd) naming what is not supported. */
int gpudsViewParse(const char *zSql, GpudsViewDef **ppDef, char **pzErr){
  Parse P, *p = &P;
  GpudsViewDef *d;
  *ppDef = 0; *pzErr = 0;
  memset(p, 0, sizeof(*p));
  p->z = zSql;
  d = p->pDef = sqlite3_malloc(sizeof(*d));
  p->pOps = sqlite3_str_new(0);
  if( d==0 ){ sqlite3_free(sqlite3_str_finish(p->pOps)); return SQLITE_NOMEM; }
  memset(d, 0, sizeof(*d));
  d->iRepAgg = -1;
  d->zSql = sqlite3_mprintf("%s", zSql);
  if( d->zSql==0 ) p->rc = SQLITE_NOMEM;
  if( p->rc==0 ) tokenize(p);
  if( p->rc==0 && isKw(p, "WITH") ) unsupported(p, "WITH");
  if( p->rc==0 && !eat(p, "SELECT") ) perr(p, "gpuds_view: expected SELECT ... FROM ...");
  if( p->rc==0 && isKw(p, "DISTINCT") ) unsupported(p, "SELECT DISTINCT");
  eat(p, "ALL");
  while( p->rc==0 ){
    GpudsVCol *a = sqlite3_realloc64(d->aCol, sizeof(GpudsVCol)*(size_t)(d->nCol+1));
    if( a==0 ){ p->rc = SQLITE_NOMEM; break; }
    d->aCol = a;
    memset(&a[d->nCol], 0, sizeof(GpudsVCol));
    d->nCol++;
    resultCol(p, &a[d->nCol-1]);
    if( !eat(p, ",") ) break;
  }
  if( p->rc==0 && !eat(p, "FROM") ) unsupported(p, "this result column");
  if( p->rc==0 ){
    Tok *t = peek(p);
    if( tokIs(p, t, "(") ){ unsupported(p, "a subquery in FROM"); }
    else if( t->eType!=TK_ID || isReserved(p, t) ) unsupported(p, "this FROM clause");
    else{
      d->zTab = tokName(p, t); p->i++;
      if( isKw(p, ".") && peekAt(p, 1)->eType==TK_ID ){
        p->i++;
        d->zDb = d->zTab;
        d->zTab = tokName(p, peek(p)); p->i++;
      }
      if( isKw(p, "(") ) unsupported(p, "a table-valued function in FROM");
      if( eat(p, "AS") || (peek(p)->eType==TK_ID && !isReserved(p, peek(p))) ){
        if( peek(p)->eType!=TK_ID || isReserved(p, peek(p)) ) unsupported(p, "this alias");
        else{ d->zAlias = tokName(p, peek(p)); p->i++; }
      }
      if( isKw(p, ",") || isKw(p, "JOIN") || isKw(p, "NATURAL") || isKw(p, "LEFT")
       || isKw(p, "CROSS") || isKw(p, "INNER") || isKw(p, "RIGHT") || isKw(p, "FULL") ){
        unsupported(p, "a join (one table only)");
      }
      if( isKw(p, "INDEXED") || (isKw(p, "NOT") && tokIs(p, peekAt(p, 1), "INDEXED")) ){
        unsupported(p, "INDEXED BY");
      }
    }
  }
  if( p->rc==0 && eat(p, "WHERE") ){
    whereTerm(p);
    while( p->rc==0 && eat(p, "AND") ) whereTerm(p);
    if( p->rc==0 && isKw(p, "OR") ) unsupported(p, "OR (a conjunction of terms only)");
  }
  if( p->rc==0 && eat(p, "GROUP") ){
    if( !eat(p, "BY") ) unsupported(p, "this GROUP clause");
    while( p->rc==0 ){
      GpudsVGroup *a = sqlite3_realloc64(d->aGroup, sizeof(GpudsVGroup)*(size_t)(d->nGroup+1));
      if( a==0 ){ p->rc = SQLITE_NOMEM; break; }
      d->aGroup = a;
      memset(&a[d->nGroup], 0, sizeof(GpudsVGroup));
      d->nGroup++;
      groupTerm(p, &a[d->nGroup-1]);
      if( p->rc==0 && (isKw(p, "COLLATE") || isKw(p, "ASC") || isKw(p, "DESC")) ){
        unsupported(p, "this GROUP BY term");
      }
      if( !eat(p, ",") ) break;
    }
    if( p->rc==0 && d->nGroup>GPUDS_AGG_KEY_MAX ){
      perr(p, "gpuds_view: at most %d GROUP BY terms", GPUDS_AGG_KEY_MAX);
    }
  }
  if( p->rc==0 ){
    static const char *az[] = { "HAVING", "ORDER", "LIMIT", "WINDOW", "UNION",
      "EXCEPT", "INTERSECT", 0 };
    int k;
    for(k=0; az[k]; k++){
      if( isKw(p, az[k]) ){
        char z[64];
        sqlite3_snprintf(sizeof(z), z, "%s inside the view (apply it to the view's rows)", az[k]);
        unsupported(p, z);
      }
    }
    eat(p, ";");
    if( p->rc==0 && peek(p)->eType!=TK_EOF ) unsupported(p, "this clause");
  }
  {
    char *zOps = sqlite3_str_finish(p->pOps);
    if( d->nOperand>0 && zOps==0 && p->rc==0 ) p->rc = SQLITE_NOMEM;
    if( d->nOperand>0 ) d->zOperands = zOps; else sqlite3_free(zOps);
  }
  sqlite3_free(p->aTok);
  if( p->rc ){
    *pzErr = p->zErr;
    gpudsViewDefFree(d);
    return p->rc;
  }
  *ppDef = d;
  return SQLITE_OK;
}

/* ------------------------------------------------------------ binding */

typedef struct Bind {
  GpudsViewDef *d;
  const char *zName;          /* the table's name */
  int nCol;
  char *const*azCol;
  char *zErr;
} Bind;

/* Resolve e's column against the table: SQLITE_OK, or an error. */
static int bindCol(Bind *b, GpudsVExpr *e){
  int i;
  if( e->zTab ){
    const char *zQ = e->zTab, *zDot = strchr(zQ, '.');
    int bOk;
    if( zDot ){
      bOk = b->d->zAlias==0 && sqlite3_stricmp(zDot+1, b->d->zTab)==0
         && (b->d->zDb ? sqlite3_strnicmp(zQ, b->d->zDb, (int)(zDot-zQ))==0
                         && (int)strlen(b->d->zDb)==(int)(zDot-zQ) : 1);
    }else{
      bOk = b->d->zAlias ? sqlite3_stricmp(zQ, b->d->zAlias)==0
                         : sqlite3_stricmp(zQ, b->d->zTab)==0;
    }
    if( !bOk ){
      b->zErr = sqlite3_mprintf("gpuds_view: no such column: %s.%s", e->zTab, e->zCol);
      return SQLITE_ERROR;
    }
  }
  for(i=0; i<b->nCol; i++){
    if( sqlite3_stricmp(b->azCol[i], e->zCol)==0 ){ e->iCol = i; return SQLITE_OK; }
  }
  if( sqlite3_stricmp(e->zCol, "rowid")==0 || sqlite3_stricmp(e->zCol, "oid")==0
   || sqlite3_stricmp(e->zCol, "_rowid_")==0 ){
    e->iCol = 0;
    return SQLITE_OK;
  }
  b->zErr = sqlite3_mprintf("gpuds_view: no such column: %s", e->zCol);
  return SQLITE_ERROR;
}

/* Do two bound expressions compute the same? */
static int exprSame(const GpudsVExpr *a, const GpudsVExpr *b){
  return a->iCol==b->iCol && a->op==b->op && (a->op==GPUDS_AGGKEY_COL || a->n==b->n);
}

/* Bind view d to a table named zName with columns azCol[0..nCol) (the key
** first): resolve every name, merge equal GROUP BY keys and aggregates,
** sort the results into keys, aggregates and other expressions.
** SQLITE_OK, or an error with *pzErr. */
int gpudsViewBind(GpudsViewDef *d, const char *zName, int nCol, char *const*azCol,
                  char **pzErr){
  Bind B, *b = &B;
  int i, j, rc = SQLITE_OK;
  memset(b, 0, sizeof(*b));
  b->d = d; b->zName = zName; b->nCol = nCol; b->azCol = azCol;
  *pzErr = 0;
  sqlite3_free(d->aKey); sqlite3_free(d->aAgg);
  d->aKey = 0; d->nKey = 0; d->aAgg = 0; d->nAgg = 0; d->iRepAgg = -1;
  d->aKey = sqlite3_malloc64(sizeof(GpudsVExpr)*(size_t)(d->nGroup ? d->nGroup : 1));
  d->aAgg = sqlite3_malloc64(sizeof(GpudsVAgg)*(size_t)(d->nCol ? d->nCol : 1));
  if( !d->aKey || !d->aAgg ) return SQLITE_NOMEM;
  /* results: columns and aggregates' arguments */
  for(i=0; i<d->nCol && rc==SQLITE_OK; i++){
    GpudsVCol *c = &d->aCol[i];
    rc = bindCol(b, c->bAgg ? &c->agg.e : &c->e);
    if( c->bAgg && c->agg.eFn==VAGG_COUNTSTAR ) rc = SQLITE_OK;
  }
  /* terms: a name that is no column may be a result's that is one */
  for(i=0; i<d->nTerm && rc==SQLITE_OK; i++){
    GpudsVTerm *t = &d->aTerm[i];
    rc = bindCol(b, &t->e);
    if( rc && t->e.zTab==0 ){
      for(j=0; j<d->nCol; j++){
        if( d->aCol[j].zAlias && sqlite3_stricmp(d->aCol[j].zAlias, t->e.zCol)==0 ) break;
      }
      if( j<d->nCol ){
        sqlite3_free(b->zErr); b->zErr = 0;
        if( d->aCol[j].bAgg ){
          b->zErr = sqlite3_mprintf("gpuds_view: misuse of aggregate: %s", d->aCol[j].zSpan);
        }else if( d->aCol[j].e.op!=GPUDS_AGGKEY_COL ){
          b->zErr = sqlite3_mprintf("gpuds_view: a term on %s (a column only)", d->aCol[j].zSpan);
        }else{
          t->e.iCol = d->aCol[j].e.iCol;
          rc = SQLITE_OK;
        }
      }
    }
  }
  /* GROUP BY: a column, else a result's name, or a result's number */
  for(i=0; i<d->nGroup && rc==SQLITE_OK; i++){
    GpudsVGroup *g = &d->aGroup[i];
    const GpudsVCol *c = 0;
    if( g->iResult ){
      c = &d->aCol[g->iResult-1];
    }else if( g->zName ){
      GpudsVExpr e;
      memset(&e, 0, sizeof(e));
      e.zCol = g->zName;
      if( bindCol(b, &e)==SQLITE_OK ){
        g->e.iCol = e.iCol; g->e.op = GPUDS_AGGKEY_COL;
      }else{
        sqlite3_free(b->zErr); b->zErr = 0;
        for(j=0; j<d->nCol; j++){
          if( d->aCol[j].zAlias && sqlite3_stricmp(d->aCol[j].zAlias, g->zName)==0 ) break;
        }
        if( j==d->nCol ){
          b->zErr = sqlite3_mprintf("gpuds_view: no such column: %s", g->zName);
          rc = SQLITE_ERROR;
        }
        c = j<d->nCol ? &d->aCol[j] : 0;
      }
    }else{
      rc = bindCol(b, &g->e);
    }
    if( rc==SQLITE_OK && c ){
      if( c->bAgg ){
        b->zErr = sqlite3_mprintf("gpuds_view: aggregate functions are not allowed in the GROUP BY clause");
        rc = SQLITE_ERROR;
      }else{
        g->e.iCol = c->e.iCol; g->e.op = c->e.op; g->e.n = c->e.n;
      }
    }
    if( rc==SQLITE_OK ){
      for(j=0; j<d->nKey && !exprSame(&d->aKey[j], &g->e); j++){}
      if( j==d->nKey ){
        d->aKey[d->nKey] = g->e;
        d->aKey[d->nKey].zTab = d->aKey[d->nKey].zCol = 0;
        d->nKey++;
      }
    }
  }
  /* the results: keys, aggregates (merged), other expressions */
  for(i=0; i<d->nCol && rc==SQLITE_OK; i++){
    GpudsVCol *c = &d->aCol[i];
    if( c->bAgg ){
      for(j=0; j<d->nAgg; j++){
        if( d->aAgg[j].eFn==c->agg.eFn
         && (c->agg.eFn==VAGG_COUNTSTAR || d->aAgg[j].e.iCol==c->agg.e.iCol) ) break;
      }
      if( j==d->nAgg ){
        d->aAgg[j] = c->agg;
        d->aAgg[j].e.zTab = d->aAgg[j].e.zCol = 0;
        d->nAgg++;
      }
      c->eKind = VCOL_AGG; c->i = j;
    }else{
      for(j=0; j<d->nKey && !exprSame(&d->aKey[j], &c->e); j++){}
      c->eKind = j<d->nKey ? VCOL_KEY : VCOL_BARE;
      c->i = j;
    }
  }
  for(i=0; i<d->nAgg; i++){
    if( d->aAgg[i].eFn==VAGG_MIN || d->aAgg[i].eFn==VAGG_MAX ) d->iRepAgg = i;
  }
  if( rc ) *pzErr = b->zErr ? b->zErr : sqlite3_mprintf("out of memory");
  else sqlite3_free(b->zErr);
  return rc;
}
