/*
** row.c -- row records: the non-key columns of one row, kept on the host
** with SQLite's dynamic types preserved (NULL, integer, real, text, blob).
**
** Layout of a record, all in one allocation:
**   u32 nCol | nCol x { u8 type; u32 offset; u32 length } | payload bytes
** so that xColumn reaches any column in O(1).  Integers and reals are stored
** as 8 bytes; text and blob as their bytes (text without its terminator).
*/
#include "gpuds_int.h"
SQLITE_EXTENSION_INIT3
#include <string.h>

struct GpudsRow {
  uint32_t nCol;
  uint32_t nByte;           /* size of the whole record */
};

typedef struct RowCell {
  uint8_t eType;            /* SQLITE_INTEGER, _FLOAT, _TEXT, _BLOB, _NULL */
  uint32_t iOff;            /* payload offset from the start of the record */
  uint32_t nLen;            /* payload bytes */
} RowCell;

/* Cell i of record p. */
static RowCell *rowCell(const GpudsRow *p, int i){
  return (RowCell*)((char*)p + sizeof(GpudsRow)) + i;
}

/* A new record holding the values apVal[0..nCol-1], or NULL if out of
** memory.  The values are copied. */
GpudsRow *gpudsRowNew(int nCol, sqlite3_value **apVal){
  size_t nByte = sizeof(GpudsRow) + (size_t)nCol*sizeof(RowCell);
  int i;
  GpudsRow *p;
  char *z;
  for(i=0; i<nCol; i++){
    switch( sqlite3_value_type(apVal[i]) ){
      case SQLITE_INTEGER: case SQLITE_FLOAT: nByte += 8; break;
      case SQLITE_TEXT: nByte += (size_t)sqlite3_value_bytes(apVal[i]); break;
      case SQLITE_BLOB: nByte += (size_t)sqlite3_value_bytes(apVal[i]); break;
      default: break;
    }
  }
  if( nByte>0x7fffffff ) return 0;
  p = (GpudsRow*)sqlite3_malloc64(nByte);
  if( p==0 ) return 0;
  p->nCol = (uint32_t)nCol;
  p->nByte = (uint32_t)nByte;
  z = (char*)rowCell(p, nCol);
  for(i=0; i<nCol; i++){
    RowCell *c = rowCell(p, i);
    sqlite3_value *v = apVal[i];
    c->eType = (uint8_t)sqlite3_value_type(v);
    c->iOff = (uint32_t)(z - (char*)p);
    c->nLen = 0;
    switch( c->eType ){
      case SQLITE_INTEGER: {
        sqlite3_int64 x = sqlite3_value_int64(v);
        memcpy(z, &x, 8); c->nLen = 8; break;
      }
      case SQLITE_FLOAT: {
        double x = sqlite3_value_double(v);
        memcpy(z, &x, 8); c->nLen = 8; break;
      }
      case SQLITE_TEXT: {
        const unsigned char *t = sqlite3_value_text(v);
        c->nLen = (uint32_t)sqlite3_value_bytes(v);
        if( c->nLen ) memcpy(z, t, c->nLen);
        break;
      }
      case SQLITE_BLOB: {
        const void *b = sqlite3_value_blob(v);
        c->nLen = (uint32_t)sqlite3_value_bytes(v);
        if( c->nLen ) memcpy(z, b, c->nLen);
        break;
      }
      default: break;
    }
    z += c->nLen;
  }
  return p;
}

/* Free a record (NULL is a no-op). */
void gpudsRowFree(GpudsRow *p){
  sqlite3_free(p);
}

/* Bytes held by a record. */
size_t gpudsRowBytes(const GpudsRow *p){
  return p ? p->nByte : 0;
}

/* Set the result of ctx to column iCol (0-based, non-key) of record p. */
void gpudsRowResult(const GpudsRow *p, int iCol, sqlite3_context *ctx){
  const RowCell *c;
  const char *z;
  if( p==0 || iCol<0 || (uint32_t)iCol>=p->nCol ){
    sqlite3_result_null(ctx);
    return;
  }
  c = rowCell(p, iCol);
  z = (const char*)p + c->iOff;
  switch( c->eType ){
    case SQLITE_INTEGER: {
      sqlite3_int64 x; memcpy(&x, z, 8);
      sqlite3_result_int64(ctx, x); break;
    }
    case SQLITE_FLOAT: {
      double x; memcpy(&x, z, 8);
      sqlite3_result_double(ctx, x); break;
    }
    case SQLITE_TEXT:
      sqlite3_result_text(ctx, z, (int)c->nLen, SQLITE_TRANSIENT); break;
    case SQLITE_BLOB:
      sqlite3_result_blob(ctx, z, (int)c->nLen, SQLITE_TRANSIENT); break;
    default:
      sqlite3_result_null(ctx); break;
  }
}
