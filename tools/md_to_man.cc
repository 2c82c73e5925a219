// md_to_man: renders the command pages of docs/commands (Markdown) as man
// pages, at build time, so that `git zipnn --help` (which git turns into
// `man git-zipnn`) finds one. Only the Markdown the pages use is known:
// headings, paragraphs, fenced code, lists, pipe tables, `code`, **bold**
// and links.
//
//   git-zipnn --list-commands | md_to_man <out> <version> <page.md>...
//
// stdin: the command table, one "name TAB summary" line per command. Each
// page's title names the commands it covers ("# git zipnn fetch / pull");
// the page titled "# git-zipnn - <what>" becomes git-zipnn(1), with the
// command table as its COMMANDS section. Writes <out>/man1/git-zipnn.1,
// git-zipnn-<first>.1 per page and a .so link for each further command.
// Fails, naming it, when a command has no page or a page names no
// command, so the manual cannot fall behind the command table.
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Command {
  std::string name;
  std::string summary;
};

struct Page {
  std::string source;              // the .md file, for messages
  std::vector<std::string> names;  // commands it covers; empty for git-zipnn(1)
  std::string what;                // "- <what>" of the title, if any
  std::vector<std::string> body;   // the lines after the title
};

bool StartsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

// Typography the pages use, as roff names it, so that it prints on an
// ASCII terminal too (groff has no ASCII form of a raw U+2026).
constexpr std::pair<const char*, const char*> kTypography[] = {
    {"\u2026", "..."},   {"\u2014", "\\(em"}, {"\u2013", "\\(en"}, {"\u2192", "\\(->"},
    {"\u2248", "\\(~~"}, {"\u00d7", "\\(mu"}, {"\u2264", "\\(<="}, {"\u2265", "\\(>="},
};

// Text as roff reads it: backslashes escaped, '-' as the ASCII minus of
// options (a plain '-' may print as a hyphen that searches do not find).
std::string Escape(const std::string& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    bool named = false;
    for (const auto& [utf8, roff] : kTypography) {
      const size_t n = std::char_traits<char>::length(utf8);
      if (s.compare(i, n, utf8) == 0) {
        r += roff;
        i += n - 1;
        named = true;
        break;
      }
    }
    if (named) continue;
    if (c == '\\') {
      r += "\\e";
    } else if (c == '-') {
      r += "\\-";
    } else {
      r += c;
    }
  }
  return r;
}

// A line roff does not take for a request.
std::string Line(const std::string& s) { return !s.empty() && (s[0] == '.' || s[0] == '\'') ? "\\&" + s : s; }

// Where a link points, for a reader of the man page.
std::string LinkTarget(const std::string& url, const std::map<std::string, std::string>& page_of_file) {
  if (StartsWith(url, "http://") || StartsWith(url, "https://")) return url;
  const std::string file = url.substr(0, url.find('#'));
  auto page = page_of_file.find(file);
  if (page != page_of_file.end()) return page->second + "(1)";
  if (StartsWith(file, "../")) return "docs/" + file.substr(3);
  return "docs/commands/" + file;
}

// Inline Markdown: `code` and **bold** in bold, links as their text and
// where they point.
std::string Inline(const std::string& s, const std::map<std::string, std::string>& page_of_file) {
  std::string r;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '`') {
      const size_t end = s.find('`', i + 1);
      if (end != std::string::npos) {
        r += "\\fB" + Escape(s.substr(i + 1, end - i - 1)) + "\\fR";
        i = end + 1;
        continue;
      }
    }
    if (StartsWith(s.substr(i, 2), "**")) {
      const size_t end = s.find("**", i + 2);
      if (end != std::string::npos) {
        r += "\\fB" + Inline(s.substr(i + 2, end - i - 2), page_of_file) + "\\fR";
        i = end + 2;
        continue;
      }
    }
    if (s[i] == '[') {
      size_t close = s.find(']', i);
      if (close != std::string::npos && s.compare(close, 2, "](") != 0) close = std::string::npos;  // "[<rev>]"
      const size_t end = close == std::string::npos ? close : s.find(')', close);
      if (end != std::string::npos) {
        const std::string text = s.substr(i + 1, close - i - 1);
        const std::string target = LinkTarget(s.substr(close + 2, end - close - 2), page_of_file);
        const std::string plain =
            text.size() > 2 && text.front() == '`' && text.back() == '`' ? text.substr(1, text.size() - 2) : text;
        // A link whose text is its own target ("[../analyze.md](...)") prints once.
        if (plain == s.substr(close + 2, end - close - 2) || target.find(plain) != std::string::npos) {
          r += Escape(target);
        } else {
          r += Inline(text, page_of_file) + " (" + Escape(target) + ")";
        }
        i = end + 1;
        continue;
      }
    }
    r += Escape(std::string(1, s[i]));
    ++i;
  }
  return r;
}

