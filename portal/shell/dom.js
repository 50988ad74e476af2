// Small DOM helpers. Everything is built with createElement and
// textContent: never parsed as markup, so names and messages from the
// server can never become markup.

// h(tag, attrs, ...children) builds an element. attrs: "class", "testid"
// (data-testid), "on<event>" handlers, "dataset" object, boolean
// attributes as true/false, anything else as an attribute. Children are
// nodes, strings, or (nested) arrays; null and false are skipped.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "testid") el.dataset.testid = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// replace empties el and appends the children.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// icon returns a decorative inline SVG from the shell's sprite-free set.
const paths = {
  home: "M3 10.5 12 3l9 7.5V21h-6v-6H9v6H3z",
  grid: "M3 3h8v8H3zm10 0h8v8h-8zM3 13h8v8H3zm10 0h8v8h-8z",
  plug: "M9 2v6M15 2v6M6 8h12v4a6 6 0 0 1-12 0zM12 18v4",
  folder: "M3 6h6l2 2h10v11H3z",
  out: "M15 4h5v16h-5M10 8l-4 4 4 4M6 12h10",
  plus: "M12 5v14M5 12h14",
  menu: "M4 6h16M4 12h16M4 18h16",
};
export function icon(name) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", "icon");
  const p = document.createElementNS(ns, "path");
  p.setAttribute("d", paths[name] || "");
  svg.append(p);
  return svg;
}

// ago renders a timestamp as "5m ago".
export function ago(ts) {
  if (!ts) return "";
  const s = Math.max(0, (Date.now() - new Date(ts).getTime()) / 1000);
  if (s < 60) return `${Math.floor(s)}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}
