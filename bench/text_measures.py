"""Measures of answer quality the bench scripts compute themselves (never the server's own detector).

Each takes a list of units: words (`text.split()`) or tokens (the token bytes a response's logprobs
carry). The caller says which.
"""
import re
from dataclasses import dataclass

LOOP_MIN_REPEATS = 3  # a block seen this many times in a row (the last copy may be cut by max_tokens)
LOOP_MIN_SHARE = 0.2  # ... covering at least this share of the answer's units
LOOP_MIN_UNITS = 12  # ... and at least this many units: "no, no, no." is not a loop
REPEATED_NGRAM_N = 4
NUMBER = "<number>"
NESTING_LOOP_DEPTH = 16  # a JSON answer nested deeper than this went down one level per item until cut


@dataclass
class Loop:
    period: int  # units in the repeated block
    units: int  # units in the periodic suffix: period * repeats, the last copy possibly partial
    start: int  # index of the suffix's first unit

    @property
    def repeats(self):
        return self.units / self.period


def periodic_suffix(units, period):
    """Length of the longest suffix in which every unit equals the one `period` units before it, plus the
    first block itself: the span that one block of `period` units repeated covers at the end."""
    run = 0
    i = len(units) - 1
    while i - period >= 0 and units[i] == units[i - period]:
        run += 1
        i -= 1
    return run + period if run else 0


def loop_suffix(units, max_period=None):
    """The answer's looping suffix (one block repeated >= LOOP_MIN_REPEATS times, covering LOOP_MIN_SHARE
    of the answer and LOOP_MIN_UNITS units), the longest such over all periods; None when there is none.
    O(len * max_period): fine for answers of a few hundred tokens."""
    count = len(units)
    max_period = min(max_period or count // LOOP_MIN_REPEATS, count // LOOP_MIN_REPEATS)
    best = None
    for period in range(1, max_period + 1):
        covered = periodic_suffix(units, period)
        if covered < LOOP_MIN_REPEATS * period or covered < LOOP_MIN_UNITS or covered < LOOP_MIN_SHARE * count:
            continue
        if best is None or covered > best.units:  # ties keep the shorter period (the block, not a multiple)
            best = Loop(period=period, units=covered, start=count - covered)
    return best


def loop_anywhere(units, max_period=None):
    """The first loop_suffix of any prefix of the answer: a loop the answer later broke counts too (a list going
    round 64 times, then a closing line). (prefix length, Loop) or None. Quadratic in the worst case; fine for
    answers of a few hundred units."""
    for end in range(LOOP_MIN_UNITS, len(units) + 1):
        loop = loop_suffix(units[:end], max_period)
        if loop is not None:
            return end, loop
    return None


def json_nesting_depth(text):
    """The deepest bracket nesting ({ and [) of a JSON text, brackets inside strings left out; for a text that
    is not JSON, the same count over its characters."""
    depth = deepest = 0
    in_string = escaped = False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


def numbers_as_one_unit(tokens):
    """(units, tokens per unit): each run of digit tokens becomes one placeholder unit (keeping the space
    before it), so that a numbered list going round ("7. to be\n8. to be\n...") is periodic like any other
    loop. Tokens are bytes (tuples of ints, never equal to a placeholder) or strings."""
    units, weights = [], []
    for token in tokens:
        text = bytes(token).decode("utf-8", "replace") if isinstance(token, tuple) else token
        digits = re.fullmatch(r"(\s*)\d+", text)
        if digits is None:
            units.append(token)
            weights.append(1)
        elif units and is_number(units[-1]) and not digits.group(1):
            weights[-1] += 1  # the same number's next digits ("1", "0" of 10 where digits are single tokens)
        else:
            units.append((NUMBER, digits.group(1)))
            weights.append(1)
    return units, weights


def is_number(unit):
    return isinstance(unit, tuple) and len(unit) == 2 and unit[0] == NUMBER


def looped(text):
    """The word-level loop test sampling_scenario.py records: a looping suffix over whitespace words."""
    return loop_suffix(text.split(), max_period=20) is not None


def distinct_2(texts):
    """Unique word bigrams / word bigrams, over all the texts together (higher: more varied)."""
    bigrams, total = set(), 0
    for text in texts:
        words = text.split()
        for pair in zip(words, words[1:]):
            bigrams.add(pair)
            total += 1
    return len(bigrams) / total if total else 0.0


def repeated_ngram_share(units, n=REPEATED_NGRAM_N):
    """Share of the n-grams in one answer that already occurred earlier in it (0: none repeat; a loop
    drives it towards 1). None when the answer has no n-gram."""
    grams = [tuple(units[i:i + n]) for i in range(len(units) - n + 1)]
    if not grams:
        return None
    return 1.0 - len(set(grams)) / len(grams)
