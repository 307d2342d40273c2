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
