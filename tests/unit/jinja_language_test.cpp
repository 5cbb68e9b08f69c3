// Language features one by one. Every expected string was rendered by Python jinja2 3.1.6 configured
// as transformers does (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, HF's
// tojson / raise_exception / strftime_now) over the context below; expect_error marks templates that
// jinja2 rejects too.
#include <gtest/gtest.h>

#include "chat/jinja/jinja.h"

namespace tempered {
namespace {
namespace jinja_language_test {

const nlohmann::ordered_json& context() {
    static const auto ctx = nlohmann::ordered_json::parse(R"({
        "d": {"a": 1, "b": [1, 2], "c": {"x": "y"}}, "l": [3, 1, 2], "s": "Hello World",
        "u": "héllo wörld", "n": null, "t": true, "f": 1.5,
        "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo", "x": 2},
                 {"role": "user", "content": null}],
        "words": ["b", "A", "c", "a"]})");
    return ctx;
}

Result<std::string> render(const std::string& source) {
    JinjaOptions options;
    options.now = [] { return std::chrono::system_clock::from_time_t(1741953600); };  // 2025-03-14 12:00 UTC
    return render_jinja(source, context(), options);
}

void expect_render(const std::string& source, const std::string& expected) {
    const auto result = render(source);
    ASSERT_TRUE(result.ok()) << source << "\n  error: " << result.error().message;
    EXPECT_EQ(result.value(), expected) << source;
}

void expect_error(const std::string& source) {
    const auto result = render(source);
    EXPECT_FALSE(result.ok()) << source << "\n  rendered: " << result.value();
}

TEST(JinjaLanguage, Literals) {
    expect_render("{{ 1_000 }}|{{ 1.5e3 }}|{{ 0 }}|{{ 00 }}|{{ 42 }}|{{ -3 }}", "1000|1500.0|0|0|42|-3");
    expect_render("{{ \"a\" \"b\" }}|{{ 'single \\' quote' }}|{{ \"tab\\there\" }}|{{ '\\x41\\u00e9' }}",
                  "ab|single ' quote|tab\there|Aé");
    expect_render("{{ true }}|{{ True }}|{{ false }}|{{ False }}|{{ none }}|{{ None }}",
                  "True|True|False|False|None|None");
    expect_render("{% set x = [1, 2,] %}{{ x }}|{{ (1, 2,) }}|{{ {'a': 1,} }}|{{ (1,) }}|{{ () }}|{{ (1) }}",
                  "[1, 2]|(1, 2)|{'a': 1}|(1,)|()|1");
    expect_render("{{ {'a': {'b': 1}} }}|{{ {'a': {'b': 1}}['a']['b'] }}", "{'a': {'b': 1}}|1");
    expect_render("{{ \"{{ 'nested' }}\" }}|{{ '%}' }}|{{ \"}}\" }}", "{{ 'nested' }}|%}|}}");
}

TEST(JinjaLanguage, Arithmetic) {
    expect_render(
        "{{ 1 + 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 2 ** 10 }}|{{ 2**3**2 }}|{{ 7 / 2 }}|{{ 4 / 2 }}",
        "3|3|-4|1|2|1024|64|3.5|2.0");
    expect_render("{{ 1.5 + 1 }}|{{ 3.0 * 2 }}|{{ 7.0 // 2 }}|{{ -7.5 % 2 }}|{{ 2 ** -1 }}|{{ 2.0 ** 2 }}",
                  "2.5|6.0|3.0|0.5|0.5|4.0");
    expect_error(
        "{{ -2 ** 2 }}|{{ (-2) ** 2 }}|{{ 2 * -1 }}|{{ not 1 == 2 }}|{{ 1 + 2 * 3 - 4 / 2 }}|{{ 'a' ~ 1 + 2 }}");
    expect_render("{{ 'a' ~ 1 ~ none ~ true }}|{{ 'ab' * 3 }}|{{ [1] * 2 }}|{{ [1,2] + [3] }}|{{ (1, 2) + (3,) }}",
                  "a1NoneTrue|ababab|[1, 1]|[1, 2, 3]|(1, 2, 3)");
    expect_error("{{ -3|abs }}|{{ -l|length }}|{{ l | length > 2 }}");
    expect_error("{{ 1 / 0 }}");
    expect_error("{{ 'x' + 1 }}");
    expect_error("{{ 1 + 'x' }}");
    expect_error("{{ l * 'x' }}");
}

