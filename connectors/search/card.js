// Web search's card in the browser UI (docs/connectors.md, "The UI card"): numbered
// results, each with the citation number the answer uses ([n], from content_chunks).

export default function searchCard(ui) {
  const { h, asList, asText, isObject, link } = ui;

  function results(list, output) {
    const items = asList(list).filter(isObject);
    if (!items.length) return h("p", { class: "muted", text: "No results." });
    const chunks = asList(output.content_chunks).filter(isObject);
    return h("ol", { class: "search-results" }, items.map((r, i) => {
      const id = asText(chunks.find((c) => c.url === r.url)?.id ?? i + 1);
      let host = asText(r.display_link);
      if (!host) {
        try { host = new URL(r.url).hostname; } catch { host = ""; }
      }
      return h("li", { class: "search-result", dataset: { citation: id } },
        h("span", { class: "citation-number", "aria-hidden": "true", text: id }),
        h("div", {},
          h("h4", {}, link(r.url, asText(r.title) || asText(r.url))),
          h("p", { class: "muted small", text: host }),
          h("p", { class: "small", text: asText(r.snippet) })));
    }));
  }

  return { renderers: { google_search_results: results } };
}
