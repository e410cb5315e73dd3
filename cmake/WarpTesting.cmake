include(GoogleTest)

# warp_add_test(NAME SRCS a.cc b.cc DEPS lib1 lib2 [LABELS l1 l2])
# One GoogleTest binary, its cases discovered into ctest.
function(warp_add_test name)
  # BARE: without warp_testing (and so without the whole stack it links), for
  # tests that must show their library stands alone (kernels: no gRPC, no CLI).
  cmake_parse_arguments(ARG "BARE" "" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  if(NOT ARG_BARE)
    target_link_libraries(${name} PRIVATE warp_testing)
  endif()
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  # Where CLI tests find the binaries and golden tests the docs; the
  # environment variables of the same names override these.
  target_compile_definitions(${name} PRIVATE
    WARP_TEST_BIN_DIR="${CMAKE_BINARY_DIR}/bin" WARP_TEST_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  if(ARG_LABELS)
    gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" DISCOVERY_TIMEOUT 60)
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
  endif()
endfunction()

# warp_add_bench(NAME SRCS ...): built into BUILD/bench, never run by ctest.
# Benchmarks are not in `all`: no test runs them, and `make check` builds `all`
# (71 s less on CI); `make build` and `make bench` build warp_benches too.
function(warp_add_bench name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} EXCLUDE_FROM_ALL ${ARG_SRCS})
  if(NOT TARGET warp_benches)
    add_custom_target(warp_benches)
  endif()
  add_dependencies(warp_benches ${name})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
endfunction()
