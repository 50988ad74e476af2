package portal

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// checkNarrowAndDark looks at the overview, the catalog and hello's page
// on a phone-sized screen and in dark mode. On the narrow screen the page
// must not scroll sideways: everything must be reachable by scrolling
// down, as the issue asks ("usable on a narrow screen"); nor on a
// desktop-sized one.
func checkNarrowAndDark(t *testing.T, b *browser, hub, ws string) {
	pages := []struct{ name, path string }{
		{"overview", "/ui/"},
		{"catalog", "/ui/catalog"},
		{"hello", "/ui/providers/hello/"},
	}
	q := "?ws=" + url.QueryEscape(ws)
	b.do("phone-sized screen", chromedp.EmulateViewport(390, 844))
	for _, p := range pages {
		b.do("open "+p.name, chromedp.Navigate(hub+p.path+q))
		b.waitState("ready")
		b.do("wait for the page", chromedp.WaitVisible(`main`), chromedp.Sleep(500*time.Millisecond))
		if over := eval[int](b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); over > 0 {
			t.Errorf("on a 390 px screen %s is %d px wider than the window (the page scrolls sideways)", p.path, over)
		}
		b.shot("narrow-" + p.name)
	}
	b.do("desktop screen", chromedp.EmulateViewport(1280, 860))
	setColorScheme(t, b, "dark")
	defer setColorScheme(t, b, "")
	for _, p := range pages {
		b.do("open "+p.name, chromedp.Navigate(hub+p.path+q))
		b.waitState("ready")
		b.do("wait for the page", chromedp.WaitVisible(`main`), chromedp.Sleep(500*time.Millisecond))
		if !eval[bool](b, `matchMedia("(prefers-color-scheme: dark)").matches`) {
			t.Fatal("dark mode emulation did not take")
		}
		if over := eval[int](b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); over > 0 {
			t.Errorf("on a 1280 px screen %s is %d px wider than the window (the page scrolls sideways)", p.path, over)
		}
		b.shot("dark-" + p.name)
	}
}

// setColorScheme emulates prefers-color-scheme ("" resets it).
func setColorScheme(t *testing.T, b *browser, scheme string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	params := emulation.SetEmulatedMediaParams{}
	if scheme != "" {
		params.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, params); err != nil {
		t.Fatalf("emulating prefers-color-scheme %q: %v", scheme, err)
	}
}

// checkKeyboard reaches the catalog from the overview with Tab and Enter
// alone: the first Tab stop is the skip link, and the sidebar's links are
// in the tab order.
func checkKeyboard(t *testing.T, b *browser, hub, ws string) {
	b.do("open the overview", chromedp.Navigate(hub+"/ui/?ws="+url.QueryEscape(ws)))
	b.waitState("ready")
	b.do("wait for the page", chromedp.WaitVisible(tid("ws-current")))
	var focused []string
	for i := 0; i < 25; i++ {
		b.do("press Tab", chromedp.KeyEvent("\t"))
		id := eval[string](b, `(() => { const a = document.activeElement; return a ? (a.dataset.testid || a.className || a.tagName) : ""; })()`)
		focused = append(focused, id)
		if id == "nav-catalog" {
			b.shot("keyboard-focus")
			b.do("press Enter", chromedp.KeyEvent("\r"))
			b.do("the catalog opened", chromedp.WaitVisible(tid("catalog-table")))
			if len(focused) == 0 || focused[0] != "skip" {
				t.Errorf("the first Tab stop is %q, want the skip link", focused[0])
			}
			return
		}
	}
	t.Fatalf("25 Tabs never reached the catalog link; focus went %v", focused)
}