TEST(JinjaLanguage, Printing) {
    expect_render(
        "{{ 1.0 }}|{{ 0.1 + 0.2 }}|{{ 1e20 }}|{{ 1e-5 }}|{{ 1e16 }}|{{ 1e15 }}|{{ 123456789.123 }}|{{ -0.0 }}|{{ 0.0001 }}",
        "1.0|0.30000000000000004|1e+20|1e-05|1e+16|1000000000000000.0|123456789.123|-0.0|0.0001");
    expect_render("{{ \"it's\" }} {{ [\"it's\", 'a\"b', \"x\\ny\", 'back\\\\slash'] }}",
                  "it's [\"it's\", 'a\"b', 'x\\ny', 'back\\\\slash']");
    expect_render("{{ [1, 'a', none, true, 1.0, {'k': 'v'}, (1,), (1, 2), ()] }}",
                  "[1, 'a', None, True, 1.0, {'k': 'v'}, (1,), (1, 2), ()]");
    expect_render("{{ d }}|{{ l }}|{{ n }}|{{ t }}|{{ f }}",
                  "{'a': 1, 'b': [1, 2], 'c': {'x': 'y'}}|[3, 1, 2]|None|True|1.5");
    expect_render(
        "{{ {1: 'a', true: 'b', none: 'c'} }}|{{ ['\\u4e2d', '\\x07', '\\u00a0']|string }}|{{ 'a\\x00b'|length }}",
        "{1: 'b', None: 'c'}|['中', '\\x07', '\\xa0']|3");
    expect_render("{{ 1, 2 }}", "(1, 2)");
}

TEST(JinjaLanguage, Undefined) {
    expect_render(
        "{{ foo }}|{{ foo is defined }}|{{ foo is undefined }}|{{ foo|default('dflt') }}|{{ n|default('x') }}|{{ n|default('x', true) }}|{{ ''|d('e', boolean=true) }}",
        "|False|True|dflt|None|x|e");
    expect_render(
        "{{ foo == bar }}|{{ foo == none }}|{{ foo|length }}|{{ foo|list }}|{{ foo|string }}|{{ foo ~ 'x' }}|{{ not foo }}",
        "True|False|0|[]||x|True");
    expect_render("{% for x in foo %}a{% else %}b{% endfor %}|{% if foo %}y{% else %}n{% endif %}", "b|n");
    expect_render("{{ 'a' if false }}|{{ ('a' if false) is defined }}", "|False");
    expect_render("{% if foo is defined and foo.bar %}y{% else %}n{% endif %}", "n");
    expect_render("{{ n.x }}|{{ n['y'] }}|{{ d.zz is defined }}|{{ d.zz|default(1) }}", "||False|1");
    expect_error("{{ foo.bar }}");
    expect_error("{{ foo + 1 }}");
    expect_error("{{ foo < 1 }}");
    expect_error("{{ d.zz.yy }}");
    expect_error("{{ undefined_func() }}");
    expect_error("{{ foo|tojson }}");
}

TEST(JinjaLanguage, Lookup) {
    expect_render(
        "{{ d.a }}|{{ d['b'][1] }}|{{ d.c.x }}|{{ d.b.0 }}|{{ l[-1] }}|{{ l[10] }}|{{ l['x'] }}|{{ 'abc'[5] }}",
        "1|2|y|1|2|||");
    expect_render("{{ msgs[0].role }}|{{ msgs[0]['content'] }}|{{ msgs[2].content is none }}|{{ msgs|length }}",
                  "user|hi|True|3");
    expect_render("{{ (msgs|last).role }}|{{ msgs[-1]['role'] }}|{{ msgs[1:]|length }}", "user|user|2");
    expect_render("{% set x = msgs[0] %}{{ x.role|upper }}{{ x['role']|length }}", "USER4");
    expect_render("{{ [1,2,3][0:2][1] }}|{{ 'abc'[::-1][0] }}|{{ d['a'] + 1 }}", "2|c|2");
    expect_render("{{ l[1.5] }}|{{ d[1] }}", "|");
}

