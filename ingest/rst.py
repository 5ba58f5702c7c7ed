"""reStructuredText pages (Sphinx doc trees) as markdown, so the markdown chunker handles them.

Many serving projects write their docs in reST for Sphinx; before this a tree of `.rst`
files was skipped whole. docutils parses the page (no hand-written parser) and renders it to
HTML, which markdownify turns into markdown with ATX headings, fenced code and pipe tables,
as for HTML exports.

docutils knows reST but not Sphinx's extensions, and by default it prints an error into the
page for every `:ref:` or `.. tab-set::` it does not know. Here:
- Sphinx's cross-reference roles (`:ref:`, `:doc:`, `:class:`, `:envvar:`…) keep their
  text (`:ref:`Install <install>`` reads "Install"); names of code read as code; a role
  nobody knows reads as its text.
- An image or figure keeps only where it links to (`:target:`, often the download a badge
  stands for) and a figure its caption: the picture itself has nothing to index.
- Directives that wrap content (tabs, cards, dropdowns, `versionadded`, `only`…) keep what
  they wrap, with a tab's or card's title; `.. only:: zh_cn` (another language's build)
  goes. Those that pull in other files or build navigation (`toctree`, `literalinclude`,
  `automodule`…) are dropped: there is nothing in the page to index.
- Any other unknown directive keeps its content, and reports go nowhere: a page is never
  lost to markup docutils cannot read.

Imported only at ingest.
"""

from __future__ import annotations

import io
import re

# Roles whose text names code: rendered as inline code.
_CODE_ROLES = ("class", "func", "meth", "attr", "mod", "obj", "data", "const", "exc", "envvar", "option", "program",
               "command", "file", "samp", "kbd", "makevar", "py:class", "py:func", "py:meth", "py:attr", "py:mod",
               "py:obj", "py:data", "py:const", "py:exc", "c:func", "c:type", "c:macro", "cpp:class", "cpp:func")
# Roles whose text is prose (a link's label, a term).
_TEXT_ROLES = ("ref", "doc", "term", "abbr", "guilabel", "menuselection", "download", "numref", "keyword", "dfn",
               "any", "external", "octicon", "bdg", "bdg-primary", "bdg-secondary", "bdg-info", "bdg-warning",
               "bdg-link-primary", "sup", "sub")
# Directives with nothing of their own to index: navigation, other files, generated API docs.
_DROP_DIRECTIVES = ("toctree", "literalinclude", "include", "automodule", "autoclass", "autofunction", "automethod",
                    "autodata", "autoattribute", "autosummary", "autoexception", "autoprogram", "argparse",
                    # A page's own table of contents: a list of its headings, and links from every
                    # heading back to it ("## [Prerequisite](#toc-entry-2)").
                    "contents", "sectnum", "raw", "mermaid", "graphviz", "index", "currentmodule", "module", "highlight",
                    "sectionauthor", "codeauthor", "meta", "tabularcolumns", "include-markdown")
# Directives whose content is the page's own text, with a title worth keeping.
_TITLED = ("tab", "tab-item", "group-tab", "code-tab", "card", "grid-item-card", "dropdown", "tab-set-code")
# Directives that only wrap content (the title, if any, says little).
_WRAPPERS = ("tabs", "tab-set", "grid", "grid-item", "hlist", "glossary", "versionadded", "versionchanged",
             "deprecated", "seealso", "centered", "container", "div", "md-tab-set", "md-tab-item", "details",
             "rst-class", "cssclass", "productionlist", "toggle", "collapse", "admonition-todo", "todo")
# Sphinx's object descriptions: the argument is the name documented (`.. option:: --tokenizer_mode`,
# `.. envvar:: VLLM_PORT`), the content what it does. Read as unknown wrappers, the name was lost,
# and a question on that flag found a description with no flag in it (analysis of the dev trees).
_DESCRIBED = ("option", "cmdoption", "std:option", "std:cmdoption", "envvar", "std:envvar", "confval", "describe", "object",
              "program", "function", "class", "method", "attribute", "data", "exception", "py:function", "py:class",
              "py:method", "py:attribute", "py:data", "py:exception", "py:property", "c:function", "c:macro",
              "cpp:function", "cpp:class")
# Build tags of a translated build: `.. only:: zh_cn` is text for another language's docs.
_OTHER_LANGUAGE_TAGS = {"zh", "zh_cn", "zh_CN", "zh-cn", "cn", "zh_tw", "ja", "ko", "fr", "de", "es", "ru", "pt"}
# Code blocks under their Sphinx names (docutils has `code`; these take the same arguments).
_CODE_DIRECTIVES = ("code-block", "sourcecode", "prompt", "console", "ipython")

_REGISTERED = False


def _register() -> None:
    """Teach docutils Sphinx's common roles and directives, once per process."""
    global _REGISTERED
    if _REGISTERED:
        return
    from docutils.parsers.rst import directives

    _register_roles()
    dropped, wrapper, titled, only, code_block, image, described = _directive_classes()
    for names, cls in ((_DROP_DIRECTIVES, dropped), (_WRAPPERS, wrapper), (_TITLED, titled), (_CODE_DIRECTIVES, code_block),
                       (("only",), only), (("image", "figure"), image), (_DESCRIBED, described)):
        for name in names:
            directives.register_directive(name, cls)

    # Any other directive docutils does not know (a project's own) keeps its content: the
    # parser looks directives up through this function at parse time.
    known = directives.directive

    def directive(name, language_module, document):
        found, messages = known(name, language_module, document)
        return (found, messages) if found is not None else (wrapper, [])

    directives.directive = directive
    _REGISTERED = True


