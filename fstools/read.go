package fstools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/deepagents-go/deepagents/internal/safefile"
	"github.com/deepagents-go/deepagents/llm"

	"github.com/deepagents-go/deepagents/tool"
	"github.com/deepagents-go/deepagents/vfs"
	"github.com/deepagents-go/deepagents/vfs/perm"
)

type lsArgs struct {
	Path string `json:"path"`
}

func lsTool(o Options) tool.Tool {
	return define("ls",
		"List one directory level, sorted. Directories end in /; files show their size in bytes. Paths are absolute, like /src/app.py; a relative path starts at /.",
		`{"type":"object","properties":{"path":{"type":"string","description":"Directory to list.","default":"/"}},"additionalProperties":false}`,
		func(ctx context.Context, fs vfs.Backend, in lsArgs) (tool.Result, error) {
			return runLs(ctx, fs, in, o)
		})
}

func runLs(ctx context.Context, fs vfs.Backend, in lsArgs, o Options) (tool.Result, error) {
	p, bad := cleanPath(in.Path, "/")
	if bad != nil {
		return *bad, nil
	}
	entries, err := fs.List(ctx, p)
	switch {
	case err == nil:
	case errors.Is(err, vfs.ErrNotFound) && p == "/":
		entries = nil
	case errors.Is(err, vfs.ErrNotFound):
		return tool.Errorf("Error: directory %s does not exist. Run ls on a parent directory, or glob, to find the right path.", p), nil
	case errors.Is(err, vfs.ErrNotDir):
		return tool.Errorf("Error: %s is a file, not a directory. Use read_file to read it.", p), nil
	default:
		return failed(ctx, "listing "+p, err)
	}
	if len(entries) == 0 {
		if p == "/" {
			return tool.Text("The filesystem is empty: there are no files yet. Create one with write_file."), nil
		}
		return tool.Text(p + " is an empty directory."), nil
	}
	var b strings.Builder
	budget := o.answerBudget()
	shown := 0
	for _, e := range entries {
		line := e.Path + "/"
		if !e.IsDir {
			line = fmt.Sprintf("%s (%s)", e.Path, plural(int(e.Size), "byte"))
		}
		if shown == o.LsMaxResults || b.Len()+1+len(line) > budget && shown > 0 {
			break
		}
		if shown > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
		shown++
	}
	if left := len(entries) - shown; left > 0 {
		fmt.Fprintf(&b, "\n\n[Showing the first %s of %s entries; %s left out. List a subdirectory, or use glob with a pattern, to see the rest.]",
			thousands(shown), thousands(len(entries)), thousands(left))
	}
	return tool.Text(b.String()), nil
}

type readArgs struct {
	FilePath string `json:"file_path"`
	Offset   int    `json:"offset"`
	Limit    *int   `json:"limit"`
}

func readTool(o Options) tool.Tool {
	desc := fmt.Sprintf("Read a text file, cat -n style: line number, tab, text. Returns up to limit lines (default %d) from a 0-based line offset; a closing notice gives the offset to continue from. Lines over %d characters are split into chunks numbered N.1, N.2 and so on.",
		o.ReadLimit, o.MaxLineChars)
	schema := fmt.Sprintf(`{"type":"object","properties":{"file_path":{"type":"string","description":"File to read."},"offset":{"type":"integer","description":"0-based index of the first line.","default":0},"limit":{"type":"integer","description":"Max lines to return.","default":%d}},"required":["file_path"],"additionalProperties":false}`,
		o.ReadLimit)
	return defineEnv("read_file", desc, schema, func(ctx context.Context, env *tool.Env, in readArgs) (tool.Result, error) {
		return runRead(ctx, env.Files, in, o, env.Capabilities.Images)
	}, tool.WithInline())
}

// maxCountBytes bounds how far past the page read_file reads only to count
// the lines that remain.
const maxCountBytes = 64 << 20

