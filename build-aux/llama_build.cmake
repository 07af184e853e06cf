# cfbench's additions to llama-cpp-python's CMake build of llama.cpp, included after every project() call
# through -DCMAKE_PROJECT_INCLUDE=... (the Makefile's LLAMA_CMAKE_ARGS). Two things:
#
# 1. Extra x86 CPU-backend variants for a GGML_BACKEND_DL=ON build. llama.cpp builds either one CPU
#    backend (libggml-cpu.so, here with the portable AVX2 flags) or, with GGML_CPU_ALL_VARIANTS=ON, all
#    fourteen x86 variants; it has no switch for a subset. Right after ggml/src/CMakeLists.txt has defined
#    its variant functions, and just before it adds the plain CPU backend, the variants named in
#    CFBENCH_GGML_CPU_VARIANTS are added with llama.cpp's own feature lists. Each becomes
#    llama_cpp/lib/libggml-cpu-<name>.so in the wheel; at run time ggml scores every variant against the
#    running CPU and loads the best (cfbench.judges.llama_cpu calls ggml_backend_load_all_from_path),
#    falling back to the plain AVX2 libggml-cpu.so when none scores above zero.
# 2. llama.cpp's "common" library is not built: llama-cpp-python forces it on, but nothing in the Python
#    package loads it (with LLAVA_BUILD=OFF, which drops the multimodal library, its only user here).
if (PROJECT_NAME STREQUAL "llama.cpp")
    set(LLAMA_BUILD_COMMON OFF)  # a normal variable shadows the forced cache entry (policy CMP0077)
endif()
if (NOT PROJECT_NAME STREQUAL "ggml")
    return()
endif()
set(CFBENCH_GGML_CPU_VARIANTS "icelake" CACHE STRING "extra x86 CPU backend variants to build, comma-separated")

# llama.cpp's feature lists (ggml/src/CMakeLists.txt, GGML_CPU_ALL_VARIANTS branch), the ones worth having
set(_cfbench_feats_haswell        SSE42 AVX F16C FMA AVX2 BMI2)
set(_cfbench_feats_skylakex       SSE42 AVX F16C FMA AVX2 BMI2 AVX512)
set(_cfbench_feats_cascadelake    SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VNNI)
set(_cfbench_feats_icelake        SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI)
set(_cfbench_feats_zen4           SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16)
set(_cfbench_feats_alderlake      SSE42 AVX F16C FMA AVX2 BMI2 AVX_VNNI)
# No AMX variant (llama.cpp's sapphirerapids): ggml scores it by cpuid alone, and on this project's Xeon VM,
# which lists amx_tile and amx_int8, it is chosen and then dies with an illegal instruction.

function(_cfbench_add_cpu_variants variable access value list_file)
    get_property(done GLOBAL PROPERTY _CFBENCH_CPU_VARIANTS_DONE)
    if (done OR NOT access STREQUAL "READ_ACCESS" OR NOT list_file MATCHES "ggml/src/CMakeLists.txt$"
        OR NOT COMMAND ggml_add_cpu_backend_variant OR NOT GGML_SYSTEM_ARCH STREQUAL "x86")
        return()
    endif()
    set_property(GLOBAL PROPERTY _CFBENCH_CPU_VARIANTS_DONE TRUE)
    if (NOT GGML_BACKEND_DL OR GGML_CPU_ALL_VARIANTS OR NOT GGML_CPU)
        return()  # variants need dynamic loading; ALL_VARIANTS builds them all anyway
    endif()
    if (DEFINED SKBUILD_PLATLIB_DIR)  # inside the wheel, beside libggml-base.so (not in <site-packages>/bin)
        set(CMAKE_INSTALL_BINDIR "${SKBUILD_PLATLIB_DIR}/llama_cpp/lib")
    endif()
    set(CMAKE_INSTALL_RPATH "$ORIGIN")
    string(REPLACE "," ";" names "${CFBENCH_GGML_CPU_VARIANTS}")
    foreach (name IN LISTS names)
        if (NOT DEFINED _cfbench_feats_${name})
            message(FATAL_ERROR "cfbench: unknown CPU variant '${name}' in CFBENCH_GGML_CPU_VARIANTS")
        endif()
        message(STATUS "cfbench: adding CPU backend variant ${name}")
        ggml_add_cpu_backend_variant(${name} ${_cfbench_feats_${name}})
    endforeach()
endfunction()

variable_watch(GGML_CPU_ALL_VARIANTS _cfbench_add_cpu_variants)