_LABEL = re.compile(r"^(.*?)\s*<[^<>]*>$", re.S)


def _role_text(text: str) -> str:
    """`Install <install>` reads "Install"; `~pkg.Class` reads "pkg.Class"."""
    text = text.strip()
    match = _LABEL.match(text)
    if match and match.group(1):
        text = match.group(1)
    return text.lstrip("~!")


def _register_roles() -> None:
    from docutils import nodes
    from docutils.parsers.rst import roles

    def code_role(name, rawtext, text, lineno, inliner, options=None, content=None):
        return [nodes.literal(rawtext, _role_text(text))], []

    def text_role(name, rawtext, text, lineno, inliner, options=None, content=None):
        return [nodes.Text(_role_text(text))], []

    for name in _CODE_ROLES:
        roles.register_local_role(name, code_role)
    for name in _TEXT_ROLES:
        roles.register_local_role(name, text_role)

    # Any other role (a project's own, `:foo:`text``) reads as its text, not as raw markup.
    known = roles.role

    def role(name, language_module, lineno, reporter):
        found, messages = known(name, language_module, lineno, reporter)
        return (found, messages) if found is not None else (text_role, [])

    roles.role = role


def _directive_classes():
    """(dropped, wrapper, titled, only, code block, image, described) directive classes, built once docutils is imported."""
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives

    class AnyOption(dict):
        """Accept whatever options a directive takes (`:sync: key`, `:linenos:`). Never empty
        to docutils: an empty spec makes it read the option lines as part of the argument
        (a tab titled "pip :sync: key")."""

        def __bool__(self) -> bool:
            return True

        def __contains__(self, key) -> bool:
            return True

        def __getitem__(self, key):
            return directives.unchanged

    class Dropped(Directive):
        has_content = True
        optional_arguments = 1
        final_argument_whitespace = True
        option_spec = AnyOption()

        def run(self):
            return []

    class Wrapper(Dropped):
        titled = False

        def run(self):
            node = nodes.container()
            if self.titled and self.arguments:
                title = nodes.paragraph()
                title += nodes.strong(text=self.arguments[0])
                node += title
            self.state.nested_parse(self.content, self.content_offset, node)
            return [node]

    class Titled(Wrapper):
        titled = True

    class Only(Wrapper):
        """`.. only:: zh_cn` holds the text of another language's build of the page (an
        English page then carries Chinese paragraphs): dropped. Other build tags are kept."""

        def run(self):
            tags = set(re.findall(r"[A-Za-z_-]+", self.arguments[0] if self.arguments else ""))
            if tags & _OTHER_LANGUAGE_TAGS and "not" not in tags:
                return []
            return super().run()

    class CodeBlock(Dropped):
        def run(self):
            language = (self.arguments[0].split()[0] if self.arguments else "").lower()
            block = nodes.literal_block("\n".join(self.content), "\n".join(self.content))
            if language:
                block["classes"] += ["code", language]
            return [block]

    class Image(Dropped):
        """A badge or screenshot: its link target (a download, a release page) and a figure's
        caption are text; the picture is not."""

        def run(self):
            out = []
            target = (self.options.get("target") or "").strip()
            if target and "://" in target:
                label = (self.options.get("alt") or "").strip() or target.rstrip("/").rsplit("/", 1)[-1]
                para = nodes.paragraph()
                para += nodes.reference(target, label, refuri=target)
                out.append(para)
            if self.name == "figure" and self.content:
                node = nodes.container()
                self.state.nested_parse(self.content, self.content_offset, node)
                out.append(node)
            return out

    class Described(Wrapper):
        """An object description: the documented name, as code, then what the page says of it."""

        def run(self):
            node = nodes.container()
            node += _names_documented(nodes, self.arguments[0] if self.arguments else "")
            self.state.nested_parse(self.content, self.content_offset, node)
            return [node]

    return Dropped, Wrapper, Titled, Only, CodeBlock, Image, Described


def _names_documented(nodes, argument: str) -> list:
    """An object description's names (one per line: `-p, --port`), each a paragraph of code."""
    out = []
    for signature in filter(None, (line.strip() for line in argument.splitlines())):
        name = nodes.paragraph()
        name += nodes.literal(text=signature)
        out.append(name)
    return out


def rst_to_markdown(text: str) -> tuple[str, str]:
    """(title, markdown) of a reST page; the title is its first section title."""
    from bs4 import BeautifulSoup
    from docutils.core import publish_parts
    from docutils.writers.html5_polyglot import Writer

    from .html import convert_soup

    _register()
    settings = {
        "report_level": 5,  # nothing printed into the page or onto stderr
        "halt_level": 5,
        "warning_stream": io.StringIO(),
        "file_insertion_enabled": False,  # `.. include::` must not read files outside the tree
        "raw_enabled": False,
        "doctitle_xform": False,  # the page title stays a heading, so sections keep their path
        "initial_header_level": 1,
        "syntax_highlight": "none",
        "input_encoding": "unicode",
        "embed_stylesheet": False,
        "math_output": "LaTeX",
    }
    try:
        parts = publish_parts(source=text, writer=Writer(), settings_overrides=settings)
    except Exception:  # noqa: BLE001 - docutils raises many kinds on odd markup; the page is still text
        return "", text
    soup = BeautifulSoup(parts.get("html_body") or parts.get("body") or "", "html.parser")
    for tag in soup.select("span.literal, tt.literal"):
        tag.name = "code"  # docutils writes ``inline code`` as a span; markdown should keep it code
    markdown = convert_soup(soup)
    title = ""
    match = re.search(r"^#\s+(.+)$", markdown, re.M)
    if match:
        title = match.group(1).strip()
    return title, markdown
