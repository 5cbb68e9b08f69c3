#pragma once

// The headers most unit test files include, precompiled once for all of them when TEMPERED_PCH is on
// (scripts/build.sh, for CI's cold builds: parsing them was about a quarter of a test file's compile time,
// bench/results/ci-time-2026-12-03.md). Every test file still includes what it uses.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