TEST(JinjaLanguage, Slicing) {
    expect_render(
        "{{ l[1:] }}|{{ l[::-1] }}|{{ l[:-1] }}|{{ s[0:5] }}|{{ u[1:4] }}|{{ s[::2] }}|{{ u|length }}|{{ u[1] }}|{{ l[5:] }}|{{ l[-2:] }}|{{ s[-5:-1] }}",
        "[1, 2]|[2, 1, 3]|[3, 1]|Hello|éll|HloWrd|11|é|[]|[1, 2]|Worl");
    expect_error("{{ l[::0] }}");
}

TEST(JinjaLanguage, Comparison) {
    expect_render("{% if 1 < 2 < 3 %}chain{% endif %}|{% if 1 < 3 < 2 %}no{% else %}else{% endif %}", "chain|else");
    expect_render(
        "{{ 1 == 1.0 }}|{{ true == 1 }}|{{ [1] == [1.0] }}|{{ {'a':1} == {'a':1} }}|{{ 'a' == 'a' }}|{{ none == none }}",
        "True|True|True|True|True|True");
    expect_render("{{ 'abc' < 'abd' }}|{{ [1,2] < [1,3] }}|{{ 2 >= 2 }}|{{ 1 != 2 }}", "True|True|True|True");
    expect_render(
        "{{ 1 if t else 2 }}|{{ 1 if n else 2 }}|{{ 1 if n }}|{{ 'a' in 'cat' }}|{{ 2 in l }}|{{ 'a' in d }}|{{ 'zz' not in d }}|{{ not t }}|{{ t and 'yes' }}|{{ n or 'fallback' }}",
        "1|2||True|True|True|True|False|yes|fallback");
    expect_render("{{ 3 in [1, 2, 3] and 'yes' or 'no' }}", "yes");
    expect_error("{{ 1 < 'a' }}");
    expect_error("{{ 1 < none }}");
    expect_error("{{ 1 in 'abc' }}");
}

TEST(JinjaLanguage, Statements) {
    expect_render(
        "{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}",
        "1032TrueFalse3|2121FalseFalse3|3210FalseTrue3|");
    expect_render("{% for x in l %}{{ loop.previtem }}-{{ loop.nextitem }}-{{ loop.cycle('a','b') }},{% endfor %}",
                  "-1-a,3-2-b,1--a,");
    expect_render("{% for x in l %}{{ loop.changed(x > 1) }}{% endfor %}", "TrueTrueTrue");
    expect_render("{% for x in l if x > 1 %}{{ x }}{{ loop.length }}{% else %}empty{% endfor %}", "3222");
    expect_render("{% for x in [] %}{{ x }}{% else %}empty{% endfor %}", "empty");
    expect_render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", "a=1;b=[1, 2];c={'x': 'y'};");
    expect_render("{% for k in d %}{{ k }}{% endfor %}|{% for c in 'abc' %}{{ c }}.{% endfor %}", "abc|a.b.c.");
    expect_render(
        "{% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }}{% endfor %}|{% for a, b in [(1, 2)] %}{{ a + b }}{% endfor %}",
        "1234|3");
    expect_render(
        "{% for x in l %}{% if x == 1 %}{% break %}{% endif %}{{ x }}{% endfor %}|{% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% endfor %}",
        "3|32");
    expect_render("{% for x in msgs %}{% for y in l %}{{ loop.index }}{% endfor %}{{ loop.index }};{% endfor %}",
                  "1231;1232;1233;");
    expect_render("{% if false %}a{% elif n %}b{% elif t %}c{% else %}d{% endif %}", "c");
    expect_render("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }}", "3");
    expect_render("{% raw %}{{ not rendered }}{% endraw %}", "{{ not rendered }}");
    expect_error("{% for x in none %}{% endfor %}");
    expect_error("{% for a, b in [[1, 2, 3]] %}{% endfor %}");
}

