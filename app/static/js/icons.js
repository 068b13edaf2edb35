// A few line icons (24×24, drawn with strokes), built as SVG nodes: no icon font, no HTML.
const PATHS = {
  mail: "M3 6h18v12H3z M3 7l9 6 9-6",
  check: "M5 12.5l4.5 4.5L19 7.5",
  bank: "M3 10l9-6 9 6z M5 10v8 M9.5 10v8 M14.5 10v8 M19 10v8 M3 20h18",
  store: "M4 10v10h16V10 M3 10l2-6h14l2 6z M10 20v-5h4v5",
  search: "M10.5 17a6.5 6.5 0 1 0 0-13 6.5 6.5 0 0 0 0 13z M15.5 15.5L21 21",
  link: "M10 14a4 4 0 0 0 5.7 0l3-3a4 4 0 0 0-5.7-5.7l-1 1 M14 10a4 4 0 0 0-5.7 0l-3 3a4 4 0 0 0 5.7 5.7l1-1",
  alert: "M12 3l10 18H2z M12 10v5 M12 18v.01",
  plug: "M9 2v6 M15 2v6 M6 8h12v3a6 6 0 0 1-12 0z M12 17v5",
  external: "M14 4h6v6 M20 4l-9 9 M18 14v6H4V6h6",
  chat: "M4 5h16v11H9l-5 4z",
  trash: "M4 7h16 M9 7V4h6v3 M6 7l1 13h10l1-13",
  plus: "M12 5v14 M5 12h14",
  menu: "M4 6h16 M4 12h16 M4 18h16",
  stop: "M7 7h10v10H7z",
  send: "M12 19V5 M6 11l6-6 6 6",
  code: "M8 6l-6 6 6 6 M16 6l6 6-6 6",
  doc: "M6 3h9l5 5v13H6z M14 3v6h6",
  agent: "M5 9h14v10H5z M12 5v4 M9 14h.01 M15 14h.01",
  review: "M4 5h16v11H9l-5 4z M8 9h8 M8 12h5",
  close: "M6 6l12 12 M18 6L6 18",
  key: "M14 10a4 4 0 1 0-4 4 M10 14l-6 6 M6 18l2 2 M8 16l2 2",
  retry: "M4 12a8 8 0 1 0 2.3-5.7 M4 4v4h4",
  shield: "M12 3l8 3v6c0 5-3.4 8.3-8 9-4.6-0.7-8-4-8-9V6z M12 8v4 M12 15.5v.01",
  clock: "M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18z M12 7v5l3 2",
  more: "M5 12h.01 M12 12h.01 M19 12h.01",
  edit: "M4 20h4l10-10-4-4L4 16z M13 7l4 4",
  download: "M12 4v11 M7 10l5 5 5-5 M5 20h14",
  "thumb-up": "M7 11v9H4v-9z M7 11l4-8a2 2 0 0 1 2 2v4h5.5a2 2 0 0 1 2 2.3l-1.2 7A2 2 0 0 1 17.3 20H7",
  "thumb-down": "M7 13V4H4v9z M7 13l4 8a2 2 0 0 0 2-2v-4h5.5a2 2 0 0 0 2-2.3l-1.2-7A2 2 0 0 0 17.3 4H7",
  copy: "M9 9h11v11H9z M5 15H4V4h11v1",
  down: "M12 5v14 M6 13l6 6 6-6",
  attach: "M20 11.5l-8.1 8.1a5 5 0 0 1-7.1-7.1l8.5-8.5a3.3 3.3 0 0 1 4.7 4.7l-8.5 8.5a1.7 1.7 0 0 1-2.4-2.4l7.8-7.8",
};

const SVG = "http://www.w3.org/2000/svg";

/** An SVG icon; decorative (aria-hidden) unless a label is given. */
export function icon(name, label = null) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("class", `icon icon-${name}`);
  if (label) {
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", label);
  } else {
    svg.setAttribute("aria-hidden", "true");
  }
  const path = document.createElementNS(SVG, "path");
  path.setAttribute("d", PATHS[name] || PATHS.doc);
  svg.append(path);
  return svg;
}