// runRead reads a file. images says the model reads images: an image file
// is then returned as an image part.
func runRead(ctx context.Context, fs vfs.Backend, in readArgs, o Options, images bool) (tool.Result, error) {
	p, bad := cleanPath(in.FilePath, "")
	if bad != nil {
		return *bad, nil
	}
	offset := in.Offset
	var notes []string
	if offset < 0 {
		notes = append(notes, fmt.Sprintf("[offset %d is before the first line, so reading started at the first line (offset 0).]", in.Offset))
		offset = 0
	}
	limit := o.ReadLimit
	if in.Limit != nil {
		limit = *in.Limit
	}
	req := vfs.PageRequest{Path: p, Offset: offset, Limit: limit, Budget: o.answerBudget(), MaxLineChars: o.MaxLineChars, Images: images}
	res, ok, err := vfs.ReadPage(ctx, fs, req)
	if err == nil && res.Denied != nil {
		err = res.Denied
	}
	if ok && err == nil && res.Image != "" {
		if res.Size > o.MaxImageBytes {
			// Refused by the size the page gave, before anything more
			// of the file is read.
			return readImage(ctx, nil, p, res.Image, res.Size, o)
		}
		ok = false // an image is read whole, below
	}
	if !ok || err != nil {
		var br *bufio.Reader
		var rc io.Closer
		if !ok {
			res, br, rc, err = openPage(ctx, fs, req)
			if rc != nil {
				defer rc.Close()
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, vfs.ErrNotFound):
			return tool.Errorf("Error: file %s does not exist. Use ls or glob to find the right path.", p), nil
		case errors.Is(err, vfs.ErrIsDir):
			return tool.Errorf("Error: %s is a directory, not a file. Use ls to list it.", p), nil
		default:
			return failed(ctx, "reading "+p, err)
		}
		if res.Image != "" {
			return readImage(ctx, br, p, res.Image, res.Size, o)
		}
	}
	switch {
	case res.Empty:
		return tool.Text(fmt.Sprintf("%s is empty (0 lines).", p)), nil
	case res.Binary != "":
		return tool.Text(fmt.Sprintf("%s is a binary file (%s, %s), not text, so read_file does not show it.",
			p, res.Binary, safefile.Size(res.Size))), nil
	case limit <= 0:
		return tool.Text(fmt.Sprintf("No lines were read from %s: limit is %d. Give a limit of 1 or more, or leave it out to read up to %d lines.",
			p, limit, o.ReadLimit)), nil
	}
	end, line := res.End, res.Lines
	if end == offset {
		return tool.Errorf("Error: offset %d is past the end of %s, which has %s (offsets 0 to %d).",
			offset, p, plural(line, "line"), line-1), nil
	}
	var b strings.Builder
	b.WriteString(res.Text)
	rest, counted, capped, cutBytes := res.Rest, res.Counted, res.Capped, res.CutBytes
	if rest > 0 || capped {
		var shown string
		switch {
		case !counted:
			shown = fmt.Sprintf("lines %d-%d shown; more lines remain (the file is %s).", offset+1, end, safefile.Size(res.Size))
		case rest == 0:
			shown = fmt.Sprintf("lines %d-%d of %d shown; no more lines remain.", offset+1, end, end)
		default:
			verb := "remain"
			if rest == 1 {
				verb = "remains"
			}
			shown = fmt.Sprintf("lines %d-%d of %d shown; %s %s.", offset+1, end, end+rest, plural(rest, "more line"), verb)
		}
		if rest > 0 || !counted {
			shown += fmt.Sprintf(" Call read_file with offset=%d to continue.", end)
		}
		var nb strings.Builder
		nb.WriteByte('[')
		if capped {
			fmt.Fprintf(&nb, "Output capped at %s characters", thousands(o.MaxOutputChars))
			if cutBytes > 0 {
				fmt.Fprintf(&nb, ", so line %d (%s long) is cut short", end, safefile.Size(cutBytes))
			}
			nb.WriteString(": " + shown)
		} else {
			nb.WriteString("L" + shown[1:])
		}
		nb.WriteByte(']')
		notes = append(notes, nb.String())
	}
	if len(notes) > 0 {
		b.WriteString("\n\n")
		b.WriteString(strings.Join(notes, "\n"))
	}
	return tool.Text(b.String()), nil
}

