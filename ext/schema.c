/*
** schema.c -- parse the arguments of CREATE VIRTUAL TABLE ... USING gfsl(...)
** or gpuhash(...) into a column list, and build the declaration that
** sqlite3_declare_vtab() receives.
**
** Accepted: the first argument "<name> INTEGER PRIMARY KEY"; each further
** argument "<name> [<type>] [NOT NULL]", where <type> is any type name
** SQLite takes (words, quoted names and strings, then maybe "(n)" or
** "(n,m)"), given the affinity SQLite gives it.  Anything else (another
** PRIMARY KEY, UNIQUE, CHECK, DEFAULT, COLLATE, REFERENCES, "option=value",
** a type SQLite would make a hidden column) is refused with a message
** naming the argument.  How many columns a virtual table may have SQLite
** decides (its module arguments, and sqlite3_declare_vtab).
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "schema.h"
#include <string.h>
#include <ctype.h>

/* Skip white space and comments (from "--" to the end of the line, from
** slash-star to star-slash), as SQLite's tokenizer does between tokens. */
static const char *skipSpace(const char *z){
  for(;;){
    while( *z && isspace((unsigned char)*z) ) z++;
    if( z[0]=='-' && z[1]=='-' ){
      while( *z && *z!='\n' ) z++;
    }else if( z[0]=='/' && z[1]=='*' ){
      const char *zEnd = strstr(z+2, "*/");
      z = zEnd ? zEnd+2 : z+strlen(z);
    }else{
      return z;
    }
  }
}

/* Read an identifier (bare or quoted with "", [], ``) at z.  Returns a
** sqlite3_malloc'd unquoted copy and sets *pzEnd past it, or NULL. */
static char *readIdent(const char *z, const char **pzEnd){
  char q = 0;
  const char *zStart;
  char *zOut;
  int n = 0;
  z = skipSpace(z);
  if( *z=='"' ) q = '"';
  else if( *z=='[' ) q = ']';
  else if( *z=='`' ) q = '`';
  else if( *z=='\'' ) q = '\'';
  if( q ){
    const char *zIn;
    zStart = ++z;
    zOut = sqlite3_malloc64(strlen(z)+1);
    if( zOut==0 ) return 0;
    for(zIn=zStart; *zIn; zIn++){
      if( *zIn==q ){
        if( q!=']' && zIn[1]==q ){ zOut[n++] = q; zIn++; continue; }
        break;
      }
      zOut[n++] = *zIn;
    }
    if( *zIn!=q || n==0 ){ sqlite3_free(zOut); return 0; }
    zOut[n] = 0;
    *pzEnd = zIn+1;
    return zOut;
  }
  zStart = z;
  while( *z && (isalnum((unsigned char)*z) || *z=='_' || (unsigned char)*z>=0x80) ) z++;
  if( z==zStart ) return 0;
  *pzEnd = z;
  return sqlite3_mprintf("%.*s", (int)(z-zStart), zStart);
}

/* ------------------------------------------------------------ tokens
** The tokens of a column definition, as SQLite's tokenizer (tokenize.c)
** splits them, as far as a type name and the constraints gpuds takes need
** them. */
#define TOK_END    0
#define TOK_WORD   1          /* a bare identifier or keyword */
#define TOK_QUOTED 2          /* "...", [...], `...` or '...' */
#define TOK_NUM    3          /* a number: digits, a point, an exponent, hex */
#define TOK_OTHER  4          /* one other character: ( ) , + - ... */
typedef struct Tok {
  int e;                      /* TOK_xxx */
  const char *z;              /* its first character */
  int n;                      /* its length */
} Tok;

/* Characters of a bare identifier (sqlite3IsIdChar): letters, digits,
** '_', '$' and every byte of a multi-byte character. */
static int isIdChar(unsigned char c){
  return (c>='a' && c<='z') || (c>='A' && c<='Z') || (c>='0' && c<='9')
      || c=='_' || c=='$' || c>=0x80;
}

