// Code blocks of answers: syntax colours from the vendored highlight.js (its common
// languages; a block with an unknown or no language stays plain) and a "Copy code" button.
// Colouring is done before the frame is painted, so a block never flashes plain; an
// answer still streaming leaves its unfinished last block plain until it closes.
import hljs from "../vendor/highlight/highlight.min.js";
import DOMPurify from "../vendor/dompurify/purify.es.js";
import { h } from "./dom.js";
import { copyButton } from "./copy.js";

// Its own sanitizer: highlight.js escapes the code itself, and this keeps its output to
// spans with class names whatever happens (markdown.js's hooks do not apply here).
const purifier = DOMPurify(window);
const LANGUAGE = /^language-([\w+#.-]{1,32})$/;
const MAX_CHARS = 100_000; // past this a block stays plain: colouring it would stall the page
const cache = new Map(); // `${language}\n${code}` -> highlighted HTML (a block re-renders every frame)
const CACHE_SIZE = 200;

/** The block's language as written after its fence ("python"), or null. */
export function languageOf(code) {
  for (const name of code.classList) {
    const match = LANGUAGE.exec(name);
    if (match) return match[1];
  }
  return null;
}

function highlighted(language, text) {
  const key = `${language}\n${text}`;
  let html = cache.get(key);
  if (html === undefined) {
    try {
      html = hljs.highlight(text, { language, ignoreIllegals: true }).value;
    } catch {
      return null; // a grammar that fails on this text: the block stays plain
    }
    if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value);
    cache.set(key, html);
  }
  return purifier.sanitize(html, { ALLOWED_TAGS: ["span"], ALLOWED_ATTR: ["class"],
    RETURN_DOM_FRAGMENT: true });
}

/**
 * Colour the code blocks under ``root``, and give each a copy button unless the answer is
 * still streaming. ``openLast``: the last block has not closed yet (left plain).
 */
export function decorateCodeBlocks(root, { streaming = false, openLast = false } = {}) {
  const blocks = [...root.querySelectorAll("pre > code")];
  blocks.forEach((code, index) => {
    const pre = code.parentElement;
    const language = languageOf(code);
    const unfinished = openLast && index === blocks.length - 1;
    const known = language && hljs.getLanguage(language);
    if (known && !unfinished && code.textContent.length <= MAX_CHARS) {
      const coloured = highlighted(language, code.textContent);
      if (coloured) {
        code.replaceChildren(coloured);
        code.classList.add("hljs");
      }
    }
    if (streaming) return;
    const source = code.textContent.replace(/\n$/, ""); // marked ends a block with a newline
    const head = h("div", { class: "code-head" },
      h("span", { class: "code-language", text: language || "" }),
      copyButton({ label: "Copy code", what: language ? `the ${language} code` : "the code",
        text: () => source, className: "small" }));
    const block = h("div", { class: "code-block" }, head);
    pre.replaceWith(block);
    block.append(pre);
  });
}
