package e2e

import (
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserAttrReadsThePage: an attribute a click sets is read as the
// page has it right after the click, however far behind the page's DOM
// events chromedp's copy of the DOM is (the click's handler changes many
// attributes first, as a busy view does). The console's toggles are
// checked so (TestUIDetails: aria-pressed after a click).
func TestBrowserAttrReadsThePage(t *testing.T) {
	b := newBrowser(t, 800, 600)
	page := `<!doctype html><div id="busy"></div><button id="toggle" aria-pressed="false">Toggle</button><script>
const busy = document.getElementById("busy");
document.getElementById("toggle").addEventListener("click", (e) => {
  for (let i = 0; i < 20000; i++) busy.setAttribute("data-n", String(i));
  e.target.setAttribute("aria-pressed", String(e.target.getAttribute("aria-pressed") !== "true"));
});
</script>`
	b.run("open the page", chromedp.Navigate("data:text/html,"+url.PathEscape(page)), chromedp.WaitVisible("#toggle", chromedp.ByQuery))
	for i := range 4 {
		want := "true"
		if i%2 == 1 {
			want = "false"
		}
		b.run("click", chromedp.Click("#toggle", chromedp.ByQuery))
		if got := b.attr("#toggle", "aria-pressed"); got != want {
			t.Fatalf("click %d: aria-pressed %q, want %q", i+1, got, want)
		}
	}
}