/* The token at z (after white space and comments) into *t.  A quoted token
** without its closing quote, or a number run into letters, is TOK_OTHER
** of all the rest (no type name takes it). */
static void nextTok(const char *z, Tok *t){
  unsigned char c;
  int n = 0;
  z = skipSpace(z);
  c = (unsigned char)z[0];
  t->z = z;
  if( c==0 ){ t->e = TOK_END; t->n = 0; return; }
  if( c=='"' || c=='\'' || c=='`' || c=='[' ){
    char q = c=='[' ? ']' : (char)c;
    for(n=1; z[n]; n++){
      if( z[n]==q ){
        if( q!=']' && z[n+1]==q ){ n++; continue; }
        break;
      }
    }
    if( z[n]==q ){ t->e = TOK_QUOTED; t->n = n+1; return; }
    t->e = TOK_OTHER; t->n = (int)strlen(z);
    return;
  }
  if( (c>='0' && c<='9') || (c=='.' && z[1]>='0' && z[1]<='9') ){
    if( c=='0' && (z[1]=='x' || z[1]=='X') && isxdigit((unsigned char)z[2]) ){
      for(n=2; isxdigit((unsigned char)z[n]); n++){}
    }else{
      while( z[n]>='0' && z[n]<='9' ) n++;
      if( z[n]=='.' ){ n++; while( z[n]>='0' && z[n]<='9' ) n++; }
      if( (z[n]=='e' || z[n]=='E') && ((z[n+1]>='0' && z[n+1]<='9')
           || ((z[n+1]=='+' || z[n+1]=='-') && z[n+2]>='0' && z[n+2]<='9')) ){
        n += 2;
        while( z[n]>='0' && z[n]<='9' ) n++;
      }
    }
    if( isIdChar((unsigned char)z[n]) ){ t->e = TOK_OTHER; t->n = (int)strlen(z); return; }
    t->e = TOK_NUM; t->n = n;
    return;
  }
  if( isIdChar(c) && c!='$' && !(c>='0' && c<='9') ){
    while( isIdChar((unsigned char)z[n]) ) n++;
    t->e = TOK_WORD; t->n = n;
    return;
  }
  t->e = TOK_OTHER; t->n = 1;
}

/* True if token t is the bare word zWord (any case). */
static int tokIs(const Tok *t, const char *zWord){
  return t->e==TOK_WORD && (int)strlen(zWord)==t->n
      && sqlite3_strnicmp(t->z, zWord, t->n)==0;
}

/* True if token t starts a column constraint (SQLite's ccons), so ends
** the type name before it.  GENERATED is not one here: SQLite takes
** "GENERATED ALWAYS" before AS as words of the type name. */
static int isConstraintStart(const Tok *t){
  static const char *az[] = { "CONSTRAINT", "DEFAULT", "NULL", "NOT", "PRIMARY",
    "UNIQUE", "CHECK", "REFERENCES", "DEFERRABLE", "COLLATE", "AS", 0 };
  int i;
  for(i=0; az[i]; i++) if( tokIs(t, az[i]) ) return 1;
  return 0;
}

/* The end of "(signed-number)" or "(signed-number, signed-number)" at z
** (its '('), or NULL if that is not what follows. */
static const char *typeArgs(const char *z){
  Tok t;
  int nNum = 0;
  nextTok(z, &t);                                 /* ( */
  z = t.z + t.n;
  for(;;){
    nextTok(z, &t);
    if( t.e==TOK_OTHER && (t.z[0]=='+' || t.z[0]=='-') ){
      z = t.z + t.n;
      nextTok(z, &t);
    }
    if( t.e!=TOK_NUM ) return 0;
    nNum++;
    nextTok(t.z + t.n, &t);
    if( t.e==TOK_OTHER && t.z[0]==')' ) return t.z + 1;
    if( t.e!=TOK_OTHER || t.z[0]!=',' || nNum==2 ) return 0;
    z = t.z + 1;
  }
}

/* --------------------------------------------------- the type's affinity
** As SQLite derives a column's affinity from its declared type
** (sqlite3AddColumn in build.c, then sqlite3AffinityType in expr.c; the
** rules of section 3.1 of https://sqlite.org/datatype3.html): the type
** name's text as written, a trailing "GENERATED ALWAYS" dropped, one
** layer of quotes removed, then the last of "INT", else "CHAR", "CLOB" or
** "TEXT", else "BLOB", else "REAL", "FLOA" or "DOUB" found anywhere in it
** (any case), else NUMERIC; no type at all is BLOB.  The same text goes
** into the declaration, so SQLite's affinity for the virtual table's
** column (used in comparisons) is this one. */

