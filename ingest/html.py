"""HTML pages (wiki and Confluence exports) as markdown, so the markdown chunker handles them.

BeautifulSoup (stdlib html.parser, no lxml) finds the page's main content and drops the
navigation and boilerplate around it; markdownify turns what is left into markdown with ATX
headings, fenced code and pipe tables. Imported only at ingest.
"""

from __future__ import annotations

import re

# Elements that never carry the page's content.
_DROP_TAGS = ("script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form",
              "iframe", "svg", "button", "select", "input", "object", "embed", "canvas")
_DROP_ROLES = ("navigation", "banner", "contentinfo", "search", "complementary")
# Confluence, MediaWiki and static-site chrome, matched on id/class words.
_DROP_MARKERS = re.compile(
    r"(^|[-_\s])(breadcrumbs?|sidebar|navbar|nav|menu|toc|footer|site-header|page-metadata|"
    r"likes-and-labels|comments?-section|printfooter|catlinks|mw-navigation|jump-to|skip-link|"
    r"edit-?section|pagination|cookie)([-_\s]|$)",
    re.I,
)
# What says of itself that it is the page's content (not a guess from a class name). Not <article>:
# a teaser in a sidebar is one too, and kept the sidebar and lost the page (review).
_CONTENT_MARKS = ("main", "[role=main]", "[itemprop=articleBody]", "#main-content", ".wiki-content")
# Permalink marks beside headings (Sphinx's "¶", MkDocs' and others' anchors): "Log Description ¶"
# titled every citation and the refusal's topic list (trial).
_PERMALINKS = "a.headerlink, a.anchorlink, a.header-anchor, a.anchor-link"
# Where a page keeps its content, best first.
_MAIN = ("main", "article", "[role=main]", "#main-content", ".wiki-content", "#content", "#mw-content-text", ".content", "body")


