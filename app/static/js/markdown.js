// Markdown for model text and tool hints, made safe in two layers:
// 1. marked renders raw HTML in the source as escaped text (a model cannot add markup);
// 2. DOMPurify keeps only the tags Markdown produces, and links with safe URLs; every
//    link opens in a new tab with rel="noopener noreferrer". Images become links.
import { Marked } from "../vendor/marked/marked.esm.js";
import DOMPurify from "../vendor/dompurify/purify.es.js";
import { h, safeUrl } from "./dom.js";

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = (text) => String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    html({ text }) {
      return escapeHtml(text);
    },
    // A picture in model text would be fetched the moment it renders, and its address
    // could carry the user's mail or bank data to anyone: show a link to click instead.
    image({ href, text }) {
      return `<a href="${escapeHtml(href)}">${escapeHtml(text || "image")}</a>`;
    },
  },
});

const ALLOWED_TAGS = [
  "a", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6",
  "hr", "i", "li", "ol", "p", "pre", "s", "strong", "sub", "sup", "table",
  "tbody", "td", "th", "thead", "tr", "ul",
];
const ALLOWED_ATTR = ["href", "title", "align", "start", "colspan", "rowspan", "class"];
// The one class kept: a code block's language ("language-python"), for its highlighting.
const CODE_LANGUAGE = /^language-[\w+#.-]{1,32}$/;

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.hasAttribute?.("class")
      && !(node.tagName === "CODE" && CODE_LANGUAGE.test(node.getAttribute("class")))) {
    node.removeAttribute("class");
  }
  if (node.tagName === "A") {
    const href = safeUrl(node.getAttribute("href"));
    if (href) {
      node.setAttribute("href", href);
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer");
    } else {
      node.removeAttribute("href");
    }
  }
});

/** Sanitize an HTML string into a fragment (only the Markdown subset survives). */
export function sanitize(html) {
  return DOMPurify.sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR,
    ALLOW_DATA_ATTR: false,
    RETURN_DOM_FRAGMENT: true,
  });
}

/**
 * Render Markdown to a safe DocumentFragment. ``chunks`` (a Map of citation id to
 * {title, url, snippet}) turns "[n]" in the text into links to the cited source.
 */
export function renderMarkdown(text, chunks = null) {
  const fragment = sanitize(marked.parse(String(text ?? "")));
  if (chunks && chunks.size) linkCitations(fragment, chunks);
  return fragment;
}

const CITATION = /\[(\d{1,3})\]/g;

function linkCitations(root, chunks) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode(node) {
      for (let el = node.parentElement; el; el = el.parentElement) {
        if (el.tagName === "A" || el.tagName === "CODE" || el.tagName === "PRE") {
          return NodeFilter.FILTER_REJECT;
        }
      }
      CITATION.lastIndex = 0;
      return CITATION.test(node.data) ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP;
    },
  });
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  for (const node of nodes) {
    const parts = [];
    let last = 0;
    for (const match of node.data.matchAll(CITATION)) {
      const chunk = chunks.get(match[1]);
      if (!chunk) continue;
      parts.push(node.data.slice(last, match.index), citation(match[1], chunk));
      last = match.index + match[0].length;
    }
    if (!parts.length) continue;
    parts.push(node.data.slice(last));
    node.replaceWith(...parts);
  }
}

function citation(id, chunk) {
  const title = chunk.title || chunk.url || `Source ${id}`;
  const href = safeUrl(chunk.url);
  const label = `[${id}]`;
  if (!href) return h("span", { class: "citation", title }, label);
  return h("a", {
    class: "citation", href, title, target: "_blank", rel: "noopener noreferrer",
    "aria-label": `Source ${id}: ${title}`,
  }, label);
}