std::vector<std::string> Cells(const std::string& row) {
  std::vector<std::string> cells;
  std::string cell;
  const std::string inner = Trim(row).substr(1);  // past the first '|'
  for (size_t i = 0; i < inner.size(); ++i) {
    if (inner[i] == '\\' && i + 1 < inner.size() && inner[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (inner[i] == '|') {
      cells.push_back(Trim(cell));
      cell.clear();
    } else {
      cell += inner[i];
    }
  }
  return cells;
}

class Renderer {
 public:
  explicit Renderer(const std::map<std::string, std::string>& page_of_file) : page_of_file_(page_of_file) {}

  // The body of a page: SYNOPSIS from its first code block of commands,
  // DESCRIPTION from the rest of its first section, a section per "##";
  // `after_description` goes where the first section ends.
  std::string Render(const std::vector<std::string>& body, const std::string& after_description) {
    bool synopsis_done = false, in_first_section = true;
    out_ << ".SH DESCRIPTION\n";
    std::ostringstream synopsis;
    for (size_t i = 0; i < body.size(); ++i) {
      const std::string& line = body[i];
      if (StartsWith(line, "```")) {
        Flush();
        std::vector<std::string> code;
        for (++i; i < body.size() && !StartsWith(body[i], "```"); ++i) code.push_back(body[i]);
        if (in_first_section && !synopsis_done && !code.empty() && StartsWith(code[0], "git zipnn")) {
          synopsis_done = true;
          synopsis << ".SH SYNOPSIS\n.nf\n";
          for (const std::string& c : code) synopsis << Line(Escape(c)) << "\n";
          synopsis << ".fi\n";
          continue;
        }
        out_ << ".PP\n.RS 4\n.nf\n";
        for (const std::string& c : code) out_ << Line(Escape(c)) << "\n";
        out_ << ".fi\n.RE\n";
      } else if (StartsWith(line, "#")) {
        Flush();
        const size_t level = line.find_first_not_of('#');
        if (in_first_section) out_ << after_description;
        in_first_section = false;
        std::string title = Trim(line.substr(level));
        if (level == 2) {
          for (char& c : title) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
          out_ << ".SH \"" << Inline(title, page_of_file_) << "\"\n";
        } else {
          out_ << ".SS \"" << Inline(title, page_of_file_) << "\"\n";
        }
      } else if (Trim(line).empty()) {
        Flush();
      } else if (StartsWith(Trim(line), "|")) {
        Flush();
        Table(body, i);
      } else if (StartsWith(line, "- ") || StartsWith(line, "* ")) {
        Flush();
        pending_ = ".IP \\(bu 2\n";
        text_ = line.substr(2);
      } else if (line.size() > 2 && std::isdigit(static_cast<unsigned char>(line[0])) &&
                 line.find(". ") != std::string::npos && line.find(". ") < 4) {
        Flush();
        const size_t dot = line.find(". ");
        pending_ = ".IP " + line.substr(0, dot + 1) + " 4\n";
        text_ = line.substr(dot + 2);
      } else {
        if (text_.empty() && pending_.empty()) pending_ = ".PP\n";
        text_ += (text_.empty() ? "" : " ") + Trim(line);
      }
    }
    Flush();
    if (in_first_section) out_ << after_description;
    return synopsis.str() + out_.str();
  }

 private:
  void Flush() {
    if (!text_.empty()) out_ << pending_ << Line(Inline(text_, page_of_file_)) << "\n";
    pending_.clear();
    text_.clear();
  }

  // A pipe table as a tagged list: the first cell as the tag, the others
  // below it (named by their column when there are more than two).
  void Table(const std::vector<std::string>& body, size_t& i) {
    std::vector<std::vector<std::string>> rows;
    for (; i < body.size() && StartsWith(Trim(body[i]), "|"); ++i) {
      if (Trim(body[i]).find_first_not_of("|-: ") == std::string::npos) continue;  // |---|---|
      rows.push_back(Cells(body[i]));
    }
    --i;
    if (rows.empty()) return;
    const std::vector<std::string> header = rows[0];
    for (size_t r = 1; r < rows.size(); ++r) {
      const std::vector<std::string>& row = rows[r];
      if (row.empty()) continue;
      out_ << ".TP 4\n" << Line(Inline(row[0], page_of_file_)) << "\n";
      std::string rest;
      for (size_t c = 1; c < row.size(); ++c) {
        if (!rest.empty()) rest += "; ";
        if (row.size() > 2 && c < header.size()) rest += header[c] + ": ";
        rest += row[c];
      }
      out_ << Line(Inline(rest, page_of_file_)) << "\n";
    }
  }

  const std::map<std::string, std::string>& page_of_file_;
  std::ostringstream out_;
  std::string pending_;  // the request that opens the text being gathered
  std::string text_;     // a paragraph or list item, lines joined
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "md_to_man: %s\n", message.c_str());
  return 1;
}

std::string Header(const std::string& page, const std::string& version) {
  std::string upper = page;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return ".TH \"" + Escape(upper) + "\" \"1\" \"\" \"" + Escape(version) +
         "\" \"git\\-zipnn manual\"\n"
         ".nh\n.ad l\n";  // no hyphenation: option names must print whole
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return Fail("usage: git-zipnn --list-commands | md_to_man <out> <version> <page.md>...");
  const std::filesystem::path out = std::filesystem::path(argv[1]) / "man1";
  const std::string version = argv[2];
  std::vector<Command> commands;
  for (std::string line; std::getline(std::cin, line);) {
    const size_t tab = line.find('\t');
    if (tab != std::string::npos) commands.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  if (commands.empty()) return Fail("no commands on standard input (from git-zipnn --list-commands)");

  std::vector<Page> pages;
  for (int a = 3; a < argc; ++a) {
    std::ifstream in(argv[a]);
    if (!in) return Fail(std::string("cannot read ") + argv[a]);
    Page page;
    page.source = argv[a];
    std::string title;
    std::getline(in, title);
    if (!StartsWith(title, "# ")) return Fail(page.source + ": the first line is not a '# ' title");
    title = title.substr(2);
    if (size_t dash = title.find(" - "); dash != std::string::npos) {
      page.what = Trim(title.substr(dash + 3));
      title = title.substr(0, dash);
    }
    if (Trim(title) != "git-zipnn") {
      if (!StartsWith(title, "git zipnn ")) return Fail(page.source + ": the title does not name git zipnn commands");
      std::istringstream names(title.substr(std::string("git zipnn ").size()));
      for (std::string name; names >> name;) {
        if (name != "/") page.names.push_back(name);
      }
    }
    for (std::string line; std::getline(in, line);) page.body.push_back(line);
    pages.push_back(std::move(page));
  }

  // Which page covers each command; every command needs one.
  std::map<std::string, const Page*> page_of;
  std::map<std::string, std::string> page_of_file;  // "fetch.md" -> "git-zipnn-fetch"
  const Page* main_page = nullptr;
  for (const Page& page : pages) {
    if (page.names.empty()) {
      main_page = &page;
      continue;
    }
    page_of_file[std::filesystem::path(page.source).filename().string()] = "git-zipnn-" + page.names[0];
    for (const std::string& name : page.names) {
      bool known = false;
      for (const Command& c : commands) known = known || c.name == name;
      if (!known) return Fail(page.source + " names '" + name + "', which is not a git-zipnn command");
      page_of[name] = &page;
    }
  }
  if (main_page == nullptr) return Fail("no page is titled '# git-zipnn - <what it is>'");
  for (const Command& c : commands) {
    if (page_of.count(c.name) == 0) {
      return Fail("no page for 'git zipnn " + c.name + "': add docs/commands/" + c.name +
                  ".md, or name it in the title of the page that covers it");
    }
  }
  std::map<std::string, std::string> summary_of;
  for (const Command& c : commands) summary_of[c.name] = c.summary;

  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) return Fail("cannot create " + out.string() + ": " + ec.message());
  auto write = [&](const std::string& page, const std::string& text) {
    std::ofstream file(out / (page + ".1"), std::ios::binary);
    file << text;
    return static_cast<bool>(file);
  };

  std::string commands_section = ".SH COMMANDS\n";
  for (const Command& c : commands) {
    commands_section += ".TP\n\\fBgit zipnn " + Escape(c.name) + "\\fR\n" + Line(Escape(c.summary)) +
                        "; see \\fBgit\\-zipnn\\-" + Escape(c.name) + "\\fR(1).\n";
  }
  {
    Renderer renderer(page_of_file);
    const std::string text = Header("git-zipnn", version) + ".SH NAME\ngit\\-zipnn \\- " + Escape(main_page->what) +
                             "\n" + renderer.Render(main_page->body, commands_section);
    if (!write("git-zipnn", text)) return Fail("cannot write git-zipnn.1");
  }
  for (const Page& page : pages) {
    if (page.names.empty()) continue;
    const std::string first = "git-zipnn-" + page.names[0];
    std::string names;
    for (const std::string& n : page.names) names += (names.empty() ? "" : ", ") + Escape("git-zipnn-" + n);
    Renderer renderer(page_of_file);
    const std::string text = Header(first, version) + ".SH NAME\n" + names + " \\- " +
                             Escape(summary_of[page.names[0]]) + "\n" + renderer.Render(page.body, "") +
                             ".SH \"SEE ALSO\"\n\\fBgit\\-zipnn\\fR(1)\n";
    if (!write(first, text)) return Fail("cannot write " + first + ".1");
    for (size_t n = 1; n < page.names.size(); ++n) {
      if (!write("git-zipnn-" + page.names[n], ".so man1/" + first + ".1\n")) return Fail("cannot write a link");
    }
  }
  return 0;
}
