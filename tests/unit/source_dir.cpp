#include "source_dir.h"

// TEMPERED_SOURCE_CHECKOUT: the absolute path of the checkout, set for this file alone (CMakeLists.txt).
const char* tempered::test::source_dir() { return TEMPERED_SOURCE_CHECKOUT; }
