include(GoogleTest)

# warp_add_test(NAME SRCS a.cc b.cc DEPS lib1 lib2 [LABELS l1 l2])
# One GoogleTest binary, its cases discovered into ctest.
function(warp_add_test name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} warp_testing GTest::gmock GTest::gtest_main)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  gtest_discover_tests(${name}
    PROPERTIES LABELS "${ARG_LABELS}"
    ENVIRONMENT "WARP_BIN_DIR=${CMAKE_BINARY_DIR}/bin;WARP_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
    DISCOVERY_TIMEOUT 60)
endfunction()

# warp_add_bench(NAME SRCS ...): built with the tests, never run by ctest.
function(warp_add_bench name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
endfunction()