def html_to_markdown(html: str) -> tuple[str, str]:
    """(title, markdown) of an HTML page.

    The title is the page's own heading when its content has exactly one <h1>: a wiki's
    <title> carries site chrome ("Ops Wiki - Space ONCALL - GPU memory runbook"), and with
    the <h1> below it every passage was titled with both. Otherwise <title> (a Confluence
    "Space : Page" reads as the page), else the first <h1>."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    title = ""
    h1 = soup.find("h1")
    # Confluence marks its page title (`<h1 id="title-heading" class="pagetitle">`) in the
    # page header, outside the content: a page saved from the browser, whose <title> is
    # "Platform Engineering - Confluence", was titled so in every citation (trial).
    page_title = soup.select_one("#title-heading, h1.pagetitle")
    if page_title is not None and page_title.get_text(strip=True):
        title = page_title.get_text(" ", strip=True)  # read now: the header is chrome, removed below (review)
    elif soup.title and soup.title.get_text(strip=True):
        title = soup.title.get_text(" ", strip=True)
    elif h1 is not None:
        title = h1.get_text(" ", strip=True)
    _confluence_macros(soup)
    _code_tables(soup)
    _content_tabs(soup)
    for tag in soup.find_all(_DROP_TAGS):
        tag.decompose()
    for tag in soup.find_all(attrs={"role": list(_DROP_ROLES)}):
        tag.decompose()
    for tag in soup.select(_PERMALINKS):
        tag.decompose()
    # Chrome markers never reach the content or what wraps it: the Read-the-Docs theme wraps
    # every page in `div.wy-grid-for-nav` > `section.wy-nav-content-wrap`, and a built
    # Sphinx site of 15 pages gave 0 chunks (trial).
    content_at = next((tag for tag in (soup.select_one(selector) for selector in _CONTENT_MARKS)
                       if tag is not None and tag.get_text(strip=True)), None)
    keep = {id(content_at), *(id(parent) for parent in content_at.parents)} if content_at is not None else set()
    for tag in soup.find_all(lambda tag: id(tag) not in keep and _is_chrome(tag)):
        tag.decompose()
    main = None
    for selector in _MAIN:
        main = soup.select_one(selector)
        if main is not None and main.get_text(strip=True):
            break
    content = main or soup
    own = [h for h in content.find_all("h1") if h.get_text(strip=True)]
    markdown = convert_soup(content)
    if len(own) == 1:
        return own[0].get_text(" ", strip=True), markdown
    if h1 is not None and not title:
        title = h1.get_text(" ", strip=True)
    # Confluence titles read "Space : Page"; the page is what the reader asked about.
    if " : " in title:
        title = title.split(" : ", 1)[1].strip()
    return title, markdown


def _code_tables(soup) -> None:
    """Pygments' line-numbered code (`table.highlighttable`, what MkDocs Material and Sphinx emit
    with line numbers on): the numbers' cell is dropped and the code's <pre> stands alone. As a
    table, each block became one row with the numbers shown and its newlines gone, so a multi-line
    `docker run … \\` could not be pasted (46% of a built site's chunks, trial)."""
    for table in soup.select("table.highlighttable"):
        code = table.select_one("td.code pre")
        if code is not None:
            table.replace_with(code)
    for tag in soup.select("span.linenos, .linenodiv"):
        tag.decompose()


def _content_tabs(soup) -> None:
    """MkDocs Material's content tabs: each label becomes a bold title over its block. The labels
    sat glued in one line ("GPUCPU") above both commands, unsaid which was which (trial)."""
    # innermost first, each set with its own labels and blocks: vLLM's install page nests tabs
    # (GPU vendor, then pip or docker), and an outer label went over an inner block (review)
    for tabs in reversed(soup.select("div.tabbed-set")):
        row = tabs.find("div", class_="tabbed-labels", recursive=False)
        labels = row.find_all("label", recursive=False) if row is not None else tabs.find_all("label", recursive=False)
        content = tabs.find("div", class_="tabbed-content", recursive=False)
        blocks = content.find_all(class_="tabbed-block", recursive=False) if content is not None else []
        if not labels or len(labels) != len(blocks):
            continue
        for label, block in zip(labels, blocks):
            title = soup.new_tag("p")
            strong = soup.new_tag("strong")
            strong.string = label.get_text(" ", strip=True)
            title.append(strong)
            block.insert(0, title)
        for label in labels:
            label.decompose()


def _confluence_macros(soup) -> None:
    """Confluence storage format (the REST "storage" export, unrendered macros in a saved page):
    a code macro becomes a code block in its language, and the other macros' parameters, which
    are settings and not text, are dropped. Flattened, the language name was glued onto the
    command it labels ("bashgatewayctl pool drain …", trial)."""
    for macro in soup.find_all("ac:structured-macro"):
        if macro.get("ac:name") not in ("code", "noformat") or macro.find("ac:plain-text-body") is None:
            continue
        language = macro.find("ac:parameter", attrs={"ac:name": "language"})
        pre = soup.new_tag("pre")
        code = soup.new_tag("code")
        if language is not None and language.get_text(strip=True):
            code["class"] = f"language-{language.get_text(strip=True)}"
        code.string = macro.find("ac:plain-text-body").get_text()
        pre.append(code)
        macro.replace_with(pre)
    for parameter in soup.find_all("ac:parameter"):
        parameter.decompose()


_MD_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\n]*\)")


# A static site's not-found page ("404 - Not found", "Page not found"): listed among a tree's topics (trial).
# Only a title that is all "not found" and a short page: a runbook titled "404 Not Found from
# /v1/chat/completions" is documentation (review).
_NOT_FOUND = re.compile(r"^\s*(?:404(?:\s*[-–:|]?\s*(?:page\s+)?not\s+found)?|(?:page\s+)?not\s+found|页面不存在|找不到页面)"
                        r"\s*(?:[|–—-]\s*[^|–—-]{0,60})?$", re.I)


def is_not_found_page(title: str, markdown: str) -> bool:
    return bool(_NOT_FOUND.match(title or "")) and len(markdown) < 400 and "```" not in markdown


def is_link_index(markdown: str) -> bool:
    """A page that is a list of links and nothing else: a wiki export's `index.html`
    ("Available Pages:"), a site map. Indexed, it answered every question near the tree's
    page titles with a list of them, grounded."""
    body = "\n".join(line for line in markdown.splitlines() if not line.lstrip().startswith("#"))
    links = _MD_LINK.findall(body)
    linked = sum(len(re.sub(r"[\W_]+", "", text)) for text in links)  # counted as the words are, without spaces
    words = len(re.sub(r"[\W_]+", "", _MD_LINK.sub(lambda m: m.group(1), body)))
    # Five links and little else, or two and nothing else ("Available Pages:" over two page
    # links): "Page [the on-call in PagerDuty](…) or post in [#oncall](…)" says something (review).
    return (len(links) >= 5 and linked >= 0.8 * max(1, words)) or (len(links) >= 2 and linked >= 0.97 * max(1, words))


