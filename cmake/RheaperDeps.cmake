# RheaperDeps.cmake: finds what the converter needs, or says what to install.
#
# Defines the imported targets rheaper::sqlite3 and rheaper::libdw. When one is
# missing, configuration stops with the exact Debian package line to run. The
# runtime linked into profiled programs needs none of this: only libc.

set(_rh_missing "")

find_package(SQLite3 QUIET)
if(SQLite3_FOUND)
  add_library(rheaper::sqlite3 INTERFACE IMPORTED)
  target_link_libraries(rheaper::sqlite3 INTERFACE SQLite::SQLite3)
else()
  list(APPEND _rh_missing libsqlite3-dev)
endif()

find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(RH_LIBDW QUIET IMPORTED_TARGET libdw)
endif()
if(RH_LIBDW_FOUND)
  add_library(rheaper::libdw INTERFACE IMPORTED)
  target_link_libraries(rheaper::libdw INTERFACE PkgConfig::RH_LIBDW)
else()
  if(NOT PkgConfig_FOUND)
    list(APPEND _rh_missing pkg-config)
  endif()
  list(APPEND _rh_missing libdw-dev)
endif()

# ncurses (wide-character build) for the terminal UI of `rheaper live`/`view`.
if(PkgConfig_FOUND)
  pkg_check_modules(RH_NCURSESW QUIET IMPORTED_TARGET ncursesw)
endif()
if(RH_NCURSESW_FOUND)
  add_library(rheaper::ncurses INTERFACE IMPORTED)
  target_link_libraries(rheaper::ncurses INTERFACE PkgConfig::RH_NCURSESW)
else()
  list(APPEND _rh_missing libncurses-dev)
endif()
# rheaper serve: GNU libmicrohttpd
if(PkgConfig_FOUND)
  pkg_check_modules(RH_MHD QUIET IMPORTED_TARGET libmicrohttpd)
endif()
if(RH_MHD_FOUND)
  add_library(rheaper::microhttpd INTERFACE IMPORTED)
  target_link_libraries(rheaper::microhttpd INTERFACE PkgConfig::RH_MHD)
else()
  list(APPEND _rh_missing libmicrohttpd-dev)
endif()
# the bounded regular expressions of every filter: PCRE2 (8-bit)
if(PkgConfig_FOUND)
  pkg_check_modules(RH_PCRE2 QUIET IMPORTED_TARGET libpcre2-8)
endif()
if(RH_PCRE2_FOUND)
  add_library(rheaper::pcre2 INTERFACE IMPORTED)
  target_link_libraries(rheaper::pcre2 INTERFACE PkgConfig::RH_PCRE2)
else()
  list(APPEND _rh_missing libpcre2-dev)
endif()
# rheaper push: libcurl (Debian's OpenSSL flavour, for https://)
find_package(CURL QUIET)
if(NOT CURL_FOUND)
  list(APPEND _rh_missing libcurl4-openssl-dev)
endif()

if(_rh_missing)
  list(JOIN _rh_missing " " _rh_pkgs)
  message(FATAL_ERROR
    "rheaper: missing build dependencies. Install them with:\n"
    "  apt-get install -y ${_rh_pkgs}\n")
endif()