TEST(JinjaLanguage, Scoping) {
    expect_render("{% set x = 0 %}{% for i in l %}{{ x }}{% set x = i %}{% endfor %}{{ x }}", "0000");
    expect_render("{% for x in l %}{% set inner = x %}{% endfor %}{{ inner }}", "");
    expect_render("{% if true %}{% set leaked = 5 %}{% endif %}{{ leaked }}", "5");
    expect_render(
        "{% set ns = namespace(x=0, items=[]) %}{% for i in l %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}", "6");
    expect_render("{% set ns = namespace(a=[]) %}{% set ns.a = ns.a + [1] %}{% set ns.a = ns.a + [2] %}{{ ns.a }}",
                  "[1, 2]");
    expect_render(
        "{% set ns = namespace() %}{% set ns.flag = true %}{{ ns.flag }}|{{ namespace(a=1).a }}|{{ namespace({'b': 2}).b }}",
        "True|1|2");
    expect_render("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}", "12(1, 2)");
    expect_render("{% set x %}block {{ 1 + 1 }}{% endset %}[{{ x }}]", "[block 2]");
    expect_render("{% set x | upper %}block{% endset %}[{{ x }}]", "[BLOCK]");
    expect_error("{% set d.x = 1 %}");
}

TEST(JinjaLanguage, Macros) {
    expect_render(
        "{% macro m(a, b=2, c='z') %}{{ a }}-{{ b }}-{{ c }}{% endmacro %}{{ m(1) }}|{{ m(1, 3) }}|{{ m(1, c=4) }}|{{ m() }}",
        "1-2-z|1-3-z|1-2-4|-2-z");
    expect_render("{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k=4) }}",
                  "1(2, 3){'k': 4}");
    expect_render("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}", "54321");
    expect_render("{% macro w() %}<{{ caller() }}>{% endmacro %}{% call w() %}inner{% endcall %}", "<inner>");
    expect_render("{% macro w() %}{{ caller(1, 2) }}{% endmacro %}{% call(a, b) w() %}{{ a + b }}{% endcall %}", "3");
    expect_render("{% macro m() %}{{ outer }}{% endmacro %}{% set outer = 'late' %}{{ m() }}", "late");
    expect_render("{% macro m(x) %}{% set x = x * 2 %}{{ x }}{% endmacro %}{{ m(2) }}{{ x }}", "4");
    expect_render("{% macro m() -%}\\n  body\\n{%- endmacro %}[{{ m() }}]", "[\\n  body\\n]");
    expect_render("{% filter upper %}hello {{ 'x' }}{% endfilter %}", "HELLO X");
}

TEST(JinjaLanguage, Whitespace) {
    expect_render("a\n  {% if true %}\n    b\n  {% endif %}\nc", "a\n    b\nc");
    expect_render("a\n  {%- if true %}\n    b\n  {%- endif %}\nc", "a    bc");
    expect_render("a\n  {% if true -%}\n    b\n  {% endif -%}\nc", "a\nb\nc");
    expect_render("{{ 'x' }}\n{{ 'y' }}\n", "x\ny");
    expect_render("{% for m in msgs %}\n  {{ m.role }}: {{ m.content }}\n{% endfor %}\n",
                  "  user: hi\n  assistant: yo\n  user: None\n");
    expect_render("  {{ 'v' }}  {% if true %}t{% endif %}", "  v  t");
    expect_render("x {# c #} y\n  {# c #}\nz", "x  y\nz");
    expect_render("{%- set x = 1 -%}\n\n  {{ x }}  \n\n", "1  \n");
    expect_render("\t  {% if true %}tab{% endif %}", "tab");
    expect_render("{% if true %}\r\nwin{% endif %}\r\n", "win");
    expect_render("{{ 'a' }}{# x -#}   \n  b", "ab");
    expect_render("  {%- raw -%}  {{ x }}  {%- endraw -%}  |", "{{ x }}|");
    expect_render("{%- for i in range(3) %}\n{{ i }}\n{%- endfor %}", "012");
    expect_render("{{- 'lead' }}", "lead");
    expect_render("x  {%+ if true %}keep{% endif %}", "x  keep");
    expect_render("{%+ if true %}x{% endif +%}\ny", "x\ny");
    expect_render("{%- if true -%}  a  {%- endif -%}|", "a|");
    expect_render("  {% if true %}\n  x\n  {% endif %}\n  y", "  x\n  y");
    expect_render("a {{- ' b ' -}} c", "a b c");
    expect_render("x{% raw -%}\n{{ raw }}\n  {% endraw %}\n\n y", "x{{ raw }}\n\n y");
    expect_render(" \t{%+ raw %}\t{{ raw }}\n  {% endraw +%}\t y", " \t\t{{ raw }}\n\t y");
    expect_render("{% for x in 'ab' %}\n  {% raw %}{{ x }}{% endraw %}\n{% endfor %}", "{{ x }}{{ x }}");
}

