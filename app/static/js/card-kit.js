// The helpers a connector's card module gets (the ``ui`` argument of its default export;
// docs/connectors.md, "The UI card"). A module builds its cards with these, never with
// innerHTML: text from tools is data, and h() puts it in the page as text.
import { genericBody } from "./cards.js";
import { asList, asText, clear, h, isObject, link, safeImage, safeUrl } from "./dom.js";
import { argumentList, effectFields, fields, humanKey, textBox } from "./fields.js";
import { count, formatDate, fromNow, money, parseDate } from "./format.js";
import { icon } from "./icons.js";
import { renderMarkdown } from "./markdown.js";

export const kit = Object.freeze({
  // Elements and the text in them (dom.js).
  h, clear, asText, asList, isObject, link, safeUrl, safeImage,
  // An SVG icon by name (icons.js), Markdown made safe (markdown.js).
  icon, renderMarkdown,
  // Numbers, money and dates, in the reader's locale (format.js).
  money, count, formatDate, fromNow, parseDate,
  // Label/value lists, whole texts in a scrolling box, arguments (fields.js).
  fields, textBox, argumentList, humanKey, effectFields,
  // The generic card body of an output: what the page shows when no module renders it.
  genericBody,
});
