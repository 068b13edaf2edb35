// Import one of the page's ES modules (app/static/...) by its path from the repository
// root. They are plain .js files outside any package.json that says "module", so they are
// loaded from their source text: the same on every node version, with or without its
// module-syntax detection. Only for modules that import nothing themselves.
import { readFileSync } from "node:fs";

const ROOT = new URL("../../", import.meta.url);

export function importSource(path) {
  const text = readFileSync(new URL(path, ROOT), "utf8");
  return import(`data:text/javascript;base64,${Buffer.from(text).toString("base64")}`);
}
