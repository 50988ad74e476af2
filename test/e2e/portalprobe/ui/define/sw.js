// A service worker the hostile provider tries to register under its own
// UI path (portal:26 of test/e2e/portal/attack_test.go): it would see every
// navigation to /ui/providers/portalprobe/..., i.e. the shell document
// with the CSRF meta, and keep a copy where the page can read it.
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
self.addEventListener("fetch", (e) => {
  if (e.request.mode !== "navigate") return;
  e.respondWith((async () => {
    const r = await fetch(e.request);
    const body = await r.clone().text();
    const c = await caches.open("portalprobe-loot");
    await c.put("/ui/providers/portalprobe/loot.txt", new Response(body));
    return r;
  })());
});
