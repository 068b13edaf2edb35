"""The Gmail connector's HTML to text against chromium's own idea of what shows.

A fixed sample of the generated mails of tests/unit/test_html_text_fuzz.py is opened in
chromium (JavaScript off, in an 800 by 700 window, the desktop reader the policy judges
for); for every ``seen<n>``/``hidden<n>`` word the page says whether it shows: the element
holding it passes ``checkVisibility`` (display, visibility, content-visibility, opacity),
its text has a box of some size inside the page and not cut off by a box of no size around
it, and its computed font size and colour can be read. No word that chromium does not show
may come out of ``html_to_text``. (The policy hides more than chromium's checks can see:
text coloured like its background, clip paths, text indents; those words are counted, not
judged.)
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from playwright.async_api import Browser

from connectors.gmail.html_text import html_to_text
from tests.unit.test_html_text_fuzz import Words, mails

SAMPLE = 120

_SHOWN_WORDS = """
() => {
  const words = {};
  const walker = document.createTreeWalker(document.documentElement, NodeFilter.SHOW_TEXT);
  const width = document.documentElement.scrollWidth, height = document.documentElement.scrollHeight;
  const cutOff = (element) => {
    for (let box = element; box; box = box.parentElement) {
      const style = getComputedStyle(box);
      if (style.overflowX === 'visible' && style.overflowY === 'visible') continue;
      const rect = box.getBoundingClientRect();
      if (rect.width < 1 || rect.height < 1) return true;
    }
    return false;
  };
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const element = node.parentElement;
    for (const match of node.data.matchAll(/\\b(?:seen|hidden)\\d+\\b/g)) {
      let shown = !!element && element.checkVisibility({
        opacityProperty: true, visibilityProperty: true, contentVisibilityAuto: true,
      });
      if (shown) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const boxes = [...range.getClientRects()].filter(
          (r) => r.width >= 1 && r.height >= 1 && r.right > 0 && r.bottom > 0
            && r.left < width && r.top < height);
        const style = getComputedStyle(element);
        const alpha = style.color.startsWith('rgba') ? parseFloat(style.color.split(',')[3]) : 1;
        shown = boxes.length > 0 && !cutOff(element) && parseFloat(style.fontSize) >= 3
          && alpha >= 0.1;
      }
      words[match[0]] = (words[match[0]] || false) || shown;
    }
  }
  return words;
}
"""


def _sample() -> list[tuple[str, Words]]:
    found: list[tuple[str, Words]] = []

    @settings(max_examples=SAMPLE, derandomize=True, database=None, deadline=None)
    @given(mails())
    def collect(mail: tuple[str, Words]) -> None:
        found.append(mail)

    collect()
    return found


async def test_no_word_chromium_does_not_show_comes_out_of_a_generated_mail(
    browser: Browser,
) -> None:
    context = await browser.new_context(
        viewport={"width": 800, "height": 700}, java_script_enabled=False
    )
    page = await context.new_page()
    policy_only = 0
    try:
        samples = _sample()
        assert len(samples) >= SAMPLE // 2
        for html, words in samples:
            await page.set_content(html)
            shown: dict[str, bool] = await page.evaluate(_SHOWN_WORDS)
            kept = set(re.findall(r"\b(?:seen|hidden)\d+\b", html_to_text(html)))
            leaked = {word for word in kept if not shown.get(word, False)}
            assert not leaked, f"chromium does not show {sorted(leaked)} of {html}"
            policy_only += len({w for w, on in shown.items() if on} - kept)
            # What the generator says a person sees, chromium shows.
            assert all(shown.get(word, False) for word in words.seen), (shown, html)
    finally:
        await context.close()
    print(f"words chromium shows that the policy hides: {policy_only}")
