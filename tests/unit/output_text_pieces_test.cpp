// Text cut into pieces without a tokenizer (output/text_pieces.h): words with the spaces before them, single
// other characters, runs of line ends; the same pieces however the text is chunked.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "output/text_pieces.h"

namespace tempered {
namespace {
namespace output_text_pieces_test {

std::vector<int32_t> ids_of(const std::vector<std::string>& pieces) {
    std::vector<int32_t> ids;
    for (const auto& piece : pieces) ids.push_back(text_piece_id(piece));
    return ids;
}

std::vector<int32_t> cut(const std::vector<std::string>& chunks) {
    TextPieces pieces;
    std::vector<int32_t> ids;
    for (const auto& chunk : chunks)
        for (int32_t id : pieces.push(chunk)) ids.push_back(id);
    for (int32_t id : pieces.finish()) ids.push_back(id);
    return ids;
}

TEST(TextPieces, WordsKeepTheirLeadingSpacesAndPunctuationStandsAlone) {
    EXPECT_EQ(cut({"The capital, is  Paris.\n\n73. to"}),
              ids_of({"The", " capital", ",", " is", "  Paris", ".", "\n\n", "73", ".", " to"}));
}

TEST(TextPieces, ARunOfOnePunctuationCharacterIsOnePiece) {
    // A markdown table's rule is a few pieces, as it is a few tokens: not a period-1 loop of "-".
    EXPECT_EQ(cut({"|------|---|\n..."}), ids_of({"|", "------", "|", "---", "|", "\n", "..."}));
    EXPECT_EQ(cut({"a--", "-b"}), ids_of({"a", "---", "b"}));
}

TEST(TextPieces, ChunkBoundariesDoNotChangeThePieces) {
    const std::string text = "la Femme, la Femme, la Fem\xC3\xA9me</div></div>\n|---|---|...";
    const std::vector<int32_t> whole = cut({text});
    for (size_t split = 1; split < text.size(); ++split)
        EXPECT_EQ(cut({text.substr(0, split), text.substr(split)}), whole) << split;
}

TEST(TextPieces, IdsAreNonNegativeAndTellPiecesApart) {
    EXPECT_GE(text_piece_id(" Femme"), 0);
    EXPECT_NE(text_piece_id(" Femme"), text_piece_id("Femme"));
    EXPECT_TRUE(cut({""}).empty());
}

}  // namespace output_text_pieces_test
}  // namespace
}  // namespace tempered
