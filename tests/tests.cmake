# Everything ctest runs.  Conventions (add a file, get a test):
#   tests/test_*.c        host unit tests, linked with gpuds_core
#   tests/gpu/test_*.cu   GPU tests (label gpu); exit 77 = SKIPPED (no GPU)
#   tests/test_*.py       SQL-level tests through Python's sqlite3, given the
#                         path of gpuds.so in GPUDS_EXT; exit 77 = SKIPPED
#   tests/sql/*.sql       shell scripts, run by tests/run_sql.sh (differential)

# A Python whose sqlite3 can load extensions: Debian's /usr/bin/python3 on
# the development and CI machines (the pyenv one first on PATH cannot), the
# python3 on PATH on the GPU machine.  The first candidate that can is used.
if(NOT GPUDS_PYTHON)
  find_program(GPUDS_PY_PATH NAMES python3)
  foreach(py /usr/bin/python3 ${GPUDS_PY_PATH})
    if(EXISTS ${py} AND NOT GPUDS_PYTHON)
      execute_process(COMMAND ${py} -c
        "import sqlite3; sqlite3.connect(':memory:').enable_load_extension(True)"
        RESULT_VARIABLE py_rc OUTPUT_QUIET ERROR_QUIET)
      if(py_rc EQUAL 0)
        set(GPUDS_PYTHON ${py} CACHE FILEPATH "Python able to load SQLite extensions")
      endif()
    endif()
  endforeach()
  if(NOT GPUDS_PYTHON)
    message(WARNING "gpuds: no python3 whose sqlite3 can load extensions: SQL tests will fail")
    set(GPUDS_PYTHON /usr/bin/python3)
  endif()
endif()
message(STATUS "gpuds: SQL tests use ${GPUDS_PYTHON}")
find_program(GPUDS_SQLITE3_SHELL NAMES sqlite3)

file(GLOB GPUDS_C_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/test_*.c)
foreach(src ${GPUDS_C_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE gpuds_core)
  # a test of an ext/ piece that needs no SQLite (e.g. test_overlay.c),
  # linked with the piece (gpuds_common, through gpuds_core, has what such
  # pieces use: the key sort)
  string(REGEX REPLACE "^test_" "" piece ${name})
  if(EXISTS ${CMAKE_SOURCE_DIR}/ext/${piece}.c)
    target_sources(${name} PRIVATE ${CMAKE_SOURCE_DIR}/ext/${piece}.c)
    target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/ext)
  endif()
  if(GPUDS_WITH_CUDA)
    set_target_properties(${name} PROPERTIES LINKER_LANGUAGE CUDA)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS host SKIP_RETURN_CODE 77)
endforeach()
# test_host_stores's harness (the reference, the checks, fault injection)
target_sources(test_host_stores PRIVATE ${CMAKE_SOURCE_DIR}/tests/c/storetest.c)

# The B+tree's leaf slabs (backend/host_ordered_node.c) serve trees of 2048
# leaves or more, which the randomized store tests rarely build: run them
# again with a B+tree whose every tree of 2 leaves or more uses slabs (its
# own copy of backend/host_ordered*.c, which the linker takes before
# gpuds_core's).
file(GLOB GPUDS_BTREE_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/backend/host_ordered*.c)
add_executable(test_host_stores_slab ${CMAKE_SOURCE_DIR}/tests/test_host_stores.c
               ${CMAKE_SOURCE_DIR}/tests/c/storetest.c ${GPUDS_BTREE_SRC})
target_compile_definitions(test_host_stores_slab PRIVATE BT_SLAB_MIN_LEAVES=2)
target_link_libraries(test_host_stores_slab PRIVATE gpuds_core)
if(GPUDS_WITH_CUDA)
  set_target_properties(test_host_stores_slab PROPERTIES LINKER_LANGUAGE CUDA)
endif()
add_test(NAME test_host_stores_slab COMMAND test_host_stores_slab)
set_tests_properties(test_host_stores_slab PROPERTIES LABELS host SKIP_RETURN_CODE 77)

