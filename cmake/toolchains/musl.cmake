# musl toolchain: Debian's musl-gcc (package musl-tools), x86_64 musl.
# For a build of the target parts only (docs/platforms.md):
#   cmake -S . -B build-musl -DRHEAPER_TARGET_ONLY=ON \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/musl.cmake
# musl-gcc has no C++ library: rheaper-c++ of this build is not usable.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER musl-gcc)