/* True for a character SQLite takes as a quote (sqlite3Isquote). */
static int isQuote(char c){
  return c=='"' || c=='\'' || c=='`' || c=='[';
}

/* SQLite's sqlite3Dequote of z, in place: a string that starts with a
** quote loses it, everything from its closing quote on, and the doubling of
** quotes inside. */
static void dequote(char *z){
  char q = z[0];
  int i, j;
  if( !isQuote(q) ) return;
  if( q=='[' ) q = ']';
  for(i=1, j=0; z[i]; i++){
    if( z[i]==q ){
      if( z[i+1]!=q ) break;
      i++;
    }
    z[j++] = z[i];
  }
  z[j] = 0;
}

/* The type SQLite keeps for a column whose type name is z[0..n) (as
** sqlite3AddColumn makes it), sqlite3_malloc'd; NULL if out of memory.
** *pbTyped: 0 where nothing is left of it (SQLite then gives the column no
** type: BLOB affinity). */
static char *typeStored(const char *z, int n, int *pbTyped){
  char *zOut;
  if( n>=16 && sqlite3_strnicmp(z+n-6, "always", 6)==0 ){
    n -= 6;
    while( n>0 && isspace((unsigned char)z[n-1]) ) n--;
    if( n>=9 && sqlite3_strnicmp(z+n-9, "generated", 9)==0 ){
      n -= 9;
      while( n>0 && isspace((unsigned char)z[n-1]) ) n--;
    }
  }
  if( n>=3 && isQuote(z[0]) ){           /* sqlite3DequoteToken */
    int i;
    for(i=1; i<n-1 && !isQuote(z[i]); i++){}
    if( i>=n-1 ){ z++; n -= 2; }
  }
  *pbTyped = n>0;
  zOut = sqlite3_mprintf("%.*s", n, z);
  if( zOut ) dequote(zOut);
  return zOut;
}

/* The affinity of a column SQLite keeps type zType for (bTyped 0: no type,
** BLOB), sqlite3AffinityType's scan: the last four characters seen, lower
** case, against each name. */
static char typeAffinity(const char *zType, int bTyped){
  uint32_t h = 0;
  char aff = GPUDS_AFF_NUMERIC;
  const unsigned char *z = (const unsigned char*)zType;
  if( !bTyped ) return GPUDS_AFF_BLOB;
  while( *z ){
    unsigned char c = *z++;
    if( c>='A' && c<='Z' ) c += 'a' - 'A';
    h = (h<<8) + c;
    if( h==(('c'<<24)+('h'<<16)+('a'<<8)+'r') || h==(('c'<<24)+('l'<<16)+('o'<<8)+'b')
     || h==(('t'<<24)+('e'<<16)+('x'<<8)+'t') ){
      aff = GPUDS_AFF_TEXT;
    }else if( h==(('b'<<24)+('l'<<16)+('o'<<8)+'b')
           && (aff==GPUDS_AFF_NUMERIC || aff==GPUDS_AFF_REAL) ){
      aff = GPUDS_AFF_BLOB;
    }else if( (h==(('r'<<24)+('e'<<16)+('a'<<8)+'l') || h==(('f'<<24)+('l'<<16)+('o'<<8)+'a')
            || h==(('d'<<24)+('o'<<16)+('u'<<8)+'b')) && aff==GPUDS_AFF_NUMERIC ){
      aff = GPUDS_AFF_REAL;
    }else if( (h & 0x00FFFFFF)==(('i'<<16)+('n'<<8)+'t') ){
      return GPUDS_AFF_INTEGER;
    }
  }
  return aff;
}

