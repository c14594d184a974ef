package ui_test

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/deepagents-go/deepagents/server/ui"
)

// TestBrowserMarkdown runs the page's Markdown renderer on model text:
// markup in the text is escaped, only http(s) links become links, and an
// unclosed code fence (a message still streaming) renders as code so far.
func TestBrowserMarkdown(t *testing.T) {
	hs := httptest.NewServer(ui.Handler())
	t.Cleanup(hs.Close)
	// The page's API calls fail against a server without the API.
	p := page{t, browser(t, "Failed to load resource")}
	p.do(chromedp.Navigate(hs.URL+"/"), waitJS(`typeof md === 'function'`))
	tests := []struct{ in, want string }{
		{"<script>alert(1)</script>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"},
		{`<img src=x onerror="alert(1)">`, "<p>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</p>"},
		{"[x](javascript:alert(1))", "<p>[x](javascript:alert(1))</p>"},
		{`[x](https://a.example/"onmouseover=1)`, `<p><a href="https://a.example/&quot;onmouseover=1" target="_blank" rel="noopener noreferrer">x</a></p>`},
		{"# Title\n\n- a\n- **b**\n\n```\n<b>\n```", "<h3>Title</h3><ul><li>a</li><li><strong>b</strong></li></ul><pre><code>&lt;b&gt;</code></pre>"},
		{"1. one\n2. *two*", "<ol><li>one</li><li><em>two</em></li></ol>"},
		{"```\ncode so far", "<pre><code>code so far</code></pre>"},
		{"`<i>` and 2 * 3 * 4", "<p><code>&lt;i&gt;</code> and 2 * 3 * 4</p>"},
		{"line one\nline two", "<p>line one<br>line two</p>"},
		{"", ""},
	}
	for _, tc := range tests {
		arg, _ := json.Marshal(tc.in)
		got, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`md(`+string(arg)+`)`))
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("md(%q)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

// TestBrowserPrettyShowsInvisibleCharacters: values shown to a person (a
// waiting call's arguments) spell out the characters that change how text
// looks without showing, so that what is approved reads as what runs.
func TestBrowserPrettyShowsInvisibleCharacters(t *testing.T) {
	hs := httptest.NewServer(ui.Handler())
	t.Cleanup(hs.Close)
	p := page{t, browser(t, "Failed to load resource")}
	p.do(chromedp.Navigate(hs.URL+"/"), waitJS(`typeof pretty === 'function'`))
	tests := []struct{ in, want string }{
		{`{"command":"echo safe\u202e; rm -rf ~"}`, "{\n  \"command\": \"echo safe\\u202e; rm -rf ~\"\n}"},
		{`"a\u200bb\u0085c"`, `a\u200bb\u0085c`},
		{`{"n":1}`, "{\n  \"n\": 1\n}"},
	}
	for _, tc := range tests {
		got, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](`pretty(`+tc.in+`)`))
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("pretty(%s)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}
