// How an assistant message's Markdown is drawn, while it streams and once it is whole:
// while streaming, half-typed syntax is closed or held back (markdown-stream.js) so no raw
// "**" or "`" flashes; code blocks are coloured (all but an unfinished last one), and get
// their copy buttons once the message is whole.
import { decorateCodeBlocks } from "./code-blocks.js";
import { renderMarkdown } from "./markdown.js";
import { stableMarkdown } from "./markdown-stream.js";

/**
 * Draw ``text`` into ``content`` (chunks: the turn's citations, see renderMarkdown).
 * ``cut``: the answer was stopped part-way; it keeps the streaming view's tidy ending.
 */
export function renderAnswer(content, text, chunks, { streaming = false, cut = false } = {}) {
  const stable = streaming || cut ? stableMarkdown(text) : { text, openFence: false };
  const fragment = renderMarkdown(stable.text, chunks);
  // Stopped, nothing more will come: an unclosed last block is coloured like the rest.
  decorateCodeBlocks(fragment, { streaming, openLast: streaming && stable.openFence });
  content.replaceChildren(fragment);
}
