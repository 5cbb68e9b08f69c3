#include "loadgen/prompt_words.h"

#include <iterator>

namespace tempered::loadgen {
namespace {

// Lower-case, no punctuation: each is one token with a leading space in the vocabularies above.
constexpr std::string_view kWords[] = {
    "time",    "people",  "year",    "way",     "day",     "man",     "thing",   "woman",   "life",
    "child",   "world",   "school",  "state",   "family",  "student", "group",   "country", "problem",
    "hand",    "part",    "place",   "case",    "week",    "company", "system",  "program", "question",
    "work",    "government", "number", "night",  "point",   "home",    "water",   "room",    "mother",
    "area",    "money",   "story",   "fact",    "month",   "lot",     "right",   "study",   "book",
    "eye",     "job",     "word",    "business", "issue",  "side",    "kind",    "head",    "house",
    "service", "friend",  "father",  "power",   "hour",    "game",    "line",    "end",     "member",
    "law",     "car",     "city",    "community", "name",  "president", "team",  "minute",  "idea",
    "kid",     "body",    "information", "back", "parent", "face",    "others",  "level",   "office",
    "door",    "health",  "person",  "art",     "war",     "history", "party",   "result",  "change",
    "morning", "reason",  "research", "girl",   "guy",     "moment",  "air",     "teacher", "force",
    "education", "food",  "light",   "music",   "river",   "tree",    "table",   "road",    "market",
    "paper",   "garden",  "field",   "window",  "street",  "letter",  "plan",    "picture", "season",
    "color",   "voice",   "summer",  "winter",  "horse",   "dog",     "bird",    "fish",    "stone",
    "sun",     "moon",    "star",    "sea",     "ship",    "train",   "bridge",  "village", "island",
    "forest",  "mountain", "hill",   "lake",    "rain",    "snow",    "wind",    "fire",    "bread",
    "milk",    "apple",   "coffee",  "tea",     "dinner",  "lunch",   "song",    "dance",   "film",
    "news",    "price",   "cost",    "rate",    "size",    "age",     "role",    "rule",    "model",
    "design",  "test",    "step",    "list",    "corner",   "page",    "card",    "box",     "ball",
    "good",    "new",     "first",   "last",    "long",    "great",   "little",  "own",     "other",
    "old",     "big",     "high",    "small",   "large",   "next",    "early",   "young",   "important",
    "public",  "bad",     "same",    "able",    "open",    "free",    "full",    "clear",   "simple",
    "happy",   "green",   "blue",    "red",     "white",   "black",   "dark",    "warm",    "cold",
    "quick",   "slow",    "quiet",   "strong",  "short",   "real",    "best",    "better",  "true",
    "make",    "take",    "give",    "find",    "tell",    "ask",     "feel",    "leave",   "keep",
    "bring",   "begin",   "help",    "show",    "hear",    "play",    "run",     "move",    "live",
    "believe", "hold",    "write",   "stand",   "learn",   "read",    "walk",
};

}  // namespace

std::span<const std::string_view> common_words() { return kWords; }

PromptWords::PromptWords(uint64_t seed, uint64_t index) {
    std::seed_seq sequence{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                           static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32)};
    generator_.seed(sequence);
}

std::string_view PromptWords::next() { return kWords[generator_() % std::size(kWords)]; }

std::string synthetic_prompt(uint64_t seed, uint64_t index, int64_t words) {
    PromptWords source(seed, index);
    std::string text;
    for (int64_t i = 0; i < words; ++i) {
        if (i) text.push_back(' ');
        text.append(source.next());
    }
    return text;
}

}  // namespace tempered::loadgen