/* True if SQLite would make a virtual table's column of stored type zType
** hidden (vtabCallConstructor in vtab.c: the word "hidden", any case,
** between spaces or the ends). */
static int typeHidden(const char *zType){
  int i, n = (int)strlen(zType);
  for(i=0; i+6<=n; i++){
    if( sqlite3_strnicmp(zType+i, "hidden", 6)==0
     && (i==0 || zType[i-1]==' ') && (zType[i+6]==0 || zType[i+6]==' ') ){
      return 1;
    }
  }
  return 0;
}

/* Release a parsed schema. */
void gpudsSchemaFree(GpudsSchema *s){
  int i;
  for(i=0; i<s->nCol; i++) sqlite3_free(s->azCol[i]);
  sqlite3_free(s->azCol);
  sqlite3_free(s->aNotNull);
  sqlite3_free(s->aAff);
  sqlite3_free(s->zDecl);
  memset(s, 0, sizeof(*s));
}

/* Parse one column definition zArg (column iCol): "<name> [<type>]
** [NOT NULL | NULL]...", where <type> is any type name SQLite takes: one
** or more words, quoted names or strings, then maybe "(signed-number)" or
** "(signed-number, signed-number)".  Fills the column's name, NOT NULL flag
** and affinity, and in *pzType (sqlite3_malloc'd, or NULL for none) the
** type name's text as written, for the declaration. */
static int parseColumn(GpudsSchema *s, int iCol, const char *zArg,
                       char **pzType, char **pzErr){
  const char *z = zArg, *zEnd, *zType = 0, *zTypeEnd = 0;
  char *zName = readIdent(z, &zEnd);
  char *zStored = 0;
  int bTyped = 0;
  Tok t;

  *pzType = 0;
  if( zName==0 ){
    *pzErr = sqlite3_mprintf("bad column definition \"%s\": expected a column name", zArg);
    return SQLITE_ERROR;
  }
  if( strchr(zArg, '=') && !strchr(zArg, '(') ){
    *pzErr = sqlite3_mprintf("unknown option \"%s\": gfsl and gpuhash take column definitions only", zArg);
    sqlite3_free(zName);
    return SQLITE_ERROR;
  }
  s->azCol[iCol] = zName;
  z = zEnd;

  /* the type name: SQLite's typetoken */
  for(;;){
    nextTok(z, &t);
    if( (t.e==TOK_WORD && !isConstraintStart(&t)) || t.e==TOK_QUOTED ){
      if( zType==0 ) zType = t.z;
      z = zTypeEnd = t.z + t.n;
      continue;
    }
    if( zType && t.e==TOK_OTHER && t.z[0]=='(' ){   /* VARCHAR(10), DECIMAL(10,2) */
      const char *zC = typeArgs(t.z);
      if( zC==0 ){
        *pzErr = sqlite3_mprintf("bad type name in \"%s\": \"(\" must be followed by "
            "one or two signed numbers and \")\"", zArg);
        return SQLITE_ERROR;
      }
      z = zTypeEnd = zC;
    }
    break;
  }
  if( zType ){
    *pzType = sqlite3_mprintf("%.*s", (int)(zTypeEnd-zType), zType);
    zStored = typeStored(zType, (int)(zTypeEnd-zType), &bTyped);
    if( *pzType==0 || zStored==0 ){ sqlite3_free(zStored); return SQLITE_NOMEM; }
  }
  s->aAff[iCol] = typeAffinity(zStored, bTyped);
  if( zStored && typeHidden(zStored) ){
    *pzErr = sqlite3_mprintf("unsupported column definition \"%s\": SQLite makes a "
        "virtual table's column whose type holds the word HIDDEN a hidden column", zArg);
    sqlite3_free(zStored);
    return SQLITE_ERROR;
  }
  if( iCol==0 ){
    /* The key: exactly INTEGER PRIMARY KEY. */
    int bKey = zStored && sqlite3_stricmp(zStored, "INTEGER")==0;
    nextTok(z, &t);
    bKey = bKey && tokIs(&t, "PRIMARY");
    nextTok(t.z + t.n, &t);
    bKey = bKey && tokIs(&t, "KEY");
    nextTok(t.z + t.n, &t);
    sqlite3_free(zStored);
    if( !bKey || t.e!=TOK_END ){
      *pzErr = sqlite3_mprintf("the first column must be declared "
          "\"<name> INTEGER PRIMARY KEY\" (the 64-bit key), not \"%s\"", zArg);
      return SQLITE_ERROR;
    }
    return SQLITE_OK;
  }
  sqlite3_free(zStored);

  /* the constraints gpuds takes: NOT NULL, NULL (which allows NULL), and
  ** CONSTRAINT <name> before either (a name SQLite's messages never show) */
  for(;;){
    nextTok(z, &t);
    if( t.e==TOK_END ) return SQLITE_OK;
    if( tokIs(&t, "NULL") ){ z = t.z + t.n; continue; }
    if( tokIs(&t, "CONSTRAINT") ){
      Tok t2;
      nextTok(t.z + t.n, &t2);
      if( (t2.e==TOK_WORD && !isConstraintStart(&t2)) || t2.e==TOK_QUOTED ){
        z = t2.z + t2.n;
        continue;
      }
    }
    if( tokIs(&t, "NOT") ){
      Tok t2;
      nextTok(t.z + t.n, &t2);
      if( tokIs(&t2, "NULL") ){
        s->aNotNull[iCol] = 1;
        z = t2.z + t2.n;
        continue;
      }
    }
    break;
  }
  *pzErr = sqlite3_mprintf("unsupported column definition \"%s\": "
      "only \"<name> [<type>] [NOT NULL]\" is allowed after the key", zArg);
  return SQLITE_ERROR;
}

