/*
** testext.h -- shared by the C test executables (faults.c, bigalloc.c):
** open a database with the gpuds extension loaded.
*/
#ifndef GPUDS_TESTEXT_H
#define GPUDS_TESTEXT_H
#include <sqlite3.h>
#include <stdio.h>

/* Database zDb opened with extension zExt loaded into it, or NULL (nothing
** left open) if either fails; with bSay, a failed load's message is
** printed. */
static sqlite3 *testOpenWithExt(const char *zDb, const char *zExt, int bSay){
  sqlite3 *db = 0;
  char *zErr = 0;
  if( sqlite3_open(zDb, &db)!=SQLITE_OK ){ sqlite3_close(db); return 0; }
  sqlite3_enable_load_extension(db, 1);
  if( sqlite3_load_extension(db, zExt, 0, &zErr)!=SQLITE_OK ){
    if( bSay ) printf("cannot load %s: %s\n", zExt, zErr ? zErr : "?");
    sqlite3_free(zErr);
    sqlite3_close(db);
    return 0;
  }
  return db;
}
#endif
