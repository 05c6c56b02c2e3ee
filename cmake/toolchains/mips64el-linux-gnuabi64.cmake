# Cross toolchain: mips64el-linux-gnuabi64 (Debian's gcc-mips64el-linux-gnuabi64 package, with g++ and libc6-dev-*-cross).
# For a build of the target parts only (docs/platforms.md):
#   cmake -S . -B build-mips64el-linux-gnuabi64 -DRHEAPER_TARGET_ONLY=ON \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/mips64el-linux-gnuabi64.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR mips64)
set(CMAKE_C_COMPILER mips64el-linux-gnuabi64-gcc)
set(CMAKE_CXX_COMPILER mips64el-linux-gnuabi64-g++)
set(CMAKE_FIND_ROOT_PATH /usr/mips64el-linux-gnuabi64)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# gcc emits no .eh_frame for C on MIPS unless asked, and the runtime's stack
# walk steps through every MIPS64 frame by CFI (runtime/rh_arch.h), the
# runtime's own shims included
set(CMAKE_C_FLAGS_INIT "-fasynchronous-unwind-tables")
set(CMAKE_CXX_FLAGS_INIT "-fasynchronous-unwind-tables")
