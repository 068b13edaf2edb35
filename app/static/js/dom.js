// Small DOM helpers. Every piece of text that reaches the page from the server goes
// through textContent (here) or through the Markdown sanitizer (markdown.js), never
// through innerHTML.

/**
 * Build an element: h("a", {class: "x", href}, "text", child, …).
 * Attributes named on* are refused: handlers are attached with addEventListener only.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) throw new Error(`h(): use addEventListener, not ${name}`);
    if (name === "class") el.className = value;
    else if (name === "text") el.textContent = value;
    else if (name === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.append(child);
    else el.append(document.createTextNode(String(child)));
  }
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

const SAFE_LINK = /^(https?:|mailto:)/i;
const SAFE_IMAGE = /^(https:|data:image\/(png|jpe?g|gif|webp|svg\+xml)[;,])/i;

/** The URL if it is http(s) or mailto, else null: no javascript:, data:, file: links. */
export function safeUrl(url) {
  if (typeof url !== "string") return null;
  const trimmed = url.trim();
  return SAFE_LINK.test(trimmed) ? trimmed : null;
}

/** An image source we accept from tool data (https, or an inline raster/SVG image). */
export function safeImage(url) {
  if (typeof url !== "string") return null;
  const trimmed = url.trim();
  return SAFE_IMAGE.test(trimmed) ? trimmed : null;
}

/** A link that opens in a new tab without giving it our window; plain text if unsafe. */
export function link(url, text, attrs = {}) {
  const href = safeUrl(url);
  const label = text ?? url ?? "";
  if (!href) return h("span", { class: attrs.class }, label);
  return h("a", { ...attrs, href, target: "_blank", rel: "noopener noreferrer" }, label);
}

export function asText(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

export function asList(value) {
  if (Array.isArray(value)) return value;
  if (value === null || value === undefined || value === "") return [];
  return [value];
}

export function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
