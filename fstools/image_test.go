package fstools

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/deepagents-go/deepagents/llm"
	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
)

// read_file on an image gives a model that reads images the image itself,
// after a line naming it; a model that does not gets the binary-file note.
// The type comes from the content, never from the file name.
func TestReadFileImage(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + strings.Repeat("\x00", 12)
	jpeg := "\xff\xd8\xff\xe0\x00\x10JFIF\x00" + strings.Repeat("\x01", 20)
	gif := "GIF89a\x01\x00\x01\x00\x80\x00\x00" + strings.Repeat("\x00", 10)
	webp := "RIFF\x1a\x00\x00\x00WEBPVP8 " + strings.Repeat("\x00", 14)
	bmp := "BM" + strings.Repeat("\x00", 30)
	files := map[string]string{
		"/a.png": png, "/b.jpg": jpeg, "/c.gif": gif, "/d.webp": webp,
		"/photo.txt": png, // named as text, but a PNG
		"/e.bmp":     bmp,
		"/big.png":   png + strings.Repeat("\x00", 100),
	}
	cases := []struct {
		name, path string
		images     bool
		tools      []tool.Tool
		wantText   string
		wantType   string // media type of the image part; "" for none
	}{
		{name: "png", path: "/a.png", images: true, wantText: "/a.png is an image (image/png, 28 B); it follows.", wantType: "image/png"},
		{name: "jpeg", path: "/b.jpg", images: true, wantText: "/b.jpg is an image (image/jpeg, 31 B); it follows.", wantType: "image/jpeg"},
		{name: "gif", path: "/c.gif", images: true, wantText: "/c.gif is an image (image/gif, 23 B); it follows.", wantType: "image/gif"},
		{name: "webp", path: "/d.webp", images: true, wantText: "/d.webp is an image (image/webp, 30 B); it follows.", wantType: "image/webp"},
		{name: "sniffed, not named", path: "/photo.txt", images: true, wantText: "/photo.txt is an image (image/png, 28 B); it follows.", wantType: "image/png"},
		{name: "bmp is not passed on", path: "/e.bmp", images: true,
			wantText: "/e.bmp is a binary file (image/bmp, 32 B), not text, so read_file does not show it."},
		{name: "over the cap", path: "/big.png", images: true, tools: New(Options{MaxImageBytes: 64}),
			wantText: "/big.png is an image (image/png, 128 B), larger than the 64 B read_file passes to the model, so it is not shown."},
		{name: "model without images", path: "/a.png", images: false,
			wantText: "/a.png is a binary file (image/png, 28 B), not text, so read_file does not show it."},
	}
	for _, b := range backends {
		for _, tc := range cases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				fs := b.make(t, files)
				tools := defaults
				if tc.tools != nil {
					tools = byName(tc.tools)
				}
				env := &tool.Env{CallID: "call_1", Files: fs, Capabilities: llm.Capabilities{Images: tc.images}}
				args, _ := json.Marshal(map[string]string{"file_path": tc.path})
				res, err := tools["read_file"].Run(context.Background(), env, args)
				if err != nil || res.IsError {
					t.Fatalf("err %v, result %+v", err, res)
				}
				if res.Content != tc.wantText {
					t.Errorf("text\n got %q\nwant %q", res.Content, tc.wantText)
				}
				if tc.wantType == "" {
					if res.Parts != nil {
						t.Errorf("no parts expected, got %d", len(res.Parts))
					}
					return
				}
				if len(res.Parts) != 2 || res.Parts[0].Type != llm.PartText || res.Parts[1].Type != llm.PartImage {
					t.Fatalf("want a text part then an image part, got %+v", res.Parts)
				}
				img := res.Parts[1].Image
				if img.MediaType != tc.wantType || !bytes.Equal(img.Data, []byte(files[tc.path])) {
					t.Errorf("image %s of %d bytes, want %s with the file's %d bytes", img.MediaType, len(img.Data), tc.wantType, len(files[tc.path]))
				}
				msg := res.Message(llm.ToolCall{ID: "call_1", Name: "read_file"})
				if msg.Role != llm.RoleTool || msg.ToolCallID != "call_1" || msg.Name != "read_file" || len(msg.Parts) != 2 || msg.Content != tc.wantText {
					t.Errorf("tool message %+v", msg)
				}
			})
		}
	}
}

// FuzzReadImage reads arbitrary bytes for a model that reads images: an
// image part is only ever one of the four accepted types, holds the file's
// exact bytes, stays under the cap and follows a line naming the file;
// anything else is text with no parts.
func FuzzReadImage(f *testing.F) {
	f.Fuzz(func(t *testing.T, content []byte, capBytes uint16) {
		maxImage := int64(capBytes%512) + 1
		tools := byName(New(Options{MaxImageBytes: maxImage}))
		fs := vfs.NewMemory(map[string]vfs.File{"/f": {Content: string(content)}})
		env := &tool.Env{CallID: "c", Files: fs, Capabilities: llm.Capabilities{Images: true}}
		res, err := tools["read_file"].Run(context.Background(), env, json.RawMessage(`{"file_path":"/f"}`))
		if err != nil {
			t.Fatalf("Go error %v", err)
		}
		if res.Content == "" {
			t.Fatal("empty answer")
		}
		if res.Parts == nil {
			return
		}
		if len(res.Parts) != 2 || res.Parts[0].Type != llm.PartText || res.Parts[1].Type != llm.PartImage {
			t.Fatalf("parts %+v", res.Parts)
		}
		img := res.Parts[1].Image
		if !slices.Contains(imageTypes, img.MediaType) || !bytes.Equal(img.Data, content) || int64(len(img.Data)) > maxImage {
			t.Fatalf("image %s of %d bytes (cap %d) for a file of %d bytes", img.MediaType, len(img.Data), maxImage, len(content))
		}
		if !strings.HasPrefix(res.Content, "/f is an image ("+img.MediaType+", ") || res.Content != res.Parts[0].Text {
			t.Fatalf("text %q", res.Content)
		}
	})
}