TEST(JinjaLanguage, Filters) {
    expect_render(
        "{{ '  x  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ s|upper }}|{{ s|lower }}|{{ 'hello world'|capitalize }}|{{ 'hello wORLD-foo(bar'|title }}",
        "x|hi|HELLO WORLD|hello world|Hello world|Hello World-Foo(Bar");
    expect_render("{{ u|upper }}|{{ u|title }}|{{ u|capitalize }}|{{ 'ÉCOLE'|lower }}",
                  "HÉLLO WÖRLD|Héllo Wörld|Héllo wörld|école");
    expect_render(
        "{{ l|length }}|{{ l|count }}|{{ l|first }}|{{ l|last }}|{{ l|join(',') }}|{{ l|sort }}|{{ l|sort(reverse=true) }}|{{ l|reverse|list }}|{{ l|sum }}|{{ l|min }}|{{ l|max }}",
        "3|3|3|2|3,1,2|[1, 2, 3]|[3, 2, 1]|[2, 1, 3]|6|1|3");
    expect_render(
        "{{ words|sort }}|{{ words|sort(case_sensitive=true) }}|{{ words|unique|list }}|{{ words|map('upper')|list }}|{{ words|join }}",
        "['A', 'a', 'b', 'c']|['A', 'a', 'b', 'c']|['b', 'A', 'c']|['B', 'A', 'C', 'A']|bAca");
    expect_render(
        "{{ msgs|selectattr('role', 'equalto', 'user')|list|length }}|{{ msgs|rejectattr('role', 'eq', 'user')|map(attribute='content')|list }}|{{ msgs|map(attribute='x', default=0)|list }}",
        "2|['yo']|[0, 2, 0]");
    expect_render(
        "{{ [1, 0, 2, none]|select|list }}|{{ [1, 2, 3, 4]|select('odd')|list }}|{{ [1,2,3,4]|reject('even')|list }}|{{ msgs|selectattr('x')|list }}",
        "[1, 2]|[1, 3]|[1, 3]|[{'role': 'assistant', 'content': 'yo', 'x': 2}]");
    expect_render(
        "{{ d|dictsort }}|{{ d|items|list }}|{{ {'b': 1, 'A': 2, 'a': 3}|dictsort }}|{{ {'b': 1, 'a': 3}|dictsort(by='value', reverse=true) }}",
        "[('a', 1), ('b', [1, 2]), ('c', {'x': 'y'})]|[('a', 1), ('b', [1, 2]), ('c', {'x': 'y'})]|[('A', 2), ('a', 3), ('b', 1)]|[('a', 3), ('b', 1)]");
    expect_render(
        "{{ 3.7|int }}|{{ '42'|int }}|{{ '4.5'|int }}|{{ 'x'|int }}|{{ 'x'|int(7) }}|{{ '3.5'|float }}|{{ 3|float }}|{{ 2.5|round }}|{{ 3.14159|round(2) }}|{{ 3|round }}|{{ 2.675|round(2) }}|{{ 3.2|round(method='ceil') }}",
        "3|42|4|0|7|3.5|3.0|2.0|3.14|3|2.67|4.0");
    expect_render(
        "{{ l|batch(2)|list }}|{{ l|batch(2, 'x')|list }}|{{ 'a b c'|wordcount }}|{{ 'abc'|center(9) }}|{{ 'abcdefghijklmnop'|truncate(9) }}|{{ 'hello world foo bar baz qux'|truncate(12) }}|{{ 'abc'|truncate(3) }}",
        "[[3, 1], [2]]|[[3, 1], [2, 'x']]|3|   abc   |abcdef...|hello...|abc");
    expect_render(
        "{{ '<a href=\"x\">&</a>'|e }}|{{ '<b>'|escape }}|{{ '<b>'|safe }}|{{ 1|string }}|{{ [1,'a']|string }}|{{ 'abc'|list }}|{{ 'abc'|reverse }}",
        "&lt;a href=&#34;x&#34;&gt;&amp;&lt;/a&gt;|&lt;b&gt;|<b>|1|[1, 'a']|['a', 'b', 'c']|cba");
    expect_render(
        "{{ \"line1\\nline2\\n\\nline3\"|indent(2) }}|{{ \"a\\nb\"|indent(2, true) }}|{{ \"a\\n\\nb\"|indent(width=\">\", blank=true) }}|{{ \"x\\r\\ny\"|indent(1) }}",
        "line1\n  line2\n\n  line3|  a\n  b|a\n>\n>b|x\n y");
    expect_render(
        "{{ [3,1,2]|sort|first }}|{{ [{'n': 2}, {'n': 1}]|sort(attribute='n')|map(attribute='n')|list }}|{{ [{'n': 'b'}, {'n': 'A'}]|max(attribute='n') }}",
        "1|[1, 2]|{'n': 'b'}");
    expect_render(
        "{{ 'Hello'|replace('l', 'L', 1) }}|{{ 'aaa'|replace('', '-') }}|{{ l|map('string')|join('-') }}|{{ [[1,2],[3]]|map('length')|list }}|{{ msgs|map(attribute='role')|unique|list }}",
        "HeLlo|-a-a-a-|3-1-2|[2, 1]|['user', 'assistant']");
    expect_render(
        "{{ '%s-%d'|format('a', 3) }}|{{ '%(a)s-%(b)d'|format(a='x', b=2) }}|{{ \"  multiple   spaces  \"|wordcount }}|{{ (1, 2)|list }}|{{ ''|first }}|{{ []|last }}",
        "a-3|x-2|2|[1, 2]||");
    expect_error("{{ none|length }}");
    expect_error("{{ l|nosuchfilter }}");
}

