# libFuzzer target for the profile and probe-set JSON loaders. The project builds with GCC;
# libFuzzer needs clang, so the loader's sources (no libdw, no libbpf) are compiled here
# with clang++ directly.
find_program(PROFILE_FUZZ_CXX NAMES clang++ clang++-14)
execute_process(
  COMMAND ${PROFILE_FUZZ_CXX} -print-file-name=libclang_rt.fuzzer-x86_64.a
  OUTPUT_VARIABLE fuzz_rt OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT PROFILE_FUZZ_CXX OR NOT EXISTS "${fuzz_rt}")
  message(STATUS "profile fuzzer: clang++ or libclang-rt-14-dev missing, fuzz test skipped")
  return()
endif()

get_target_property(nlohmann_inc nlohmann_json::nlohmann_json INTERFACE_INCLUDE_DIRECTORIES)
set(fuzzer ${CMAKE_CURRENT_BINARY_DIR}/profile-json-fuzzer)
set(fuzz_src ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_profile_json.cpp)
set(fuzz_inc -I${PROJECT_SOURCE_DIR}/daemon)
foreach(dir IN LISTS nlohmann_inc)
  list(APPEND fuzz_inc -I${dir})
endforeach()
add_custom_command(
  OUTPUT ${fuzzer}
  COMMAND ${PROFILE_FUZZ_CXX} -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined
          -fno-sanitize-recover=undefined ${fuzz_inc} ${fuzz_src} ${CEPHSCOPE_PROFILE_JSON_SOURCES}
          -o ${fuzzer}
  DEPENDS ${fuzz_src} ${CEPHSCOPE_PROFILE_JSON_SOURCES}
  COMMENT "libFuzzer profile_json_fuzzer"
  VERBATIM)
add_custom_target(profile_json_fuzzer ALL DEPENDS ${fuzzer})

# New inputs go to the build tree; the seeds in the source tree stay read-only.
set(fuzz_corpus ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus)
file(MAKE_DIRECTORY ${fuzz_corpus})
add_test(NAME profile_fuzz
  COMMAND ${fuzzer} -max_total_time=20 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
          ${fuzz_corpus} ${FIXTURE_DIR}/corpus)
set_tests_properties(profile_fuzz PROPERTIES LABELS "unit;fuzz" TIMEOUT 120)