file(GLOB GPUDS_GPU_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/gpu/test_*.cu)
foreach(src ${GPUDS_GPU_TESTS})
  get_filename_component(name ${src} NAME_WE)
  set(name gpu_${name})
  if(GPUDS_WITH_CUDA)
    add_executable(${name} ${src})
    target_link_libraries(${name} PRIVATE gpuds_core)
    target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/kernels ${CMAKE_SOURCE_DIR}/tests)
    target_compile_options(${name} PRIVATE --expt-relaxed-constexpr -lineinfo)
    set_target_properties(${name} PROPERTIES CUDA_RUNTIME_LIBRARY Static)
    # The default (full) size; "small" is the compute-sanitizer size.
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES TIMEOUT 900)
  else()
    # Host-only build: the test exists and reports SKIPPED, never passed.
    add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} -E echo "SKIPPED: built without CUDA")
    set_tests_properties(${name} PROPERTIES SKIP_REGULAR_EXPRESSION "SKIPPED")
  endif()
  set_tests_properties(${name} PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
endforeach()

file(GLOB GPUDS_PY_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/test_*.py)
foreach(src ${GPUDS_PY_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_test(NAME ${name} COMMAND ${GPUDS_PYTHON} ${src})
  if(name MATCHES "gpu")
    set(py_labels "sql;gpu")
  else()
    set(py_labels sql)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${py_labels}" SKIP_RETURN_CODE 77
    ENVIRONMENT "GPUDS_EXT=$<TARGET_FILE:gpuds>;PYTHONDONTWRITEBYTECODE=1")
endforeach()

# test_gpumem fills the GPU to a level it measures first: other tests'
# GPU memory coming and going beside it would change what "full" leaves.
set_tests_properties(test_gpumem PROPERTIES RUN_SERIAL TRUE)

# The differential test again with a host mirror over the host store: runs
# the mirror's routing (store.c) where there is no GPU.
add_test(NAME test_differential_mirror COMMAND ${GPUDS_PYTHON}
         ${CMAKE_SOURCE_DIR}/tests/test_differential.py)
set_tests_properties(test_differential_mirror PROPERTIES LABELS sql SKIP_RETURN_CODE 77
  ENVIRONMENT "GPUDS_EXT=$<TARGET_FILE:gpuds>;GPUDS_MIRROR=1;PYTHONDONTWRITEBYTECODE=1")

# Keys in ascending order (the append paths) with the mirror's routing too.
add_test(NAME test_append_mirror COMMAND ${GPUDS_PYTHON}
         ${CMAKE_SOURCE_DIR}/tests/test_append.py)
set_tests_properties(test_append_mirror PROPERTIES LABELS sql SKIP_RETURN_CODE 77
  ENVIRONMENT "GPUDS_EXT=$<TARGET_FILE:gpuds>;GPUDS_MIRROR=1;PYTHONDONTWRITEBYTECODE=1")

# Reopening with the mirror: a gpuhash table with its (ordered) mirror plans
# ranges as gfsl does, yet while its build runs a short range is still
# answered from the runs on disk as key lookups (vtab.c).
add_test(NAME test_lazyload_mirror COMMAND ${GPUDS_PYTHON}
         ${CMAKE_SOURCE_DIR}/tests/test_lazyload.py)
set_tests_properties(test_lazyload_mirror PROPERTIES LABELS sql SKIP_RETURN_CODE 77
  ENVIRONMENT "GPUDS_EXT=$<TARGET_FILE:gpuds>;GPUDS_MIRROR=1;PYTHONDONTWRITEBYTECODE=1")

file(GLOB GPUDS_SQL_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/sql/*.sql)
foreach(src ${GPUDS_SQL_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_test(NAME sql_${name} COMMAND sh ${CMAKE_SOURCE_DIR}/tests/run_sql.sh
           ${GPUDS_SQLITE3_SHELL} $<TARGET_FILE:gpuds> ${src})
  set_tests_properties(sql_${name} PROPERTIES LABELS sql SKIP_RETURN_CODE 77)
endforeach()

# Fault injection at the SQL level (tests/c/faults.c): a program of its own,
# linked with the system's SQLite, that loads gpuds.so and fails the N-th
# allocation of a workload for every N.
find_library(GPUDS_SQLITE3_LIB sqlite3)
if(GPUDS_SQLITE3_LIB)
  add_executable(test_faults ${CMAKE_SOURCE_DIR}/tests/c/faults.c)
  target_include_directories(test_faults PRIVATE ${SQLITE3_INCLUDE_DIR})
  target_link_libraries(test_faults PRIVATE ${GPUDS_SQLITE3_LIB})
  add_test(NAME test_faults COMMAND test_faults $<TARGET_FILE:gpuds>)
  set_tests_properties(test_faults PROPERTIES LABELS sql SKIP_RETURN_CODE 77 TIMEOUT 900)
  # The same on the CUDA stores (SKIPPED without a usable GPU); the driver's
  # own allocations are never failed (faults.c, fromDriver).
  add_test(NAME test_faults_cuda COMMAND test_faults $<TARGET_FILE:gpuds> 300)
  set_tests_properties(test_faults_cuda PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 900
                       ENVIRONMENT GPUDS_FAULTS_BACKEND=cuda)
  # And every GPU (and pinned) allocation of the stores failed in turn
  # (SKIPPED without a usable GPU or without CUDA stores in gpuds.so).
  add_test(NAME test_faults_device COMMAND test_faults $<TARGET_FILE:gpuds> 2000 device)
  set_tests_properties(test_faults_device PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 900)
  # No row-scaled array through SQLite's allocator (tests/c/bigalloc.c):
  # SQLite's allocator, capped at 1 MiB a block, under tables of 1.1e6 rows.
  add_executable(test_bigalloc ${CMAKE_SOURCE_DIR}/tests/c/bigalloc.c)
  target_include_directories(test_bigalloc PRIVATE ${SQLITE3_INCLUDE_DIR})
  target_link_libraries(test_bigalloc PRIVATE ${GPUDS_SQLITE3_LIB})
  add_test(NAME test_bigalloc COMMAND test_bigalloc $<TARGET_FILE:gpuds>)
  set_tests_properties(test_bigalloc PROPERTIES LABELS sql SKIP_RETURN_CODE 77 TIMEOUT 900)
endif()
