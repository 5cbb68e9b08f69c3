// render_jinja: our own Jinja interpreter for chat templates. It renders byte-identically to Python
// jinja2 configured as Hugging Face transformers does: ImmutableSandboxedEnvironment(trim_blocks=True,
// lstrip_blocks=True, extensions=[loopcontrols]) with globals raise_exception / strftime_now and
// transformers' tojson filter (json.dumps, ensure_ascii=False, unsorted keys).
//
// Templates and their inputs are untrusted: there is no file or OS access (include / import / extends
// are errors), and loop iterations, nesting depth, output size and copying work are bounded by
// JinjaLimits. Rendering needs about 1 MiB of stack at the default depth limit.
//
// Not supported (an Error, or noted difference): recursive for loops, {% block %}, the groupby /
// slice / striptags / wordwrap / urlize / xmlattr / pprint / random / filesizeformat filters, the
// cycler / joiner / lipsum globals, integers beyond 64 bits, format specs in str.format, case mapping
// outside Latin / Greek / Cyrillic, and jinja2's compile-time constant folding (slicing a literal
// number renders '' there, is an error here). Python object reprs (functions, generators) differ.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace tempered {

namespace jinja {
struct Template;
}

// Each limit, when exceeded, ends the render with an Error that names it, e.g. "loop iteration limit
// exceeded: max_loop_iterations (1000000)". Together they bound a hostile template's time and memory:
// loops by iterations, recursion by depth, everything else (a macro calling itself twice, so that depth
// alone allows 2^256 calls) by steps, and every string or list by its size and by the bytes spent on it.
struct JinjaLimits {
    size_t max_loop_iterations = 1'000'000;  // summed over all loops of one render
    int max_depth = 256;                     // expression / statement nesting and macro recursion
    size_t max_output_bytes = 4u << 20;      // rendered text, and any string or list built on the way
    size_t max_work_bytes = 256u << 20;      // bytes copied or scanned by strings and lists (bounds O(n^2) loops)
    size_t max_render_steps = 5'000'000;     // expressions and statements evaluated, macro calls included
    // Wall-clock backstop, checked every few thousand steps: the counts above stop hostile templates in well
    // under a second; this only catches an operation whose cost they miss. Legitimate templates take ms.
    std::chrono::milliseconds max_render_time{2000};
};

struct JinjaOptions {
    JinjaLimits limits;
    // The clock strftime_now() reads (local time); empty = the system clock. Tests pin it.
    std::function<std::chrono::system_clock::time_point()> now;
};

// A failed render: the message, and why. raised_by_template: the template called raise_exception(), it ran
// to a deliberate error ("roles must alternate"). limit_exceeded: a JinjaLimits bound (or the sandbox's
// range bound, or memory) stopped it. Neither: the template does not fit its input (a type error, say).
struct JinjaRenderError {
    std::string message;
    bool raised_by_template = false;
    bool limit_exceeded = false;
};

// A template parsed once and rendered many times (a model's chat template, on every request). Rendering
// only reads the parsed program, so threads may share one.
class ParsedJinja {
public:
    // Syntax errors come back here, not at render time. `max_depth` bounds the parser's nesting.
    static Result<ParsedJinja> parse(std::string_view template_source, int max_depth = JinjaLimits{}.max_depth);
    Result<std::string> render(const nlohmann::ordered_json& context, const JinjaOptions& options) const;
    Result<std::string, JinjaRenderError> render_checked(const nlohmann::ordered_json& context,
                                                         const JinjaOptions& options) const;

private:
    explicit ParsedJinja(std::shared_ptr<const jinja::Template> program) : program_(std::move(program)) {}
    std::shared_ptr<const jinja::Template> program_;
};

// Parse and render in one go. Keys keep their order with ordered_json, as a Python dict does; with nlohmann::json they
// come in sorted order, which changes what `tojson` and `for k in d` produce.
Result<std::string> render_jinja(std::string_view template_source, const nlohmann::ordered_json& context,
                                 const JinjaOptions& options);
Result<std::string> render_jinja(std::string_view template_source, const nlohmann::ordered_json& context,
                                 const JinjaLimits& limits = {});
Result<std::string> render_jinja(std::string_view template_source, const nlohmann::json& context,
                                 const JinjaLimits& limits = {});

}  // namespace tempered
