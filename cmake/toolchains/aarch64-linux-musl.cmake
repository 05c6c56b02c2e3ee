# musl toolchain for AArch64: Debian's aarch64-linux-musl-gcc (package
# musl-dev:arm64, with dpkg's arm64 architecture added, driving
# gcc-aarch64-linux-gnu). For a build of the target parts only (docs/platforms.md):
#   cmake -S . -B build-aarch64-musl -DRHEAPER_TARGET_ONLY=ON \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-musl.cmake
# musl has no C++ library here: rheaper-c++ of this build is not usable; the
# dynamic loader (package musl:arm64) is not installed either: link -static.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-musl-gcc)
