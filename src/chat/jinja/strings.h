// Python str behaviour on UTF-8 strings. Case mapping covers ASCII, Latin-1, Latin Extended-A, Greek
// and Cyrillic; other scripts keep their case.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chat/jinja/value.h"

namespace tempered::jinja {

bool is_py_space(char c);
std::string py_lower(std::string s);
std::string py_upper(std::string s);
std::string py_capitalize(const std::string& s);
std::string py_title(const std::string& s);  // str.title()
bool py_islower(const std::string& s);
bool py_isupper(const std::string& s);
std::string py_strip(const std::string& s, const Value* chars, bool left, bool right);
std::vector<std::string> py_split(const std::string& s, const Value* sep, int64_t maxsplit);
std::vector<std::string> py_splitlines(const std::string& s);
std::string py_replace(const std::string& s, const std::string& old, const std::string& replacement, int64_t count,
                       size_t max_bytes);
std::string py_center(const std::string& s, int64_t width, const std::string& fill);

}  // namespace tempered::jinja
