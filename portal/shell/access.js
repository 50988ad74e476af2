// What the caller may do, asked the way kubectl auth can-i asks:
// SelfSubjectAccessReview in the workspace. Answers are cached per
// workspace, user and attributes for the page's life.
import { json } from "./api.js";

const cache = new Map();

export function can(ws, user, verb, group, resource) {
  const key = JSON.stringify([ws, user, verb, group, resource]);
  if (!cache.has(key)) {
    const p = json(`/clusters/${ws}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`, {
      method: "POST",
      body: { apiVersion: "authorization.k8s.io/v1", kind: "SelfSubjectAccessReview",
        spec: { resourceAttributes: { verb, group, resource } } },
    }).then((r) => !!(r && r.status && r.status.allowed), () => false);
    cache.set(key, p);
    p.then((ok) => { if (!ok) setTimeout(() => cache.delete(key), 10000); });
  }
  return cache.get(key);
}

// forget drops cached answers (after RBAC may have changed).
export function forget() { cache.clear(); }
