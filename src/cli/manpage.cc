#include "cli/manpage.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fulcrum::cli {
namespace {

// UTF-8 sequences as roff's \[uXXXX] (groff reads ASCII without preconv).
std::string NonAscii(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out += text[i++];
      continue;
    }
    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
    uint32_t code = c & (0x3F >> extra);
    for (int k = 1; k <= extra && i + k < text.size(); ++k) {
      code = (code << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    }
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\[u%04X]", static_cast<unsigned>(code));
    out += buf;
    i += extra + 1;
  }
  return out;
}

// Text for roff: backslashes and dashes escaped, a line that would start with a control
// character ('.' or '\'') protected with \&.
std::string Escape(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
    line_start = c == '\n';
  }
  return NonAscii(out);
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Paragraphs (blank-line separated) of `text`, each kept as typed (.nf) when it looks
// preformatted (indented lines, examples), else filled.
void Paragraphs(std::ostringstream& s, const std::string& text) {
  std::istringstream in(text);
  std::string line, para;
  auto flush = [&] {
    if (para.empty()) return;
    bool indented = para.find("\n ") != std::string::npos || para[0] == ' ';
    s << ".PP\n";
    if (indented) s << ".nf\n";
    s << Escape(para) << (para.back() == '\n' ? "" : "\n");
    if (indented) s << ".fi\n";
    para.clear();
  };
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t") == std::string::npos) {
      flush();
      continue;
    }
    para += line + "\n";
  }
  flush();
}

void Options(std::ostringstream& s, const std::vector<OptionInfo>& options) {
  for (const OptionInfo& o : options) {
    s << ".TP\n";
    if (o.positional) {
      s << ".I " << Escape(o.names[0]) << "\n";
    } else {
      std::string names;
      for (const std::string& n : o.names) names += (names.empty() ? "" : ", ") + Escape(n);
      s << "\\fB" << names << "\\fR";
      if (!o.value_name.empty()) s << " \\fI" << Escape(o.value_name) << "\\fR";
      s << "\n";
    }
    s << Escape(o.help.empty() ? "(no description)" : o.help) << "\n";
  }
}

std::string Header(const std::string& title, const std::string& version) {
  return ".TH " + Escape(Upper(title)) + " 1 \"\" \"fulcrum " + Escape(version) +
         "\" \"fulcrum manual\"\n"
         // No hyphenation, ragged right: option names and commands stay whole.
         ".nh\n.ad l\n";
}

ManPage CommandPage(const CommandInfo& c, const std::string& version) {
  std::ostringstream s;
  s << Header("fulcrum-" + c.name, version) << ".SH NAME\nfulcrum\\-" << Escape(c.name) << " \\- "
    << Escape(c.help) << "\n.SH SYNOPSIS\n.B fulcrum " << Escape(c.name) << "\n";
  if (!c.subcommands.empty()) s << "[\\fISUBCOMMAND\\fR] ";
  s << "[\\fIOPTIONS\\fR]";
  for (const OptionInfo& o : c.options) {
    if (o.positional) s << " [\\fI" << Escape(o.names[0]) << "\\fR]";
  }
  // Examples written into the description (bench, doctor) go to EXAMPLES with the footer's.
  std::string description = c.description.empty() ? c.help : c.description;
  std::string examples = c.footer;
  if (size_t at = description.find("Examples:"); at != std::string::npos) {
    examples = description.substr(at) + (examples.empty() ? "" : "\n\n" + examples);
    description.erase(at);
  }
  s << "\n.SH DESCRIPTION\n";
  Paragraphs(s, description);
  s << ".SH OPTIONS\n";
  Options(s, c.options);
  if (!c.subcommands.empty()) {
    s << ".SH SUBCOMMANDS\n";
    for (const CommandInfo& sub : c.subcommands) {
      s << ".SS fulcrum " << Escape(c.name + " " + sub.name) << "\n";
      Paragraphs(s, sub.help);
      Options(s, sub.options);
      Paragraphs(s, sub.footer);
    }
  }
  if (!examples.empty()) {
    s << ".SH EXAMPLES\n";
    Paragraphs(s, examples);
  }
  s << ".SH EXIT STATUS\n0 ok, 2 bad usage or input, 1 runtime failure"
    << (c.name == "run" ? " (see DESCRIPTION for the codes of a supervised job)" : "")
    << (c.name == "doctor" ? ", 3 the compatibility verdict is fail" : "")
    << ". With \\fB\\-\\-json\\fR an error is printed on standard error as\n"
       "{\"error\": {\"message\", \"file\", \"line\", \"field\", \"expected\", \"found\", "
       "\"nearest\"}}.\n"
       ".SH SEE ALSO\n.BR fulcrum (1)\n";
  return {"fulcrum-" + c.name + ".1", s.str()};
}

ManPage TopPage(const CliInfo& cli, const std::string& version) {
  std::ostringstream s;
  s << Header("fulcrum", version)
    << ".SH NAME\nfulcrum \\- choose, watch and keep alive the GPU servers you rent\n"
       ".SH SYNOPSIS\n.B fulcrum\n[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR]\n"
       ".SH GLOBAL OPTIONS\n";
  Options(s, cli.global_options);
  std::string group;
  for (const CommandInfo& c : cli.commands) {
    if (c.group != group) {
      group = c.group;
      s << ".SH " << Escape(Upper(group)) << " COMMANDS\n";
    }
    s << ".TP\n.BR fulcrum\\-" << Escape(c.name) << " (1)\n" << Escape(c.help) << "\n";
  }
  s << ".SH SEE ALSO\n";
  std::string sep;
  for (const CommandInfo& c : cli.commands) {
    s << sep << ".BR fulcrum\\-" << Escape(c.name) << " (1)";
    sep = ",\n";
  }
  s << "\n";
  return {"fulcrum.1", s.str()};
}

}  // namespace

std::vector<ManPage> ManPages(const CliInfo& cli, const std::string& version) {
  std::vector<ManPage> pages = {TopPage(cli, version)};
  for (const CommandInfo& c : cli.commands) pages.push_back(CommandPage(c, version));
  return pages;
}

Status WriteManPages(const CliInfo& cli, const std::string& version, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create " + dir + ": " + ec.message());
  for (const ManPage& page : ManPages(cli, version)) {
    std::string path = dir + "/" + page.file_name;
    std::ofstream out(path, std::ios::trunc);
    out << page.roff;
    out.close();
    if (!out) return Status::IoError("cannot write " + path);
  }
  return Status::Ok();
}

}  // namespace fulcrum::cli