TEST(JinjaLanguage, Tests) {
    expect_render(
        "{{ 'abc' is string }}|{{ 1 is number }}|{{ 1 is integer }}|{{ 1.0 is float }}|{{ true is number }}|{{ true is integer }}|{{ d is mapping }}|{{ l is iterable }}|{{ l is sequence }}|{{ 'x' is iterable }}|{{ [] is sequence }}",
        "True|True|True|True|True|False|True|True|True|True|True");
    expect_render(
        "{{ n is none }}|{{ t is true }}|{{ t is boolean }}|{{ 1 is true }}|{{ 2 is even }}|{{ 3 is odd }}|{{ 9 is divisibleby 3 }}|{{ 9 is divisibleby(2) }}|{{ 1 is eq 1 }}|{{ 1 is ne 1 }}|{{ 2 is gt 1 }}|{{ 'ab' is lower }}|{{ 'AB' is upper }}|{{ range is callable }}",
        "True|True|True|False|True|True|True|False|True|False|True|True|True|True");
    expect_render(
        "{{ messages is not defined }}|{{ not messages is defined }}|{{ 'a' is in 'abc' }}|{{ 3 is in [1, 2] }}|{{ 'sum' is filter }}|{{ 'odd' is test }}|{{ none is sameas none }}|{{ true is sameas true }}|{{ 1 is sameas true }}",
        "True|True|True|False|True|True|True|True|False");
    expect_render(
        "{% if msgs[0].content is string and msgs[2].content is none %}ok{% endif %}|{% if d.c is mapping %}{% for k, v in d.c|items %}{{ k }}{{ v }}{% endfor %}{% endif %}",
        "ok|xy");
    expect_error("{{ l is nosuchtest }}");
}

