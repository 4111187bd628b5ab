# The bundled native program with planted replicas the native agent must find (no ojx dependency of its own): an
# example (scripts/demo.sh --native) and the subject of the agent's end-to-end tests, so included by examples/
# and by tests/, whichever comes first, and built once.
include_guard(GLOBAL)
add_executable(native_replicas ${CMAKE_CURRENT_LIST_DIR}/native_replicas.cpp)
# -O2 -g whatever the build type: frames need line information, and the reads stay 8-byte loads.
target_compile_options(native_replicas PRIVATE -O2 -g -fno-omit-frame-pointer)
target_compile_features(native_replicas PRIVATE cxx_std_20)
target_link_libraries(native_replicas PRIVATE ojx_project_flags Threads::Threads)
