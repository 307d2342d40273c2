/*
** sqlbench_json.c -- the JSON file of a run (--json): every figure and the
** run's metadata.
*/
#include "sqlbench.h"
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* JSON output */
void jsonStr(FILE *f, const char *z){
  fputc('"', f);
  for(; z && *z; z++){
    unsigned char c = (unsigned char)*z;
    if( c=='"' || c=='\\' ) fprintf(f, "\\%c", c);
    else if( c=='\n' ) fputs("\\n", f);
    else if( c=='\t' ) fputs("\\t", f);
    else if( c<0x20 ) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}
static void jsonNum(FILE *f, double x){
  if( x!=x || isinf(x) ) fputs("null", f);
  else fprintf(f, "%.6g", x);
}

/* A count, or null where it is unknown (< 0). */
void jsonInt(FILE *f, int64_t x){
  if( x<0 ) fputs("null", f);
  else fprintf(f, "%lld", (long long)x);
}

/* ", "zKey": x, "zKeyRow": x per row" (nulls where x < 0: unknown). */
static void jsonBytes(FILE *f, const char *zKey, const char *zKeyRow, int64_t x){
  fprintf(f, ", \"%s\": ", zKey);
  jsonInt(f, x);
  fprintf(f, ", \"%s\": ", zKeyRow);
  jsonNum(f, x>=0 && g.nRow>0 ? (double)x/(double)g.nRow : NAN);
}

void writeJson(const char *zPath){
  FILE *f = fopen(zPath, "w");
  char zHost[256] = "?", zDate[64] = "?";
  struct utsname u;
  time_t tt = time(0);
  struct tm tmv;
  int i, t;
  if( f==0 ) die("cannot write %s: %s", zPath, strerror(errno));
  gethostname(zHost, sizeof(zHost)-1);
  zHost[sizeof(zHost)-1] = 0;
  if( gmtime_r(&tt, &tmv) ) strftime(zDate, sizeof(zDate), "%Y-%m-%dT%H:%M:%SZ", &tmv);
  fprintf(f, "{\n  \"meta\": {\n    \"tool\": \"sqlbench\",\n    \"rows\": %lld,\n    \"queries\": %lld,\n",
          (long long)g.nRow, (long long)g.nQuery);
  fprintf(f, "    \"seed\": %llu,\n    \"budget_s\": ", (unsigned long long)g.seed);
  jsonNum(f, g.budget);
  fprintf(f, ",\n    \"timeout_s\": ");
  jsonNum(f, g.timeout);
  fprintf(f, ",\n    \"key_spacing\": %d,\n    \"backend\": ", KEY_SPACING);
  jsonStr(f, g.zBackend);
  fprintf(f, ",\n    \"device\": ");
  jsonStr(f, g.zDevice);
  fprintf(f, ",\n    \"gpuds_version\": ");
  jsonStr(f, g.zVersion);
  fprintf(f, ",\n    \"gpuds_info\": %s", g.zInfo ? g.zInfo : "null");
  fprintf(f, ",\n    \"gpuds_info_end\": %s", g.zInfoEnd ? g.zInfoEnd : "null");
  fprintf(f, ",\n    \"sqlite_version\": ");
  jsonStr(f, sqlite3_libversion());
  fprintf(f, ",\n    \"sqlite_sourceid\": ");
  jsonStr(f, sqlite3_sourceid());
  fprintf(f, ",\n    \"date\": ");
  jsonStr(f, zDate);
  fprintf(f, ",\n    \"hostname\": ");
  jsonStr(f, zHost);
  if( uname(&u)==0 ){
    fprintf(f, ",\n    \"uname\": ");
    {
      char zU[600];
      snprintf(zU, sizeof(zU), "%s %s %s", u.sysname, u.release, u.machine);
      jsonStr(f, zU);
    }
  }
  fprintf(f, ",\n    \"cpus\": %ld", sysconf(_SC_NPROCESSORS_ONLN));
  fprintf(f, ",\n    \"open_flags\": \"SQLITE_OPEN_NOMUTEX\"");
  fprintf(f, ",\n    \"extension\": ");
  jsonStr(f, g.zExt);
  fprintf(f, ",\n    \"database\": ");
  jsonStr(f, g.zDb);
  fprintf(f, ",\n    \"temporary_database\": %s", g.bTempDb ? "true" : "false");
  fprintf(f, ",\n    \"journal_mode\": ");
  jsonStr(f, g.zJournal ? g.zJournal : "?");
  fprintf(f, ",\n    \"baseline\": \"%s\"", g.eBaseline==0 ? "both" : g.eBaseline==1 ? "tuned" : "default");
  fprintf(f, ",\n    \"load\": \"%s\"", g.bLoadKey ? "key" : "random");
  fprintf(f, ",\n    \"page_cache\": {\"tuned\": {\"cache_size\": %d, \"mmap_size\": %lld, \"mmap_size_requested\": %lld},"
             " \"default\": {\"cache_size\": %d, \"mmap_size\": %lld}}",
          g.aCache[CFG_TUNED], (long long)g.aMmap[CFG_TUNED], (long long)TUNED_MMAP_SIZE,
          g.aCache[CFG_DEFAULT], (long long)g.aMmap[CFG_DEFAULT]);
  fprintf(f, ",\n    \"table_cache\": {");
  for(t=0, i=0; t<NTAB; t++) if( g.aUse[t] ){
    fprintf(f, "%s\"%s\": \"%s\"", i++ ? ", " : "", azKind[t], g.aCfg[t]==CFG_TUNED ? "tuned" : "default");
  }
  fprintf(f, "}");
  fprintf(f, ",\n    \"pragmas\": [");
  for(i=0; i<g.nPragma; i++){ if( i ) fputs(", ", f); jsonStr(f, g.azPragma[i]); }
  fprintf(f, "],\n    \"tables\": [");
  for(t=0, i=0; t<NTAB; t++) if( g.aUse[t] ){ if( i++ ) fputs(", ", f); jsonStr(f, azKind[t]); }
  fprintf(f, "],\n    \"wall_s\": ");
  jsonNum(f, now()-g.tStart);
  fprintf(f, ",\n    \"command\": ");
  {
    sqlite3_str *s = sqlite3_str_new(0);
    char *z;
    for(i=0; i<g.argc; i++) sqlite3_str_appendf(s, "%s%s", i ? " " : "", g.argv[i]);
    z = sqlite3_str_finish(s);
    jsonStr(f, z);
    sqlite3_free(z);
  }
  fprintf(f, ",\n    \"argv\": [");
  for(i=0; i<g.argc; i++){ if( i ) fputs(", ", f); jsonStr(f, g.argv[i]); }
  fprintf(f, "]\n  },\n  \"workloads\": [");
  for(i=0; i<g.nW; i++){
    Work *w = &g.aW[i];
    int n = 0;
    fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
    jsonStr(f, w->zName);
    fprintf(f, ", \"group\": ");
    jsonStr(f, w->zGroup);
    fprintf(f, ", \"title\": ");
    jsonStr(f, w->zTitle);
    fprintf(f, ", \"unit\": ");
    jsonStr(f, w->zUnit);
    fprintf(f, ",\n     \"results\": {");
    for(t=0; t<NTAB; t++){
      Res *a = &w->a[t];
      if( !a->bRan ) continue;
      fprintf(f, "%s\n       \"%s\": {\"seconds\": ", n++ ? "," : "", azKind[t]);
      jsonNum(f, a->sec);
      fprintf(f, ", \"%s\": %lld, \"rate\": ",
              strcmp(w->zUnit, "rows/s")==0 ? "rows" :
              strcmp(w->zUnit, "keys/s")==0 ? "keys" :
              strcmp(w->zUnit, "stmts/s")==0 ? "statements" : "queries",
              (long long)a->nItem);
      jsonNum(f, a->bTimeout ? NAN : a->rate);
      fprintf(f, ", \"ratio\": ");
      jsonNum(f, t==T_SQLITE && a->bRan && !a->bTimeout && hasRatio(w) ? 1.0 : ratioOf(w, t));
      if( t!=T_SQLDEF && t!=T_SQLITE && g.aUse[T_SQLDEF] ){
        fprintf(f, ", \"ratio_default\": ");
        jsonNum(f, ratioDefault(w, t));
      }
      if( (t==T_GFSL || t==T_HASH) && g.aUse[T_SQLIDX] ){
        fprintf(f, ", \"ratio_index\": ");
        jsonNum(f, ratioTo(w, t, T_SQLIDX));
      }
      fprintf(f, ", \"timeout\": %s", a->bTimeout ? "true" : "false");
      if( a->nPlan ){
        fprintf(f, ", \"queries_run\": %lld, \"queries_planned\": %lld",
                (long long)a->nDone, (long long)a->nPlan);
      }
      if( a->nRows ){
        fprintf(f, ", \"rows_returned\": %lld, \"rows_per_s\": ", (long long)a->nRows);
        jsonNum(f, a->sec>0 ? (double)a->nRows/a->sec : NAN);
      }
      if( a->nDone ){
        fprintf(f, ", \"median_s\": ");
        jsonNum(f, a->med);
        fprintf(f, ", \"p99_s\": ");
        jsonNum(f, a->p99);
      }
      if( strcmp(w->zName, "reload")==0 || strcmp(w->zName, "reload_kv")==0 ){
        fprintf(f, ", \"second_query_s\": ");
        jsonNum(f, a->sec2);
      }
      fprintf(f, ", \"check\": [%lld, %lld, %lld], \"plan\": ",
              (long long)a->c[0], (long long)a->c[1], (long long)a->c[2]);
      jsonStr(f, a->zPlan ? a->zPlan : "");
      fputc('}', f);
    }
    fprintf(f, "\n     }}");
  }
  fprintf(f, "\n  ]");
  if( g.bFp ){
    int n = 0;
    fprintf(f, ",\n  \"footprint\": {\"rows\": %lld, \"file_method\": \"%s\", \"tables\": {",
            (long long)g.nRow, g.bDbstat ? "dbstat" : "none");
    for(t=0; t<NTAB; t++){
      const Fp *p = &g.fp[t];
      if( !g.aUse[t] || !p->bRan ) continue;
      fprintf(f, "%s\n    \"%s\": {\"first_answer_s\": ", n++ ? "," : "", azKind[t]);
      jsonNum(f, p->firstSec);
      jsonBytes(f, "rss_bytes", "rss_bytes_per_row", p->rssB);
      jsonBytes(f, "rss_anon_bytes", "rss_anon_bytes_per_row", p->anonB);
      jsonBytes(f, "gpu_free_delta_bytes", "gpu_bytes_per_row", p->gpuFreeB);
      jsonBytes(f, "gpu_store_device_bytes", "gpu_store_bytes_per_row", p->devB);
      jsonBytes(f, "column_set_bytes", "column_set_bytes_per_row", p->colB);
      jsonBytes(f, "file_bytes", "file_bytes_per_row", p->fileB);
      fprintf(f, ", \"file_pages\": ");
      jsonInt(f, p->nPage);
      fprintf(f, ", \"btrees\": ");
      jsonStr(f, p->zBtrees ? p->zBtrees : "");
      fputc('}', f);
    }
    fprintf(f, "\n  }}");
  }
  fprintf(f, "\n}\n");
  if( fclose(f)!=0 ) die("cannot write %s: %s", zPath, strerror(errno));
  fprintf(stderr, "wrote %s\n", zPath);
}
