// How a choice's loop report (the engine's DegenerationReport) reads in the API: the "degeneration"
// object's fields, with the sampling values a resample changed. `tempered run` prints it and the server
// puts it into responses (server/degeneration_response.h), so it sits below both, beside the guard's
// settings, whose describe() writes floats the same way.
//
// After a resample the object carries "sampling": only the values the guard changed, each as
// {"value", "source": "guard", "replaced": {"value", "source"}}, the replaced source being the one the
// request's "sampling" report gave.
#pragma once

#include <nlohmann/json.hpp>

#include "api/responses.h"
#include "engine/generation.h"

namespace tempered {

// A float setting as JSON shows it: 0.7, not 0.699999988.
double float_for_json(float value);

// `resolved_sampling`: the request's "sampling" report ({"temperature": {"value", "source"}, ...}).
api::Degeneration to_api_degeneration(const DegenerationReport& report, const nlohmann::json& resolved_sampling);

}  // namespace tempered
