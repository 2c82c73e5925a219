// Opens an HTML file in a real browser (Debian's headless chromium) and
// checks what it made of it: the DOM it built, a screenshot that is not
// blank, a clean exit and no console message or uncaught error. For tests;
// each check runs chromium twice with a throwaway profile and HOME under
// the caller's work directory, so calls with different directories may run
// at once. Functions return an error message, or "" when all is well.
#pragma once

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace zipnn::testing {

inline constexpr const char* kChromium = "/usr/bin/chromium";

struct BrowserExpect {
  std::vector<std::string> ids;  // each must be an id="..." in the rendered DOM
  int svg_elements = -1;         // how many <svg elements it holds; -1: any
  int min_colours = 16;          // distinct pixel colours the screenshot needs
  int width = 1200, height = 3000;
};

inline std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string ChromiumMissing() {
  struct stat st;
  if (stat(kChromium, &st) == 0) return "";
  return std::string(kChromium) + " not found: the browser check needs it (apt-get install chromium)";
}

// Runs `chromium <flags> file://<html_path>` headless; `out` gets its stdout.
// HOME points into `work_dir` because chromium writes there even with its
// own --user-data-dir, and a test's HOME may not be writable. Without
// --no-sandbox it refuses to run as root; /dev/shm is small or missing in
// containers and sandboxes.
inline std::string RunChromium(const std::string& html_path, const std::string& work_dir, const std::string& flags,
                               std::string& out) {
  if (std::string missing = ChromiumMissing(); !missing.empty()) return missing;
  const std::string home = work_dir + "/chromium-home", out_path = work_dir + "/chromium.out",
                    err_path = work_dir + "/chromium.err";
  const std::string cmd =
      "mkdir -p " + ShellQuote(home) + " && HOME=" + ShellQuote(home) + " timeout 120 " + kChromium +
      " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run"
      " --user-data-dir=" +
      ShellQuote(work_dir + "/chromium-profile") + " " + flags + " " + ShellQuote("file://" + html_path) + " >" +
      ShellQuote(out_path) + " 2>" + ShellQuote(err_path);
  const int status = std::system(cmd.c_str());
  out = Slurp(out_path);
  const std::string err = Slurp(err_path);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code != 0) return "chromium exited with " + std::to_string(code) + "; stderr:\n" + err;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos) {
      return "chromium reported: " + line;
    }
  }
  return "";
}

// Distinct colours of an 8-bit RGB or RGBA PNG, decoded with python3's
// standard library alone (zlib, struct) so the check needs nothing more.
inline std::string CountColours(const std::string& png_path, const std::string& work_dir, int& colours) {
  const std::string png = Slurp(png_path);
  if (png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return png_path + " is missing or not a PNG";
  static const char* kDecoder = R"(import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
pos, idat, ihdr = 8, [], None
while pos + 8 <= len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    if kind == b'IHDR':
        ihdr = struct.unpack('>IIBBBBB', data[pos + 8:pos + 21])
    elif kind == b'IDAT':
        idat.append(data[pos + 8:pos + 8 + n])
    pos += 12 + n
width, height, depth, ctype, _, _, interlace = ihdr
if depth != 8 or ctype not in (2, 6) or interlace:
    sys.exit('unsupported PNG: depth %d, colour type %d, interlace %d' % (depth, ctype, interlace))
bpp = 3 if ctype == 2 else 4
stride = width * bpp
raw = zlib.decompress(b''.join(idat))
prev = bytearray(stride)
colours = set()
for y in range(height):
    start = y * (stride + 1)
    kind = raw[start]
    line = bytearray(raw[start + 1:start + 1 + stride])
    if kind == 1:
        for i in range(bpp, stride):
            line[i] = (line[i] + line[i - bpp]) & 255
    elif kind == 2:
        line = bytearray((a + b) & 255 for a, b in zip(line, prev))
    elif kind == 3:
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
    elif kind == 4:
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    colours.update(bytes(line[i:i + bpp]) for i in range(0, stride, bpp))
    prev = line
print(len(colours))
)";
  const std::string script = work_dir + "/png_colours.py", out = work_dir + "/png_colours.out";
  std::ofstream(script) << kDecoder;
  const std::string cmd =
      "/usr/bin/python3 " + ShellQuote(script) + " " + ShellQuote(png_path) + " >" + ShellQuote(out) + " 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string text = Slurp(out);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "decoding " + png_path + " failed: " + text;
  colours = std::atoi(text.c_str());
  return "";
}

// Renders `html_path` twice: once for its DOM (ids, <svg> count), once as a
// width x height screenshot that must have min_colours colours or more.
inline std::string BrowserCheck(const std::string& html_path, const std::string& work_dir,
                                const BrowserExpect& expect) {
  std::string dom;
  if (std::string e = RunChromium(html_path, work_dir, "--dump-dom", dom); !e.empty()) return e;
  for (const auto& id : expect.ids) {
    if (dom.find("id=\"" + id + "\"") == std::string::npos) return "the rendered DOM has no id \"" + id + "\"";
  }
  int svgs = 0;
  for (size_t at = dom.find("<svg"); at != std::string::npos; at = dom.find("<svg", at + 4)) ++svgs;
  if (expect.svg_elements >= 0 && svgs != expect.svg_elements) {
    return "the rendered DOM has " + std::to_string(svgs) + " <svg elements, expected " +
           std::to_string(expect.svg_elements);
  }
  const std::string png = work_dir + "/shot.png";
  std::remove(png.c_str());
  std::string ignored;
  const std::string flags = "--hide-scrollbars --screenshot=" + ShellQuote(png) +
                            " --window-size=" + std::to_string(expect.width) + "," + std::to_string(expect.height);
  if (std::string e = RunChromium(html_path, work_dir, flags, ignored); !e.empty()) return e;
  int colours = 0;
  if (std::string e = CountColours(png, work_dir, colours); !e.empty()) return e;
  if (colours < expect.min_colours) {
    return "the screenshot looks blank: " + std::to_string(colours) + " colours, expected at least " +
           std::to_string(expect.min_colours);
  }
  return "";
}

}  // namespace zipnn::testing
