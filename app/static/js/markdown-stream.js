// Markdown of an answer that is still streaming, made safe to render as it stands: the
// text so far may end inside **bold, `code, a ``` fence or a [link](…, and rendered
// as is those would flash as raw markers until the closing half arrives. This closes what
// is open (bold stays bold while it streams), drops what cannot be shown yet (a partial
// link address, a lone trailing marker) and says whether the last code block is unfinished.
// Pure (no DOM, no imports): tests run it in node on every prefix of sample answers.

const FENCE = /^(\s*)(`{3,}|~{3,})([^`]*)$/;
// A line that starts a block of its own: emphasis and code spans never run across it.
const BLOCK_START = /^\s*(?:[-*+]\s|\d{1,9}[.)]\s|#{1,6}\s|>)/;
// A last line that may still become a setext underline or a rule ("-", "==").
const UNDERLINE_SO_FAR = /^\s{0,3}(?:-{1,2}|={1,2}|\*{1,2}|_{1,2}|\+)\s*$/;
const SPACE = /\s/;
const PUNCT = /[!-/:-@[-`{-~\p{P}\p{S}]/u;

/**
 * The streaming ``text`` made safe to render: ``{text, openFence}``; ``openFence`` is
 * true when the last code block has not closed yet (its highlighting can wait).
 */
export function stableMarkdown(source) {
  const text = String(source ?? "");
  const lines = text.split("\n");
  let fence = null; // {indent, marker} of the open fence
  let tailStart = 0; // index of the first line of the last block of prose
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i];
    if (fence) {
      const close = FENCE.exec(line);
      if (close && close[2][0] === fence.marker[0] && close[2].length >= fence.marker.length
          && !close[3].trim()) {
        fence = null;
        tailStart = i + 1;
      }
      continue;
    }
    const open = FENCE.exec(line);
    if (open && !(open[2][0] === "`" && open[3].includes("`"))) {
      fence = { indent: open[1], marker: open[2], line: i };
      continue;
    }
    // A blank line ends a block (the last line is only where the next one starts).
    if (!line.trim() && i < lines.length - 1) tailStart = i + 1;
  }
  if (fence) {
    const body = lines.slice();
    const last = body.at(-1);
    // The closing fence may be arriving: a last line of only fence characters waits.
    if (body.length - 1 > fence.line && new RegExp(`^\\s*\\${fence.marker[0]}+\\s*$`).test(last)) body.pop();
    return { text: `${body.join("\n")}\n${fence.indent}${fence.marker}`, openFence: true };
  }
  const head = lines.slice(0, tailStart).join("\n");
  const tail = stableInline(lines.slice(tailStart));
  return { text: tailStart ? `${head}\n${tail}` : tail, openFence: false };
}

/** The last block of prose: its open inline syntax closed or held back. */
function stableInline(lines) {
  const last = lines.at(-1);
  if (lines.length > 1 && UNDERLINE_SO_FAR.test(last)) lines = lines.slice(0, -1);
  else if (lines.length === 1 && /^\s*[-*+_=]{1,2}\s*$/.test(last)) lines = [""];
  let out = "";
  let open = []; // what is open, innermost last: {kind, at, ...}
  for (let n = 0; n < lines.length; n += 1) {
    const line = lines[n];
    if (n > 0) {
      out += "\n";
      // Nothing open can close across a new block: it stays as the text it is.
      if (BLOCK_START.test(line)) open = [];
    }
    let i = 0;
    while (i < line.length) {
      const c = line[i];
      const top = open.at(-1);
      if (top?.kind === "url") { // inside "](…": the address, up to its balancing ")"
        out += c;
        i += 1;
        if (c === "(") top.depth += 1;
        else if (c === ")" && --top.depth < 0) open.pop();
        continue;
      }
      if (c === "\\" && top?.kind !== "code") {
        if (i + 1 >= line.length) { i += 1; continue; } // a lone trailing backslash waits
        out += line.slice(i, i + 2);
        i += 2;
        continue;
      }
      if (c === "`") {
        const run = runOf(line, i, c);
        if (top?.kind === "code") {
          if (run === top.run) open.pop();
          else if (run < top.run && i + run >= line.length) { i += run; continue; } // the closer, partly
          out += c.repeat(run);
        } else {
          open.push({ kind: "code", at: out.length, run });
          out += c.repeat(run);
        }
        i += run;
        continue;
      }
      if (top?.kind === "code") {
        out += c;
        i += 1;
        continue;
      }
      if (c === "*" || c === "_" || c === "~") {
        const run = runOf(line, i, c);
        const before = i > 0 ? line[i - 1] : (n > 0 ? "\n" : " ");
        const after = i + run < line.length ? line[i + run] : (n < lines.length - 1 ? "\n" : null);
        const bullet = c !== "_" && run === 1 && i === leadingSpace(line) && after === " ";
        if (bullet || (c === "~" && run === 1)) {
          out += c.repeat(run);
          i += run;
          continue;
        }
        const leftFlank = after !== null && !SPACE.test(after)
          && (!PUNCT.test(after) || SPACE.test(before) || PUNCT.test(before));
        const rightFlank = !SPACE.test(before)
          && (after === null || !PUNCT.test(before) || SPACE.test(after) || PUNCT.test(after));
        const wordy = (ch) => ch !== null && /[\p{L}\p{N}]/u.test(ch);
        const canOpen = leftFlank && (c !== "_" || !wordy(before));
        const canClose = rightFlank && (c !== "_" || !wordy(after));
        let left = run;
        if (canClose) left = closeEmphasis(open, c, run);
        if (left && canOpen) open.push({ kind: "em", at: out.length + (run - left), char: c, run: left });
        else if (left && after === null) {
          i += run; // a marker at the very end: it may open something once more arrives
          continue;
        }
        out += c.repeat(run);
        i += run;
        continue;
      }
      if (c === "!" && line[i + 1] === "[") {
        open.push({ kind: "link", at: out.length, bang: true });
        out += "![";
        i += 2;
        continue;
      }
      if (c === "[") {
        open.push({ kind: "link", at: out.length, bang: false });
        out += c;
        i += 1;
        continue;
      }
      if (c === "]") {
        const link = findLast(open, (o) => o.kind === "link");
        if (link) {
          open.splice(open.indexOf(link)); // what opened inside it and did not close is text
          if (line[i + 1] === "(") {
            open.push({ kind: "url", at: out.length, link, depth: 0 });
            out += "](";
            i += 2;
            continue;
          }
        }
        out += c;
        i += 1;
        continue;
      }
      out += c;
      i += 1;
    }
  }
  return finish(out, open);
}