TEST(JinjaLanguage, StringMethods) {
    expect_render(
        "{{ 'a-b-c'.split('-') }}|{{ 'a b  c '.split() }}|{{ 'a,b,c'.split(',', 1) }}|{{ '  x '.strip() }}|{{ 'xxaxx'.lstrip('x') }}|{{ 'xxaxx'.rstrip('x') }}",
        "['a', 'b', 'c']|['a', 'b', 'c']|['a', 'b,c']|x|axx|xxa");
    expect_render(
        "{{ 'hello'.startswith('he') }}|{{ 'hello'.endswith(('x', 'lo')) }}|{{ 'hello'.replace('l', 'L') }}|{{ 'hello'.find('l') }}|{{ 'hello'.count('l') }}|{{ ','.join(['a', 'b']) }}",
        "True|True|heLLo|2|2|a,b");
    expect_render(
        "{{ '{} and {}'.format(1, 'x') }}|{{ '{0}{name}'.format(1, name='n') }}|{{ '%05.2f' % 3.14159 }}|{{ 'hi %s' % 'x' }}|{{ '%-5s|%5s|%.2s' % ('ab', 'cd', 'efg') }}|{{ '%x %o %e %g %%' % (255, 8, 12345.678, 0.0001) }}",
        "1 and x|1n|03.14|hi x|ab   |   cd|ef|ff 10 1.234568e+04 0.0001 %");
    expect_render(
        "{{ 'hello world foo'.title() }}|{{ 'ABC'.lower() }}|{{ 'abc'.upper() }}|{{ 'x1st'.title() }}|{{ 'a.b'.split('.')[-1] }}|{{ 'x</think>y'.split('</think>')[-1].lstrip('\\n') }}",
        "Hello World Foo|abc|ABC|X1St|b|y");
    expect_error("{{ s.nosuchmethod() }}");
}

TEST(JinjaLanguage, DictListMethods) {
    expect_render(
        "{{ d.get('a') }}|{{ d.get('zz', 5) }}|{{ d.get('zz') }}|{{ d.keys()|list }}|{{ d.values()|list }}|{{ l.index(1) }}|{{ l.count(3) }}|{{ d.items()|list }}",
        "1|5|None|['a', 'b', 'c']|[1, [1, 2], {'x': 'y'}]|1|1|[('a', 1), ('b', [1, 2]), ('c', {'x': 'y'})]");
    expect_error("{{ l.append(4) }}");
    expect_error("{{ d.update({}) }}");
    expect_error("{{ d.pop('a') }}");
}

TEST(JinjaLanguage, Tojson) {
    expect_render(
        "{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ 'é\"\\n'|tojson }}|{{ [1.0, 2.5, none, true]|tojson }}|{{ {}|tojson(indent=4) }}",
        "{\"a\": 1, \"b\": [1, 2], \"c\": {\"x\": \"y\"}}|{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ],\n  \"c\": {\n    \"x\": \"y\"\n  }\n}|\"é\\\"\\n\"|[1.0, 2.5, null, true]|{}");
    expect_render(
        "{{ d|tojson(separators=(',', ':')) }}|{{ d|tojson(sort_keys=true) }}|{{ \"\\u00e9\\u2028\"|tojson }}",
        "{\"a\":1,\"b\":[1,2],\"c\":{\"x\":\"y\"}}|{\"a\": 1, \"b\": [1, 2], \"c\": {\"x\": \"y\"}}|\"é \"");
    expect_render(
        "{{ 'x'|tojson }}{{ 5|tojson }}{{ none|tojson }}|{{ ['a']|tojson(indent=' ') }}|{{ {'a': [1, {'b': []}]}|tojson(indent=2) }}|{{ {1: 'a', none: 'c', 2.5: 'x'}|tojson }}",
        "\"x\"5null|[\n \"a\"\n]|{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ]\n}|{\"1\": \"a\", \"null\": \"c\", \"2.5\": \"x\"}");
}

