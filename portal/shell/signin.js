// The sign-in page and the error page. Both render in place: the URL
// (path, query and fragment) stays what the person opened, so that it is
// where they land after signing in.
import { h, replace } from "./dom.js";

const PENDING = "wharf.signin.started";

// markSigninStarted notes that a sign-in is under way (or clears it), so
// that a 401 right after it shows an error instead of the sign-in page
// again. Only a timestamp is stored: nothing secret.
export function markSigninStarted(on) {
  if (on) sessionStorage.setItem(PENDING, String(Date.now()));
  else sessionStorage.removeItem(PENDING);
}

// signinJustHappened reports (and clears) a sign-in started in the last
// five minutes.
export function signinJustHappened() {
  const t = Number(sessionStorage.getItem(PENDING) || 0);
  sessionStorage.removeItem(PENDING);
  return t > 0 && Date.now() - t < 5 * 60 * 1000;
}

// deepLink is where the person is: path, query and fragment. The
// fragment never reaches the server, so it travels inside then.
export function deepLink() {
  const l = window.location;
  return l.pathname + l.search + l.hash;
}

export function renderSignin(el, { oidc, tokenLogin, onToken }) {
  const err = h("p", { class: "form-error", testid: "signin-error", role: "alert", hidden: true });
  const input = h("input", { id: "token", name: "token", type: "password", autocomplete: "off", required: true,
    testid: "signin-token-input", spellcheck: "false", placeholder: "Paste a token" });
  const submit = h("button", { class: "btn primary wide", type: "submit", testid: "signin-token-submit" }, "Sign in with token");
  const form = tokenLogin ? h("form", { class: "token-form", testid: "signin-token-form", onsubmit: async (e) => {
    e.preventDefault();
    err.hidden = true;
    submit.disabled = true;
    try {
      const msg = await onToken(input.value.trim());
      if (msg) { err.textContent = msg; err.hidden = false; input.select(); }
    } catch (x) {
      err.textContent = `Sign-in failed: ${x.message}`;
      err.hidden = false;
    } finally {
      submit.disabled = false;
    }
  } },
  h("label", { for: "token" }, "Access token"),
  input,
  h("p", { class: "hint" }, "Development sign-in: a static token of this hub, e.g. the contents of .wharf/admin-token after make run. The token is exchanged for a session cookie and not kept by the browser."),
  submit, err) : null;
  const oidcLink = oidc ? h("a", {
    class: "btn primary wide", testid: "signin-oidc", href: "/auth/login?then=" + encodeURIComponent(deepLink()),
    onclick: (e) => {
      // The fragment may have changed since rendering: rebuild then.
      e.currentTarget.setAttribute("href", "/auth/login?then=" + encodeURIComponent(deepLink()));
      markSigninStarted(true);
    },
  }, "Sign in with your identity provider") : null;
  replace(el, h("div", { class: "center" },
    h("section", { class: "card signin", testid: "signin-page", "aria-labelledby": "signin-title" },
      h("div", { class: "brand big" }, h("span", { class: "logo", "aria-hidden": "true" }, "W"), h("span", {}, "Wharf")),
      h("h1", { id: "signin-title" }, "Sign in"),
      h("p", { class: "muted" }, "Your workspaces, providers and their consoles, in one place."),
      oidcLink,
      oidc && tokenLogin ? h("div", { class: "or" }, h("span", {}, "or")) : null,
      form,
      !oidc && !tokenLogin ? h("p", { class: "form-error" }, "This hub has no browser sign-in configured (--oidc-issuer-url or --enable-token-login).") : null)));
  (oidcLink || input).focus();
}

export function renderError(el, message, onRetry) {
  replace(el, h("div", { class: "center" },
    h("section", { class: "card", testid: "error-page", role: "alert", "aria-labelledby": "error-title" },
      h("h1", { id: "error-title" }, "Something went wrong"),
      h("p", { testid: "error-message" }, message),
      h("button", { class: "btn primary", type: "button", testid: "error-retry", onclick: onRetry }, "Sign in again"))));
}
