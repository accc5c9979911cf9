#include "core/html.h"

#include <gtest/gtest.h>

namespace fulcrum {
namespace {

TEST(HtmlEscapeTest, EscapesWhatEndsTextOrAnAttribute) {
  EXPECT_EQ(HtmlEscape("a < b && c > \"d\" 'e'"),
            "a &lt; b &amp;&amp; c &gt; &quot;d&quot; &#39;e&#39;");
  EXPECT_EQ(HtmlEscape("plain /tmp/step-00000040"), "plain /tmp/step-00000040");
  EXPECT_EQ(HtmlEscape(""), "");
}

TEST(HtmlEscapeTest, TextEscapingLeavesQuotes) {
  EXPECT_EQ(HtmlEscapeText("a < b && c > \"d\" 'e'"), "a &lt; b &amp;&amp; c &gt; \"d\" 'e'");
}

}  // namespace
}  // namespace fulcrum
