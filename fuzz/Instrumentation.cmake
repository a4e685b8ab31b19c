# Included by the top-level CMakeLists.txt before any target is defined when
# MOSAIC_ENABLE_FUZZING is ON. Every target of the project is then built for
# libFuzzer (coverage feedback), with AddressSanitizer and
# UndefinedBehaviorSanitizer (every report fatal, so that libFuzzer keeps the
# input), and with our assertions on. Debian's libMLIR.so, built without
# either, is linked as it is: the fuzzer sees coverage of our code only, and
# MLIR's own assertions stay off.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR
    "MOSAIC_ENABLE_FUZZING needs clang and libFuzzer: configure with "
    "-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 (Debian "
    "packages clang-22 and libclang-rt-22-dev)")
endif()

# -O1 after the build type's -O3: sanitized code compiles faster, and most
# of a run is spent in the uninstrumented libMLIR anyway. -UNDEBUG after the
# build type's -DNDEBUG turns our assert()s and llvm_unreachable()s on; no
# LLVM or MLIR header changes its layout with NDEBUG (LLVM's ABI-breaking
# checks are fixed by llvm/Config/abi-breaking.h), so this mixes safely with
# the release libMLIR.so.
add_compile_options(
  -fsanitize=fuzzer-no-link,address,undefined
  -fno-sanitize-recover=all
  -fno-omit-frame-pointer
  -gline-tables-only
  -O1
  -UNDEBUG)
add_link_options(-fsanitize=address,undefined)
