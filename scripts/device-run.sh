#!/usr/bin/env bash
# Run on the GPU machine (the device tool), from the repository root, after
# ../shared/device/stage.sh staged SQLite into .device/:
#   scripts/device-run.sh test    build, ctest (all), compute-sanitizer
#   scripts/device-run.sh bench   bench_gfsl, bench_hash, sqlbench
#   scripts/device-run.sh sql     build, GPU tests, sqlbench (1M rows)
#   scripts/device-run.sh column  build, sqlbench's column group (issue #12; 10M rows)
#                                 with the indexed ordinary table and bulk insert,
#                                 then DuckDB on the same rows (its wheel in .wheels/:
#                                 carry it), side by side; ROWS, BUDGET override
#   scripts/device-run.sh arch    a build for another GPU generation (sm_80 only):
#                                 it must fall back to the host backend, saying
#                                 why, and pass every test; cuobjdump lists the
#                                 default build's architectures
#   scripts/device-run.sh faults  test_faults on the CUDA backend under cuda-gdb
#                                 (a backtrace where an allocation failure crashes)
#   (CMAKE_ARGS=-DGPUDS_CUDA_ARCH=native builds for the machine's GPU only: faster)
#   scripts/device-run.sh subset  build, ctest, then sqlbench at 10^7 rows in WAL on the
#                                 workloads of issue #13's reads, reopening, footprint
#                                 and range DELETE, and three column workloads
#                                 (ROWS, BUDGET override; ~7 min on an H100; test_faults_cuda
#                                 is left out: run it apart, it takes minutes)
#   scripts/device-run.sh quick   build, GPU tests, sanitizers, short benchmarks
#                                 (every step time-bounded: one call of < 10 min)
#   scripts/device-run.sh gpumem  build, the GPU memory cap's tests (gpu_test_gpumem,
#                                 memcheck of it, test_gpumem, test_gpumem_host,
#                                 test_faults in device mode: no statement may fail)
#   scripts/device-run.sh gpumem-bench  build, bench/gpumem.py: sqlbench's point,
#                                 range and column workloads under a cap of half of
#                                 what the tables need, beside the uncapped run
#                                 (ROWS, QUERIES, BUDGET override; 10^7 rows)
# Logs and results go to $OUT (or ./device-out).
set -uo pipefail
OUT=${OUT:-device-out}
mkdir -p "$OUT"
source .device/env.sh >/dev/null
export LD_LIBRARY_PATH=/opt/sqlite-deb/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
B=${B:-build-gpu}          # build folder (B=/tmp/x keeps it out of the tree)
log() { echo "== $(date +%T) $*" | tee -a "$OUT/summary.txt"; }

build() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$OUT/summary.txt"
  cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} > "$OUT/build.log" 2>&1 &&
  cmake --build $B -j"$(nproc)" >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  log "built"
}

