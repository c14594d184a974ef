package vfs

import "context"

// PageRequest is one read of read_file: a page of a file's lines, with the
// tool's caps, so that a backend far from its files can read the page
// where they are and send back only it.
type PageRequest struct {
	// Path is the clean path of the file.
	Path string `json:"path"`
	// Offset is the 0-based first line, Limit how many lines at most.
	Offset int `json:"offset"`
	Limit  int `json:"limit"`
	// Budget is how many characters the page may take; MaxLineChars
	// splits longer lines into numbered chunks.
	Budget       int `json:"budget"`
	MaxLineChars int `json:"max_line_chars"`
	// Images says the reader takes images: an image is then only named
	// (PageResult.Image), for the caller to read it whole.
	Images bool `json:"images,omitempty"`
	// Rules are read rules, as in SearchRequest.
	Rules [][]string `json:"rules,omitempty"`
}

// PageResult is the page a PageRequest read, before the tool words it.
type PageResult struct {
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// Empty says the file is empty; Image names the media type of an
	// image when the request takes images; Binary the kind of a binary
	// file. Then nothing else is read.
	Empty  bool   `json:"empty,omitempty"`
	Image  string `json:"image,omitempty"`
	Binary string `json:"binary,omitempty"`
	// Text is the page, numbered; End is the line after its last. When
	// the offset is past the end, End equals it and Lines counts the
	// file's lines.
	Text  string `json:"text,omitempty"`
	End   int    `json:"end"`
	Lines int    `json:"lines,omitempty"`
	// Capped says the budget ended the page; CutBytes is the length of a
	// line shown only in part.
	Capped   bool  `json:"capped,omitempty"`
	CutBytes int64 `json:"cut_bytes,omitempty"`
	// Rest counts the lines after the page; Counted is false when the
	// file was too long to count them all.
	Rest    int  `json:"rest,omitempty"`
	Counted bool `json:"counted,omitempty"`
	// Denied is set when a rule refused the read.
	Denied *DeniedError `json:"denied,omitempty"`
}

// PageReader is a Backend that can read one page of a file itself, in one
// call, without sending the whole file.
type PageReader interface {
	Backend
	// ReadPage reads req; ok is false when this backend cannot take it,
	// and the caller then reads the file through Open or Read.
	ReadPage(ctx context.Context, req PageRequest) (res PageResult, ok bool, err error)
}

// ReadPage reads req on b in one call when b, or the backend it wraps, is
// a PageReader that takes it; ok is false otherwise. It sees through what
// Search sees through.
func ReadPage(ctx context.Context, b Backend, req PageRequest) (PageResult, bool, error) {
	for range 16 {
		switch x := b.(type) {
		case PageReader:
			return x.ReadPage(ctx, req)
		case *Tracked:
			b = x.Backend
		case unlayered:
			b = x.c
		default:
			return PageResult{}, false, nil
		}
	}
	return PageResult{}, false, nil
}

// ReadPage implements PageReader for a path the fallback owns.
func (c *Composite) ReadPage(ctx context.Context, req PageRequest) (PageResult, bool, error) {
	p, err := Clean(req.Path)
	if err != nil {
		return PageResult{}, false, nil
	}
	if r, _ := c.find(p); r != nil || len(c.below(p)) > 0 || c.state {
		return PageResult{}, false, nil
	}
	return ReadPage(ctx, c.fallback, req)
}
