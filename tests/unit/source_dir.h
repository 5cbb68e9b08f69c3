#pragma once

// The checkout the unit tests read their fixtures from (tests/fixtures, build/tiny-models). CMake
// force-includes this header into every unit test file; only source_dir.cpp is compiled with the absolute
// path, so every other test file compiles to the same command line in any clone and ccache
// (CCACHE_BASEDIR, scripts/build.sh) serves it from the cache: CI's clean clone recompiles one small file.
namespace tempered::test {
const char* source_dir();
}  // namespace tempered::test

#define TEMPERED_SOURCE_DIR (::tempered::test::source_dir())