case "${1:-test}" in
  subset)
    build
    log "ctest"
    timeout 195 ctest --test-dir $B -j12 --timeout 190 -E "test_faults_cuda|gpu_test_cols" > "$OUT/ctest.log" 2>&1
    grep -E "tests passed|\*\*\*|Failed" "$OUT/ctest.log" | head -14 | tee -a "$OUT/summary.txt"
    log "gpu_test_cols (timings: alone on the GPU)"
    $B/gpu_test_cols > "$OUT/gpu_test_cols.log" 2>&1; grep -E "timing|PASS|FAIL" "$OUT/gpu_test_cols.log" | tee -a "$OUT/summary.txt"
    log "compute-sanitizer on the column kernels"
    timeout 80 compute-sanitizer --tool memcheck --leak-check full $B/gpu_test_cols small > "$OUT/memcheck.log" 2>&1 &
    timeout 80 compute-sanitizer --tool racecheck $B/gpu_test_cols race > "$OUT/racecheck.log" 2>&1; wait
    grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/memcheck.log" "$OUT/racecheck.log" | tee -a "$OUT/summary.txt"
    log "sqlbench subset, ${ROWS:-10000000} rows, WAL"
    timeout 190 $B/sqlbench --ext $B/gpuds --rows "${ROWS:-10000000}" --queries 100000 --budget "${BUDGET:-0.4}" \
      --baseline tuned --only footprint,point,range,desc,col_eq,col_text_eq,col_top_desc,delete \
      --pragma journal_mode=wal --json "$OUT/final.json" > "$OUT/final.log" 2>&1
    sed -n '/^workload/,$p' "$OUT/final.log" | tee -a "$OUT/summary.txt"
    ;;
  arch)
    build
    log "architectures in the default build"
    cuobjdump --list-elf $B/gpuds.so | sed 's/.*\.\(sm_[0-9a-z]*\)\..*/\1/' | sort | uniq -c | tee -a "$OUT/summary.txt"
    cuobjdump --list-ptx $B/gpuds.so | sed 's/.*\.\(sm_[0-9a-z]*\)\..*/\1/' | sort | uniq -c | sed 's/$/ (ptx)/' | tee -a "$OUT/summary.txt"
    log "build for sm_80 only, every test with the fallback expected"
    cmake -S . -B $B-sm80 -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=80-real > "$OUT/build-sm80.log" 2>&1 &&
    cmake --build $B-sm80 -j"$(nproc)" >> "$OUT/build-sm80.log" 2>&1 || { tail -30 "$OUT/build-sm80.log"; exit 1; }
    GPUDS_EXPECT_FALLBACK=1 ctest --test-dir $B-sm80 --output-on-failure -j8 --timeout 600 > "$OUT/ctest-sm80.log" 2>&1
    grep -E "backend host|tests passed|Failed|Skipped" "$OUT/ctest-sm80.log" | tail -12 | tee -a "$OUT/summary.txt"
    GPUDS_EXT=$B-sm80/gpuds.so python3 tests/test_backend_info.py | tee -a "$OUT/summary.txt"
    ;;
  test)
    build
    log "ctest"
    ctest --test-dir $B --output-on-failure -j6 --timeout 900 > "$OUT/ctest.log" 2>&1
    tail -25 "$OUT/ctest.log" | tee -a "$OUT/summary.txt"
    log "test_persist*.py on the cuda backend"
    for t in tests/test_persist*.py; do
      GPUDS_BACKEND=auto GPUDS_EXT=$B/gpuds.so python3 $t >> "$OUT/persist-cuda.log" 2>&1
      tail -1 "$OUT/persist-cuda.log" | sed "s|^|$(basename $t): |" | tee -a "$OUT/summary.txt"
    done
    log "test_reliability with the machine's own SQLite (>= 3.44: xIntegrity)"
    env -u LD_LIBRARY_PATH GPUDS_EXT=$B/gpuds.so python3 -c 'import sqlite3; print("python sqlite", sqlite3.sqlite_version)' | tee -a "$OUT/summary.txt"
    env -u LD_LIBRARY_PATH GPUDS_EXT=$B/gpuds.so python3 tests/test_reliability.py > "$OUT/reliability-sys.log" 2>&1
    grep -E "^FAIL|^SKIP|passed" "$OUT/reliability-sys.log" | tail -8 | tee -a "$OUT/summary.txt"
    log "compute-sanitizer"
    {
      for t in "gpu_test_hash small" "gpu_test_gfsl tiny" "gpu_test_cols small"; do
        set -- $t
        echo "--- memcheck $t"; compute-sanitizer --tool memcheck --leak-check full $B/$1 $2 2>&1 | tail -6
      done
      echo "--- racecheck gpu_test_hash small"; compute-sanitizer --tool racecheck $B/gpu_test_hash small 2>&1 | tail -4
      echo "--- racecheck gpu_test_gfsl micro"; compute-sanitizer --tool racecheck $B/gpu_test_gfsl micro 2>&1 | tail -4
      echo "--- racecheck gpu_test_cols race"; compute-sanitizer --tool racecheck $B/gpu_test_cols race 2>&1 | tail -4
    } > "$OUT/sanitizer.log" 2>&1
    grep -E "^---|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|PASS|FAIL" "$OUT/sanitizer.log" | tee -a "$OUT/summary.txt"
    ;;
  faults)
    build
    log "test_faults, CUDA backend, under cuda-gdb"
    GPUDS_FAULTS_BACKEND=cuda timeout 300 cuda-gdb -batch -ex run -ex bt \
      --args $B/test_faults $B/gpuds.so ${RUNS:-300} > "$OUT/faults-cuda.log" 2>&1
    grep -E "passed|FAIL|SIGSEGV|SIGABRT|^#[0-9]" "$OUT/faults-cuda.log" | head -40 | tee -a "$OUT/summary.txt"
    ;;
  quick)
    build
    log "ctest -L gpu"
    timeout 240 ctest --test-dir $B --output-on-failure -L gpu -j3 > "$OUT/ctest.log" 2>&1
    tail -15 "$OUT/ctest.log" | tee -a "$OUT/summary.txt"
    log "compute-sanitizer"
    {
      echo "--- memcheck gpu_test_hash small"; timeout 60 compute-sanitizer --tool memcheck --leak-check full $B/gpu_test_hash small 2>&1 | tail -4
      echo "--- memcheck gpu_test_gfsl tiny"; timeout 60 compute-sanitizer --tool memcheck --leak-check full $B/gpu_test_gfsl tiny 2>&1 | tail -4
      echo "--- racecheck gpu_test_gfsl micro"; timeout 60 compute-sanitizer --tool racecheck $B/gpu_test_gfsl micro 2>&1 | tail -4
    } > "$OUT/sanitizer.log" 2>&1
    grep -E "^---|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|PASS|FAIL" "$OUT/sanitizer.log" | tee -a "$OUT/summary.txt"
    log "bench_gfsl --quick"
    timeout 60 $B/bench_gfsl --quick "$OUT/bench_gfsl.csv" > "$OUT/bench_gfsl.log" 2>&1; tail -22 "$OUT/bench_gfsl.log"
    log "bench_hash 2^26"
    timeout 60 $B/bench_hash "$OUT/bench_hash.csv" 26 26 > "$OUT/bench_hash.log" 2>&1; tail -14 "$OUT/bench_hash.log"
    log "sqlbench"
    timeout 150 $B/sqlbench --ext $B/gpuds --rows "${ROWS:-1000000}" --queries "${QUERIES:-100000}" --budget 2 \
      --json "$OUT/sqlbench.json" > "$OUT/sqlbench.log" 2>&1; tail -30 "$OUT/sqlbench.log"
    ;;
  gpumem)
    build
    log "gpu_test_gpumem"
    timeout 90 $B/gpu_test_gpumem > "$OUT/gpu_test_gpumem.log" 2>&1
    grep -E "^FAIL|^device|PASSED|FAILED|SKIPPED|account|threads|under a cap" "$OUT/gpu_test_gpumem.log" | tee -a "$OUT/summary.txt"
    timeout 90 compute-sanitizer --tool memcheck --leak-check full $B/gpu_test_gpumem small > "$OUT/gpumem-memcheck.log" 2>&1
    grep -E "ERROR SUMMARY|LEAK SUMMARY|PASSED|FAILED" "$OUT/gpumem-memcheck.log" | tee -a "$OUT/summary.txt"
    log "test_gpumem.py (caps, two threads, a full GPU)"
    GPUDS_EXT=$B/gpuds.so timeout 240 python3 tests/test_gpumem.py > "$OUT/test_gpumem.log" 2>&1
    grep -E "^FAIL|^  |^no cap|passed|SKIPPED" "$OUT/test_gpumem.log" | head -40 | tee -a "$OUT/summary.txt"
    log "test_gpumem_host.py (every store call failed in turn, on the GPU stores)"
    GPUDS_EXT=$B/gpuds.so timeout 120 python3 tests/test_gpumem_host.py > "$OUT/test_gpumem_host.log" 2>&1
    grep -E "^FAIL|calls|passed" "$OUT/test_gpumem_host.log" | head -20 | tee -a "$OUT/summary.txt"
    log "test_faults device (every GPU allocation failed in turn; no statement may fail)"
    timeout 150 $B/test_faults $B/gpuds.so ${RUNS:-2000} device > "$OUT/faults-device.log" 2>&1
    grep -E "^FAIL|workload|passed" "$OUT/faults-device.log" | head -24 | tee -a "$OUT/summary.txt"
    ;;
  gpumem-bench)
    build
    log "bench/gpumem.py, ${ROWS:-10000000} rows"
    timeout 480 python3 bench/gpumem.py --sqlbench $B/sqlbench --ext $B/gpuds --rows "${ROWS:-10000000}" \
      --queries "${QUERIES:-100000}" --budget "${BUDGET:-1}" --json "$OUT/gpumem.json" --md "$OUT/gpumem.md" \
      > "$OUT/gpumem-bench.log" 2>&1
    if [ -s "$OUT/gpumem.md" ]; then tee -a "$OUT/summary.txt" < "$OUT/gpumem.md"; else tail -30 "$OUT/gpumem-bench.log"; fi
    grep MISMATCH "$OUT/gpumem-bench.log"
    ;;
  sql)
    build
    log "ctest -L gpu"
    timeout 200 ctest --test-dir $B --output-on-failure -L gpu -j3 > "$OUT/ctest.log" 2>&1
    tail -12 "$OUT/ctest.log" | tee -a "$OUT/summary.txt"
    log "sqlbench"
    timeout 130 $B/sqlbench --ext $B/gpuds --rows "${ROWS:-1000000}" --queries "${QUERIES:-100000}" --budget 2 \
      --json "$OUT/sqlbench.json" > "$OUT/sqlbench.log" 2>&1; cat "$OUT/sqlbench.log"
    ;;
  column)
    build
    log "sqlbench column group, ${ROWS:-10000000} rows"
    DUMP=${DUMP:-/tmp/sqlbench-dump}
    rm -rf "$DUMP"
    timeout 420 $B/sqlbench --ext $B/gpuds --rows "${ROWS:-10000000}" --queries "${QUERIES:-100000}" \
      --budget "${BUDGET:-2}" --baseline tuned --index-columns --only insert_random,column \
      --dump "$DUMP" --json "$OUT/column.json" > "$OUT/column.log" 2>&1
    sed -n '/^sqlbench: gpuds backend/,$p' "$OUT/column.log"; grep MISMATCH "$OUT/column.log"
    log "duckdb"
    if ! python3 -c 'import duckdb' 2>/dev/null; then
      python3 -m pip install -q --target /tmp/ddb-site --no-index --find-links .wheels duckdb \
        > "$OUT/duckdb-install.log" 2>&1 || tail -5 "$OUT/duckdb-install.log"
      export PYTHONPATH=/tmp/ddb-site${PYTHONPATH:+:$PYTHONPATH}
    fi
    timeout 170 python3 bench/duckdb_bench.py "$DUMP" --budget "${BUDGET:-2}" --sqlbench "$OUT/column.json" \
      --merge "$OUT/column-duckdb.json" --json "$OUT/duckdb.json" > "$OUT/duckdb.log" 2>&1; cat "$OUT/duckdb.log"
    python3 bench/plot_sqlbench.py "$OUT/column-duckdb.json" -o "$OUT" --md "$OUT/column.md" 2>&1 | tail -3
    ;;
  bench)
    build
    log "bench_gfsl"
    $B/bench_gfsl "$OUT/bench_gfsl.csv" > "$OUT/bench_gfsl.log" 2>&1; tail -30 "$OUT/bench_gfsl.log"
    log "bench_hash"
    $B/bench_hash "$OUT/bench_hash.csv" 27 20 > "$OUT/bench_hash.log" 2>&1; tail -30 "$OUT/bench_hash.log"
    log "sqlbench"
    $B/sqlbench --ext $B/gpuds --rows "${ROWS:-2000000}" --queries "${QUERIES:-200000}" \
      --json "$OUT/sqlbench.json" > "$OUT/sqlbench.log" 2>&1; tail -40 "$OUT/sqlbench.log"
    ;;
esac
log "done"
