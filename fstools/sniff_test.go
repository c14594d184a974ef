package fstools

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// The sniffing as it was, with http.DetectContentType for every file: the
// reference the quicker checks must agree with.
func imageTypeRef(head []byte) string {
	mime := http.DetectContentType(head)
	if slices.Contains(imageTypes, mime) {
		return mime
	}
	return ""
}

func binaryKindRef(head []byte) string {
	mime := http.DetectContentType(head)
	if i := strings.IndexByte(mime, ';'); i >= 0 {
		mime = mime[:i]
	}
	text := strings.HasPrefix(mime, "text/") || mime == "application/postscript"
	if !hasControlBytes(head) && (text || validUTF8Start(head)) {
		return ""
	}
	if text || mime == "application/octet-stream" {
		return "binary data"
	}
	return mime
}

var sniffSeeds = []string{
	"", "hello\n", "\x89PNG\r\n\x1a\n\x00\x00", "\x89PNG\r\n\x1a", "\xff\xd8\xff\xe0", "\xff\xd8", "GIF89a\x01\x00", "GIF87a", "GIF8",
	"RIFF\x10\x00\x00\x00WEBPVP8 ", "RIFF\x10\x00\x00\x00WEBPVX", "RIFF\x10\x00\x00\x00WAVEfmt ", " \x89PNG\r\n\x1a\n", "BM\x00\x01",
	"%PDF-1.4\n", "%!PS-Adobe", "<html>\x00", "\x00\x00\x01\x00", "ID3\x03", "text with \x01 control", "caf\xc3", "caf\xc3\xa9\n",
	"\xfe\xff\x00h", "\xef\xbb\xbfbom text",
}

// imageType and binaryKind say what http.DetectContentType said before.
func TestSniffingAgreesWithDetectContentType(t *testing.T) {
	for _, s := range sniffSeeds {
		h := []byte(s)
		if got, want := imageType(h), imageTypeRef(h); got != want {
			t.Errorf("imageType(%q) = %q, want %q", s, got, want)
		}
		if got, want := binaryKind(h), binaryKindRef(h); got != want {
			t.Errorf("binaryKind(%q) = %q, want %q", s, got, want)
		}
	}
}

func FuzzSniffing(f *testing.F) {
	for _, s := range sniffSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		if got, want := imageType(head), imageTypeRef(head); got != want {
			t.Errorf("imageType(%q) = %q, want %q", head, got, want)
		}
		if got, want := binaryKind(head), binaryKindRef(head); got != want {
			t.Errorf("binaryKind(%q) = %q, want %q", head, got, want)
		}
	})
}
