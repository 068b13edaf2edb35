// What the connectors' card modules taught the page (docs/connectors.md, "The UI card"):
// a renderer per response_type, connect-card types and labels, approval layouts per tool,
// client widgets for account flows, and each connector's icon. The page itself names no
// connector: everything here comes from GET /api/connectors and the modules it lists.
import { asList, asText, isObject } from "./dom.js";

// Types every connector shares: no card module may take them over.
export const CORE_TYPES = new Set(["error", "open_window", "open_tab", "account_needed", "text", "link", "file"]);

const renderers = new Map(); // response_type -> {render, connector}
const connectTypes = new Map(); // response_type -> connector (a connect card of that connector)
const connectLabels = new Map(); // connector -> its connect button's words
const approvals = new Map(); // tool name -> {spec, connector}
const widgets = new Map(); // widget name -> {run, connector}
const agentIcons = new Map(); // agent_name -> icon name
const listeners = new Set();

connectTypes.set("account_needed", "");

/** The connectors of GET /api/connectors: their icons, by the agent name in tool outputs. */
export function setConnectors(connectors) {
  for (const connector of asList(connectors).filter(isObject)) {
    const icon = asText(connector.icon);
    if (icon && connector.agent_name) agentIcons.set(asText(connector.agent_name), icon);
  }
}

export function iconForAgent(agentName) {
  return agentIcons.get(asText(agentName)) || null;
}

export function rendererFor(type) {
  return renderers.get(type)?.render || null;
}

export function isConnectType(type) {
  return connectTypes.has(type);
}

/** The connector a connect card stands for when its payload does not say. */
export function connectorOfConnectType(type) {
  return connectTypes.get(type) || "";
}

export function connectLabel(connector) {
  return connectLabels.get(connector) || null;
}

export function approvalFor(tool) {
  return approvals.get(asText(tool))?.spec || null;
}

export function widgetFor(name) {
  return widgets.get(asText(name))?.run || null;
}

/** Called with the response types a module took, each time one registers. */
export function onRegistered(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * Take in what connector ``name``'s module declared. A part that is malformed, or a name
 * another connector (or the page) already holds, is skipped with a console warning; the
 * rest is kept. Returns the response types it now renders.
 */
export function registerCard(name, declared) {
  const warn = (what) => console.warn(`card module of ${name}: ${what}; skipped`);
  if (!isObject(declared)) {
    warn("its default export returned no object");
    return [];
  }
  const taken = [];
  for (const [type, render] of entries(declared.renderers, "renderers", warn)) {
    if (typeof render !== "function") warn(`renderers.${type} is not a function`);
    else if (CORE_TYPES.has(type)) warn(`${type} is a type every connector shares`);
    else if (renderers.has(type)) warn(`${type} is already rendered by ${renderers.get(type).connector}'s card`);
    else {
      renderers.set(type, { render, connector: name });
      taken.push(type);
    }
  }
  if (declared.connect !== undefined) {
    const connect = isObject(declared.connect) ? declared.connect : {};
    if (!isObject(declared.connect)) warn("connect is not an object");
    if (typeof connect.label === "string" && connect.label) connectLabels.set(name, connect.label);
    for (const type of asList(connect.types).map(asText).filter(Boolean)) {
      if (connectTypes.has(type) || renderers.has(type)) warn(`connect type ${type} is already taken`);
      else {
        connectTypes.set(type, name);
        taken.push(type);
      }
    }
  }
  for (const [tool, spec] of entries(declared.approvals, "approvals", warn)) {
    if (!isObject(spec)) warn(`approvals.${tool} is not an object`);
    else if (approvals.has(tool)) warn(`the approval of ${tool} is already given by ${approvals.get(tool).connector}'s card`);
    else approvals.set(tool, { spec, connector: name });
  }
  for (const [widget, run] of entries(declared.widgets, "widgets", warn)) {
    if (typeof run !== "function") warn(`widgets.${widget} is not a function`);
    else if (widgets.has(widget)) warn(`widget ${widget} is already run by ${widgets.get(widget).connector}'s card`);
    else widgets.set(widget, { run, connector: name });
  }
  for (const listener of listeners) listener(taken);
  return taken;
}

function entries(value, what, warn) {
  if (value === undefined) return [];
  if (!isObject(value)) {
    warn(`${what} is not an object`);
    return [];
  }
  return Object.entries(value);
}
