// URL shapes of the portal (see TESTIDS.md).

// route parses the URL: page, provider name and sub-route, workspace.
export function parseRoute(loc = window.location) {
  const p = loc.pathname;
  const q = new URLSearchParams(loc.search);
  const r = { page: "overview", provider: "", subRoute: "/", ws: q.get("ws") || "" };
  let m;
  if (p === "/ui/catalog" || p === "/ui/catalog/") r.page = "catalog";
  else if ((m = p.match(/^\/ui\/providers\/([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\/.*)?$/))) {
    r.page = "provider";
    r.provider = m[1];
    r.subRoute = m[3] || "/";
  }
  return r;
}

// href builds a portal URL for page in workspace ws.
export function href(path, ws, extra = "") {
  const sep = path.includes("?") ? "&" : "?";
  return `${path}${sep}ws=${encodeWs(ws)}${extra}`;
}


// encodeWs escapes a workspace path for a query, keeping ":" readable.
export function encodeWs(ws) {
  return encodeURIComponent(ws).replace(/%3A/gi, ":");
}
