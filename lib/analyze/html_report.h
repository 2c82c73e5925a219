// The HTML page of a trajectory analysis: one file that carries its CSS and
// its SVG charts inline, with no scripts and nothing fetched from elsewhere,
// so it can be archived or mailed as it is and opened offline. The markup is
// also well-formed XML (XHTML polyglot), so tools and tests can parse it.
// The page depends only on the Analysis (no dates, no locale), so the same
// analysis always gives the same bytes.
//
// A pure function; thread-safe.
#pragma once

#include <string>

#include "lib/analyze/analysis.h"

namespace zipnn::analyze {

// A self-contained HTML report of an analysis: inline CSS and inline SVG
// charts, no scripts, no external fonts, images or links. `title` heads the
// page; it and every name taken from the checkpoints is escaped.
std::string HtmlReport(const Analysis& analysis, const std::string& title);

}  // namespace zipnn::analyze
