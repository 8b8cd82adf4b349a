#include "egca/core/text.h"

#include <gtest/gtest.h>

namespace egca {
namespace {

TEST(XmlEscape, EscapesMarkupAndQuotesOnly) {
  EXPECT_EQ(XmlEscape("a < b && c > \"d\" 'e'"), "a &lt; b &amp;&amp; c &gt; &quot;d&quot; 'e'");
  EXPECT_EQ(XmlEscape(""), "");
  EXPECT_EQ(XmlEscape("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 passes through
}

}  // namespace
}  // namespace egca