// openPage opens the file of req on fs and reads its page; br is left
// just past the first bytes of an image (res.Image), for the caller to
// read it, and rc is to be closed.
func openPage(ctx context.Context, fs vfs.Backend, req vfs.PageRequest) (res vfs.PageResult, br *bufio.Reader, rc io.Closer, err error) {
	r, entry, err := vfs.Open(ctx, fs, req.Path)
	if err != nil {
		return res, nil, nil, err
	}
	// A buffer no larger than the file: most files the agent reads are
	// small, and a 64 KiB buffer per call was most of read_file's garbage.
	// (Peek then sees the whole of a file shorter than sniffLen.)
	br = bufio.NewReaderSize(r, int(min(entry.Size+1, 64<<10)))
	res, err = readPage(ctx, br, entry.Size, req)
	return res, br, r, err
}

// ReadPage reads a page of read_file from b, as the tool does: it is what
// a backend that implements vfs.PageReader runs where its files are. The
// request's rules apply as the wrappers that added them would; a read a
// rule refuses is answered with Denied set.
func ReadPage(ctx context.Context, b vfs.Backend, req vfs.PageRequest) (vfs.PageResult, error) {
	b, err := perm.WrapSearch(b, req.Rules)
	if err != nil {
		return vfs.PageResult{}, err
	}
	res, _, rc, err := openPage(ctx, b, req)
	if rc != nil {
		rc.Close()
	}
	var denied *vfs.DeniedError
	if errors.As(err, &denied) && ctx.Err() == nil {
		return vfs.PageResult{Denied: denied}, nil
	}
	return res, err
}

// readPage reads the page of req from br, a file of size bytes.
func readPage(ctx context.Context, br *bufio.Reader, size int64, req vfs.PageRequest) (res vfs.PageResult, err error) {
	res.Size = size
	offset, limit := req.Offset, req.Limit
	head, err := br.Peek(sniffLen)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return res, err
	}
	if len(head) == 0 {
		res.Empty = true
		return res, nil
	}
	if mt := imageType(head); mt != "" && req.Images {
		res.Image = mt
		return res, nil
	}
	if kind := binaryKind(head); kind != "" {
		res.Binary = kind
		return res, nil
	}
	if limit <= 0 {
		return res, nil
	}

	// Skip to the first line asked for.
	line := 0
	for ; line < offset; line++ {
		n, err := skipLine(br)
		if err != nil && err != io.EOF {
			return res, err
		}
		if n == 0 {
			break
		}
		if line%4096 == 0 && ctx.Err() != nil {
			return res, context.Cause(ctx)
		}
		if err == io.EOF {
			line++
			break
		}
	}

	budget := req.Budget
	var b strings.Builder
	used, end := 0, offset // characters written; the line after the last shown
	capped, cutBytes := false, int64(0)
	pending := 0 // a line read but not shown
	eof := false
	for end-offset < limit {
		text, n, whole, err := readLine(br, 4*(budget-used)+8)
		if err != nil && err != io.EOF {
			return res, err
		}
		eof = err == io.EOF
		if n == 0 {
			break
		}
		sep := 0
		if end > offset {
			sep = 1
		}
		var one strings.Builder
		w := writeNumbered(&one, end+1, text, req.MaxLineChars, -1)
		if !whole || used+sep+w > budget {
			capped = true
			if end == offset { // one line alone is over the cap: show its start
				writeNumbered(&b, end+1, text, req.MaxLineChars, budget)
				cutBytes = n
				end++
			} else {
				pending = 1
			}
			break
		}
		if sep == 1 {
			b.WriteByte('\n')
		}
		b.WriteString(one.String())
		used += sep + w
		end++
		if eof {
			break
		}
	}
	res.Text, res.End, res.Capped, res.CutBytes = b.String(), end, capped, cutBytes
	if end == offset {
		res.Lines = line
		return res, nil
	}

	// Count what remains, within reason.
	rest, counted := pending, true
	if !eof {
		var scanned int64
		for {
			n, err := skipLine(br)
			if err != nil && err != io.EOF {
				return res, err
			}
			if n > 0 {
				rest++
			}
			scanned += n
			if err == io.EOF {
				break
			}
			if scanned > maxCountBytes {
				counted = false
				break
			}
			if rest%4096 == 0 && ctx.Err() != nil {
				return res, context.Cause(ctx)
			}
		}
	}
	res.Rest, res.Counted = rest, counted
	return res, nil
}

