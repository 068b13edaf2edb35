"""HTML email bodies as readable text or markdown. Pure, standard library only.

Good enough for mail: paragraphs, line breaks, headings, lists, links, emphasis, quotes,
preformatted text and simple tables; scripts, styles and invisible parts are dropped.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_BLOCKS = frozenset({"p", "div", "section", "article", "header", "footer", "table", "tr",
                     "ul", "ol", "blockquote", "pre", "h1", "h2", "h3", "h4", "h5", "h6",
                     "hr", "center", "address", "figure"})
_SKIP = frozenset({"script", "style", "head", "title", "template", "noscript"})
_VOID = frozenset({"br", "hr", "img", "meta", "link", "input", "wbr", "col", "area", "base"})
_EMPHASIS = {"strong": "**", "b": "**", "em": "_", "i": "_", "code": "`"}
_BREAK = "\x00"  # a paragraph break, resolved when the text is assembled


class _Walker(HTMLParser):
    def __init__(self, markdown: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.markdown = markdown
        self.out: list[str] = []
        self.skip_depth = 0
        self.pre_depth = 0
        self.lists: list[list[int]] = []  # one [counter] per open list; -1 for bullets
        self.links: list[tuple[str, list[str]]] = []  # (href, text parts) of open <a>
        self.quote_depth = 0

    def emit(self, text: str) -> None:
        if self.links:
            self.links[-1][1].append(text)
        else:
            self.out.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skip_depth += 1
            return
        if self.skip_depth:
            return
        values = {name: value or "" for name, value in attrs}
        if "hidden" in values or "display:none" in values.get("style", "").replace(" ", ""):
            if tag not in _VOID:
                self.skip_depth += 1
            return
        if tag in _BLOCKS and not (tag in ("ul", "ol") and self.lists):  # nested lists: tight
            self.emit(_BREAK)
        if tag == "br":
            self.emit("\n")
        elif tag == "hr":
            self.emit("---" if self.markdown else "")
            self.emit(_BREAK)
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6") and self.markdown:
            self.emit("#" * int(tag[1]) + " ")
        elif tag in ("ul", "ol"):
            self.lists.append([0 if tag == "ol" else -1])
        elif tag == "li":
            counter = self.lists[-1] if self.lists else [-1]
            indent = "  " * max(0, len(self.lists) - 1)
            if counter[0] >= 0:
                counter[0] += 1
                self.emit(f"\n{indent}{counter[0]}. ")
            else:
                self.emit(f"\n{indent}- ")
        elif tag == "a":
            self.links.append((values.get("href", "").strip(), []))
        elif tag in _EMPHASIS and self.markdown:
            self.emit(_EMPHASIS[tag])
        elif tag == "pre":
            self.pre_depth += 1
            if self.markdown:
                self.emit("```\n")
        elif tag == "blockquote":
            self.quote_depth += 1
            if self.markdown:
                self.emit("> ")
        elif tag in ("td", "th"):
            self.emit(" | " if self.markdown else " ")
        elif tag == "img" and values.get("alt", "").strip():
            self.emit(values["alt"].strip())

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip_depth = max(0, self.skip_depth - 1)
            return
        if self.skip_depth:
            if tag not in _VOID:
                self.skip_depth -= 1
            return
        if tag == "a" and self.links:
            href, parts = self.links.pop()
            text = " ".join("".join(parts).split())
            self.emit(self._link(text, href))
        elif tag in _EMPHASIS and self.markdown:
            self.emit(_EMPHASIS[tag])
        elif tag in ("ul", "ol") and self.lists:
            self.lists.pop()
            if not self.lists:
                self.emit(_BREAK)
        elif tag == "pre":
            self.pre_depth = max(0, self.pre_depth - 1)
            if self.markdown:
                self.emit("\n```")
            self.emit(_BREAK)
        elif tag == "blockquote":
            self.quote_depth = max(0, self.quote_depth - 1)
            self.emit(_BREAK)
        elif tag in _BLOCKS:
            self.emit(_BREAK)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        if self.skip_depth:
            return
        text = data if self.pre_depth else re.sub(r"\s+", " ", data)
        if self.quote_depth and self.markdown and not self.pre_depth:
            text = text.replace("\n", "\n> ")
        self.emit(text)

    def _link(self, text: str, href: str) -> str:
        if not href.lower().startswith(("http://", "https://", "mailto:")):
            return text
        shown = href.removeprefix("mailto:")
        if self.markdown:
            return f"[{text or shown}]({href})"
        return text if not text or text == shown or text == href else f"{text} ({shown})"


def _assemble(parts: list[str]) -> str:
    text = "".join(parts).replace(_BREAK, "\n\n")
    lines = [line.strip() if not line.startswith("  ") else line.rstrip()
             for line in text.split("\n")]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    text = re.sub(r"\| (?:\| )+", "| ", text)
    return text.strip()


def _convert(html: str, markdown: bool) -> str:
    walker = _Walker(markdown)
    walker.feed(html)
    walker.close()
    while walker.links:  # unclosed <a>: keep its text
        _href, parts = walker.links.pop()
        walker.emit("".join(parts))
    return _assemble(walker.out)


def html_to_text(html: str) -> str:
    return _convert(html, markdown=False)


def html_to_markdown(html: str) -> str:
    return _convert(html, markdown=True)
