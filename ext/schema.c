/*
** schema.c -- parse the arguments of CREATE VIRTUAL TABLE ... USING gfsl(...)
** or gpuhash(...) into a column list, and build the declaration that
** sqlite3_declare_vtab() receives.
**
** Accepted: the first argument "<name> INTEGER PRIMARY KEY"; each further
** argument "<name> [<type>] [NOT NULL]", where <type> is any SQLite type
** name (words, optionally with "(n)" or "(n,m)").  Anything else (another
** PRIMARY KEY, UNIQUE, CHECK, DEFAULT, COLLATE, REFERENCES, "option=value")
** is refused with a message naming the argument.
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include "schema.h"
#include <string.h>
#include <ctype.h>

/* Skip white space. */
static const char *skipSpace(const char *z){
  while( *z && isspace((unsigned char)*z) ) z++;
  return z;
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

/* Read the next keyword-like word (letters) at z into zWord (upper case, at
** most nWord-1 chars); returns its length, 0 if none. */
static int readWord(const char *z, const char **pzEnd, char *zWord, int nWord){
  int n = 0;
  z = skipSpace(z);
  while( isalpha((unsigned char)*z) || *z=='_' ){
    if( n<nWord-1 ) zWord[n++] = (char)toupper((unsigned char)*z);
    z++;
  }
  zWord[n] = 0;
  *pzEnd = z;
  return n;
}

/* The affinity SQLite gives a column of declared type zType (section 3.1
** of the datatype documentation): INT, then CHAR/CLOB/TEXT, then BLOB or no
** type, then REAL/FLOA/DOUB, else NUMERIC. */
static char typeAffinity(const char *zType){
  char zUp[256];
  int i;
  if( zType==0 || zType[0]==0 ) return GPUDS_AFF_BLOB;
  for(i=0; zType[i] && i<(int)sizeof(zUp)-1; i++) zUp[i] = (char)toupper((unsigned char)zType[i]);
  zUp[i] = 0;
  if( strstr(zUp, "INT") ) return GPUDS_AFF_INTEGER;
  if( strstr(zUp, "CHAR") || strstr(zUp, "CLOB") || strstr(zUp, "TEXT") ) return GPUDS_AFF_TEXT;
  if( strstr(zUp, "BLOB") ) return GPUDS_AFF_BLOB;
  if( strstr(zUp, "REAL") || strstr(zUp, "FLOA") || strstr(zUp, "DOUB") ) return GPUDS_AFF_REAL;
  return GPUDS_AFF_NUMERIC;
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

/* True if z (upper case) is a word that starts a column constraint. */
static int isConstraintWord(const char *z){
  static const char *az[] = { "CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK",
    "DEFAULT", "COLLATE", "REFERENCES", "GENERATED", "AS", "HIDDEN", 0 };
  int i;
  for(i=0; az[i]; i++) if( strcmp(z, az[i])==0 ) return 1;
  return 0;
}

/* Parse one column definition zArg (column iCol).  Fills the column's name,
** NOT NULL flag and the declared type (*pzType, sqlite3_malloc'd). */
static int parseColumn(GpudsSchema *s, int iCol, const char *zArg,
                       char **pzType, char **pzErr){
  const char *z = zArg, *zEnd;
  char *zName = readIdent(z, &zEnd);
  char zWord[32];
  sqlite3_str *pType;
  int nWord = 0;
  int bConstraint = 0;        /* a constraint began: the type is complete */

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
  pType = sqlite3_str_new(0);
  for(;;){
    const char *zW = skipSpace(z);
    int n = readWord(zW, &zEnd, zWord, sizeof(zWord));
    if( n==0 ) break;
    if( strcmp(zWord, "NOT")==0 ){
      const char *z2;
      char zW2[32];
      readWord(zEnd, &z2, zW2, sizeof(zW2));
      if( strcmp(zW2, "NULL")!=0 ) break;
      s->aNotNull[iCol] = 1;
      bConstraint = 1;
      z = z2;
      continue;
    }
    if( strcmp(zWord, "NULL")==0 ){
      /* The NULL constraint ("v NULL"), which allows NULL and is not a
      ** type name: the column keeps no declared type, as in SQLite. */
      bConstraint = 1;
      z = zEnd;
      continue;
    }
    if( isConstraintWord(zWord) ) break;
    if( bConstraint ) break;                /* type words come before constraints */
    sqlite3_str_appendf(pType, "%s%.*s", nWord ? " " : "", (int)(zEnd-zW), zW);
    nWord++;
    z = skipSpace(zEnd);
    if( *z=='(' ){                          /* VARCHAR(10), DECIMAL(10,2) */
      const char *zC = strchr(z, ')');
      if( zC==0 ) break;
      sqlite3_str_appendf(pType, "%.*s", (int)(zC+1-z), z);
      z = zC+1;
    }
  }
  *pzType = sqlite3_str_finish(pType);
  z = skipSpace(z);
  if( iCol==0 ){
    /* The key: exactly INTEGER PRIMARY KEY. */
    const char *zK = skipSpace(z);
    char zP[32], zKey[32];
    readWord(zK, &zEnd, zP, sizeof(zP));
    readWord(zEnd, &zEnd, zKey, sizeof(zKey));
    if( *pzType==0 || sqlite3_stricmp(*pzType, "INTEGER")!=0
     || strcmp(zP, "PRIMARY")!=0 || strcmp(zKey, "KEY")!=0
     || *skipSpace(zEnd)!=0 ){
      *pzErr = sqlite3_mprintf("the first column must be declared "
          "\"<name> INTEGER PRIMARY KEY\" (the 64-bit key), not \"%s\"", zArg);
      return SQLITE_ERROR;
    }
    return SQLITE_OK;
  }
  if( *z ){
    *pzErr = sqlite3_mprintf("unsupported column definition \"%s\": "
        "only \"<name> [<type>] [NOT NULL]\" is allowed after the key", zArg);
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
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
  if( nCol>2000 ){
    *pzErr = sqlite3_mprintf("too many columns (%d)", nCol);
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
    s->aAff[i] = typeAffinity(zType);
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