// readImage answers read_file on an image for a model that reads images:
// a line naming the file, its type and size, then the image itself. An
// image over the size cap gets a note instead.
func readImage(ctx context.Context, r io.Reader, p, mediaType string, size int64, o Options) (tool.Result, error) {
	if size > o.MaxImageBytes {
		return tool.Text(fmt.Sprintf("%s is an image (%s, %s), larger than the %s read_file passes to the model, so it is not shown.",
			p, mediaType, safefile.Size(size), safefile.Size(o.MaxImageBytes))), nil
	}
	data, err := io.ReadAll(io.LimitReader(r, o.MaxImageBytes+1))
	if err != nil {
		return failed(ctx, "reading "+p, err)
	}
	if int64(len(data)) > o.MaxImageBytes {
		return tool.Text(fmt.Sprintf("%s is an image (%s, over %s), larger than the %s read_file passes to the model, so it is not shown.",
			p, mediaType, safefile.Size(o.MaxImageBytes), safefile.Size(o.MaxImageBytes))), nil
	}
	return tool.WithParts(
		llm.TextPart(fmt.Sprintf("%s is an image (%s, %s); it follows.", p, mediaType, safefile.Size(int64(len(data))))),
		llm.ImagePart(mediaType, data),
	), nil
}

// skipLine reads past one line and says how many bytes it had, its newline
// included; 0 with io.EOF means there was no line left.
func skipLine(br *bufio.Reader) (int64, error) {
	var n int64
	for {
		chunk, err := br.ReadSlice('\n')
		n += int64(len(chunk))
		if err != bufio.ErrBufferFull {
			return n, err
		}
	}
}

// readLine reads one line, keeping at most keep bytes of it, and returns
// its text (without the line ending when kept whole), its full length in
// bytes and whether it was kept whole; 0 with io.EOF means there was no
// line left.
func readLine(br *bufio.Reader, keep int) (string, int64, bool, error) {
	var buf []byte
	var n int64
	for {
		chunk, err := br.ReadSlice('\n')
		n += int64(len(chunk))
		if room := keep - len(buf); room > 0 {
			buf = append(buf, chunk[:min(room, len(chunk))]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		whole := int64(len(buf)) == n
		if whole {
			buf = bytes.TrimSuffix(buf, []byte("\n"))
			buf = bytes.TrimSuffix(buf, []byte("\r"))
		}
		return string(buf), n, whole, err
	}
}

// writeNumbered writes one line with its gutter, split into chunks of at
// most max characters; continuation chunks are labelled n.1, n.2, ... With
// a budget of 0 or more it stops after that many characters. It returns the
// characters written.
func writeNumbered(b *strings.Builder, n int, line string, max, budget int) int {
	label := strconv.Itoa(n)
	written := 0
	gutter := func(l string) bool {
		g := strings.Repeat(" ", 6-min(6, len(l))) + l + "\t"
		if budget >= 0 && written+len(g) > budget {
			return false
		}
		b.WriteString(g)
		written += len(g)
		return true
	}
	if !gutter(label) {
		return written
	}
	count, chunk, start := 0, 0, 0
	for i := range line {
		if count == max {
			b.WriteString(line[start:i])
			start, count = i, 0
			if budget >= 0 && written+1 > budget {
				return written
			}
			b.WriteByte('\n')
			written++
			chunk++
			if !gutter(label + "." + strconv.Itoa(chunk)) {
				return written
			}
		}
		if budget >= 0 && written >= budget {
			b.WriteString(line[start:i])
			return written
		}
		count++
		written++
	}
	b.WriteString(line[start:])
	return written
}
