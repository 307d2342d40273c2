/* schema.h -- the parsed column list of a gfsl/gpuhash table (schema.c). */
#ifndef GPUDS_SCHEMA_H
#define GPUDS_SCHEMA_H

typedef struct GpudsSchema {
  int nCol;               /* columns, the key first */
  char **azCol;           /* unquoted column names */
  unsigned char *aNotNull;/* column declared NOT NULL */
  char *zDecl;            /* CREATE TABLE text for sqlite3_declare_vtab() */
} GpudsSchema;

int gpudsSchemaParse(int argc, const char *const*argv, GpudsSchema *s,
                     char **pzErr);
void gpudsSchemaFree(GpudsSchema *s);

#endif
