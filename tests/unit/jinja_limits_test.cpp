// Hostile templates and inputs end in a clean Error (never a crash, hang or unbounded allocation).
#include <gtest/gtest.h>

#include <ctime>
#include <random>

#include "chat/jinja/jinja.h"

namespace tempered {
namespace {
namespace jinja_limits_test {

std::string repeat(std::string_view piece, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out += piece;
    return out;
}

// The count limits with the wall clock pushed far off: a test that expects one of them must see it under
// the sanitizers too (~20x slower), not max_render_time, which only backs them up.
JinjaLimits without_clock() {
    JinjaLimits limits;
    limits.max_render_time = std::chrono::hours(1);
    return limits;
}

void expect_error_containing(const std::string& source, const std::string& needle,
                             const nlohmann::ordered_json& context = nlohmann::ordered_json::object()) {
    const auto result = render_jinja(source, context, without_clock());
    ASSERT_FALSE(result.ok()) << source.substr(0, 200);
    EXPECT_NE(result.error().message.find(needle), std::string::npos) << result.error().message;
}

// A hostile template fails with an error naming the limit it hit, and fast: the issue asks for well under a
// second. Measured in CPU time (the machine running the tests may be busy), and looser under the
// sanitizers, whose build runs these tests too.
#if defined(__SANITIZE_ADDRESS__)
constexpr double kHostileTemplateSeconds = 10.0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr double kHostileTemplateSeconds = 10.0;
#else
constexpr double kHostileTemplateSeconds = 1.0;
#endif
#else
constexpr double kHostileTemplateSeconds = 1.0;
#endif

double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

void expect_limit(const std::string& source, const std::string& limit_name) {
    const double start = cpu_seconds();
    const auto result = render_jinja(source, nlohmann::ordered_json::object(), without_clock());
    const double elapsed = cpu_seconds() - start;
    ASSERT_FALSE(result.ok()) << source.substr(0, 200);
    EXPECT_NE(result.error().message.find(limit_name), std::string::npos) << result.error().message;
    EXPECT_LT(elapsed, kHostileTemplateSeconds) << source.substr(0, 200);
}

TEST(JinjaLimits, DeeplyNestedExpressionsAreRejectedByTheParser) {
    expect_error_containing("{{ " + repeat("(", 100000) + "1" + repeat(")", 100000) + " }}", "too deep");
    expect_error_containing("{{ " + repeat("[", 100000) + repeat("]", 100000) + " }}", "too deep");
    expect_error_containing("{{ " + repeat("{'a': ", 50000) + "1" + repeat("}", 50000) + " }}", "too deep");
    expect_error_containing("{{ " + repeat("not ", 100000) + "x }}", "too deep");
    expect_error_containing("{{ " + repeat("- ", 100000) + "1 }}", "too deep");
    // Flat-looking chains still build deep trees.
    expect_error_containing("{{ 1" + repeat(" + 1", 100000) + " }}", "too deep");
    expect_error_containing("{{ 'x'" + repeat("|trim", 100000) + " }}", "too deep");
    expect_error_containing("{{ x" + repeat(".a", 100000) + " }}", "too deep");
    expect_error_containing("{{ x" + repeat("[0]", 100000) + " }}", "too deep");
    expect_error_containing("{{ f" + repeat("()", 100000) + " }}", "too deep");
}

TEST(JinjaLimits, ModerateNestingStillWorks) {
    const auto result =
        render_jinja("{{ " + repeat("(", 100) + "1" + repeat(")", 100) + " }}", nlohmann::json::object());
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(result.value(), "1");
}

TEST(JinjaLimits, DeeplyNestedStatementsAreRejected) {
    expect_error_containing(repeat("{% if true %}", 50000) + repeat("{% endif %}", 50000), "too deep");
    expect_error_containing(repeat("{% for x in [1] %}", 50000) + repeat("{% endfor %}", 50000), "too deep");
}

TEST(JinjaLimits, UnboundedMacroRecursionIsRejected) {
    expect_error_containing("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "recursion");
}

TEST(JinjaLimits, LoopIterationsAreBounded) {
    expect_error_containing("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                            "iteration limit");
    JinjaLimits small;
    small.max_loop_iterations = 10;
    const auto result = render_jinja("{% for i in range(11) %}{% endfor %}", nlohmann::json::object(), small);
    ASSERT_FALSE(result.ok());
    EXPECT_TRUE(render_jinja("{% for i in range(10) %}{% endfor %}", nlohmann::json::object(), small).ok());
}

TEST(JinjaLimits, OutputAndStringSizesAreBounded) {
    expect_error_containing("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "output size limit");
    expect_error_containing("{{ 'x' * 1000000000 }}", "output size limit");
    expect_error_containing("{{ [1] * 1000000000 }}", "output size limit");
    expect_error_containing("{{ 'a'|center(1000000000) }}", "output size limit");
    expect_error_containing("{{ 'a'.center(1000000000) }}", "output size limit");
    expect_error_containing("{{ ('a' * 1000000)|replace('a', 'x' * 1000) }}", "output size limit");
    expect_error_containing("{{ ('a' * 1000000).replace('', 'xyzxyz') }}", "output size limit");
    // A shared deep value is cheap to hold, but indenting it is not.
    expect_error_containing(
        "{% set ns = namespace(v=1) %}{% for i in range(500) %}{% set ns.v = [ns.v] %}{% endfor %}"
        "{{ ([ns.v] * 300)|tojson(indent=64) }}",
        "output size limit");
    // Doubling a string or a list in a loop.
    expect_error_containing(
        "{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
        "output size limit");
    expect_error_containing(
        "{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
        "output size limit");
    // Sharing makes [x, x] cheap to build but not to print.
    expect_error_containing(
        "{% set ns = namespace(l=['abc']) %}{% for i in range(100) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}",
        "size limit");
}

TEST(JinjaLimits, EmptyRepeatIsCheap) {
    const auto result = render_jinja("{{ '' * 1000000000000 }}x{{ [] * 1000000000000 }}", nlohmann::json::object());
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(result.value(), "x[]");
}

TEST(JinjaLimits, QuadraticCopyingIsBounded) {
    // Each step copies a ~1 MiB string: fine once, not 100000 times.
    expect_error_containing(
        "{% set big = 'x' * 1000000 %}{% set ns = namespace(n=0) %}"
        "{% for i in range(100000) %}{% set ns.n = (big ~ 'y')|length %}{% endfor %}",
        "work limit");
}

TEST(JinjaLimits, ValueNestingIsBounded) {
    expect_error_containing(
        "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}{% endfor %}",
        "nesting too deep");
    nlohmann::ordered_json deep = 1;
    for (int i = 0; i < 600; ++i) deep = nlohmann::ordered_json::array({deep});
    expect_error_containing("{{ x }}", "nesting too deep", {{"x", deep}});
}

TEST(JinjaLimits, SelfReferencingNamespacePrintsWithoutRecursing) {
    const auto result = render_jinja("{% set ns = namespace() %}{% set ns.me = ns %}{% set ns.l = [ns] %}{{ ns.l }}",
                                     nlohmann::json::object());
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(result.value(), "[<Namespace>]");
}

TEST(JinjaLimits, NoFileAccess) {
    expect_error_containing("{% include '/etc/passwd' %}", "not supported");
    expect_error_containing("{% extends 'base.html' %}", "not supported");
    expect_error_containing("{% from 'x' import y %}", "not supported");
    const auto result =
        render_jinja("{{ ''.__class__ }}x{{ self }}{{ lipsum }}{{ range.__globals__ }}", nlohmann::json::object());
    ASSERT_TRUE(result.ok()) << result.error().message;  // nothing reachable: all undefined
    EXPECT_EQ(result.value(), "x");
}

TEST(JinjaLimits, ErrorsCarryLineNumbers) {
    expect_error_containing("line one\n{% if true %}\n  {{ raise_exception('bad role') }}\n{% endif %}",
                            "line 3: bad role");
    expect_error_containing("a\nb\n{{ 1 + }}", "line 3");
    expect_error_containing("{% for x in y %}\n\n", "endfor");
}

TEST(JinjaLimits, ErrorsNameTheLimitAndItsValue) {
    expect_limit("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                 "max_loop_iterations (1000000)");
    expect_limit("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "max_depth (256)");
    expect_limit("{{ 'x' * 1000000000 }}", "max_output_bytes (4194304)");
    expect_limit(
        "{% set ns = namespace(s='') %}{% for i in range(100000) %}{% set ns.s = ns.s ~ 'xxxxxxxxxx' %}"
        "{% endfor %}",
        "max_work_bytes (268435456)");
    expect_limit("{{ " + repeat("(", 1000) + "1" + repeat(")", 1000) + " }}", "max_depth (256)");
}

TEST(JinjaLimits, InfiniteLoopsDeepRecursionAndHugeOutputFailFast) {
    // Loops: nested, and loops inside recursion (no single loop is long).
    expect_limit(
        "{% for i in range(100000) %}{% for j in range(100000) %}{% for k in range(100000) %}"
        "{% endfor %}{% endfor %}{% endfor %}",
        "max_loop_iterations");
    expect_limit(
        "{% macro f(n) %}{% for i in range(10) %}{{ f(n) if n < 200 else '' }}{% endfor %}{% endmacro %}"
        "{{ f(0) }}",
        "max_");
    // Recursion: a macro calling itself, two macros calling each other, a macro through its caller().
    expect_limit("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "max_depth");
    expect_limit("{% macro a(n) %}{{ b(n) }}{% endmacro %}{% macro b(n) %}{{ a(n) }}{% endmacro %}{{ a(0) }}",
                 "max_depth");
    expect_limit("{% macro m() %}{% call m() %}x{% endcall %}{{ caller() }}{% endmacro %}{{ m() }}", "max_depth");
    expect_limit(
        "{% macro m() %}{{ caller() }}{% endmacro %}"
        "{% macro r() %}{% call m() %}{{ r() }}{% endcall %}{% endmacro %}{{ r() }}",
        "max_depth");
    // A macro calling itself twice is only 200 deep but makes 2^200 calls: steps bound it.
    expect_limit("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(200) }}",
                 "max_render_steps (5000000)");
    // A gigabyte of output, written piece by piece or in one go.
    expect_limit("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "max_output_bytes");
}

TEST(JinjaLimits, RepetitionIsCheckedBeforeItAllocates) {
    expect_limit("{{ 'ab' * 1000 * 1000 * 1000 }}", "max_output_bytes");
    expect_limit("{{ 'ab' * 4611686018427387904 }}", "max_output_bytes");  // size * times overflows 64 bits
    expect_limit("{{ [1] * 1000000000 }}", "max_output_bytes");
    expect_limit("{{ [1, 2] * 1000 * 1000 * 1000 }}", "max_output_bytes");
    expect_limit("{{ (1,) * 1000000000 }}", "max_output_bytes");
    expect_limit("{{ range(1000000000000) }}", "MAX_RANGE (100000)");
    expect_limit("{{ [1]|batch(1000000000, 'x')|list }}", "max_output_bytes");
}

TEST(JinjaLimits, StringBuildersAreBounded) {
    expect_limit("{{ (['a'] * 100000)|join('x' * 1000) }}", "max_output_bytes");
    expect_limit("{{ ('x' * 1000).join(['a'] * 100000) }}", "max_output_bytes");
    expect_limit("{{ ('%9999s' * 100000) % ((1,) * 100000) }}", "max_output_bytes");
    expect_limit("{{ ('%(a)9999s' * 100000) % {'a': 1} }}", "max_output_bytes");
    expect_limit("{{ ('%9999s' * 100000)|format(*((1,) * 100000)) }}", "max_output_bytes");
    expect_limit("{{ ('{0}' * 100000).format('x' * 1000) }}", "max_output_bytes");
    expect_limit("{{ ('\n' * 1000000)|indent(1000, blank=true) }}", "max_output_bytes");
    expect_limit("{{ ('a\n' * 100000)|indent(1000) }}", "max_output_bytes");
    expect_limit("{{ 'a'|center(1000000000) }}", "max_output_bytes");
    expect_limit("{{ ('a' * 1000000)|replace('a', 'x' * 1000) }}", "max_output_bytes");
    expect_limit("{{ ([[1] * 1000] * 1000)|tojson }}", "max_output_bytes");
}

TEST(JinjaLimits, GrowingNamespacesAndDictsAreBounded) {
    expect_limit(
        "{% set ns = namespace(d={}) %}{% for i in range(100000) %}"
        "{% set ns.d = dict(ns.d, **{('key' ~ i): i}) %}{% endfor %}",
        "max_work_bytes");
    expect_limit("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}{% endfor %}",
                 "max_work_bytes");
    expect_limit("{% set ns = namespace(s='') %}{% for i in range(100000) %}{% set ns.s = ns.s ~ i %}{% endfor %}",
                 "max_work_bytes");
}

TEST(JinjaLimits, RereadingALongStringIsCharged) {
    const std::string big = "{% set big = 'x' * 4000000 %}";
    const std::string loop = "{% for i in range(100000) %}";
    expect_limit(big + loop + "{% if 'y' in big %}{% endif %}{% endfor %}", "max_work_bytes");
    expect_limit(big + loop + "{% if big == big %}{% endif %}{% endfor %}", "max_work_bytes");
    expect_limit(big + loop + "{% set n = big|length %}{% endfor %}", "max_work_bytes");
    expect_limit(big + loop + "{% set n = big.upper() %}{% endfor %}", "max_work_bytes");
    expect_limit(big + loop + "{% set n = big.find('y') %}{% endfor %}", "max_work_bytes");
    expect_limit(big + loop + "{% set n = big[1000] %}{% endfor %}", "max_work_bytes");
    expect_limit(big + loop + "{% set n = big[:10] %}{% endfor %}", "max_work_bytes");
    expect_limit(big + "{% for c in big %}{% endfor %}", "max_work_bytes");  // a Value per character
    expect_limit("{{ range(100000)|unique|list|length }}", "max_work_bytes");
}

TEST(JinjaLimits, PassingALongStringAroundIsFree) {
    // Strings are shared, not copied, by a lookup, an assignment or a loop item.
    const double start = cpu_seconds();
    const auto result = render_jinja(
        "{% set big = 'x' * 4000000 %}{% set ns = namespace(n=0) %}{% for i in range(100000) %}{% set y = big %}"
        "{% set ns.last = y %}{% endfor %}{{ ns.last|length }}",
        nlohmann::ordered_json::object(), without_clock());
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(result.value(), "4000000");
    EXPECT_LT(cpu_seconds() - start, kHostileTemplateSeconds);
}

// Tests read the whole string as the filters and methods do, and pay as they do: `s is lower` over a long
// string in a loop is not free because it is a test.
TEST(JinjaLimits, StringTestsAreCharged) {
    const std::string big = "{% set big = 'a' * 400000 %}";
    const std::string loop = "{% for i in range(100000) %}";
    expect_limit(big + loop + "{% if big is lower %}{% endif %}{% endfor %}", "max_work_bytes");
    expect_limit(big + loop + "{% if big is upper %}{% endif %}{% endfor %}", "max_work_bytes");
    expect_limit(big + loop + "{% if big is eq big %}{% endif %}{% endfor %}", "max_work_bytes");
    expect_limit(big + loop + "{% if big is ne big %}{% endif %}{% endfor %}", "max_work_bytes");
    expect_limit(big + loop + "{% if big is ge big %}{% endif %}{% endfor %}", "max_work_bytes");
    expect_limit(big + loop + "{% if 'b' is in big %}{% endif %}{% endfor %}", "max_work_bytes");
    expect_limit(big + loop + "{% if [big] is sameas [big] %}{% endif %}{% endfor %}", "max_work_bytes");
    // The issue's scenario: a million tests on one long string.
    expect_limit(
        "{% set s = 'a' * 400000 %}{% for i in range(100000) %}{% for j in range(10) %}{% if s is lower %}"
        "{% endif %}{% endfor %}{% endfor %}",
        "max_work_bytes");
}

// A method looked up but not called (`s.upper`) holds the shared string: no copy, so nothing to charge.
TEST(JinjaLimits, AnUncalledStringMethodCopiesNothing) {
    const double start = cpu_seconds();
    const auto result = render_jinja(
        "{% set big = 'x' * 4000000 %}{% for i in range(100000) %}{% set m = big.upper %}{% if big.lower %}"
        "{% endif %}{% endfor %}{{ m is callable }}",
        nlohmann::ordered_json::object(), without_clock());
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(result.value(), "True");
    EXPECT_LT(cpu_seconds() - start, kHostileTemplateSeconds);
}

// A dict hashes a string key on every lookup and insert: a long key looked up in a loop pays for each.
TEST(JinjaLimits, LongDictKeysAreCharged) {
    const std::string setup = "{% set key = 'k' * 400000 %}{% set d = {key: 1} %}";
    const std::string loop = "{% for i in range(100000) %}";
    expect_limit(setup + loop + "{% set x = d[key] %}{% endfor %}", "max_work_bytes");
    expect_limit(setup + loop + "{% set x = d.get(key) %}{% endfor %}", "max_work_bytes");
    expect_limit(setup + loop + "{% set x = {key: i} %}{% endfor %}", "max_work_bytes");
    expect_limit(setup + loop + "{% set x = dict(a=1)[key] %}{% endfor %}", "max_work_bytes");
    // A non-string key is compared with each key in turn.
    expect_limit(setup + "{% set t = {(key,): 1} %}" + loop + "{% set x = t[(key,)] %}{% endfor %}", "max_work_bytes");
    // Short keys, as chat templates use them, stay cheap.
    const auto result = render_jinja(
        "{% set d = {'role': 'user'} %}{% set ns = namespace(x='') %}{% for i in range(10000) %}"
        "{% set ns.x = d['role'] ~ d.role %}{% endfor %}{{ ns.x }}",
        nlohmann::ordered_json::object(), without_clock());
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(result.value(), "useruser");
}

// Whatever reads or copies an operand in proportion to its size pays for it, however cheap the call looks.
TEST(JinjaLimits, OtherLongOperandsAreCharged) {
    const std::string big = "{% set big = 'x' * 400000 %}";
    const std::string loop = "{% for i in range(100000) %}";
    // Output captured and thrown away on every iteration.
    expect_limit(big + loop + "{% set c %}{{ big }}{% endset %}{% endfor %}", "max_work_bytes");
    expect_limit(big + "{% macro m() %}{{ big }}{% endmacro %}" + loop + "{% set c = m() %}{% endfor %}",
                 "max_work_bytes");
    expect_limit(big + loop + "{% filter length %}{{ big }}{% endfilter %}{% endfor %}", "max_work_bytes");
    // A list printed for a text filter or test.
    const std::string list = "{% set l = ['x' * 1000] * 400 %}";
    expect_limit(list + loop + "{% set s = l|string %}{% endfor %}", "max_work_bytes");
    expect_limit(list + loop + "{% if l is lower %}{% endif %}{% endfor %}", "max_work_bytes");
    expect_limit(big + loop + "{% if loop.changed(big) %}{% endif %}{% endfor %}", "max_work_bytes");
    // A long list sliced, searched; a large dict's views.
    const std::string numbers = "{% set l = range(100000)|list %}";
    expect_limit(numbers + loop + "{% set x = l[1:] %}{% endfor %}", "max_work_bytes");
    expect_limit(numbers + loop + "{% set x = l.count(-1) %}{% endfor %}", "max_work_bytes");
    const std::string dict = "{% set d = dict(range(20000)|map('string')|batch(2)|list) %}";
    expect_limit(dict + loop + "{% set x = d.items() %}{% endfor %}", "max_work_bytes");
    expect_limit(dict + loop + "{% set x = d.keys() %}{% endfor %}", "max_work_bytes");
    expect_limit(dict + loop + "{% set x = d|items %}{% endfor %}", "max_work_bytes");
    expect_limit(dict + loop + "{% set x = d|dictsort %}{% endfor %}", "max_work_bytes");
}

// The wall clock backs the counts up: a loop within every count still stops at max_render_time.
TEST(JinjaLimits, RenderTimeIsBounded) {
    EXPECT_EQ(JinjaLimits{}.max_render_time, std::chrono::milliseconds(2000));
    const auto parsed = ParsedJinja::parse("{% for i in range(100000) %}{% set x = (i * 2) ~ 'a' %}{% endfor %}ok");
    ASSERT_TRUE(parsed.ok());
    JinjaOptions options;
    options.limits = without_clock();
    const auto unhurried = parsed->render_checked(nlohmann::ordered_json::object(), options);
    ASSERT_TRUE(unhurried.ok()) << unhurried.error().message;
    EXPECT_EQ(unhurried.value(), "ok");
    options.limits.max_render_time = std::chrono::milliseconds(1);
    const auto hurried = parsed->render_checked(nlohmann::ordered_json::object(), options);
    ASSERT_FALSE(hurried.ok());
    EXPECT_TRUE(hurried.error().limit_exceeded);
    EXPECT_NE(hurried.error().message.find("render time limit exceeded: max_render_time (1 ms)"), std::string::npos)
        << hurried.error().message;
}

TEST(JinjaLimits, HugeIntegersFailCleanly) {
    expect_error_containing("{{ 10 ** 10 ** 10 }}", "integer overflow");
    expect_error_containing("{{ 2 ** 64 }}", "integer overflow");
    expect_error_containing("{{ 9223372036854775807 * 2 }}", "integer overflow");
    const auto result = render_jinja("{{ 2 ** 62 }}", nlohmann::json::object());
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(result.value(), "4611686018427387904");
}

TEST(JinjaLimits, RenderStepsAreConfigurable) {
    JinjaLimits limits;
    limits.max_render_steps = 100;
    const auto result = render_jinja("{% for i in range(50) %}{{ i }}{% endfor %}", nlohmann::json::object(), limits);
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.error().message.find("max_render_steps (100)"), std::string::npos) << result.error().message;
    limits.max_render_steps = 1000;
    EXPECT_TRUE(render_jinja("{% for i in range(50) %}{{ i }}{% endfor %}", nlohmann::json::object(), limits).ok());
}

TEST(JinjaLimits, RaiseExceptionIsToldApartFromOtherFailures) {
    const auto parsed = ParsedJinja::parse("{% if x %}{{ raise_exception('no system role') }}{% endif %}{{ y.z }}");
    ASSERT_TRUE(parsed.ok());
    JinjaOptions options;
    const auto raised = parsed->render_checked({{"x", true}}, options);
    ASSERT_FALSE(raised.ok());
    EXPECT_TRUE(raised.error().raised_by_template);
    EXPECT_NE(raised.error().message.find("no system role"), std::string::npos);
    const auto broken = parsed->render_checked({{"x", false}}, options);
    ASSERT_FALSE(broken.ok());
    EXPECT_FALSE(broken.error().raised_by_template);
}

// Random edits of a real template never crash; they render or fail cleanly.
TEST(JinjaLimits, MutatedTemplatesNeverCrash) {
    const std::string base =
        "{%- set ns = namespace(first=true) -%}{% for message in messages %}{% if loop.first and "
        "message['role'] != 'system' %}{{ '<|im_start|>system\\nDefault<|im_end|>\\n' }}{% endif %}"
        "{{ '<|im_start|>' + message.role + '\\n' + message['content'] | trim + '<|im_end|>\\n' }}"
        "{% if message.tool_calls is defined %}{{ message.tool_calls | tojson(indent=2) }}{% endif %}"
        "{%- endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
        "{% macro m(a, b=1) %}{{ a ~ b }}{% endmacro %}{{ m(1) }}{{ messages|map(attribute='role')|join(',') }}";
    const auto context = nlohmann::ordered_json::parse(R"({"messages": [{"role": "user", "content": " hi "},
        {"role": "assistant", "content": "yo", "tool_calls": [{"name": "f", "arguments": {"a": 1}}]}],
        "add_generation_prompt": true})");
    ASSERT_TRUE(render_jinja(base, context).ok());
    const std::string alphabet = "{}%#-+()[]'\"|.,:=~*/ \n\\abcdefgilmnorst0123456789";
    std::mt19937 rng(1234);
    for (int iteration = 0; iteration < 3000; ++iteration) {
        std::string mutated = base;
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int e = 0; e < edits; ++e) {
            const size_t at = rng() % (mutated.size() + 1);
            switch (rng() % 3) {
                case 0: mutated.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
                case 1:
                    if (at < mutated.size()) mutated.erase(at, 1);
                    break;
                default:
                    if (at < mutated.size()) mutated[at] = alphabet[rng() % alphabet.size()];
                    break;
            }
        }
        const auto result = render_jinja(mutated, context);
        if (result.ok()) {
            EXPECT_LE(result.value().size(), JinjaLimits{}.max_output_bytes);
        }
    }
}

}  // namespace jinja_limits_test
}  // namespace
}  // namespace tempered
