// HTML text escaping for the pages fulcrum writes itself (plan and validate reports): the five
// characters that can end text or an attribute value. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace fulcrum {

// `text` with & < > " ' as character references, safe in element text and quoted attributes.
std::string HtmlEscape(std::string_view text);

// `text` with only & < > as character references: element text, and the escaping Slack's message
// formatting asks for (quotes stay as they are).
std::string HtmlEscapeText(std::string_view text);

}  // namespace fulcrum
