#include "core/html.h"

namespace fulcrum {

namespace {

std::string Escape(std::string_view text, bool quotes) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (!quotes && (c == '"' || c == '\'')) {
      out += c;
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string HtmlEscape(std::string_view text) { return Escape(text, true); }

std::string HtmlEscapeText(std::string_view text) { return Escape(text, false); }

}  // namespace fulcrum
