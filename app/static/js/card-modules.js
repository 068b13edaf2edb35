// Loads each connector's card: the module (``card``) and stylesheet (``card_css``) that
// GET /api/connectors lists for it. Each module's default export is called with the kit
// (card-kit.js) and returns what it renders (card-registry.js). A module that does not
// load, or throws, leaves its cards to the generic view, with a console warning.
import { kit } from "./card-kit.js";
import { registerCard, setConnectors } from "./card-registry.js";
import { asList, asText, isObject } from "./dom.js";

const loaded = new Map(); // module URL -> Promise (a connector list loaded again reuses it)

/**
 * Load the cards of ``connectors`` (the items of GET /api/connectors). Resolves when every
 * module and stylesheet has loaded or failed; never rejects.
 */
export function loadCardModules(connectors) {
  const items = asList(connectors).filter(isObject);
  setConnectors(items);
  const work = [];
  for (const connector of items) {
    const name = asText(connector.name);
    const css = sameOrigin(connector.card_css);
    if (css) work.push(once(css, () => loadStylesheet(name, css)));
    const module = sameOrigin(connector.card);
    if (module) work.push(once(module, () => loadModule(name, module)));
  }
  return Promise.all(work).then(() => undefined);
}

function once(url, load) {
  if (!loaded.has(url)) loaded.set(url, load());
  return loaded.get(url);
}

/** Only the server's own paths: a module runs with the page's rights. */
function sameOrigin(value) {
  const path = asText(value);
  return path.startsWith("/") && !path.startsWith("//") ? path : null;
}

async function loadModule(name, url) {
  let module;
  try {
    module = await import(url);
  } catch (error) {
    console.warn(`the card module of ${name} did not load; its cards use the generic view`, error);
    return;
  }
  if (typeof module.default !== "function") {
    console.warn(`the card module of ${name} has no default export function; its cards use the generic view`);
    return;
  }
  let declared;
  try {
    declared = module.default(kit);
  } catch (error) {
    console.warn(`the card module of ${name} failed to start; its cards use the generic view`, error);
    return;
  }
  registerCard(name, declared);
}

function loadStylesheet(name, url) {
  return new Promise((resolve) => {
    const sheet = document.createElement("link");
    sheet.rel = "stylesheet";
    sheet.href = url;
    sheet.dataset.connector = name;
    sheet.addEventListener("load", () => resolve(), { once: true });
    sheet.addEventListener("error", () => {
      console.warn(`the stylesheet of ${name} did not load`);
      resolve();
    }, { once: true });
    document.head.append(sheet);
  });
}