/** Close the open markers of ``out`` (innermost first), or hold them back. */
function finish(text, open) {
  let out = text;
  for (let k = open.length - 1; k >= 0; k -= 1) {
    const o = open[k];
    if (o.kind === "url") {
      // "[text](partial address": the text alone until the address is whole.
      const start = o.link.at;
      const label = out.slice(start + (o.link.bang ? 2 : 1), o.at);
      out = out.slice(0, start) + label;
      continue;
    }
    if (o.kind === "link") {
      // "[text" may become a link: show the text without its bracket meanwhile.
      out = out.slice(0, o.at) + out.slice(o.at + (o.bang ? 2 : 1));
      continue;
    }
    const inner = out.slice(o.at + o.run);
    if (o.kind === "code") {
      if (!inner.trim()) {
        out = out.slice(0, o.at) + inner; // "`" with nothing after it yet
      } else {
        out += "`".repeat(o.run);
      }
      continue;
    }
    // Emphasis: closed right after its last non-space character.
    if (!inner.trim()) {
      out = out.slice(0, o.at) + inner.trimEnd();
      continue;
    }
    out = out.trimEnd() + o.char.repeat(o.run);
  }
  return out;
}

function closeEmphasis(open, char, run) {
  let left = run;
  while (left > 0) {
    const opener = findLast(open, (o) => o.kind === "em" && o.char === char);
    if (!opener) break;
    // Code spans or links opened inside it and still open stay as they are.
    if (open.slice(open.indexOf(opener) + 1).some((o) => o.kind !== "em")) break;
    const used = Math.min(left, opener.run);
    opener.run -= used;
    left -= used;
    open.splice(open.indexOf(opener) + (opener.run ? 1 : 0));
  }
  return left;
}

function runOf(line, i, c) {
  let j = i;
  while (line[j] === c) j += 1;
  return j - i;
}

function leadingSpace(line) {
  return line.length - line.trimStart().length;
}

function findLast(list, test) {
  for (let k = list.length - 1; k >= 0; k -= 1) if (test(list[k])) return list[k];
  return null;
}