def convert_soup(soup) -> str:
    """Markdown of parsed HTML, as is. For HTML that is all content (what docutils renders
    from a reST page) there is no chrome to drop, and a section id such as "menu" must not
    read as navigation."""
    from markdownify import MarkdownConverter

    expand_spans(soup)
    markdown = MarkdownConverter(heading_style="ATX", bullets="-", escape_underscores=False, escape_asterisks=False,
                                 escape_misc=False, strip=["img"], table_infer_header=True).convert_soup(soup)
    return re.sub(r"\n{3,}", "\n\n", markdown).strip() + "\n"


def _is_chrome(tag) -> bool:
    if getattr(tag, "attrs", None) is None or tag.name in ("html", "body", "main", "article"):
        return False
    words = " ".join([tag.get("id") or ""] + list(tag.get("class") or []))
    return bool(words.strip()) and bool(_DROP_MARKERS.search(words))


_MAX_SPAN = 200
_MAX_REPEATED_CELL = 200  # characters: a longer merged cell (a note over ten rows) is said once


def expand_spans(soup) -> None:
    """Give every row of a table its full set of cells. A wiki table groups rows under one
    merged cell (`rowspan`: "NCCL" over its three variables); as a pipe table the rows below
    the first lost that cell and every value slid one column left, so a row chunk read
    "| NCCL_IB_DISABLE | set 1 without IB |" under the header "Area | Variable". The merged
    cell is repeated in each row it spans, so each row group says what it belongs to. As in
    a browser, a span ends with its row group (`thead`, `tbody`) and `rowspan="0"` runs to
    the group's end; a long merged cell is repeated as an empty cell, keeping the columns."""
    for table in soup.find_all("table"):
        rows = [row for row in table.find_all("tr") if row.find_parent("table") is table]
        pending: dict[int, list] = {}  # column -> [cell, rows still to fill, columns it covers]
        group = None
        for row in rows:
            if row.parent is not group:
                group, pending = row.parent, {}
            cells = row.find_all(["td", "th"], recursive=False)
            ordered: list = []
            column = 0

            def take_pending() -> None:
                nonlocal column
                while column in pending:
                    ordered.append(_repeat(soup, pending[column][0]))
                    width = pending[column][2]
                    _use(pending, column)
                    column += width

            for cell in cells:
                take_pending()
                width = _span(cell, "colspan")
                for covered in [c for c in pending if column <= c < column + width]:
                    del pending[covered]  # overlapping spans: the cell written here wins
                rows_spanned = _span(cell, "rowspan", zero=_MAX_SPAN)
                if cell.has_attr("rowspan"):
                    del cell["rowspan"]
                if rows_spanned > 1:
                    pending[column] = [cell, rows_spanned - 1, width]
                ordered.append(cell)
                column += width
            take_pending()
            for later in sorted(c for c in pending if c > column):
                while column < later:  # a short row: pad up to the merged cell's column
                    ordered.append(soup.new_tag("td"))
                    column += 1
                take_pending()
            if len(ordered) != len(cells):
                for cell in ordered:
                    row.append(cell)


def _use(pending: dict, column: int) -> None:
    pending[column][1] -= 1
    if pending[column][1] <= 0:
        del pending[column]


def _repeat(soup, cell):
    """A copy of a merged cell for one more row (an empty one when the cell is long)."""
    import copy

    if len(cell.get_text(" ", strip=True)) <= _MAX_REPEATED_CELL:
        return copy.copy(cell)
    empty = soup.new_tag(cell.name)
    if cell.has_attr("colspan"):
        empty["colspan"] = cell["colspan"]
    return empty


def _span(cell, attribute: str, zero: int = 1) -> int:
    """A span attribute as browsers read it: leading digits ("2.0", "3px"), 1 when there are none."""
    match = re.match(r"\s*(\d+)", str(cell.get(attribute, "1")))
    if not match:
        return 1
    value = int(match.group(1))
    return zero if value == 0 else max(1, min(_MAX_SPAN, value))