/* Parse the module arguments argv[3..argc-1].  On error returns
** SQLITE_ERROR with *pzErr set (sqlite3_malloc'd) and *s empty. */
int gpudsSchemaParse(int argc, const char *const*argv, GpudsSchema *s,
                     char **pzErr){
  int nCol = argc-3, i, j, rc = SQLITE_OK;
  sqlite3_str *pDecl = 0;
  memset(s, 0, sizeof(*s));
  *pzErr = 0;
  if( nCol<1 ){
    *pzErr = sqlite3_mprintf("no columns: declare at least "
        "\"<name> INTEGER PRIMARY KEY\", e.g. USING %s(id INTEGER PRIMARY KEY, v)",
        argv[0]);
    return SQLITE_ERROR;
  }
  s->azCol = sqlite3_malloc64(nCol*sizeof(char*));
  s->aNotNull = sqlite3_malloc64(nCol);
  s->aAff = sqlite3_malloc64(nCol);
  if( !s->azCol || !s->aNotNull || !s->aAff ){
    sqlite3_free(s->azCol); sqlite3_free(s->aNotNull); sqlite3_free(s->aAff);
    memset(s, 0, sizeof(*s));
    return SQLITE_NOMEM;
  }
  memset(s->azCol, 0, nCol*sizeof(char*));
  memset(s->aNotNull, 0, nCol);
  s->nCol = nCol;
  pDecl = sqlite3_str_new(0);
  sqlite3_str_appendall(pDecl, "CREATE TABLE x(");
  for(i=0; i<nCol && rc==SQLITE_OK; i++){
    char *zType = 0;
    rc = parseColumn(s, i, argv[3+i], &zType, pzErr);
    if( rc==SQLITE_OK ){
      for(j=0; j<i; j++){
        if( sqlite3_stricmp(s->azCol[j], s->azCol[i])==0 ){
          *pzErr = sqlite3_mprintf("duplicate column name: %s", s->azCol[i]);
          rc = SQLITE_ERROR;
        }
      }
    }
    if( rc==SQLITE_OK ){
      sqlite3_str_appendf(pDecl, "%s\"%w\"%s%s%s%s", i ? ", " : "", s->azCol[i],
          zType && zType[0] ? " " : "", zType ? zType : "",
          i==0 ? " PRIMARY KEY" : "", s->aNotNull[i] ? " NOT NULL" : "");
    }
    sqlite3_free(zType);
  }
  sqlite3_str_appendall(pDecl, ")");
  s->zDecl = sqlite3_str_finish(pDecl);
  if( rc==SQLITE_OK && s->zDecl==0 ) rc = SQLITE_NOMEM;
  if( rc ) gpudsSchemaFree(s);
  return rc;
}