TEST(JinjaLanguage, Globals) {
    expect_render("{{ range(5)|list }}|{{ range(1, 10, 3)|list }}|{{ range(5, 0, -2)|list }}|{{ dict(a=1, b=2) }}",
                  "[0, 1, 2, 3, 4]|[1, 4, 7]|[5, 3, 1]|{'a': 1, 'b': 2}");
    expect_render("{{ strftime_now('%Y-%m-%d %d %b %Y %B %A %j %%') }}|{{ strftime_now('') }}",
                  "2025-03-14 14 Mar 2025 March Friday 073 %|");
    expect_error("{{ range(200000) }}");
    expect_error("{{ raise_exception('boom') }}");
}

TEST(JinjaLanguage, SyntaxErrors) {
    expect_error("{% include 'x.html' %}");
    expect_error("{% extends 'x.html' %}");
    expect_error("{% import 'x.html' as x %}");
    expect_error("{% break %}");
    expect_error("{% for x in l %}{% macro z() %}{% break %}{% endmacro %}{% endfor %}");
    expect_error("{% if %}{% endif %}");
    expect_error("{% if true %}");
    expect_error("{% endfor %}");
    expect_error("{{ 1 + }}");
    expect_error("{{ (1 + 2 }}");
    expect_error("{{ 'unterminated }}");
    expect_error("{% set 1 = 2 %}");
    expect_error("{% unknown %}");
    expect_error("{{ x is is defined }}");
    expect_error("{% for x in l %}");
    expect_error("{# unterminated comment");
}

TEST(JinjaLanguage, Markup) {
    expect_render(
        "{{ 'a<'|safe + '<b>' }}|{{ '<b>' + 'x'|safe }}|{{ '<'|e + '<' }}|{{ '<'|safe ~ '<' }}|{{ ('%s<' | safe) % '<' }}|{{ '<'|safe * 2 }}|{{ '<'|e|e }}|{{ '<'|forceescape|forceescape }}",
        "a<&lt;b&gt;|&lt;b&gt;x|&lt;&lt;|<<|&lt;<|<<|&lt;|&amp;lt;");
    expect_render("{{ \"'\"|safe + {'a': '\"'}|tojson }}|{{ ('x'|safe + '&')|length }}|{{ '<'|safe == '<' }}",
                  "'{&#34;a&#34;: &#34;\\&#34;&#34;}|6|True");
}

TEST(JinjaLanguage, PythonQuirks) {
    expect_render(
        "{{ foo|last }}|{{ t[-1] }}|{{ n['a'] }}|{{ 'ab' % foo }}|{{ '' % [1, 2] }}|{{ 0.5 is even }}|{{ 3.0 is odd }}|{{ 9.0 is divisibleby 3 }}",
        "|||ab||False|True|True");
    expect_error("{{ [1]|truncate(5) }}|{{ foo|truncate }}|{{ l|select|length }}");
    expect_render(
        "{{ l|select|list }}|{% set g = l|map('string') %}{{ g|list }}{{ g|list }}|{% set g = l|select %}{{ g|first }}{{ g|list }}|{{ l|reverse is sequence }}|{{ [] |select is true }}",
        "[3, 1, 2]|['3', '1', '2'][]|3[1, 2]|False|False");
    expect_error("{{ foo|int }}");
    expect_error("{{ [d]|unique|list }}");
    expect_error("{{ d in d }}");
    expect_error("{{ t[1:] }}");
    expect_error("{{ d[1:] }}");
    expect_error("{{ true|indent }}");
    expect_error("{{ l|map('string')|tojson }}");
    expect_error("{{ l|select|last }}");
}

}  // namespace jinja_language_test
}  // namespace
}  // namespace tempered
