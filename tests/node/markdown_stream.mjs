// Every prefix of a set of real-looking answers, made stable by app/static/js/markdown-stream.js
// and rendered by the vendored marked as the page renders it: the visible text must never
// show a half-open marker. Prints a JSON report: {prefixes, samples, failures: [...]}
// (tests/browser/test_streaming_markdown.py reads it).
import { importSource } from "./source.mjs";

const { Marked } = await importSource("app/static/vendor/marked/marked.esm.js");
const { stableMarkdown } = await importSource("app/static/js/markdown-stream.js");

const marked = new Marked({ gfm: true, breaks: true });

export const SAMPLES = [
  "Here is **your balance**: $1,204.50 in *checking* and **$3,010** in savings.",
  "The three best-rated places are:\n\n1. **Umi Sushi Bar** — 4.8 stars, [menu](https://example.com/umi)\n2. **Oishii** — 4.6 stars\n3. *Fuji* (closed on Mondays)\n\nWant me to email the list?",
  "Use `asyncio.gather` to run coroutines at once:\n\n```python\nimport asyncio\n\nasync def main() -> None:\n    results = await asyncio.gather(fetch(1), fetch(2))\n    print(results)\n\nasyncio.run(main())\n```\n\nEach `fetch` runs concurrently; see [the docs](https://docs.python.org/3/library/asyncio-task.html) for details.",
  "To install it:\n\n```bash\npip install httpx\n```\n\nThen call `httpx.get(url, timeout=10)`.",
  "Your **top categories** last month:\n\n| Category | Spent |\n| --- | ---: |\n| Dining | $412 |\n| Coffee | $58 |\n\nCoffee was *down 12%*.",
  "## Summary\n\nYou have **3 unread** emails. The newest, from _Alice_, says:\n\n> Lunch on **Friday**?\n\nReply with `yes` or pick another day.",
  "Sources say asyncio is cooperative [1] and uses an event loop [2]. Use `snake_case_names` and my_variable_name freely; 2 * 3 = 6.",
  "***Important***: the `--force` flag deletes data. See ![diagram](https://example.com/d.png) and __this note__.",
  "Steps:\n\n- Open **Settings** > *Connections*\n- Click `Connect Google`\n  ```\n  nested code\n  ```\n- Done — [read more](https://example.com/a_(b)) later.",
  "Code with backticks inside: ``a `tick` here`` and a fence:\n\n~~~js\nconst s = `template ${x}`;\n~~~\n\nAll **done**.",
  "Total: **$1,234** (*approx.*)\nNext line with **bold across\nlines** and `code`.",
  "### **Step 1**: connect\n\n* Open **[the dashboard](https://example.com/dash)** first\n* Then run `make run` — **it takes `30 s`** at most\n\nAnd 3 * 4 = 12, a \\[bracket\\] stays.",
  "_Note_: see [1][2] and the **`config.toml`** file; ~~old~~ values are gone.\n\n1) First\n2) Second with *emphasis*",
  "I found 4 sushi spots in Boston, MA. Top picks: **Umi Sushi Bar**, **Hana Hand Roll** and **Nori & Rice**. I sent **Sushi in Boston, MA** to [bob@example.com](mailto:bob@example.com). Is there anything else you'd like me to send or look up?",
  "1. Install the client:\n   ```bash\n   pip install httpx\n   ```\n2. Run **it**:\n   ```python\n   httpx.get(\"https://example.com\", timeout=10)\n   ```\n3. Check `response.status_code` — *200* means OK.",
  "Mixed: **bold _and italic_ text**, *an **inner** bold*, ~~gone~~, and a [**bold link**](https://example.com/x?a=1&b=2).\n\n> Quoted `code` and **bold**\n> on two lines.",
  "A heading\n---\n\nText after a *setext* heading, then a rule:\n\n***\n\nEnd with [a link](https://example.com).",
];

/** What a reader sees: the rendered HTML's text, with code (elements) set apart. */
function visible(html) {
  const code = [];
  const prose = html
    .replace(/<pre><code[^>]*>([\s\S]*?)<\/code><\/pre>/g, (_, c) => { code.push(c); return " "; })
    .replace(/<code>([\s\S]*?)<\/code>/g, (_, c) => { code.push(c); return " "; })
    .replace(/<[^>]+>/g, "")
    .replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
  return { prose, code };
}

const STRAY = [
  ["**", /\*\*/],
  ["__", /(^|[^\p{L}\p{N}])__|__($|[^\p{L}\p{N}])/u],
  ["backtick", /`/],
  ["](", /\]\(/],
  ["lone * or _ marker", /(^|\s)[*_](?=[\p{L}\p{N}])|[\p{L}\p{N}][*_](\s|$)/u],
];

const failures = [];
let prefixes = 0;
for (const [index, sample] of SAMPLES.entries()) {
  for (let end = 0; end <= sample.length; end += 1) {
    const prefix = sample.slice(0, end);
    const { text, openFence } = stableMarkdown(prefix);
    const { prose, code } = visible(marked.parse(text));
    prefixes += 1;
    const problems = STRAY.filter(([, pattern]) => pattern.test(prose)).map(([name]) => name);
    if (code.some((c) => /(^|\n)\s*(`{1,}|~{1,})\s*$/.test(c) && !/^\s*$/.test(c))) {
      problems.push("a partial fence inside a code block");
    }
    // Only a block that has not closed yet may be unfinished.
    const fences = (prefix.match(/^\s*(```|~~~)/gm) || []).length;
    if (openFence !== (fences % 2 === 1)) problems.push(`openFence=${openFence}`);
    if (problems.length) failures.push({ sample: index, end, prefix, stable: text, prose, problems });
  }
  // Finished, the answer reads exactly as marked renders it unchanged.
  const whole = visible(marked.parse(stableMarkdown(sample).text)).prose.trim();
  const plain = visible(marked.parse(sample)).prose.trim();
  if (whole !== plain) failures.push({ sample: index, end: sample.length, problems: ["changed when whole"], whole, plain });
}
console.log(JSON.stringify({ samples: SAMPLES.length, prefixes, failures: failures.slice(0, 20), count: failures.length }));
