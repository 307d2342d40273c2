/* schema.h -- the parsed column list of a gfsl/gpuhash table (schema.c). */
#ifndef GPUDS_SCHEMA_H
#define GPUDS_SCHEMA_H

typedef struct GpudsSchema {
  int nCol;               /* columns, the key first */
  char **azCol;           /* unquoted column names */
  unsigned char *aNotNull;/* column declared NOT NULL */
  char *aAff;             /* column affinity: GPUDS_AFF_xxx */
  char *zDecl;            /* CREATE TABLE text for sqlite3_declare_vtab() */
} GpudsSchema;

/* Column affinities, by SQLite's rules for a declared type name. */
#define GPUDS_AFF_BLOB    'A'
#define GPUDS_AFF_TEXT    'B'
#define GPUDS_AFF_NUMERIC 'C'
#define GPUDS_AFF_INTEGER 'D'
#define GPUDS_AFF_REAL    'E'

/* True for INTEGER, REAL and NUMERIC affinity: SQLite then applies
** NUMERIC affinity to the other side of a comparison with the column. */
static inline int gpudsAffNumeric(char a){
  return a==GPUDS_AFF_INTEGER || a==GPUDS_AFF_REAL || a==GPUDS_AFF_NUMERIC;
}

int gpudsSchemaParse(int argc, const char *const*argv, GpudsSchema *s,
                     char **pzErr);
void gpudsSchemaFree(GpudsSchema *s);

#endif
