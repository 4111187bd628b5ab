# Installs the build tree into a scratch prefix, then configures, builds and runs tests/consumer against it, with
# the build's compiler and with Clang where installed.
# Invoked by ctest with OJX_SOURCE_DIR, OJX_BUILD_DIR and WORK_DIR.
file(REMOVE_RECURSE "${WORK_DIR}")
function(run_step what)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
    if(NOT result EQUAL 0)
        message(FATAL_ERROR "${what} failed (${result}):\n${output}")
    endif()
    message(STATUS "${what}: ok\n${output}")
endfunction()
run_step("install" "${CMAKE_COMMAND}" --install "${OJX_BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
# With the compiler of the build, and with Clang where it is installed (Debian's, which CI installs for the
# fuzzers): a consumer may use either.
set(compilers default)
find_program(clang_compiler clang++)
if(clang_compiler)
    list(APPEND compilers "${clang_compiler}")
endif()
foreach(compiler IN LISTS compilers)
    set(build "${WORK_DIR}/build-default")
    set(choose)
    if(NOT compiler STREQUAL "default")
        set(build "${WORK_DIR}/build-clang")
        set(choose "-DCMAKE_CXX_COMPILER=${compiler}")
    endif()
    run_step("configure consumer (${compiler})" "${CMAKE_COMMAND}" -S "${OJX_SOURCE_DIR}/tests/consumer" -B "${build}"
        "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" -DCMAKE_BUILD_TYPE=Release ${choose})
    run_step("build consumer (${compiler})" "${CMAKE_COMMAND}" --build "${build}")
    run_step("run consumer (${compiler})" "${build}/consumer")
endforeach()
