# Benchmarks: built, never run by ctest.  bench/*.cu need CUDA; bench/*.c are
# SQL-level and link the SQLite library.
if(GPUDS_WITH_CUDA)
  file(GLOB GPUDS_CU_BENCH CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/bench/*.cu)
  foreach(src ${GPUDS_CU_BENCH})
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src})
    target_link_libraries(${name} PRIVATE gpuds_core)
    target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/kernels)
    target_compile_options(${name} PRIVATE --expt-relaxed-constexpr -lineinfo)
    set_target_properties(${name} PROPERTIES CUDA_RUNTIME_LIBRARY Static)
  endforeach()
endif()

# sqlbench (bench/sqlbench*.c): the SQL-level benchmark, built with or
# without CUDA.  It loads gpuds.so at run time (--ext), so it links only SQLite.
find_library(SQLITE3_LIBRARY sqlite3)
if(SQLITE3_LIBRARY)
  file(GLOB GPUDS_SQLBENCH_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/bench/sqlbench*.c)
  add_executable(sqlbench ${GPUDS_SQLBENCH_SRC})
  target_include_directories(sqlbench PRIVATE ${SQLITE3_INCLUDE_DIR})
  target_link_libraries(sqlbench PRIVATE ${SQLITE3_LIBRARY} m)
else()
  message(WARNING "gpuds: libsqlite3 not found: the sqlbench benchmark is not built")
endif()

# sharebench (bench/sharebench.c): connections of one process sharing a
# table's copy, threads, processes; loads gpuds.so at run time.
if(SQLITE3_LIBRARY)
  add_executable(sharebench ${CMAKE_SOURCE_DIR}/bench/sharebench.c)
  target_include_directories(sharebench PRIVATE ${SQLITE3_INCLUDE_DIR})
  target_link_libraries(sharebench PRIVATE ${SQLITE3_LIBRARY} Threads::Threads)
endif()
