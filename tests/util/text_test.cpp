// UTF-8 checks of config keys and values (issue 30: one 0xFF byte made the JSON writer throw).
#include "projector/util/text.h"

#include <gtest/gtest.h>

#include <string>

namespace projector {
namespace {

TEST(Utf8, AcceptsWellFormedText) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("tensor_model_parallel_size"));
  EXPECT_TRUE(is_valid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));  // é € 😀
  EXPECT_TRUE(is_valid_utf8("\xF4\x8F\xBF\xBF"));                           // U+10FFFF
}

TEST(Utf8, RefusesIllFormedText) {
  EXPECT_FALSE(is_valid_utf8("ba\xFFr"));
  EXPECT_FALSE(is_valid_utf8("caf\xE9"));           // Latin-1
  EXPECT_FALSE(is_valid_utf8("\xC3"));              // truncated
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));          // truncated
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xE0\x80\xAF"));      // overlong
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\x80"));              // lone continuation byte
}

TEST(Utf8, EscapesOnlyTheBadBytes) {
  EXPECT_EQ(escape_invalid_utf8("ba\xFFr"), "ba\\xFFr");
  EXPECT_EQ(escape_invalid_utf8("caf\xC3\xA9\xE9"), "caf\xC3\xA9\\xE9");
  EXPECT_EQ(escape_invalid_utf8("plain"), "plain");
}

}  // namespace
}  // namespace projector
