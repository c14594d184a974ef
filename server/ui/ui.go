// Package ui is the web UI of `deepagents serve`: a single page, written
// as plain HTML, CSS and JavaScript with no build step, embedded in the
// binary and served from the same origin as the API, so it needs no
// configuration. It talks to the server's LangGraph-compatible API with
// fetch (streams included), sending the bearer token the user enters.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// Assets returns the UI's files (index.html at the root), e.g. to measure
// or inspect them.
func Assets() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the directory is embedded above; it always exists
	}
	return sub
}

// Handler serves the UI: index.html for "/" (the app links to threads by
// the URL's fragment, so no other path needs the page), the assets
// themselves under their names, and 404 for any other path, so that a
// mistyped API path is not answered with the page. Only GET and HEAD are
// answered; another method is a 405 on the UI's own paths and a 404
// elsewhere (a 405 lists only methods that path takes).
func Handler() http.Handler {
	files := Assets()
	fileServer := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		page := name == "" || name == "index.html"
		if !page {
			if st, err := fs.Stat(files, name); err != nil || st.IsDir() {
				http.NotFound(w, r)
				return
			}
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the web UI only answers GET and HEAD; the API has no route for "+r.Method+" "+r.URL.Path, http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-cache")
		// No page of another origin may show the UI in a frame, where a
		// decoy over it could have the user click Approve (clickjacking).
		w.Header().Set("X-Frame-Options", "DENY")
		if !page {
			fileServer.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'")
		http.ServeFileFS(w, r, files, "index.html")
	})
}
