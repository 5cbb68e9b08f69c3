// The one place that includes cpp-httplib. Debian's libcpp-httplib is a compiled library built with
// OpenSSL, zlib and Brotli support; the header must see the same macros or `Request`/`ClientImpl`
// change layout between our objects and the library's (an ODR break that shows up as memory
// corruption, not as a link error). Only src/http/*.cpp, tools/loadgen/server.cpp (the benchmark's
// client) and tests/unit/http_*.cpp include this.
#pragma once

#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_OPENSSL_SUPPORT
#endif
#ifndef CPPHTTPLIB_ZLIB_SUPPORT
#define CPPHTTPLIB_ZLIB_SUPPORT
#endif
#ifndef CPPHTTPLIB_BROTLI_SUPPORT
#define CPPHTTPLIB_BROTLI_SUPPORT
#endif

#include <httplib.h>
