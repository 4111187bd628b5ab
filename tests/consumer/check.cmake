# Installs the build tree into a scratch prefix, then configures, builds and runs tests/consumer against it.
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
run_step("configure consumer" "${CMAKE_COMMAND}" -S "${OJX_SOURCE_DIR}/tests/consumer" -B "${WORK_DIR}/build"
    "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" -DCMAKE_BUILD_TYPE=Release)
run_step("build consumer" "${CMAKE_COMMAND}" --build "${WORK_DIR}/build")
run_step("run consumer" "${WORK_DIR}/build/consumer")
